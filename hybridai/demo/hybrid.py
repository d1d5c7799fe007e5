"""``hybridai demo``: ONE model with all three kinds of computing, trained end to end, then deployed.

Synthetic event-camera recordings (``hybridai.events.moving_shapes``: a square or disk crossing a
16x16 sensor in one of four directions, with shot noise) are binned into time steps. The model:

    events [T, B, 512] -> Linear -> LIF -> RateDecoder           spiking front end
                       -> Linear -> Tanh                         classical
                       -> QuantumLayer (4 qubits)                quantum
                       -> Linear                                 classical head

is trained in float on the CPU, then deployed with ``hybridai.deploy``: the spiking segment on the
bit-exact Loihi emulator, the circuit on an exact simulator, on a noisy fake IBM device (FakeManila's
noise model, with shots) and on the same device with zero-noise extrapolation, the rest on torch.
Two baselines are trained the same way from the same data: a classical layer in place of the circuit,
and a classical front end (events per time step, averaged -> Linear -> ReLU) in place of the spiking one.
Firing rates in [0, 1] (not raw counts) feed the classical layer, so its Tanh does not saturate at once.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from pathlib import Path

import torch
from torch import nn

from hybridai.core.errors import bounded_int, invalid, positive_int
from hybridai.core.module import summary
from hybridai.core.text_table import format_table
from hybridai.quantum import QuantumLayer
from hybridai.spiking import LIF, RateDecoder

SENSOR = (16, 16, 2)
DURATION_US = 40_000
HIDDEN = 32
N_LAYERS = 2
NOISY_DEVICE = "aer:fake_manila"
NOISE_HZ = 100.0


def angle_classifier(inputs, weights):
    """Angle embedding of tanh features in [-pi/2, pi/2] (RX(pi) and RX(-pi) are the same state: a saturated
    tanh would erase the sign), entangling layers, <Z> per qubit."""
    import pennylane as qml

    wires = range(weights.shape[1])
    qml.AngleEmbedding(inputs * (math.pi / 2), wires=wires)
    qml.BasicEntanglerLayers(weights, wires=wires)
    return [qml.expval(qml.PauliZ(w)) for w in wires]


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


def build_model(kind: str, n_qubits: int, n_inputs: int, n_classes: int, seed: int) -> nn.Sequential:
    """``kind``: "hybrid" (spiking + classical + quantum), "no circuit" (a Linear+Tanh in place of the
    circuit) or "no spiking" (mean events per step -> Linear -> ReLU in place of LIF). Seeded, the global
    RNG untouched."""
    with torch.random.fork_rng():
        torch.manual_seed(seed)
        if kind == "no spiking":
            front = [RateDecoder(), nn.Linear(n_inputs, HIDDEN), nn.ReLU()]
        else:
            front = [nn.Linear(n_inputs, HIDDEN), LIF(0.8, reset="zero"), RateDecoder()]
        if kind == "no circuit":
            middle = [nn.Linear(n_qubits, n_qubits), nn.Tanh()]
        else:
            middle = [QuantumLayer(angle_classifier, n_qubits, {"weights": (N_LAYERS, n_qubits)})]
        return nn.Sequential(*front, nn.Linear(HIDDEN, n_qubits), nn.Tanh(), *middle, nn.Linear(n_qubits, n_classes))


def train(
    model: nn.Module, x: torch.Tensor, y: torch.Tensor, epochs: int, seed: int, label: str, batch_size: int = 32
) -> list[float]:
    """Adam + cross-entropy on minibatches (``x`` time-major); the mean loss per epoch."""
    from tqdm.auto import tqdm

    optimizer = torch.optim.Adam(model.parameters(), lr=0.01)
    generator = torch.Generator().manual_seed(seed)
    losses = []
    for _ in tqdm(range(epochs), desc=f"training {label}", unit="epoch", leave=False):
        total = 0.0
        for batch in torch.randperm(len(y), generator=generator).split(batch_size):
            optimizer.zero_grad()
            loss = nn.functional.cross_entropy(model(x.index_select(1, batch)), y[batch])
            loss.backward()
            optimizer.step()
            total += loss.item() * len(batch)
        losses.append(total / len(y))
    return losses


@torch.no_grad()
def accuracy(model: nn.Module, x: torch.Tensor, y: torch.Tensor) -> float:
    return float((model(x).argmax(1) == y).double().mean())


@dataclass(frozen=True)
class Placement:
    """One row of the accuracy table: where each domain ran, and what the deployment measured."""

    name: str
    quantum: str
    accuracy: float
    agreement: float
    circuit_error: float
    seconds: dict[str, float]
    report: object


def placements(
    model: nn.Module,
    calibration: torch.Tensor,
    x: torch.Tensor,
    y: torch.Tensor,
    *,
    chip: str = "loihi",
    noisy: str = NOISY_DEVICE,
    shots: int = 1000,
    zne: bool = True,
    seed: int = 0,
) -> list[Placement]:
    """Deploy ``model`` with its spiking segment on ``chip`` and its circuit exact, noisy and noisy + ZNE."""
    from tqdm.auto import tqdm

    from hybridai.deployment import deploy
    from hybridai.quantum.mitigation import ZNE

    routes = [("chip + exact circuit", "statevector", None, None), (f"chip + noisy circuit ({shots} shots)", noisy,
              shots, None)]  # fmt: skip
    if zne:
        routes.append((f"chip + noisy circuit + ZNE ({shots} shots)", noisy, shots, ZNE()))
    rows = []
    for name, quantum, route_shots, mitigation in tqdm(routes, desc="deploying", unit="placement", leave=False):
        options = {"seed": seed} if quantum != "statevector" else None
        deployment = deploy(model, spiking=chip, quantum=quantum, classical="torch", shots=route_shots,
                            mitigation=mitigation, calibration=calibration, quantum_options=options)  # fmt: skip
        report = deployment.report(x, y)
        if not rows:  # the float model's own numbers come with every report; take them once
            rows.append(Placement("float (all torch)", "-", report.accuracy["float"], 1.0, 0.0, {}, None))
        seconds: dict[str, float] = {}
        for segment in report.segments:
            seconds[segment.domain] = seconds.get(segment.domain, 0.0) + segment.seconds
        agreement = report.segments[-1].agreement.get("prediction agreement", float("nan"))
        circuit = [s.alone or s.agreement for s in report.segments if s.domain == "quantum"]
        error = max(c.get("relative error", float("nan")) for c in circuit)
        rows.append(Placement(name, quantum, report.accuracy["deployed"], agreement, error, seconds, report))
    return rows


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
    chip: str = "loihi",
    noisy: str = NOISY_DEVICE,
    zne: bool = True,
    seed: int = 0,
    out: Path | str = ".",
) -> dict[str, object]:
    """Train the three-domain model and its baselines, deploy it, print the tables, save one PNG.

    Returns the placements, the baselines' test accuracies, the training losses and the PNG's path."""
    bounded_int("qubits", n_qubits, 2, 5)  # FakeManila has 5 qubits
    positive_int("epochs", epochs)
    positive_int("batch_size", batch_size)
    bounded_int("samples", samples, 24)
    positive_int("steps", steps)
    positive_int("shots", shots)
    bounded_int("seed", seed, 0, 2**31 - 1)
    folder = check_out(Path(out))
    start = time.perf_counter()
    x, y = event_data(samples, steps, seed)
    split = 2 * samples // 3
    x_train, y_train, x_test, y_test = x[:, :split], y[:split], x[:, split:], y[split:]
    n_classes = int(y.max()) + 1
    print(f"event camera: {samples} recordings ({split} train / {samples - split} test), {steps} time steps x "
          f"{x.shape[2]} inputs, {n_classes} directions; torch threads: {torch.get_num_threads()}\n")  # fmt: skip

    models = {kind: build_model(kind, n_qubits, x.shape[2], n_classes, seed) for kind in
              ("hybrid", "no circuit", "no spiking")}  # fmt: skip
    print(summary(models["hybrid"]))
    losses, train_seconds = {}, {}
    for kind, model in models.items():
        t0 = time.perf_counter()
        losses[kind] = train(model, x_train, y_train, epochs, seed, kind, batch_size)
        train_seconds[kind] = time.perf_counter() - t0
    for model in models.values():
        model.eval()

    rows = placements(models["hybrid"], x_train, x_test, y_test, chip=chip, noisy=noisy, shots=shots, zne=zne,
                      seed=seed)  # fmt: skip
    baselines = {
        "classical layer in place of the circuit": accuracy(models["no circuit"], x_test, y_test),
        "classical front end in place of LIF": accuracy(models["no spiking"], x_test, y_test),
    }
    print(f"\ntest accuracy per placement ({len(y_test)} test recordings, chance {1 / n_classes:.2f}):")
    print(placement_table(rows, baselines, train_seconds, chip))
    print(f"\ncosts of the last deployment ({rows[-1].name}):")
    print(rows[-1].report)
    png = folder / "hybrid_demo.png"
    save_figure(losses, rows, baselines, png)
    print(f"\nsaved {png}; {epochs} epochs, seed {seed}, {time.perf_counter() - start:.0f} s in all")
    return {"placements": rows, "baselines": baselines, "losses": losses, "png": png}


def placement_table(rows: list[Placement], baselines: dict[str, float], train_seconds: dict[str, float],
                    chip: str) -> str:  # fmt: skip
    """Accuracy, agreement with the float model's predictions and seconds per domain, one row per placement."""

    def secs(row: Placement, domain: str) -> str:
        return f"{row.seconds[domain]:.2f}" if domain in row.seconds else "-"

    table = [[r.name, f"{r.accuracy:.3f}", f"{r.agreement:.3f}" if r.report else "-",
              f"{r.circuit_error:.3f}" if r.report else "-", secs(r, "spiking"), secs(r, "quantum"),
              secs(r, "classical")] for r in rows]  # fmt: skip
    table[0][4:] = [f"training {train_seconds['hybrid']:.1f}", "", ""]
    for name, value in baselines.items():
        kind = "no circuit" if "circuit" in name else "no spiking"
        table.append([f"baseline: {name}", f"{value:.3f}", "-", "-", f"training {train_seconds[kind]:.1f}", "", ""])
    headers = ["placement", "test accuracy", "agreement with float", "circuit rel. error", f"spiking s ({chip})",
               "quantum s", "classical s"]  # fmt: skip
    return format_table(headers, table)


