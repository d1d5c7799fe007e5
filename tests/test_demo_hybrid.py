"""The three-domain demo: one model trained end to end, its front end on a chip, its circuit exact / noisy / + ZNE."""

import importlib.util
from pathlib import Path

import pytest
import torch

from hybridai.cli import main
from hybridai.demo import machine
from hybridai.demo.event_models import build_model, to_frames
from hybridai.demo.hybrid import NOISY_ROUTES, event_data, noisy_line, run_hybrid_demo

EXAMPLE = Path(__file__).parents[1] / "examples" / "hybrid_event_camera.py"


def segment(row, kind):
    """The row's chip segment (``kind="chip"``) or its quantum segment."""
    segments = row.report.segments
    if kind == "chip":
        return next(s for s in segments if s.cost.chip is not None)
    return next(s for s in segments if s.domain == "quantum")


def test_the_demo_deploys_a_sigma_delta_front_end_on_loihi2_and_names_the_backends(tmp_path, capsys):
    out = run_hybrid_demo(epochs=6, samples=120, shots=300, seed=0, out=tmp_path / "new" / "dir")
    rows = out["placements"]
    assert [row.name for row in rows] == [
        "float (all torch)",
        "loihi2 + statevector",
        "loihi2 + density:fake_manila (300 shots)",
        "loihi2 + density:fake_manila + ZNE (300 shots)",
    ]
    float_row, exact, noisy, zne = rows
    assert float_row.accuracy > 0.4 and float_row.training > 0  # four directions: chance is 0.25
    # the same float model in every report; the exact circuit adds only the chip's quantization error
    assert all(row.report.accuracy["float"] == float_row.accuracy for row in rows[1:])
    assert exact.agreement >= 0.9 and exact.circuit_error < 1e-6 < noisy.circuit_error
    assert set(exact.seconds) == {"chip", "quantum", "classical"} and exact.seconds["chip"] > 0
    assert exact.training is None and float_row.agreement is None
    quantum = segment(zne, "quantum")
    assert quantum.backend == "density:fake_manila + ZNE" and quantum.cost.quantum.circuits == 3 * 40  # 40 test samples
    chip = segment(zne, "chip")
    assert chip.backend == "loihi2" and chip.cost.energy is None  # Loihi 2: no public energy figures
    layers = chip.cost.chip.layers
    assert sum(a.synaptic_ops for a in layers) < sum(a.dense_synaptic_ops for a in layers)  # events, not frames
    names = [b.name for b in out["baselines"]]
    assert names == ["baseline: classical layer in place of the circuit",
                     "baseline: dense front end (float) in place of sigma-delta"]  # fmt: skip
    assert all(b.training > 0 and 0 <= b.accuracy <= 1 for b in out["baselines"])
    assert all(len(curve) == 6 for curve in out["losses"].values())
    assert out["png"] == tmp_path / "new" / "dir" / "hybrid_demo.png" and out["png"].stat().st_size > 10_000
    printed = capsys.readouterr().out
    assert "SigmaDelta" in printed and "QuantumLayer" in printed and "LIF" not in printed
    for column in ("agreement with float", "circuit rel. error", "chip s (loihi2)", "quantum s", "training s"):
        assert column in printed.split("test accuracy per placement")[1].splitlines()[1]  # the table's header
    for term in ("test accuracy:", "agreement with float:", "circuit rel. error:", "chip s, quantum s, classical s:",
                 "training s:"):  # fmt: skip
        assert f"\n{term}" in printed  # the legend defines every column
    assert out["machine"] == printed.splitlines()[1] and machine.cpu_model() in out["machine"]
    assert printed.splitlines()[2] == (
        "noisy circuit on density:fake_manila (hybridai's density matrices in torch), 300 shots per circuit, seed 0 "
        "(the other route: hybridai demo --noisy aer)"
    )
    flat = " ".join(printed.split())  # the paragraphs are wrapped
    assert "no public per-event energy figures for 'loihi2'" in flat and "graded messages" in flat
    assert "max |difference| 0 on the 40 test recordings" in flat  # the chip computes what was trained


def test_the_loihi_option_keeps_the_lif_front_end_and_the_aer_route_runs_on_aer(tmp_path, capsys):
    out = run_hybrid_demo(chip="loihi", n_qubits=2, epochs=2, samples=60, shots=100, zne=False,
                          noisy=NOISY_ROUTES["aer"], out=tmp_path)  # fmt: skip
    assert [row.name for row in out["placements"]][1:] == ["loihi + statevector", "loihi + aer:fake_manila (100 shots)"]
    assert segment(out["placements"][2], "quantum").backend == "aer:fake_manila"
    chip = segment(out["placements"][1], "chip")
    assert chip.backend == "loihi" and chip.cost.energy is not None and chip.cost.energy.per_sample > 0
    printed = capsys.readouterr().out
    assert "LIF" in printed and "SigmaDelta" not in printed and "Davies et al." in printed
    assert "noisy circuit on aer:fake_manila (Qiskit Aer's simulator)" in printed and "--noisy density" in printed
    assert "in place of LIF" in out["baselines"][1].name


