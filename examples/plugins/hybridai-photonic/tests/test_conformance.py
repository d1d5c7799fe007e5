"""What a plugin author keeps in the plugin's own test suite: hybridai's conformance checks, one
pytest test per check (run with the plugin installed: ``pip install -e . && pytest tests``)."""

import pytest
from hybridai.testing import conformance_checks

CONFIGURATIONS = [
    ("photonic", {}),  # the default chip: 8-bit, lossy, noisy (the seed check runs)
    ("photonic:ideal", {}),  # exact and differentiable (the honesty checks run)
    ("photonic", {"phase_bits": 4, "adc_bits": 4, "detector_noise": 0.0}),  # coarse, noiseless: deterministic
]


@pytest.mark.parametrize(
    "check", [c for name, options in CONFIGURATIONS for c in conformance_checks(name, options)], ids=str
)
def test_conformance(check):
    check()