def save_figure(losses: dict[str, list[float]], rows: list[Placement], baselines: dict[str, float], png: Path) -> None:
    """Training curves and accuracy per placement, drawn with matplotlib's object API (no pyplot state)."""
    from matplotlib.figure import Figure

    fig = Figure(figsize=(11, 4), layout="tight")
    curves, bars = fig.subplots(1, 2, width_ratios=(1, 1.4))
    for kind, values in losses.items():
        curves.plot(range(1, len(values) + 1), values, marker="o", markersize=3, label=kind)
    curves.set_xlabel("epoch")
    curves.set_ylabel("training loss")
    curves.set_title("training (float, CPU)", fontsize=10)
    curves.legend(fontsize=8)
    names = [r.name for r in rows] + [f"baseline: {n}" for n in baselines]
    values = [r.accuracy for r in rows] + list(baselines.values())
    colours = ["0.5"] + ["tab:blue"] * (len(rows) - 1) + ["tab:orange"] * len(baselines)
    bars.barh(range(len(names)), values, color=colours)
    bars.set_yticks(range(len(names)), names, fontsize=8)
    bars.invert_yaxis()
    bars.set_xlim(0, 1)
    bars.set_xlabel("test accuracy")
    bars.set_title("one model: spiking on the chip, circuit exact / noisy / + ZNE", fontsize=10)
    for i, value in enumerate(values):
        bars.text(value + 0.01, i, f"{value:.3f}", va="center", fontsize=8)
    fig.savefig(png, dpi=110)


__all__ = ["build_model", "event_data", "placements", "run_hybrid_demo"]
