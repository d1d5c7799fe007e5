"""Question: how fast, and in how much memory, does a large circuit train with adjoint differentiation?

AngleEmbedding + StronglyEntanglingLayers (2 layers, CNOT rings), <Z> on every qubit, batch 16,
n = 16, 18 (20, 22 with ``--qubits 20 22``) qubits, forward + backward (gradients of inputs and
weights), ONE thread per run. Each run is its own subprocess, started with ``OMP_NUM_THREADS=1``
(and MKL's and OpenBLAS's) in its environment, so every thread pool (torch's, lightning's OpenMP)
reads it before anything is imported, and ``torch.set_num_threads(1)``; its peak resident memory
(``resource.getrusage(...).ru_maxrss``) is its own, shown above the process's memory after the
imports. Peer: PennyLane lightning.qubit with diff_method="adjoint" (it loops over the batch and
differentiates every observable); hybridai's statevector backend with diff_method="adjoint" (one
batched forward pass, one batched backward sweep of one bra) and with backprop (every intermediate
state kept). The times are of the first call (plans, caches and index tables built in it).

    python benchmarks/quantum_adjoint.py [--qubits 16 18] [--batch 16] [--repeats 1]
                                         [--peer-max-qubits 18] [--peer-timeout SECONDS]

lightning.qubit is run up to ``--peer-max-qubits`` (minutes per run beyond 18 qubits) and stopped
after ``--peer-timeout`` seconds if given (the table then shows the time it had run, as a bound).

`make bench` runs (lightning.qubit about 6 minutes at 20 qubits on a 2-core AMD EPYC, far longer at 22):

    bench-args: --qubits 16 18 20 --peer-max-qubits 20
    bench-args: --qubits 22 --peer-max-qubits 0
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
THREAD_VARIABLES = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS")


def child(n: int, batch: int, method: str, repeats: int) -> None:
    for name in THREAD_VARIABLES:  # before any numerical library is imported (also set by the parent)
        os.environ[name] = "1"
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
    print("ready", flush=True)  # the parent's timeout counts from here (imports take seconds)
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        forward(x).sum().backward()
        times.append(time.perf_counter() - start)
        for p in params:
            p.grad = None
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    threads = {"torch": torch.get_num_threads(), "OMP_NUM_THREADS": os.environ["OMP_NUM_THREADS"]}
    print(json.dumps({"seconds": min(times), "base": base, "peak": peak, "threads": threads}))


def run_child(n: int, batch: int, method: str, repeats: int, timeout: float | None) -> dict | None:
    """The run's report; ``{"stopped": seconds}`` when it ran past ``timeout``; None when it failed."""
    env = {**os.environ, **dict.fromkeys(THREAD_VARIABLES, "1")}
    command = [sys.executable, __file__, "--child", str(n), str(batch), method, str(repeats)]
    proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    assert proc.stdout is not None
    proc.stdout.readline()  # "ready": imported and set up, about to start the timed calls
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()
        return {"stopped": timeout}
    if proc.returncode != 0:
        print(f"{method} at {n} qubits failed: {err.strip().splitlines()[-1:]}", file=sys.stderr)
        return None
    return json.loads(out.strip().splitlines()[-1])


def cells(r: dict | None, skipped: bool) -> list[str]:
    if skipped:
        return ["not run", "-"]
    if r is None:
        return ["failed", "-"]
    if "stopped" in r:
        return [f"> {r['stopped']:.0f} (stopped)", "-"]
    return [f"{r['seconds']:.2f}", f"{(r['peak'] - r['base']) / 2**20:.0f}"]


def ratio(light: dict | None, ours: dict | None) -> str:
    if not light or not ours or "seconds" not in ours:
        return "-"
    if "stopped" in light:
        return f"> {light['stopped'] / ours['seconds']:.1f}x"
    return f"{light['seconds'] / ours['seconds']:.1f}x"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--qubits", type=int, nargs="+", default=[16, 18])
    parser.add_argument("--batch", type=int, default=16)
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--peer-max-qubits", type=int, default=18)
    parser.add_argument("--peer-timeout", type=float, default=None, help="seconds before a lightning run is stopped")
    parser.add_argument("--child", nargs=4, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        n, batch, method, repeats = args.child
        child(int(n), int(batch), method, int(repeats))
        return
    print(f"CPU: {cpu_model()}; threads: 1 per run (OMP_NUM_THREADS=1 before the imports, torch.set_num_threads(1))")
    print(
        f"batch {args.batch}, {LAYERS} SEL layers, <Z> on every qubit; forward + backward seconds (first call"
        f"{'' if args.repeats == 1 else f', best of {args.repeats}'}); peak memory = peak resident set above the"
        " process after its imports\n"
    )
    print("| qubits | " + " | ".join(f"{m} s | {m} peak MiB" for m in METHODS) + " | adjoint vs lightning |")
    print("|---|" + "---|---|" * len(METHODS) + "---|")
    threads = set()
    for n in args.qubits:
        skipped = {METHODS[0]} if n > args.peer_max_qubits else set()
        results = {}
        for m in METHODS:
            timeout = args.peer_timeout if m == METHODS[0] else None
            results[m] = None if m in skipped else run_child(n, args.batch, m, args.repeats, timeout)
            if results[m] and "threads" in results[m]:
                threads.add(json.dumps(results[m]["threads"], sort_keys=True))
        row = [c for m in METHODS for c in cells(results[m], m in skipped)]
        print(f"| {n} | " + " | ".join(row) + f" | {ratio(results[METHODS[0]], results[METHODS[1]])} |", flush=True)
    print(f"\nthreads reported by the runs: {', '.join(sorted(threads)) or '-'}")


if __name__ == "__main__":
    main()
