"""Question: how much does one training step of a SMALL quantum layer cost, where Python overhead
(recording the circuit, converting it, many tiny torch ops) rather than simulation dominates?

Two workloads, forward + backward (+ an SGD step for the demo), one torch thread, one process:

- PennyLane's "quantum nodes as torch layers" demo: make_moons-sized inputs (2 features), 2 qubits,
  AngleEmbedding + BasicEntanglerLayers (6 layers), <Z> on both qubits, batch 5, SGD;
- a 4-qubit layer of the same form (AngleEmbedding + BasicEntanglerLayers x6), batch 32.

Each against PennyLane's own ``qml.qnn.TorchLayer`` on ``default.qubit`` (backprop), and against a FLOOR: the
same circuit written by hand as a dozen dense torch operations (``HandWritten``: per-wire embedding columns,
the product state, every layer's 2^n x 2^n matrix by one gather and product, the CNOT ring as a column
permutation, one matrix chain, probabilities times the Z signs), with no framework around it. On a small
circuit every torch operation costs microseconds of dispatch and autograd bookkeeping, so the floor shows
what this machine's torch itself needs for the step. Prints the CPU model, milliseconds per step (median),
the ratio PennyLane / hybridai, and hybridai / floor.

    python benchmarks/quantum_overhead.py [--repeats 50]

`make bench` runs:

    bench-args: --repeats 100
"""

from __future__ import annotations

import argparse
import math
import statistics
import time

import numpy as np
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


class HandWritten(torch.nn.Module):
    """AngleEmbedding (RX) + BasicEntanglerLayers (RX, CNOT ring) + <Z_i>, written directly in torch (float64,
    complex128); its values and gradients are checked against PennyLane's before it is timed."""

    def __init__(self, n: int) -> None:
        super().__init__()
        self.n, dim = n, 2**n
        self.weights = torch.nn.Parameter(torch.rand(LAYERS, n, dtype=torch.float64) * 2 * math.pi)
        bits = (np.arange(dim)[:, None] >> (n - 1 - np.arange(n))[None, :]) & 1  # [2^n, n]
        self.state_index = torch.as_tensor(2 * np.arange(n) + bits)  # entry (s, w): wire w's amplitude of s
        # entry (i, j, w) of U^T: M_w[bit_w(j), bit_w(i)] in the flattened [n, 2, 2] matrices
        self.matrix_index = torch.as_tensor(4 * np.arange(n) + 2 * bits[None, :, :] + bits[:, None, :])
        perm = np.arange(dim)
        for a in range(n if n > 2 else 1):  # CNOT(a, a+1 mod n): flips bit a+1 where bit a is set
            control, target = n - 1 - a, n - 1 - (a + 1) % n
            perm = perm ^ (((perm >> control) & 1) << target)
        self.ring = torch.as_tensor(np.argsort(perm))
        self.z = torch.as_tensor(1.0 - 2.0 * bits)

    @staticmethod
    def rx(theta: torch.Tensor) -> torch.Tensor:  # [..., 2, 2]
        c, s = torch.cos(theta / 2), torch.sin(theta / 2)
        return torch.complex(torch.stack([c, 0 * s, 0 * s, c], -1), torch.stack([0 * c, -s, -s, 0 * c], -1))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        columns = self.rx(x)[..., [0, 2]]  # [B, n, 2]: RX(x)|0>
        psi = columns.reshape(x.shape[0], -1)[:, self.state_index].prod(-1)
        r = self.rx(self.weights).reshape(LAYERS, -1)[:, self.matrix_index].prod(-1)  # [L, 2^n, 2^n]: rows U^T
        r = r[:, :, self.ring]  # then the CNOT ring
        psi = torch.linalg.multi_dot([psi, *r.unbind(0)])
        return (psi.real**2 + psi.imag**2) @ self.z


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
    floor = HandWritten(n)
    with torch.no_grad():
        pennylane_layer.weights.copy_(floor.weights)
    expected, found = pennylane_layer(x), floor(x)
    expected.sum().backward()
    found.sum().backward()
    assert torch.allclose(expected, found, atol=1e-12), "the hand-written circuit differs from PennyLane's"
    assert torch.allclose(pennylane_layer.weights.grad, floor.weights.grad, atol=1e-12), "its gradient differs"
    return {
        "pennylane default.qubit TorchLayer": step_ms(pennylane_layer, x, repeats),
        "hybridai statevector": step_ms(hybridai_layer, x, repeats),
        "floor: hand-written torch, no framework": step_ms(floor, x, repeats),
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
        pl, hy, floor = results.values()
        print(f"  ratio PennyLane / hybridai: {pl / hy:.2f}x; hybridai / floor: {hy / floor:.2f}x")


if __name__ == "__main__":
    main()
