"""Question: how fast does a batched quantum layer train (forward + backward)?

AngleEmbedding + StronglyEntanglingLayers (3 layers, CNOT ring), <Z> on every qubit,
batch 256, n = 4, 8, 12 qubits, one torch thread, all in this one process:
PennyLane default.qubit (backprop, parameter broadcasting), lightning.qubit (adjoint),
hybridai statevector in complex128 and complex64.

The machine may be shared, so every repeat times default.qubit and both hybridai steps back to back
(after two warm-up steps each): the speed-ups are medians of the per-repeat ratios, which a load
spike that lasts a few seconds moves far less than a ratio of medians taken minutes apart.
lightning.qubit (slow at 12 qubits) is timed apart, for reference only. Prints the CPU model, torch
threads, seconds (median, and min-max over the repeats) and speed-ups (median, and min-max).

    python benchmarks/quantum_layer.py [--qubits 4 8 12] [--batch 256] [--repeats 7]
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from collections.abc import Callable

import pennylane as qml
import torch
from machine import cpu_model

from hybridai import QuantumLayer

LAYERS = 3
WARMUP = 2


def make_circuit(n: int):
    def circuit(inputs, weights):
        qml.AngleEmbedding(inputs, wires=range(n))
        qml.StronglyEntanglingLayers(weights, wires=range(n))
        return [qml.expval(qml.PauliZ(i)) for i in range(n)]

    return circuit


Step = Callable[[], float]


def stepper(forward, x: torch.Tensor, params: list[torch.Tensor]) -> Step:
    """One forward + backward, returning its seconds."""

    def step() -> float:
        start = time.perf_counter()
        forward(x).sum().backward()
        elapsed = time.perf_counter() - start
        for p in params:
            p.grad = None
        return elapsed

    return step


def interleaved(steps: dict[str, Step], repeats: int) -> dict[str, list[float]]:
    """Seconds of ``repeats`` steps of each, timed in turn (one of each per repeat) after the warm-up."""
    for step in steps.values():
        for _ in range(WARMUP):
            step()
    times: dict[str, list[float]] = {label: [] for label in steps}
    for _ in range(repeats):
        for label, step in steps.items():
            times[label].append(step())
    return times


def bench(n: int, batch: int, repeats: int) -> dict[str, list[float]]:
    torch.manual_seed(0)
    circuit = make_circuit(n)
    x = torch.rand(batch, n, dtype=torch.float64, requires_grad=True)
    weights = torch.rand(LAYERS, n, 3, dtype=torch.float64, requires_grad=True)

    def qnode_step(device: str, method: str) -> Step:
        qnode = qml.QNode(circuit, qml.device(device, wires=n), interface="torch", diff_method=method)
        return stepper(lambda v: torch.stack(qnode(v, weights), -1), x, [x, weights])

    steps = {"default.qubit": qnode_step("default.qubit", "backprop")}
    for dtype in ("complex128", "complex64"):
        layer = QuantumLayer(circuit, n, {"weights": (LAYERS, n, 3)}, backend="statevector", dtype=dtype).double()
        with torch.no_grad():
            layer.weights.copy_(weights)
        steps[dtype] = stepper(layer, x, [x, layer.weights])
    times = interleaved(steps, repeats)
    lightning = qnode_step("lightning.qubit", "adjoint")
    lightning()  # warm-up
    times["lightning.qubit"] = [lightning() for _ in range(repeats if n < 12 else 1)]
    return times


def spread(values: list[float], digits: int) -> str:
    return f"{statistics.median(values):.{digits}f} ({min(values):.{digits}f}-{max(values):.{digits}f})"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--qubits", type=int, nargs="+", default=[4, 8, 12])
    parser.add_argument("--batch", type=int, default=256)
    parser.add_argument("--repeats", type=int, default=7)
    args = parser.parse_args()
    torch.set_num_threads(1)
    print(
        f"CPU: {cpu_model()}, torch threads: {torch.get_num_threads()}, OMP_NUM_THREADS="
        f"{os.environ.get('OMP_NUM_THREADS', 'unset')}, torch {torch.__version__}, PennyLane {qml.__version__}, "
        f"batch {args.batch}, {LAYERS} SEL layers, {args.repeats} interleaved repeats"
    )
    print("forward + backward, seconds: median (min-max); speed-up: median (min-max) of the per-repeat ratios")
    print("| qubits | default.qubit s | lightning s | hybridai c128 s | hybridai c64 s ", end="")
    print("| speed-up c128 | speed-up c64 |")
    print("|---|---|---|---|---|---|---|")
    for n in args.qubits:
        t = bench(n, args.batch, args.repeats)
        ref = t["default.qubit"]
        ratios = {d: [r / h for r, h in zip(ref, t[d], strict=True)] for d in ("complex128", "complex64")}
        digits = 4 if statistics.median(ref) < 1 else 3
        cells = [spread(ref, digits), spread(t["lightning.qubit"], 3), spread(t["complex128"], digits)]
        cells += [spread(t["complex64"], digits)] + [f"{spread(ratios[d], 1)}x" for d in ("complex128", "complex64")]
        print(f"| {n} | " + " | ".join(cells) + " |", flush=True)


if __name__ == "__main__":
    main()
