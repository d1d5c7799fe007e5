"""The learn-noise example: rates fitted through density predict held-out device values better than no noise and
than depolarizing alone, close to the device's own model; the same fit on default.mixed gives the same rates."""

import pytest
import torch

from tests.examples import load_example


@pytest.mark.slow  # about 40 s: two fits of 40 steps, on density and on default.mixed
def test_learned_noise_predicts_held_out_circuits_and_equals_the_fit_on_default_mixed(tmp_path, capsys):
    out = load_example("learn_noise").main(
        ["--steps", "40", "--train", "24", "--test", "16", "--peer-steps", "40", "--out", str(tmp_path / "new")]
    )
    errors = out["errors"]
    learned, depolarizing = errors["learned (depolarizing, damping, read errors)"], errors["depolarizing only"]
    assert learned < 0.6 * errors["noiseless"]
    assert learned < depolarizing
    assert learned < 1.5 * errors["FakeManila's published model"]
    for kind, rates in out["rates"].items():
        assert ((rates > 0) & (rates < 0.2)).all(), kind
    assert out["peer_seconds"] > 0 and out["png"].stat().st_size > 10_000
    printed = capsys.readouterr().out
    assert "the fitted rates differ by at most" in printed
    gap = float(printed.split("differ by at most ")[1].split(")")[0])
    assert gap < 1e-8  # density and default.mixed: the same values and gradients, so the same fit
    assert torch.get_default_dtype() == torch.float32  # nothing process-wide changed
