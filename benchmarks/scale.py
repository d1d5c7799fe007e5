"""Question: how does hybridai training scale?

Sections (``--sections``; all by default):

* ``throughput``: samples per second of the demo model (``hybridai.demo.hybrid_model``: Linear
  64->n, Tanh, n-qubit statevector circuit, Linear n->10) trained with ``hybridai.training.fit``
  (Adam, cross-entropy) on scikit-learn's digits, in one process against two processes
  (``torch.multiprocessing`` spawn, gloo, DistributedDataParallel, ``DistributedSampler``) with the
  same global batch (samples per optimizer step) and the same shuffled order, so both do the same
  work (the training losses agree). Every setup runs in fresh spawned processes with a
  fixed number of torch threads each; one process with as many threads as the two processes
  have together is the other single-process baseline on the same cores. Time: median over
  ``--repeats`` rounds of about ``--samples`` samples each (whole epochs), after one warm-up epoch;
  a setup stops after 10 s of timed rounds (the rounds column says how many ran).

    python benchmarks/scale.py [--sections throughput] [--qubits 6] [--batch 64 256] [--samples 10000] [--repeats 3]
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import tempfile
import time

import torch

SECTIONS = ("throughput",)
ROUNDS_BUDGET_S = 10.0  # throughput: no further timed rounds once this much time is spent (a loaded box)


# ----------------------------------------------------------------- throughput


def _throughput_worker(rank: int, world: int, port: int, threads: int, settings: dict, out: str) -> None:
    """One rank: fit the demo model for a warm-up epoch, then ``repeats`` timed rounds; rank 0 writes JSON."""
    from torch import nn
    from torch.utils.data import DataLoader, DistributedSampler, TensorDataset

    from hybridai.demo import digits_split, hybrid_model
    from hybridai.training import distributed, fit

    torch.set_num_threads(threads)
    if world > 1:
        os.environ.update(
            RANK=str(rank), LOCAL_RANK=str(rank), WORLD_SIZE=str(world), MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port)
        )
        distributed.init_from_env(backend="gloo", timeout=300)
    x, y, _, _ = digits_split(0)
    usable = len(x) // settings["batch"] * settings["batch"]  # whole global batches: identical work for any world
    dataset = TensorDataset(x[:usable], y[:usable])
    torch.manual_seed(0)
    model = distributed.wrap(hybrid_model(settings["qubits"]))
    optimizer = torch.optim.Adam(model.parameters(), lr=0.01)
    if world > 1:
        loader = distributed.distributed_loader(dataset, settings["batch"] // world, shuffle=True, seed=0)
    else:  # the same shuffled order as the ranks' samplers together
        sampler = DistributedSampler(dataset, num_replicas=1, rank=0, shuffle=True, seed=0)
        loader = DataLoader(dataset, batch_size=settings["batch"], sampler=sampler)
    loss = nn.CrossEntropyLoss()
    history = fit(model, loader, None, loss, optimizer, 1, progress=False)  # warm-up: tapes, allocator, gloo
    epochs = max(1, round(settings["samples"] / usable))
    times = []
    for _ in range(settings["repeats"]):
        if world > 1:
            torch.distributed.barrier()
        start = time.perf_counter()
        history = fit(model, loader, None, loss, optimizer, epochs, progress=False)
        times.append(time.perf_counter() - start)
        if len(times) == 1:
            first_round_loss = history[-1]["train_loss"]
        if distributed.all_reduce_sum([sum(times) > ROUNDS_BUDGET_S])[0]:  # every rank stops together
            break
    if rank == 0:
        samples = len(loader.sampler) * world * epochs
        seconds = statistics.median(times)
        result = {"seconds": seconds, "epochs": epochs, "rounds": len(times), "samples_per_s": samples / seconds}
        result["loss"] = first_round_loss  # the same work gives the same loss in every setup
        with open(out, "w") as f:
            json.dump(result, f)
    if world > 1:
        torch.distributed.destroy_process_group()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def throughput(
    qubits: int = 6, batches: tuple[int, ...] = (64, 256), samples: int = 10000, repeats: int = 3
) -> list[dict]:
    """Rows ``{setup, processes, threads, batch, per_rank_batch, epochs, seconds, samples_per_s, loss}``.

    ``batches``: global batch sizes (samples per optimizer step, split over the processes);
    ``samples``: about how many training samples one timed round processes (whole epochs).
    """
    import torch.multiprocessing as mp

    rows = []
    for batch, processes, threads in ((b, p, t) for b in batches for p, t in ((1, 1), (1, 2), (2, 1))):
        settings = {"qubits": qubits, "batch": batch, "samples": samples, "repeats": repeats}
        with tempfile.TemporaryDirectory() as folder:
            out = os.path.join(folder, "result.json")
            args = (processes, _free_port(), threads, settings, out)
            mp.spawn(_throughput_worker, args=args, nprocs=processes, join=True, start_method="spawn")
            with open(out) as f:
                result = json.load(f)
        setup = f"{processes} process{'es' if processes > 1 else ''} x {threads} thread{'s' if threads > 1 else ''}"
        rows.append(
            {"setup": setup, "processes": processes, "threads": threads, "batch": batch}
            | {"per_rank_batch": batch // processes}
            | result
        )
    return rows


def print_throughput(rows: list[dict], settings: dict) -> None:
    print(
        f"\nthroughput: demo model ({settings['qubits']} qubits, statevector), digits, about {settings['samples']} "
        f"samples per round, median of up to {settings['repeats']} rounds, torch {torch.__version__}, "
        f"{os.cpu_count()} CPU cores"
    )
    print("| global batch | setup | torch threads per process | batch per rank | epochs / round | rounds | "
          "samples / s | seconds / round | train loss after round 1 |")  # fmt: skip
    print("|---|---|---|---|---|---|---|---|---|")
    for row in rows:
        print(
            f"| {row['batch']} | {row['setup']} | {row['threads']} | {row['per_rank_batch']} | {row['epochs']} | "
            f"{row['rounds']} | "
            f"{row['samples_per_s']:.0f} | {row['seconds']:.2f} | {row['loss']:.5f} |"
        )
    print()
    for batch in dict.fromkeys(row["batch"] for row in rows):
        speed = {(r["processes"], r["threads"]): r["samples_per_s"] for r in rows if r["batch"] == batch}
        two = speed[(2, 1)]
        print(f"batch {batch}: 2 processes x 1 thread / 1 process x 1 thread = {two / speed[(1, 1)]:.2f}x, "
              f"/ 1 process x 2 threads = {two / speed[(1, 2)]:.2f}x samples per second")  # fmt: skip


# ----------------------------------------------------------------- main


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sections", nargs="+", choices=SECTIONS, default=list(SECTIONS))
    parser.add_argument("--qubits", type=int, default=6, help="throughput: qubits of the demo model")
    parser.add_argument("--batch", type=int, nargs="+", default=[64, 256], help="throughput: global batches")
    parser.add_argument("--samples", type=int, default=10000, help="throughput: samples per timed round (about)")
    parser.add_argument("--repeats", type=int, default=3, help="throughput: timed rounds (median)")
    args = parser.parse_args()
    if "throughput" in args.sections:
        settings = {"qubits": args.qubits, "samples": args.samples, "repeats": args.repeats}
        print_throughput(throughput(batches=tuple(args.batch), **settings), settings)


if __name__ == "__main__":
    main()
