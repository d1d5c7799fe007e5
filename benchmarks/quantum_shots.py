"""Question: how fast is one shot-based training step (values from samples, parameter-shift gradients)?

AngleEmbedding + StronglyEntanglingLayers (3 layers, CNOT ring), <Z> on every qubit, 4 qubits,
batch 64, 1000 shots, forward + backward (gradients of the 36 weights by the parameter-shift rule),
one thread for every engine (``OMP_NUM_THREADS=1`` before any import), all in this one process, timed in
turn after a warm-up: PennyLane default.qubit with shots (parameter-shift,
broadcasting), hybridai on Aer (``backend="aer"``: sampler, every shifted circuit in one call) and
hybridai's statevector backend (samples drawn from its own batched states, every shifted circuit of
the batch in one run). Prints the CPU model, seconds (median) and ratios.

    python benchmarks/quantum_shots.py [--qubits 4] [--batch 64] [--shots 1000] [--repeats 3]
"""

from __future__ import annotations

import os

os.environ["OMP_NUM_THREADS"] = "1"  # before numpy, torch and Aer are imported

import argparse  # noqa: E402
import statistics  # noqa: E402

import pennylane as qml  # noqa: E402
import torch  # noqa: E402
from machine import cpu_model  # noqa: E402
from quantum_layer import interleaved, make_circuit, stepper  # noqa: E402

from hybridai import QuantumLayer  # noqa: E402

LAYERS = 3


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--qubits", type=int, default=4)
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--shots", type=int, default=1000)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    torch.set_num_threads(1)
    n = args.qubits
    print(f"CPU: {cpu_model()}, torch threads: {torch.get_num_threads()}, OMP_NUM_THREADS=1 (Aer: 1 thread)")
    print(f"{n} qubits, batch {args.batch}, {args.shots} shots, {LAYERS} SEL layers, parameter-shift step\n")
    torch.manual_seed(0)
    circuit = make_circuit(n)
    x = torch.rand(args.batch, n, dtype=torch.float64)
    weights = torch.rand(LAYERS, n, 3, dtype=torch.float64, requires_grad=True)
    qnode = qml.QNode(circuit, qml.device("default.qubit", wires=n), interface="torch", diff_method="parameter-shift")
    qnode = qml.set_shots(qnode, shots=args.shots)
    steps = {"PennyLane default.qubit (shots)": stepper(lambda v: torch.stack(qnode(v, weights), -1), x, [weights])}
    for label, backend in (("hybridai aer", "aer"), ("hybridai statevector", "statevector")):
        layer = QuantumLayer(circuit, n, {"weights": (LAYERS, n, 3)}, backend=backend, shots=args.shots, seed=1)
        layer = layer.double()
        with torch.no_grad():
            layer.weights.copy_(weights)
        steps[label] = stepper(layer, x, [layer.weights])
    times = {label: statistics.median(t) for label, t in interleaved(steps, args.repeats).items()}
    ours = times["hybridai statevector"]
    print("| method | seconds per step | statevector speed-up |")
    print("|---|---|---|")
    for label, seconds in times.items():
        print(f"| {label} | {seconds:.4f} | {seconds / ours:.1f}x |")


if __name__ == "__main__":
    main()
