"""Question: how fast is one shot-based training step (values from samples, parameter-shift gradients)?

AngleEmbedding + StronglyEntanglingLayers (3 layers, CNOT ring), <Z> on every qubit, 4 qubits,
batch 64, 1000 shots, forward + backward (gradients of the 36 weights by the parameter-shift rule),
one torch thread, all in this one process: PennyLane default.qubit with shots (parameter-shift,
broadcasting), hybridai on Aer (``backend="aer"``: sampler, every shifted circuit in one call) and
hybridai's statevector backend (samples drawn from its own batched states, every shifted circuit of
the batch in one run). Prints the CPU model, seconds (median) and ratios.

    python benchmarks/quantum_shots.py [--qubits 4] [--batch 64] [--shots 1000] [--repeats 3]
"""

from __future__ import annotations

import argparse
import statistics

import pennylane as qml
import torch
from machine import cpu_model
from quantum_layer import WARMUP, make_circuit, stepper

from hybridai import QuantumLayer

LAYERS = 3


def step_time(forward, x: torch.Tensor, params: list[torch.Tensor], repeats: int) -> float:
    """Median seconds of one forward + backward, after the warm-up."""
    step = stepper(forward, x, params)
    for _ in range(WARMUP):
        step()
    return statistics.median(step() for _ in range(repeats))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--qubits", type=int, default=4)
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--shots", type=int, default=1000)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    torch.set_num_threads(1)
    n = args.qubits
    print(f"CPU: {cpu_model()}, torch threads: {torch.get_num_threads()}")
    print(f"{n} qubits, batch {args.batch}, {args.shots} shots, {LAYERS} SEL layers, parameter-shift step\n")
    torch.manual_seed(0)
    circuit = make_circuit(n)
    x = torch.rand(args.batch, n, dtype=torch.float64)
    weights = torch.rand(LAYERS, n, 3, dtype=torch.float64, requires_grad=True)
    qnode = qml.QNode(circuit, qml.device("default.qubit", wires=n), interface="torch", diff_method="parameter-shift")
    qnode = qml.set_shots(qnode, shots=args.shots)
    times = {"PennyLane default.qubit (shots)": step_time(lambda v: torch.stack(qnode(v, weights), -1), x, [weights],
                                                          args.repeats)}  # fmt: skip
    for label, backend in (("hybridai aer", "aer"), ("hybridai statevector", "statevector")):
        layer = QuantumLayer(circuit, n, {"weights": (LAYERS, n, 3)}, backend=backend, shots=args.shots, seed=1)
        layer = layer.double()
        with torch.no_grad():
            layer.weights.copy_(weights)
        times[label] = step_time(layer, x, [layer.weights], args.repeats)
    ours = times["hybridai statevector"]
    print("| method | seconds per step | statevector speed-up |")
    print("|---|---|---|")
    for label, seconds in times.items():
        print(f"| {label} | {seconds:.4f} | {seconds / ours:.1f}x |")


if __name__ == "__main__":
    main()
