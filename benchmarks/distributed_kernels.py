"""Question: does a quantum-kernel Gram matrix divide among processes, and can kernel ridge run where the matrix
does not fit one process?

8-qubit IQP feature map (``hybridai.quantum.IQPFeatureMap``), N samples in [0, pi)^8, fidelity kernel on the
``statevector`` backend, one torch thread per process, processes spawned with gloo on this machine:

* ``gram``: one process ``kernel(X)`` (the upper triangle, mirrored), then ``gram_shards(kernel, X)`` on 1 and on 2
  processes (each rank its features, the features exchanged, its share of the pairs); time is the slowest rank's,
  from the first barrier to the last; held: the matrix entries a rank keeps; peak: the rank's peak resident set
  (its imports included, and the block temporaries, bounded by the kernel's ``gram_memory``). Values of the
  2-process shards checked against ``kernel(X)``.
* ``ridge``: ``ShardedKernelRidge`` (conjugate gradients on the sharded matrix, one all-reduce per iteration) against
  ``hybridai.QuantumKernelRidge`` (scikit-learn's solve on the whole matrix) at ``--check-size`` samples, then on 2
  processes at ``--ridge-size`` samples with ``gram_memory`` smaller than the whole matrix.

    python benchmarks/distributed_kernels.py [--size 6000] [--check-size 1000] [--ridge-size 12000] [--repeats 3]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import resource
import socket
import statistics
import tempfile
import time

import torch
from machine import cpu_model

N_QUBITS = 8


def samples(n: int, seed: int = 0) -> torch.Tensor:
    return torch.rand(n, N_QUBITS, generator=torch.Generator().manual_seed(seed), dtype=torch.float64) * math.pi


def make_kernel(gram_memory: int | None = None):
    import hybridai
    from hybridai.quantum import IQPFeatureMap

    return hybridai.QuantumKernel(IQPFeatureMap(N_QUBITS), n_qubits=N_QUBITS, progress=False, gram_memory=gram_memory)


def peak_bytes() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def _worker(rank: int, world: int, port: int, task: dict, out: str) -> None:
    import torch.distributed as dist

    from hybridai.quantum.kernels.sharded import ShardedKernelRidge, gram_shards
    from hybridai.training import distributed

    torch.set_num_threads(1)
    os.environ.update(RANK=str(rank), LOCAL_RANK=str(rank), WORLD_SIZE=str(world), MASTER_ADDR="127.0.0.1",
                      MASTER_PORT=str(port))  # fmt: skip
    distributed.init_from_env(backend="gloo", timeout=3600)
    kernel = make_kernel(task.get("gram_memory"))
    X = samples(task["size"])
    gram_shards(kernel, X[:64])  # warm-up: recording, plans, the group's first collectives
    result: dict = {"rank": rank}
    if task["what"] == "gram":
        times = []
        for _ in range(task["repeats"]):
            dist.barrier()
            start = time.perf_counter()
            shards = gram_shards(kernel, X)
            dist.barrier()
            times.append(time.perf_counter() - start)
        result.update(seconds=statistics.median(times), held=shards.nbytes, peak=peak_bytes())
        if task.get("check"):
            result["gathered"] = shards.gather()
    else:
        y = torch.sin(X.sum(1))
        dist.barrier()
        start = time.perf_counter()
        ridge = ShardedKernelRidge(kernel, alpha=task["alpha"]).fit(X, y)
        dist.barrier()
        result.update(seconds=time.perf_counter() - start, iterations=ridge.iterations_, held=ridge.gram_nbytes_,
                      peak=peak_bytes(), predictions=ridge.predict(samples(200, seed=1)))  # fmt: skip
    torch.save(result, os.path.join(out, f"rank{rank}.pt"))
    dist.barrier()
    dist.destroy_process_group()


def spawn(world: int, task: dict) -> list[dict]:
    import torch.multiprocessing as mp

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with tempfile.TemporaryDirectory() as out:
        mp.spawn(_worker, args=(world, port, task, out), nprocs=world, join=True, start_method="spawn")
        return [torch.load(os.path.join(out, f"rank{r}.pt"), weights_only=False) for r in range(world)]


def one_process_gram(size: int, repeats: int) -> tuple[float, torch.Tensor]:
    kernel = make_kernel()
    X = samples(size)
    kernel(X[:64])
    times = []
    with torch.no_grad():
        for _ in range(repeats):
            start = time.perf_counter()
            K = kernel(X)
            times.append(time.perf_counter() - start)
    return statistics.median(times), K


def mib(n: int) -> str:
    return f"{n / 2**20:,.0f} MiB"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--size", type=int, default=6000)
    parser.add_argument("--check-size", type=int, default=1000)
    parser.add_argument("--ridge-size", type=int, default=12000)
    parser.add_argument("--alpha", type=float, default=1.0)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    torch.set_num_threads(1)
    print(f"CPU: {cpu_model()}; one torch thread per process; {N_QUBITS} qubits, IQP feature map, fidelity kernel\n")

    print(f"## Gram matrix, N = {args.size}\n")
    alone, K = one_process_gram(args.size, args.repeats)
    one = spawn(1, {"what": "gram", "size": args.size, "repeats": args.repeats})
    two = spawn(2, {"what": "gram", "size": args.size, "repeats": args.repeats, "check": True})
    error = max(float((r["gathered"] - K).abs().max()) for r in two)
    slowest = max(r["seconds"] for r in two)
    print("| setup | seconds | speed-up vs kernel(X) | matrix held per rank | peak RSS per rank |")
    print("|---|---|---|---|---|")
    print(f"| kernel(X), 1 process | {alone:.2f} | 1.00x | {mib(K.numel() * 8)} | - |")
    print(f"| gram_shards, 1 process | {one[0]['seconds']:.2f} | {alone / one[0]['seconds']:.2f}x | "
          f"{mib(one[0]['held'])} | {mib(one[0]['peak'])} |")  # fmt: skip
    print(f"| gram_shards, 2 processes | {slowest:.2f} | {alone / slowest:.2f}x | "
          f"{' / '.join(mib(r['held']) for r in two)} | {' / '.join(mib(r['peak']) for r in two)} |")  # fmt: skip
    print(f"\n2 processes against 1 (gram_shards): {one[0]['seconds'] / slowest:.2f}x; "
          f"largest difference from kernel(X): {error:.1e}\n")  # fmt: skip

    print(f"## Kernel ridge, alpha = {args.alpha}\n")
    from hybridai.quantum import QuantumKernelRidge

    X, y = samples(args.check_size), torch.sin(samples(args.check_size).sum(1))
    reference = QuantumKernelRidge(make_kernel(), alpha=args.alpha).fit(X.numpy(), y.numpy())
    expected = torch.from_numpy(reference.predict(samples(200, seed=1).numpy()))
    checked = spawn(2, {"what": "ridge", "size": args.check_size, "alpha": args.alpha})
    difference = max(float((r["predictions"] - expected).abs().max()) for r in checked)
    print(f"N = {args.check_size}: 2-process CG against QuantumKernelRidge: largest prediction difference "
          f"{difference:.1e} ({checked[0]['iterations']} iterations)\n")  # fmt: skip
    budget = 2**28
    large = spawn(2, {"what": "ridge", "size": args.ridge_size, "alpha": args.alpha, "gram_memory": budget})
    whole = args.ridge_size**2 * 8
    print(f"N = {args.ridge_size} on 2 processes, gram_memory = {mib(budget)} (the whole matrix: {mib(whole)}): "
          f"{max(r['seconds'] for r in large):.1f} s, {large[0]['iterations']} iterations, matrix held per rank "
          f"{' / '.join(mib(r['held']) for r in large)}, peak RSS per rank "
          f"{' / '.join(mib(r['peak']) for r in large)}")  # fmt: skip
    print(json.dumps({"gram_two_vs_one": one[0]["seconds"] / slowest, "gram_error": error}))


if __name__ == "__main__":
    main()
