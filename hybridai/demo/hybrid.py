"""``hybridai demo``: ONE model with all three kinds of computing, trained end to end, then deployed.

Synthetic event-camera recordings (``hybridai.events.moving_shapes``: a square or disk crossing a
16x16 sensor in one of four directions, with shot noise) are binned into time steps. The model
(``event_models``; the front end is the chip's, ``--chip``):

    events [T, B, 512] -> sigma-delta front end (Loihi 2)                         chip
                       -> Tanh                                                    classical
                       -> QuantumLayer (4 qubits)                                 quantum
                       -> Linear                                                  classical head

is trained end to end on the CPU (the chip's front end through ``loihi2.fake_quantize``, so it is trained
with the weights the chip holds), then deployed with ``hybridai.deploy(model, chip=..., quantum=...,
classical="torch")``: the front end on the bit-exact Loihi 2 emulator, the circuit on an exact simulator,
on a noisy fake IBM device (FakeManila's noise model, with shots) and on the same device with zero-noise
extrapolation, the rest on torch. The noisy device is simulated by ``density:fake_manila`` (hybridai's own
density matrices, the noise model read as Qiskit Aer reads it) unless ``noisy=`` names another backend
(``NOISY_ROUTES["aer"]``: Qiskit Aer itself, the same noise model, slower). ``chip="loihi"`` (or ``"nengo"``)
puts a LIF front end there instead, ``chip="akida"`` a small CNN on frames. Two baselines are trained the same
way from the same data: a classical layer in place of the circuit, and a dense float front end in place of the
chip's.
"""

from __future__ import annotations

import textwrap
import time
from pathlib import Path
from typing import Any

import torch
from torch import nn

from hybridai.core.errors import bounded_int, invalid
from hybridai.core.module import summary
from hybridai.demo.event_models import FRONT_ENDS, SENSOR, EventModel, build_model
from hybridai.demo.machine import machine_line
from hybridai.demo.placement_table import WIDTH, Placement, chip_cost, deployed_row, legend, placement_table

DURATION_US = 40_000
NOISY_ROUTES = {"density": "density:fake_manila", "aer": "aer:fake_manila"}  # ``hybridai demo --noisy density|aer``
NOISY_DEVICE = NOISY_ROUTES["density"]
SIMULATORS = {"density": "hybridai's density matrices in torch", "aer": "Qiskit Aer's simulator"}
NOISE_HZ = 100.0


def event_data(samples: int, steps: int, seed: int, noise_hz: float = NOISE_HZ) -> tuple[torch.Tensor, torch.Tensor]:
    """Event counts per time step ``[T, samples, 512]`` and direction labels ``[samples]``; ``noise_hz``: shot-noise
    events per pixel per second."""
    from hybridai import events

    camera = events.EventCamera(shot_noise_hz=noise_hz, refractory_us=1000)
    streams, labels = events.moving_shapes(
        samples, sensor_size=SENSOR, duration_us=DURATION_US, n_frames=16, camera=camera, seed=seed
    )
    to_steps = events.ToTimeSteps(SENSOR, num_steps=steps, duration_us=DURATION_US, flatten=True)
    return torch.stack([to_steps(s) for s in streams], dim=1), torch.as_tensor(labels)


def train(
    model: EventModel, x: torch.Tensor, y: torch.Tensor, epochs: int, seed: int, label: str, batch_size: int = 32
) -> list[float]:
    """``model.trained`` trained by ``hybridai.training.fit``: Adam + cross-entropy on minibatches shuffled with
    ``seed`` (``x`` in the model's layout, its samples along ``model.batch_dim``); the mean loss per epoch."""
    from hybridai.training import TensorBatches, fit

    optimizer = torch.optim.Adam(model.trained.parameters(), lr=0.01)
    batches = TensorBatches(x, y, batch_size, batch_dim=model.batch_dim, seed=seed)
    history = fit(model.trained, batches, None, nn.functional.cross_entropy, optimizer, epochs,
                  batch_dim=model.batch_dim, desc=f"training {label}")  # fmt: skip
    return [epoch["train_loss"] for epoch in history]


