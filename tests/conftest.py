import os

import pytest

from hybridai.core import registry

# Tests whose numbers depend on the CPU's code path (vector width, BLAS kernels, summation order): `make test`
# runs them once more under ATEN_CPU_CAPABILITY=default and once under AVX2 with MKL_CBWR=COMPATIBLE, each in
# its own process, so a difference that only one CPU's rounding shows (an AVX-512 Xeon's fidelity of
# 1 + 4e-16) shows up on every developer's machine.
NUMERICS = (
    "tests/core/test_cpu_paths.py",
    "tests/quantum/test_statevector.py",
    "tests/quantum/test_kernel.py",
    "tests/quantum/test_adjoint.py",
    "tests/quantum/test_density.py",
    "tests/quantum/test_gates_kernels.py",
    "tests/quantum/test_gram_blocks.py",
    "tests/quantum/test_sampling.py",
    "tests/spiking/test_neurons.py",
    "tests/neuromorphic/test_loihi_emulator.py",
    "tests/neuromorphic/test_loihi_network.py",
    "tests/neuromorphic/test_loihi2_rules.py",
    "tests/neuromorphic/test_loihi2_layer.py",
)
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def pytest_collection_modifyitems(config, items):
    for item in items:
        if os.path.relpath(str(item.path), ROOT).replace(os.sep, "/") in NUMERICS:
            item.add_marker(pytest.mark.numerics)


@pytest.fixture
def fresh_registry():
    """Forget loaded plugins before and after a test that changes sys.path."""
    registry.reload()
    yield registry
    registry.reload()