def test_the_akida_option_runs_a_cnn_front_end_on_frames(tmp_path, capsys):
    out = run_hybrid_demo(chip="akida", n_qubits=2, epochs=2, samples=60, shots=100, zne=False, out=tmp_path)
    exact = out["placements"][1]
    assert exact.name == "akida + statevector" and exact.circuit_error < 1e-6
    chip = segment(exact, "chip")
    assert chip.backend == "akida" and chip.cost.chip.time_steps == 1  # frames, not time steps
    assert [layer.name.split(": ")[1] for layer in chip.cost.chip.layers][:2] == ["Conv2d", "Conv2d"]
    assert chip.name.startswith("activations [0-") and chip.cost.event_word == "non-zero activations"
    printed = capsys.readouterr().out
    assert "Conv2d" in printed and "chip s (akida)" in printed
    assert "non-zero activations, " in " ".join(printed.split())  # the chip paragraph counts them in akida's word


def test_the_models_take_the_layout_their_chip_takes():
    x, _ = event_data(6, 4, seed=1)
    assert torch.equal(to_frames(x)[:, 1].flatten(1), x[:, :, 256:].sum(0))  # polarity first, as the events bin it
    sigma_delta = build_model("sigma-delta", "hybrid", 2, 4, seed=0)
    assert sigma_delta.inputs(x).dtype == torch.float64 and sigma_delta.batch_dim == 1
    assert torch.equal(sigma_delta.inputs(x), x.double() * 0.5)  # one event is one 2^-1 step of the input grid
    assert sigma_delta.trained is not sigma_delta.model  # trained through fake_quantize, the same parameters
    assert {id(p) for p in sigma_delta.trained.parameters()} == {id(p) for p in sigma_delta.model.parameters()}
    cnn = build_model("CNN", "hybrid", 2, 4, seed=0)
    assert cnn.inputs(x).shape == (6, 2, 16, 16) and cnn.batch_dim == 0 and cnn.model(cnn.inputs(x)).shape == (6, 4)
    dense = build_model("LIF", "classical front end", 2, 4, seed=0)
    assert "LIF" not in str(dense.model) and dense.model(dense.inputs(x)).shape == (6, 4)


def test_the_demo_refuses_a_chip_it_has_no_front_end_for(tmp_path):
    with pytest.raises(ValueError, match="chip='spinnaker' is not valid; accepted: one of"):
        run_hybrid_demo(chip="spinnaker", out=tmp_path)


def test_the_noisy_line_names_any_other_backend_without_a_route_to_switch_to():
    assert noisy_line("ibm:fake_manila", 50, 3) == "noisy circuit on ibm:fake_manila, 50 shots per circuit, seed 3"
    assert noisy_line("aer:fake_manila", 10, 0).endswith("(the other route: hybridai demo --noisy density)")


def test_the_cpu_model_falls_back_to_platform(monkeypatch):
    assert machine.cpu_model()

    def unreadable(*args, **kwargs):
        raise OSError("no /proc here")

    monkeypatch.setattr(machine, "open", unreadable, raising=False)
    monkeypatch.setattr(machine.platform, "processor", lambda: "Test CPU 3000")
    assert machine.cpu_model() == "Test CPU 3000"
    assert machine.machine_line().startswith("machine: Test CPU 3000, ")


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
    assert [row.name for row in out["placements"]][-1] == "nengo + density:fake_manila (100 shots)"
    assert segment(out["placements"][-1], "chip").backend == "nengo"
    assert "chip s (nengo)" in capsys.readouterr().out


def test_the_digits_demo_stays_reachable(capsys):
    threads = torch.get_num_threads()
    try:
        assert main(["demo", "--task", "digits", "--qubits", "4", "--epochs", "1", "--batch-size", "256"]) == 0
    finally:
        torch.set_num_threads(threads)
    printed = capsys.readouterr().out
    assert "digits: 1437 train / 360 test samples" in printed and "hybrid (4 qubits)" in printed


def test_the_zne_note_explains_with_numbers_what_zne_removes_and_what_it_cannot(tmp_path, capsys):
    out = run_hybrid_demo(chip="loihi", epochs=4, samples=90, shots=300, seed=0, out=tmp_path)
    printed = capsys.readouterr().out
    text = " ".join(printed.split("ZNE and the circuit rel. error:")[1].split("\n\n")[0].split())
    rows = {row.name: row for row in out["placements"]}
    noisy_row = rows["loihi + density:fake_manila (300 shots)"]
    zne_row = rows["loihi + density:fake_manila + ZNE (300 shots)"]
    assert f"with 300 shots it is {noisy_row.circuit_error:.3f} noisy and {zne_row.circuit_error:.3f} with ZNE" in text
    numbers = text.split("no read errors) ")[1].split(". With shots")[0].split(" and ")
    exact_noisy, exact_zne = float(numbers[0]), float(numbers[1])
    assert exact_zne < exact_noisy  # without shots and read errors, ZNE removes gate noise
    assert "multiplies by 2.3" in text
    # ZNE runs three times the circuits of the noisy row (its seconds are timed after a warm-up run; speed itself is
    # not asserted here)
    assert segment(zne_row, "quantum").cost.quantum.circuits == 3 * segment(noisy_row, "quantum").cost.quantum.circuits