@torch.no_grad()
def accuracy(model: nn.Module, x: torch.Tensor, y: torch.Tensor) -> float:
    return float((model(x).argmax(1) == y).double().mean())


def placements(
    model: nn.Module,
    calibration: torch.Tensor | None,
    x: torch.Tensor,
    y: torch.Tensor,
    *,
    chip: str = "loihi2",
    noisy: str = NOISY_DEVICE,
    shots: int = 1000,
    zne: bool = True,
    seed: int = 0,
) -> list[Placement]:
    """Deploy ``model`` with its front end on ``chip`` and its circuit exact, noisy and noisy + ZNE; one row each,
    named by the backends."""
    from tqdm.auto import tqdm

    from hybridai.deployment import deploy
    from hybridai.quantum.mitigation import ZNE

    routes: list[tuple[str, str, int | None, Any]] = [(f"{chip} + statevector", "statevector", None, None),
              (f"{chip} + {noisy} ({shots} shots)", noisy, shots, None)]  # fmt: skip
    if zne:
        routes.append((f"{chip} + {noisy} + ZNE ({shots} shots)", noisy, shots, ZNE()))
    rows = []
    for name, quantum, route_shots, mitigation in tqdm(routes, desc="deploying", unit="placement", leave=False):
        options = {"seed": seed} if quantum != "statevector" else None
        deployment = deploy(model, chip=chip, quantum=quantum, classical="torch", shots=route_shots,
                            mitigation=mitigation, calibration=calibration, quantum_options=options)  # fmt: skip
        deployment.run(x[:2])  # once untimed: the first run builds plans and noise tables, which later runs reuse
        rows.append(deployed_row(name, deployment.report(x, y)))
    return rows


def zne_note(model: nn.Module, calibration: torch.Tensor | None, x: torch.Tensor, y: torch.Tensor, *, chip: str,
             noisy: str, shots: int, seed: int, sampled: tuple[float, float]) -> str:  # fmt: skip
    """What ZNE can and cannot remove from the circuit's error with shots (``sampled``: the noisy and the ZNE rows'
    circuit errors): read errors are not folded, shot noise is amplified; with the same deployment's exact values
    (no shots, no read errors) beside them."""
    from hybridai.deployment import deploy
    from hybridai.quantum.mitigation import ZNE

    zne = ZNE()
    errors = []
    for mitigation in (None, zne):
        deployment = deploy(model, chip=chip, quantum=noisy, classical="torch", mitigation=mitigation,
                            calibration=calibration, quantum_options={"seed": seed})  # fmt: skip
        quantum = next(s for s in deployment.report(x, y).segments if s.domain == "quantum")
        assert quantum.alone is not None  # a segment after the chip's: measured alone too
        errors.append(quantum.alone["relative error"])
    gain = float(sum(float(c) ** 2 for c in zne.coefficients) ** 0.5)
    factors = ", ".join(f"{f:g}" for f in zne.scale_factors)
    return textwrap.fill(
        f"ZNE and the circuit rel. error: with {shots} shots it is {sampled[0]:.3f} noisy and {sampled[1]:.3f} with "
        f"ZNE; on exact values (no shots, hence no read errors) {errors[0]:.3f} and {errors[1]:.3f}. With shots, part "
        f"of the error is read errors, which folding does not scale (ZNE cannot remove them), and shot noise, which "
        f"{zne.extrapolation} extrapolation at scale factors {factors} multiplies by {gain:.1f} (the root of the sum "
        "of its squared coefficients): that part can change predictions that the noisy circuit kept.",
        WIDTH,
    )


def noisy_line(noisy: str, shots: int, seed: int) -> str:
    """One line: which backend simulates the noisy device (the demo's noisy rows), with what, and the other route."""
    family = noisy.partition(":")[0]
    how = f" ({SIMULATORS[family]})" if family in SIMULATORS else ""
    switch = ""
    if noisy in NOISY_ROUTES.values():
        other = next(key for key, name in NOISY_ROUTES.items() if name != noisy)
        switch = f" (the other route: hybridai demo --noisy {other})"
    return f"noisy circuit on {noisy}{how}, {shots} shots per circuit, seed {seed}{switch}"


