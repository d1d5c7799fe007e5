"""Learn a device's noise by gradient descent: per-qubit rates fitted through ``density`` to measured values.

The "device" is FakeManila (5 qubits) sampled by Qiskit Aer with shots (``aer:fake_manila``: its published noise
model, coupling map and basis gates). Calibration circuits of one shape (a rotation per qubit, a CNOT chain, another
rotation per qubit; random angles) are measured there: <Z> of every qubit. Two noise models, written as PennyLane
channels after every gate with one rate per qubit (``hybridai.LearnableNoise``), are fitted by Adam to the training
circuits' measured values through ``density`` (noiseless gates, the channels differentiable in their rates):

- learned: depolarizing, amplitude and phase damping after every gate, and read errors (P(1|0), P(0|1));
- depolarizing only: one depolarizing rate per qubit, no read errors.

Printed, on held-out circuits: the RMS error against the measured values of the two fitted models, of the noiseless
circuit, and of FakeManila's own published model (``density:fake_manila`` with 10^6 shots: the model the device
sampled from, so its error is the shot noise of the measurements); then the fitted rates, and the wall time of the
same fit on ``density`` and on PennyLane's ``default.mixed`` (its best: one broadcast call per step).
Saves ``DIR/learn_noise.png``: predicted against measured values on the held-out circuits. Measured on a 2-core
Intel Xeon (``time python examples/learn_noise.py``): 28 s in all; the fit on density 1.1 s, on default.mixed 18.9 s.

    python examples/learn_noise.py [--steps 80] [--shots 4000] [--peer-steps 80] [--out DIR]
"""

from __future__ import annotations

import argparse
import math
import time
from pathlib import Path

import pennylane as qml
import torch
from tqdm.auto import tqdm

from hybridai import LearnableNoise, QuantumLayer

N = 5  # FakeManila's qubits
DEVICE = "aer:fake_manila"
SEED = 7


def calibration(inputs):
    """One calibration circuit per row of ``inputs [B, 3N]``: RY per qubit, a CNOT chain, RZ and RX per qubit (the
    RZ turns coherences that dephasing shrinks into ones the RX reads); <Z_i>."""
    for i in range(N):
        qml.RY(inputs[..., i], wires=i)
    for i in range(N - 1):
        qml.CNOT(wires=[i, i + 1])
    for i in range(N):
        qml.RZ(inputs[..., N + i], wires=i)
        qml.RX(inputs[..., 2 * N + i], wires=i)
    return [qml.expval(qml.PauliZ(i)) for i in range(N)]


def angles(rows: int, generator: torch.Generator) -> torch.Tensor:
    return math.pi * torch.rand(rows, 3 * N, generator=generator, dtype=torch.float64)


def measured(x: torch.Tensor, shots: int) -> torch.Tensor:
    """The device's values: FakeManila's noise model sampled by Aer."""
    device = QuantumLayer(calibration, n_qubits=N, n_inputs=3 * N, backend=DEVICE, shots=shots, seed=SEED)
    with torch.no_grad():
        return device(x)


def fit(noise: LearnableNoise, backend: str, x: torch.Tensor, y: torch.Tensor, steps: int, label: str) -> float:
    """Adam on the noise rates (mean squared error of the values); the wall time in seconds."""
    model = QuantumLayer(noise(calibration), n_qubits=N, n_inputs=3 * N, backend=backend)
    optimiser = torch.optim.Adam(noise.parameters(), lr=0.1)
    started = time.perf_counter()
    for _ in tqdm(range(steps), desc=label, leave=False):
        optimiser.zero_grad()
        loss = torch.mean((model(x) - y) ** 2)
        loss.backward()
        optimiser.step()
    return time.perf_counter() - started


def predict(noise: LearnableNoise | None, x: torch.Tensor, backend: str = "density", **options) -> torch.Tensor:
    circuit = calibration if noise is None else noise(calibration)
    with torch.no_grad():
        return QuantumLayer(circuit, n_qubits=N, n_inputs=3 * N, backend=backend, **options)(x)


