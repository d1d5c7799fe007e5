"""Question: how much does one training step of a SMALL quantum layer cost, where Python overhead
(recording the circuit, converting it, many tiny torch ops) rather than simulation dominates?

Two workloads, forward + backward (+ an SGD step for the demo), one torch thread, one process:

- PennyLane's "quantum nodes as torch layers" demo: make_moons-sized inputs (2 features), 2 qubits,
  AngleEmbedding + BasicEntanglerLayers (6 layers), <Z> on both qubits, batch 5, SGD;
- a 4-qubit layer of the same form (AngleEmbedding + BasicEntanglerLayers x6), batch 32.

Each against PennyLane's own ``qml.qnn.TorchLayer`` on ``default.qubit`` (backprop). Prints the CPU
model, milliseconds per step (median) and the ratio PennyLane / hybridai.

    python benchmarks/quantum_overhead.py [--repeats 50]
"""

from __future__ import annotations

import argparse
import statistics
import time

import pennylane as qml
import torch
from machine import cpu_model

from hybridai import QuantumLayer

LAYERS = 6


def make_circuit(n: int):
    def circuit(inputs, weights):
        qml.AngleEmbedding(inputs, wires=range(n))
        qml.BasicEntanglerLayers(weights, wires=range(n))
        return [qml.expval(qml.PauliZ(i)) for i in range(n)]

    return circuit


def step_ms(layer: torch.nn.Module, x: torch.Tensor, repeats: int) -> float:
    """Median milliseconds of zero_grad + forward + backward + SGD step (after 3 warm-up steps)."""
    opt = torch.optim.SGD(layer.parameters(), lr=0.1)
    times = []
    for i in range(repeats + 3):
        start = time.perf_counter()
        opt.zero_grad()
        layer(x).sum().backward()
        opt.step()
        if i >= 3:
            times.append(time.perf_counter() - start)
    return 1e3 * statistics.median(times)


def bench(n: int, batch: int, repeats: int) -> dict[str, float]:
    generator = torch.Generator().manual_seed(0)
    x = torch.rand(batch, n, dtype=torch.float64, generator=generator)
    circuit = make_circuit(n)
    shapes = {"weights": (LAYERS, n)}
    qnode = qml.QNode(circuit, qml.device("default.qubit", wires=n), interface="torch", diff_method="backprop")
    pennylane_layer = qml.qnn.TorchLayer(qnode, shapes).double()
    hybridai_layer = QuantumLayer(circuit, n, shapes).double()
    return {
        "pennylane default.qubit TorchLayer": step_ms(pennylane_layer, x, repeats),
        "hybridai statevector": step_ms(hybridai_layer, x, repeats),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=50)
    args = parser.parse_args()
    torch.set_num_threads(1)
    print(f"CPU: {cpu_model()}, torch threads: 1")
    for title, n, batch in (("make_moons demo (2 qubits, batch 5)", 2, 5), ("4 qubits, batch 32", 4, 32)):
        results = bench(n, batch, args.repeats)
        print(title)
        for label, ms in results.items():
            print(f"  {label:<38} {ms:8.3f} ms/step")
        pl, hy = results.values()
        print(f"  ratio PennyLane / hybridai: {pl / hy:.2f}x")


if __name__ == "__main__":
    main()