def check_out(out: Path) -> Path:
    """The folder for the PNG, created and checked writable before anything is trained."""
    try:
        out.mkdir(parents=True, exist_ok=True)
        probe = out / ".hybridai-write-check"
        probe.write_bytes(b"")
        probe.unlink()
    except OSError as error:
        raise invalid("out", str(out), f"a folder that can be created and written ({error.strerror})") from None
    return out


def run_hybrid_demo(
    *,
    n_qubits: int = 4,
    epochs: int = 15,
    batch_size: int = 32,
    samples: int = 300,
    steps: int = 8,
    shots: int = 1000,
    chip: str = "loihi2",
    noisy: str = NOISY_DEVICE,
    zne: bool = True,
    seed: int = 0,
    out: Path | str = ".",
) -> dict[str, Any]:
    """Train the three-domain model and its baselines, deploy it, print the tables, save one PNG.

    ``chip``: ``"loihi2"`` (a sigma-delta front end), ``"loihi"`` or ``"nengo"`` (LIF), ``"akida"`` (a CNN on
    frames). Returns the placements (the float row, then one per deployment), the baselines' rows, the training
    losses, the machine line and the PNG's path."""
    from hybridai.deployment.build import takes_calibration

    if chip not in FRONT_ENDS:
        raise invalid("chip", chip, f"one of {sorted(FRONT_ENDS)}")
    for name, value, low, high in (
        ("qubits", n_qubits, 2, 5),  # FakeManila has 5 qubits
        ("epochs", epochs, 1, None),
        ("batch_size", batch_size, 1, None),
        ("samples", samples, 24, None),
        ("steps", steps, 1, None),
        ("shots", shots, 1, None),
        ("seed", seed, 0, 2**31 - 1),
    ):
        bounded_int(name, value, low, high)
    folder = check_out(Path(out))
    start = time.perf_counter()
    x, y = event_data(samples, steps, seed)
    split = 2 * samples // 3
    n_classes = int(y.max()) + 1
    front = FRONT_ENDS[chip]
    print(f"event camera: {samples} recordings ({split} train / {samples - split} test), {steps} time steps x "
          f"{x.shape[2]} inputs, {n_classes} directions; front end: {front} on {chip}")  # fmt: skip
    machine = machine_line()
    print(machine)
    print(noisy_line(noisy, shots, seed) + "\n")

    models = {kind: build_model(front, kind, n_qubits, n_classes, seed) for kind in
              ("hybrid", "no circuit", "classical front end")}  # fmt: skip
    print(summary(models["hybrid"].model))
    losses, seconds, trains, tests = train_all(models, x, y[:split], split, epochs, seed, batch_size)
    y_test = y[split:]

    hybrid = models["hybrid"]
    calibration = trains["hybrid"] if takes_calibration(chip) else None  # loihi2 quantizes from the model alone
    rows = placements(hybrid.model, calibration, tests["hybrid"], y_test, chip=chip, noisy=noisy, shots=shots,
                      zne=zne, seed=seed)  # fmt: skip
    float_row = Placement("float (all torch)", rows[0].report.accuracy["float"], training=seconds["hybrid"])
    baselines = [
        Placement(name, accuracy(models[kind].model, tests[kind], y_test), training=seconds[kind])
        for kind, name in (("no circuit", "baseline: classical layer in place of the circuit"),
                           ("classical front end", f"baseline: dense front end (float) in place of {front}"))
    ]  # fmt: skip
    print(f"\ntest accuracy per placement ({len(y_test)} test recordings, chance {1 / n_classes:.2f}):")
    print(placement_table([float_row, *rows, *baselines], chip))
    print(legend(chip, len(y_test), n_classes, epochs, split, n_qubits, front))
    print()
    print(chip_cost(rows[0].report, chip))
    if front == "sigma-delta":
        print(exactness(hybrid, tests["hybrid"]))
    if zne:
        print()
        sampled = (rows[-2].circuit_error or 0.0, rows[-1].circuit_error or 0.0)
        print(zne_note(hybrid.model, calibration, tests["hybrid"], y_test, chip=chip, noisy=noisy, shots=shots,
                       seed=seed, sampled=sampled))  # fmt: skip
    print(f"\ncosts of the last deployment ({rows[-1].name}):")
    print(rows[-1].report)
    png = folder / "hybrid_demo.png"
    save_figure(losses, [float_row, *rows], baselines, chip, png)
    print(f"\nsaved {png}; {epochs} epochs, seed {seed}, {time.perf_counter() - start:.0f} s in all")
    return {"placements": [float_row, *rows], "baselines": baselines, "losses": losses, "machine": machine,
            "png": png}  # fmt: skip


