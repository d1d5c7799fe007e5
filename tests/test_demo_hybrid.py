"""The three-domain demo: one model trained end to end, deployed on chip + exact / noisy / noisy + ZNE circuits."""

import importlib.util
from pathlib import Path

import torch

from hybridai.cli import main
from hybridai.demo.hybrid import run_hybrid_demo

EXAMPLE = Path(__file__).parents[1] / "examples" / "hybrid_event_camera.py"


def test_the_demo_deploys_one_model_on_three_kinds_of_hardware(tmp_path, capsys):
    out = run_hybrid_demo(epochs=8, samples=120, shots=300, seed=0, out=tmp_path / "new" / "dir")
    rows = out["placements"]
    names = [row.name for row in rows]
    assert names == ["float (all torch)", "chip + exact circuit", "chip + noisy circuit (300 shots)",
                     "chip + noisy circuit + ZNE (300 shots)"]  # fmt: skip
    float_row, exact, noisy, zne = rows
    assert float_row.accuracy > 0.4  # four directions: chance is 0.25
    # the same float model in every report; the exact circuit adds only the chip's quantization error
    assert all(row.report.accuracy["float"] == float_row.accuracy for row in rows[1:])
    assert exact.agreement >= 0.9 and exact.circuit_error < 1e-6 < noisy.circuit_error
    assert set(exact.seconds) == {"spiking", "classical", "quantum"}
    quantum = [s for s in zne.report.segments if s.domain == "quantum"][0]
    assert quantum.backend == "aer:fake_manila + ZNE" and quantum.cost.quantum.circuits == 3 * 40  # 40 test samples
    spiking = zne.report.segments[0]
    assert spiking.backend == "loihi" and spiking.cost.chip is not None and spiking.cost.energy is not None
    assert set(out["baselines"]) == {"classical layer in place of the circuit", "classical front end in place of LIF"}
    assert all(len(curve) == 8 for curve in out["losses"].values())
    assert out["png"] == tmp_path / "new" / "dir" / "hybrid_demo.png" and out["png"].stat().st_size > 10_000
    printed = capsys.readouterr().out
    assert "test accuracy per placement" in printed and "baseline: classical layer in place of the circuit" in printed
    assert "QuantumLayer" in printed and "LIF" in printed and "Davies et al." in printed


def test_the_example_passes_its_options_through(tmp_path, capsys):
    spec = importlib.util.spec_from_file_location("hybrid_event_camera", EXAMPLE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    threads = torch.get_num_threads()
    try:
        out = module.main(["--chip", "nengo", "--no-zne", "--qubits", "2", "--epochs", "2", "--samples", "60",
                           "--shots", "100", "--out", str(tmp_path)])  # fmt: skip
    finally:
        torch.set_num_threads(threads)
    assert [row.name for row in out["placements"]][-1] == "chip + noisy circuit (100 shots)"
    assert out["placements"][-1].report.segments[0].backend == "nengo"
    assert "spiking s (nengo)" in capsys.readouterr().out


def test_the_digits_demo_stays_reachable(capsys):
    threads = torch.get_num_threads()
    try:
        assert main(["demo", "--task", "digits", "--qubits", "4", "--epochs", "1", "--batch-size", "256"]) == 0
    finally:
        torch.set_num_threads(threads)
    printed = capsys.readouterr().out
    assert "digits: 1437 train / 360 test samples" in printed and "hybrid (4 qubits)" in printed
