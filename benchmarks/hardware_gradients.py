"""Question: what does one training step of a quantum layer cost on a shot-based backend?

A 4-qubit layer (AngleEmbedding + 2 StronglyEntanglingLayers, <Z> per qubit), batch 64,
1000 shots, gradients for the weights AND the inputs by parameter shift. hybridai sends the
whole minibatch and every shifted circuit in ONE primitive call (`aer`, and the noisy
`aer:fake_manila`); PennyLane's route (a QNode on default.qubit with shots and
diff_method="parameter-shift") must loop over samples, because it cannot differentiate
broadcast inputs. Prints seconds, primitive calls / device executions and circuits, ratios.

    python benchmarks/hardware_gradients.py [--batch 64] [--shots 1000]
"""

from __future__ import annotations

import argparse
import time

import pennylane as qml
import torch

from hybridai import QuantumLayer

N, LAYERS = 4, 2


def circuit(inputs, weights):
    qml.AngleEmbedding(inputs, wires=range(N))
    qml.StronglyEntanglingLayers(weights, wires=range(N))
    return [qml.expval(qml.PauliZ(i)) for i in range(N)]


def hybridai_step(backend: str, x: torch.Tensor, shots: int) -> tuple[float, dict]:
    torch.manual_seed(0)
    layer = QuantumLayer(circuit, N, {"weights": (LAYERS, N, 3)}, backend=backend, shots=shots, seed=1).double()
    x = x.clone().requires_grad_()
    start = time.perf_counter()
    layer(x).sum().backward()
    return time.perf_counter() - start, layer.execution_stats


def pennylane_step(x: torch.Tensor, shots: int) -> tuple[float, dict]:
    torch.manual_seed(0)
    weights = torch.rand(LAYERS, N, 3, dtype=torch.float64, requires_grad=True)
    dev = qml.device("default.qubit", wires=N, seed=1)
    qnode = qml.set_shots(qml.QNode(circuit, dev, interface="torch", diff_method="parameter-shift"), shots=shots)
    x = x.clone().requires_grad_()
    start = time.perf_counter()
    with qml.Tracker(dev) as tracker:
        out = torch.stack([torch.stack(qnode(sample, weights)) for sample in x])  # one sample at a time
        out.sum().backward()
    elapsed = time.perf_counter() - start
    return elapsed, {"calls": tracker.totals.get("executions", 0), "circuits": tracker.totals.get("simulations", 0)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--shots", type=int, default=1000)
    args = parser.parse_args()
    torch.set_num_threads(1)
    x = torch.rand(args.batch, N, dtype=torch.float64)
    rows = [("PennyLane default.qubit, parameter-shift, per sample", *pennylane_step(x, args.shots))]
    for backend in ("aer", "aer:fake_manila"):
        rows.append((f"hybridai {backend}", *hybridai_step(backend, x, args.shots)))
    reference = rows[0][1]
    print(f"torch threads: {torch.get_num_threads()}, {N} qubits, batch {args.batch}, {args.shots} shots, one step")
    print("| route | seconds | primitive calls / executions | circuits | speed-up vs PennyLane |")
    print("|---|---|---|---|---|")
    for name, seconds, stats in rows:
        print(f"| {name} | {seconds:.2f} | {stats['calls']} | {stats['circuits']} | {reference / seconds:.1f}x |")


if __name__ == "__main__":
    main()