def train_all(
    models: dict[str, EventModel],
    x: torch.Tensor,
    y: torch.Tensor,
    split: int,
    epochs: int,
    seed: int,
    batch_size: int,
) -> tuple[dict[str, list[float]], dict[str, float], dict[str, torch.Tensor], dict[str, torch.Tensor]]:
    """Train every model on the first ``split`` recordings of ``x`` (labels ``y``); per model: the losses, the
    training seconds, and its training and test inputs in its own layout."""
    losses, seconds, trains, tests = {}, {}, {}, {}
    for kind, model in models.items():
        inputs = model.inputs(x)
        trains[kind] = inputs.narrow(model.batch_dim, 0, split)
        tests[kind] = inputs.narrow(model.batch_dim, split, inputs.shape[model.batch_dim] - split)
        with torch.no_grad():  # the first call imports and plans (PennyLane, the circuit): not training time
            model.trained(trains[kind].narrow(model.batch_dim, 0, 2))
        t0 = time.perf_counter()
        losses[kind] = train(model, trains[kind], y, epochs, seed, kind, batch_size)
        seconds[kind] = time.perf_counter() - t0
        model.model.eval()
    return losses, seconds, trains, tests


def exactness(model: EventModel, x: torch.Tensor) -> str:
    """One line: the Loihi 2 emulator against the fake-quantized front end the model was trained through."""
    from hybridai.deployment import deploy
    from hybridai.neuromorphic import loihi2

    front = model.fake_quantized
    assert front is not None  # a sigma-delta model's
    with torch.no_grad():
        expected = loihi2.fake_quantize(front)(x)
    got = deploy(front, "loihi2").run(x)
    difference = float((got - expected).abs().max())
    return textwrap.fill(
        f"the loihi2 segment against the fake-quantized front end it was trained as (8-bit weight mantissas): "
        f"max |difference| {difference:g} on the {x.shape[1]} test recordings",
        WIDTH,
        subsequent_indent="  ",
    )


def save_figure(
    losses: dict[str, list[float]], rows: list[Placement], baselines: list[Placement], chip: str, png: Path
) -> None:
    """Training curves and accuracy per placement, drawn with matplotlib's object API (no pyplot state)."""
    from matplotlib.figure import Figure

    fig = Figure(figsize=(11, 4), layout="tight")
    curves, bars = fig.subplots(1, 2, width_ratios=(1, 1.4))
    for kind, values in losses.items():
        curves.plot(range(1, len(values) + 1), values, marker="o", markersize=3, label=kind)
    curves.set_xlabel("epoch")
    curves.set_ylabel("training loss")
    curves.set_title("training (CPU)", fontsize=10)
    curves.legend(fontsize=8)
    shown = [*rows, *baselines]
    values = [r.accuracy for r in shown]
    colours = ["0.5"] + ["tab:blue"] * (len(rows) - 1) + ["tab:orange"] * len(baselines)
    bars.barh(range(len(shown)), values, color=colours)
    bars.set_yticks(range(len(shown)), [r.name for r in shown], fontsize=8)
    bars.invert_yaxis()
    bars.set_xlim(0, 1.12)  # room for the labels
    bars.set_xlabel("test accuracy")
    bars.set_title(f"one model: front end on {chip}, circuit exact / noisy / + ZNE", fontsize=10)
    for i, value in enumerate(values):
        bars.text(value + 0.01, i, f"{value:.3f}", va="center", fontsize=8)
    fig.savefig(png, dpi=110)


__all__ = ["NOISY_DEVICE", "NOISY_ROUTES", "event_data", "noisy_line", "placements", "run_hybrid_demo"]
