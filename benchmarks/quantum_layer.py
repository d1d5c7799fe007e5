"""Question: how fast does a batched quantum layer train (forward + backward)?

AngleEmbedding + StronglyEntanglingLayers (3 layers, CNOT ring), <Z> on every qubit,
batch 256, n = 4, 8, 12 qubits, one torch thread, all in this one process:
PennyLane default.qubit (backprop, parameter broadcasting), lightning.qubit (adjoint),
hybridai statevector in complex128 and complex64. Prints seconds (median) and ratios.

    python benchmarks/quantum_layer.py [--qubits 4 8 12] [--batch 256] [--repeats 5]
"""

from __future__ import annotations

import argparse
import statistics
import time

import pennylane as qml
import torch
from machine import cpu_model

from hybridai import QuantumLayer

LAYERS = 3


def make_circuit(n: int):
    def circuit(inputs, weights):
        qml.AngleEmbedding(inputs, wires=range(n))
        qml.StronglyEntanglingLayers(weights, wires=range(n))
        return [qml.expval(qml.PauliZ(i)) for i in range(n)]

    return circuit


def step_time(forward, x: torch.Tensor, params: list[torch.Tensor], repeats: int) -> float:
    """Median seconds of forward + backward (after one warm-up call)."""
    times = []
    for i in range(repeats + 1):
        start = time.perf_counter()
        out = forward(x)
        out.sum().backward()
        elapsed = time.perf_counter() - start
        for p in params:
            p.grad = None
        if i:
            times.append(elapsed)
    return statistics.median(times)


def bench(n: int, batch: int, repeats: int) -> dict[str, float]:
    torch.manual_seed(0)
    circuit = make_circuit(n)
    x = torch.rand(batch, n, dtype=torch.float64, requires_grad=True)
    weights = torch.rand(LAYERS, n, 3, dtype=torch.float64, requires_grad=True)
    results = {}
    for label, device, method in (("default.qubit backprop", "default.qubit", "backprop"),
                                  ("lightning.qubit adjoint", "lightning.qubit", "adjoint")):  # fmt: skip
        qnode = qml.QNode(circuit, qml.device(device, wires=n), interface="torch", diff_method=method)
        reps = repeats if not (device == "lightning.qubit" and n >= 12) else 1
        results[label] = step_time(lambda v: torch.stack(qnode(v, weights), -1), x, [x, weights], reps)  # noqa: B023
    for dtype in ("complex128", "complex64"):
        layer = QuantumLayer(circuit, n, {"weights": (LAYERS, n, 3)}, backend="statevector", dtype=dtype).double()
        with torch.no_grad():
            layer.weights.copy_(weights)
        results[f"hybridai statevector {dtype}"] = step_time(layer, x, [x, layer.weights], repeats)
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--qubits", type=int, nargs="+", default=[4, 8, 12])
    parser.add_argument("--batch", type=int, default=256)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    torch.set_num_threads(1)
    print(f"CPU: {cpu_model()}, torch threads: {torch.get_num_threads()}, batch {args.batch}, {LAYERS} SEL layers")
    print("forward + backward")
    print(
        "| qubits | default.qubit s | lightning s | hybridai c128 s | hybridai c64 s | speed-up c128 | speed-up c64 |"
    )
    print("|---|---|---|---|---|---|---|")
    for n in args.qubits:
        r = bench(n, args.batch, args.repeats)
        ref = r["default.qubit backprop"]
        c128, c64 = r["hybridai statevector complex128"], r["hybridai statevector complex64"]
        print(
            f"| {n} | {ref:.4f} | {r['lightning.qubit adjoint']:.4f} | {c128:.4f} | {c64:.4f} "
            f"| {ref / c128:.1f}x | {ref / c64:.1f}x |",
            flush=True,
        )


if __name__ == "__main__":
    main()
