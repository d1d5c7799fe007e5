"""The event-camera example end to end on a small data set: chips agree with the float models."""

import torch

from hybridai.cli import main as cli
from tests.examples import load_example


def test_event_camera_example_deploys_on_loihi_nengo_and_akida(tmp_path, capsys):
    threads = torch.get_num_threads()
    try:
        out = load_example("event_camera").main(
            ["--samples", "150", "--epochs", "6", "--out", str(tmp_path / "new"), "--save"]
        )
    finally:
        torch.set_num_threads(threads)
    loihi, nengo, akida = out["loihi"], out["nengo"], out["akida"]
    assert loihi.agreement["accuracy, float model"] > 0.6  # four directions: chance is 0.25
    assert loihi.agreement["prediction agreement"] >= 0.9 and nengo.agreement["prediction agreement"] >= 0.9
    assert akida.agreement["prediction agreement"] >= 0.9
    assert loihi.energy is not None and akida.energy is None and loihi.run.latency_steps == 2
    assert (tmp_path / "new" / "event_camera.png").stat().st_size > 10_000
    printed = capsys.readouterr().out
    assert "Davies et al." in printed and "Horowitz" in printed
    assert (
        cli(
            ["deploy-report", str(tmp_path / "new" / "snn.pt"), str(tmp_path / "new" / "data.pt"), "--backend", "loihi"]
        )
        == 0
    )
    assert "prediction agreement" in capsys.readouterr().out
