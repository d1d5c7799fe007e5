"""How large a fidelity-kernel Gram matrix can hybridai compute, how fast, in how much memory, against Qiskit ML?

Same 8-qubit ZZ feature map (Havlicek et al., one repetition) and the same N x N Gram matrix (N random
samples in [0, pi)^8), each run in its own process with one thread (torch, OpenMP, MKL):

- hybridai ``QuantumKernel.matrix`` under ``torch.no_grad()`` on its ``statevector`` backend: N states
  (one batched run), then the Gram matrix in blocks whose working memory stays under ``gram_memory``
  (default 2 GiB), the upper triangle only, mirrored;
- Qiskit ML ``FidelityStatevectorKernel.evaluate`` (its default: statevectors, then overlaps).

Peak memory is the process's peak resident set minus its size after the imports (so it includes the N x N
float64 result, N^2 * 8 bytes: 3.2 GB at N = 20,000). Values are checked against each other at the
smallest N. A peer run that exceeds ``--peer-timeout`` seconds is stopped and reported as such.

    python benchmarks/quantum_gram.py [--sizes 2000 5000 20000] [--peer-sizes 2000 5000] [--peer-timeout 300]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import resource
import subprocess
import sys
import time

import numpy as np
from machine import cpu_model
from quantum_kernel import qiskit_zz_map, zz_map

N_QUBITS = 8


def samples(n: int) -> np.ndarray:
    return np.random.default_rng(0).uniform(0, math.pi, (n, N_QUBITS))


def hybridai_gram(x: np.ndarray) -> np.ndarray:
    import torch

    from hybridai import QuantumKernel

    kernel = QuantumKernel(zz_map, N_QUBITS, progress=False)
    with torch.no_grad():
        return kernel.matrix(torch.from_numpy(x)).numpy()


def qiskit_gram(x: np.ndarray) -> np.ndarray:
    from qiskit_machine_learning.kernels import FidelityStatevectorKernel

    return FidelityStatevectorKernel(feature_map=qiskit_zz_map(N_QUBITS)).evaluate(x)


def child(which: str, n: int, save: str | None) -> None:
    import torch

    torch.set_num_threads(1)
    compute = hybridai_gram if which == "hybridai" else qiskit_gram
    compute(samples(4))  # imports and first-call costs, outside the measurement
    base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    start = time.perf_counter()
    K = compute(samples(n))
    seconds = time.perf_counter() - start
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    if save:
        np.save(save, K)
    print(json.dumps({"seconds": seconds, "peak": peak - base}))


def run_child(which: str, n: int, timeout: float | None, save: str | None = None) -> dict | str:
    env = {**os.environ, "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1"}
    command = [sys.executable, __file__, "--child", which, str(n), save or ""]
    try:
        done = subprocess.run(command, capture_output=True, text=True, env=env, timeout=timeout)
    except subprocess.TimeoutExpired:
        return f"stopped after {timeout:.0f} s"
    if done.returncode != 0:
        return f"failed ({done.stderr.strip().splitlines()[-1] if done.stderr.strip() else done.returncode})"
    return json.loads(done.stdout.strip().splitlines()[-1])


def cell(result: dict | str | None) -> tuple[str, str]:
    if result is None:
        return "-", "-"
    if isinstance(result, str):
        return result, "-"
    return f"{result['seconds']:.2f}", f"{result['peak'] / 2**20:.0f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[2000, 5000, 20000])
    parser.add_argument("--peer-sizes", type=int, nargs="+", default=[2000, 5000])
    parser.add_argument("--peer-timeout", type=float, default=300.0)
    parser.add_argument("--child", nargs=3, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        which, n, save = args.child
        child(which, int(n), save or None)
        return
    print(f"CPU: {cpu_model()}, one thread per run; {N_QUBITS}-qubit ZZ feature map, N x N fidelity Gram matrix")
    smallest = min(args.sizes)
    check = {}
    if smallest in args.peer_sizes:
        import tempfile

        folder = tempfile.mkdtemp()
        check = {w: os.path.join(folder, f"{w}.npy") for w in ("hybridai", "qiskit")}
    print("\n| N | Qiskit ML s | Qiskit ML peak MiB | hybridai s | hybridai peak MiB | speed-up |")
    print("|---|---|---|---|---|---|")
    for n in args.sizes:
        save = n == smallest and bool(check)
        peer = (
            run_child("qiskit", n, args.peer_timeout, check.get("qiskit") if save else None)
            if n in args.peer_sizes
            else None
        )
        ours = run_child("hybridai", n, None, check.get("hybridai") if save else None)
        ratio = (
            f"{peer['seconds'] / ours['seconds']:.1f}x" if isinstance(peer, dict) and isinstance(ours, dict) else "-"
        )
        print(f"| {n:,} | {' | '.join(cell(peer))} | {' | '.join(cell(ours))} | {ratio} |", flush=True)
    if check and all(os.path.exists(p) for p in check.values()):
        gap = float(np.abs(np.load(check["hybridai"]) - np.load(check["qiskit"])).max())
        print(f"\nlargest |K_hybridai - K_qiskit| at N = {smallest:,}: {gap:.1e}")


if __name__ == "__main__":
    main()
