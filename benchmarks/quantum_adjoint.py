"""Question: how fast, and in how much memory, does a large circuit train with adjoint differentiation?

AngleEmbedding + StronglyEntanglingLayers (2 layers, CNOT ring), <Z> on every qubit, batch 16,
n = 16, 18 (20 with ``--qubits 16 18 20``) qubits, forward + backward (gradients of inputs and
weights), one thread. Each run is its own subprocess, so its peak resident memory
(``resource.getrusage(...).ru_maxrss``) is its own; the table shows it above the process's
memory after the imports. Peer: PennyLane lightning.qubit with diff_method="adjoint" (it
loops over the batch); hybridai's statevector backend with diff_method="adjoint" (one batched
forward pass, one batched backward sweep) and with backprop (every intermediate state kept).

    python benchmarks/quantum_adjoint.py [--qubits 16 18] [--batch 16] [--repeats 1] [--peer-max-qubits 18]

lightning.qubit is run up to ``--peer-max-qubits`` (its batch loop takes minutes beyond).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time

from machine import cpu_model

LAYERS = 2
METHODS = ("lightning.qubit adjoint", "hybridai adjoint", "hybridai backprop")


def child(n: int, batch: int, method: str, repeats: int) -> None:
    import resource

    import pennylane as qml
    import torch

    from hybridai import QuantumLayer

    torch.set_num_threads(1)

    def circuit(inputs, weights):
        qml.AngleEmbedding(inputs, wires=range(n))
        qml.StronglyEntanglingLayers(weights, wires=range(n))
        return [qml.expval(qml.PauliZ(i)) for i in range(n)]

    torch.manual_seed(0)
    x = torch.rand(batch, n, dtype=torch.float64, requires_grad=True)
    weights = torch.rand(LAYERS, n, 3, dtype=torch.float64, requires_grad=True)
    if method.startswith("lightning"):
        qnode = qml.QNode(circuit, qml.device("lightning.qubit", wires=n), interface="torch", diff_method="adjoint")
        params = [x, weights]

        def forward(v):
            return torch.stack(qnode(v, weights), -1)
    else:
        layer = QuantumLayer(circuit, n, {"weights": (LAYERS, n, 3)}, diff_method=method.split()[1]).double()
        with torch.no_grad():
            layer.weights.copy_(weights)
        params, forward = [x, layer.weights], layer
    base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        forward(x).sum().backward()
        times.append(time.perf_counter() - start)
        for p in params:
            p.grad = None
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    print(json.dumps({"seconds": min(times), "base": base, "peak": peak}))


def run_child(n: int, batch: int, method: str, repeats: int) -> dict | None:
    env = {**os.environ, "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
    command = [sys.executable, __file__, "--child", str(n), str(batch), method, str(repeats)]
    done = subprocess.run(command, capture_output=True, text=True, env=env)
    if done.returncode != 0:
        return None
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--qubits", type=int, nargs="+", default=[16, 18])
    parser.add_argument("--batch", type=int, default=16)
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--peer-max-qubits", type=int, default=18)
    parser.add_argument("--child", nargs=4, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        n, batch, method, repeats = args.child
        child(int(n), int(batch), method, int(repeats))
        return
    print(f"CPU: {cpu_model()}, one thread per run (torch and OpenMP), batch {args.batch}, {LAYERS} SEL layers")
    print("forward + backward seconds; peak memory = peak resident set above the process after its imports\n")
    print("| qubits | " + " | ".join(f"{m} s | {m} peak MiB" for m in METHODS) + " | adjoint vs lightning |")
    print("|---|" + "---|---|" * len(METHODS) + "---|")
    for n in args.qubits:
        skipped = {METHODS[0]} if n > args.peer_max_qubits else set()
        results = {m: None if m in skipped else run_child(n, args.batch, m, args.repeats) for m in METHODS}
        cells = []
        for m in METHODS:
            r = results[m]
            if m in skipped:
                cells += ["not run", "-"]
                continue
            cells += ["failed", "-"] if r is None else [f"{r['seconds']:.2f}", f"{(r['peak'] - r['base']) / 2**20:.0f}"]
        light, ours = results["lightning.qubit adjoint"], results["hybridai adjoint"]
        ratio = f"{light['seconds'] / ours['seconds']:.1f}x" if light and ours else "-"
        print(f"| {n} | " + " | ".join(cells) + f" | {ratio} |", flush=True)


if __name__ == "__main__":
    main()