def rms(a: torch.Tensor, b: torch.Tensor) -> float:
    return float(torch.sqrt(torch.mean((a - b) ** 2)))


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=80)
    parser.add_argument("--shots", type=int, default=4000)
    parser.add_argument("--train", type=int, default=48)
    parser.add_argument("--test", type=int, default=32)
    parser.add_argument("--peer-steps", type=int, default=80, help="steps of the same fit on default.mixed (0: none)")
    parser.add_argument("--out", type=Path, default=Path("."))
    args = parser.parse_args(argv)

    generator = torch.Generator().manual_seed(SEED)
    x_train, x_test = angles(args.train, generator), angles(args.test, generator)
    y_train, y_test = measured(x_train, args.shots), measured(x_test, args.shots)

    learned = LearnableNoise(N)
    depolarizing = LearnableNoise(N, kinds=("depolarizing",), readout=False)
    seconds = fit(learned, "density", x_train, y_train, args.steps, "learned (density)")
    fit(depolarizing, "density", x_train, y_train, args.steps, "depolarizing only (density)")
    predictions = {
        "learned (depolarizing, damping, read errors)": predict(learned, x_test),
        "depolarizing only": predict(depolarizing, x_test),
        "noiseless": predict(None, x_test),
        "FakeManila's published model": predict(None, x_test, "density:fake_manila", shots=10**6, seed=SEED),
    }
    errors = {name: rms(p, y_test) for name, p in predictions.items()}
    print(f"held-out RMS error of <Z> ({args.test} circuits x {N} qubits, {args.shots} shots each on {DEVICE}; "
          f"shot noise alone: about {1 / math.sqrt(args.shots):.4f})")  # fmt: skip
    for name, error in errors.items():
        print(f"  {name:46s} {error:.4f}")
    rates = {k: v.detach() for k, v in learned.rates().items()}
    print("learned rates per qubit:")
    for kind, values in rates.items():
        rows = values if kind == "readout" else values[None]
        names = ["P(1|0)", "P(0|1)"] if kind == "readout" else [kind]
        for name, row in zip(names, rows, strict=True):
            print(f"  {name:18s} " + " ".join(f"{v:.4f}" for v in row.tolist()))

    peer = None
    if args.peer_steps:
        peer_noise = LearnableNoise(N)
        peer = fit(peer_noise, "pennylane:default.mixed", x_train, y_train, args.peer_steps, "learned (default.mixed)")
        per_step = (peer / args.peer_steps) / (seconds / args.steps)
        same = ""
        if args.peer_steps == args.steps:
            gap = max((a - b).abs().max().item() for a, b in zip(peer_noise.rates().values(), rates.values(),
                                                                 strict=True))  # fmt: skip
            same = f"; the fitted rates differ by at most {gap:.1e}"
        print(f"the fit on density: {seconds:.1f} s for {args.steps} steps; on default.mixed: {peer:.1f} s for "
              f"{args.peer_steps} steps ({per_step:.1f}x the time per step{same})")  # fmt: skip

    png = args.out / "learn_noise.png"
    _plot(predictions, y_test, png)
    return {"errors": errors, "rates": rates, "seconds": seconds, "peer_seconds": peer, "png": png}


def _plot(predictions: dict, measured_values: torch.Tensor, path: Path) -> None:
    import matplotlib.figure

    figure = matplotlib.figure.Figure(figsize=(6, 6))  # no pyplot: the process's backend is left alone
    axes = figure.add_subplot()
    for name, values in predictions.items():
        axes.scatter(measured_values.flatten(), values.flatten(), s=8, label=name)
    axes.plot([-1, 1], [-1, 1], color="0.5", linewidth=1)
    axes.set_xlabel(f"measured <Z> ({DEVICE})")
    axes.set_ylabel("predicted <Z>")
    axes.legend(fontsize=8)
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path, dpi=120)


if __name__ == "__main__":
    main()
