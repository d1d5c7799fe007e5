"""Question: how does hybridai training scale?

Sections (``--sections``; all by default):

* ``throughput``: samples per second of hybrid models trained (Adam, cross-entropy, the same plain loop in every
  setup) on scikit-learn's digits, in one process against two processes (``torch.multiprocessing`` spawn, gloo,
  DistributedDataParallel via ``distributed.wrap``, ``DistributedSampler``) with the same global batch (samples
  per optimizer step) and the same shuffled order, so both do the same work (the training losses agree).
  ``--gradient-exchange``: how DDP averages the gradients, as ``distributed.wrap`` takes it (``auto``: hybridai's
  loopback exchange for CPU ranks on one machine; ``process_group``: gloo's all-reduce, as plain DDP).
  ``--models``: ``demo`` (``hybridai.demo.hybrid_model``: Linear 64->n, Tanh, n-qubit statevector circuit,
  Linear n->10; ``--qubits``, ``--batch``), ``sel10`` and ``sel12`` (compute-bound: Linear 64->n, Tanh, angle
  embedding and 2 ``StronglyEntanglingLayers`` on n = 10 or 12 qubits, statevector, Linear n->10; global batch
  256) and ``cnn``, the control without hybridai (plain PyTorch: three 3x3 convolutions of 24 channels on the 8x8
  digits, Tanh, Linear to 10; global batch 256; a one-process step about as long as ``sel10``'s): what
  data-parallel PyTorch alone gives on this machine for a step of that length. One process
  with as many torch threads as the two processes have together is the other single-process baseline on the
  same cores. Two more setups say what bounds the ratio: two processes that exchange nothing (each trains its
  own copy on its half of every global batch: the most two processes give on this machine at that moment) and
  one process on half the global batch (one rank's work alone: twice its speed is what two processes would give
  on two idle cores with a free exchange; below 2x by the work a step repeats whatever its batch). Every setup
  of a model lives in the same two spawned processes (one torch thread each; a one-process setup runs on rank 0
  while rank 1 sleeps at a barrier) and trains a warm-up epoch; then ``--cycles`` cycles each run one timed round
  of about ``--samples`` samples (whole epochs) of every setup, in an order rotated every cycle. A machine whose
  speed drifts (a shared host) slows the rounds of one cycle alike, so each cycle gives its own ratios; the
  medians are reported with the cycles' values, and what two processes lose per global batch is split into the
  work each rank repeats, what the processes cost each other on the machine and the gradient exchange. From
  every cycle's one-process time per global batch ``t1`` and two-process time ``t2`` the overhead
  ``c = t2 - t1 / 2`` is estimated, and with it the step time from which two processes give at least 1.5x
  (``t1 >= 6 c``). ``--allocators``: the setups run under each of glibc's malloc as it comes (``glibc``) and
  glibc told to keep freed memory (``kept``: ``MALLOC_TOP_PAD_``, ``MALLOC_TRIM_THRESHOLD_`` and
  ``MALLOC_MMAP_THRESHOLD_`` in the spawned processes' environment; ``padded``: the first two alone): as it
  comes, glibc hands the states a step frees back to the kernel and faults them in again the next step (hundreds
  to thousands of page faults per step at 10 qubits, batch 128-256), which slows every step by a varying amount;
  a synchronous data-parallel step waits for the slower rank, so the variation costs twice. Told only to keep
  freed memory, glibc still maps a block above 128 KiB apart whenever the top of its heap cannot hold it, and
  unmaps it when freed (tens of thousands of faults per step at 12 qubits, batch 256: ``padded``);
  ``MALLOC_MMAP_THRESHOLD_`` makes it take those from the heap too.

* ``memory``: what gradient checkpointing (``recompute_steps=K``) saves on a long spiking
  sequence: T=1000 steps, batch 32, 512 neurons, forward + backward of ``spikes.sum()`` for
  Linear 128->512 -> LIF (the common case), Linear -> CUBA with a learnt alpha (two traces saved
  without checkpointing) and Linear -> RepeatEncoder -> LIF (a static input current, whose input
  costs nothing to keep), each with and without checkpointing, each configuration in a fresh
  spawned process. Measured: bytes autograd keeps for backward (``saved_tensors_hooks``,
  distinct storages), the peak of torch's allocator during the step above what it held before
  (torch profiler on the CPU, ``torch.cuda.max_memory_allocated`` on CUDA), the growth of the
  process's peak resident set (``ru_maxrss``; the step is the process's first full-size one)
  and the step time; the ratio is without / with.

    python benchmarks/scale.py [--sections throughput] [--models demo sel10 sel12 cnn] [--qubits 6] [--batch 64 256]
        [--cycles 10] [--samples 10000] [--allocators glibc padded kept] [--gradient-exchange auto]

    bench-args: --sections throughput memory
    bench-args: --sections throughput --models sel10 cnn --allocators glibc kept
    bench-args: --sections throughput --models sel12 --allocators padded kept --cycles 6
    bench-args: --sections throughput --models sel10 cnn --allocators kept --gradient-exchange process_group --cycles 6
    python benchmarks/scale.py --sections memory [--memory-steps 1000] [--recompute-steps 32] [--neurons 512]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import socket
import statistics
import tempfile
import time
from typing import Any

import torch
from machine import cpu_model

SECTIONS = ("throughput", "memory")
ONE, THREADS, TWO, APART, HALF = (
    "1 process x 1 thread",
    "1 process x 2 threads",
    "2 processes x 1 thread",
    "2 processes x 1 thread, no exchange",
    "1 process x 1 thread, half batch",
)
KEPT = {"MALLOC_TOP_PAD_": str(256 * 2**20), "MALLOC_TRIM_THRESHOLD_": str(2**40)}  # freed memory kept
ALLOCATORS = {  # name: what the spawned processes' environment sets for glibc's malloc
    "glibc": {},  # its defaults
    "padded": KEPT,  # freed memory kept, but a block over 128 KiB mapped apart when the heap's top cannot hold it
    "kept": KEPT | {"MALLOC_MMAP_THRESHOLD_": str(2**40)},  # and large blocks taken from the heap too
}
MALLOC_VARIABLES = sorted(set().union(*ALLOCATORS.values()))  # cleared in the spawned processes' environment first
SETUPS = {  # name: (processes, torch threads each, gradients exchanged, one process on half the global batch)
    ONE: (1, 1, True, False),
    THREADS: (1, 2, True, False),
    TWO: (2, 1, True, False),
    APART: (2, 1, False, False),  # the most two processes give on this machine now: each trains its own copy
    HALF: (1, 1, True, True),  # the work of one rank, alone on the machine
}
MODELS = ("demo", "sel10", "sel12", "cnn")
DEFAULT_MODELS = ("demo", "sel10")
GLOBAL_BATCH = {"sel10": 256, "sel12": 256, "cnn": 256}  # the models trained at one global batch (demo: ``--batch``)


# ----------------------------------------------------------------- throughput


def _sel_model(qubits: int) -> torch.nn.Module:
    """Linear 64->n, Tanh, angle embedding + 2 StronglyEntanglingLayers on n = ``qubits`` qubits (statevector),
    Linear n->10."""
    from torch import nn

    from hybridai import QuantumLayer
    from hybridai.demo import entangling_classifier

    quantum = QuantumLayer(entangling_classifier, qubits, {"weights": (2, qubits, 3)})
    return nn.Sequential(nn.Linear(64, qubits), nn.Tanh(), quantum, nn.Linear(qubits, 10))


def _cnn_model(channels: int = 24) -> torch.nn.Module:
    """Plain PyTorch, no hybridai: the 8x8 digit, three 3x3 convolutions of ``channels`` channels with Tanh, Linear
    to 10 classes (26,026 parameters)."""
    from torch import nn

    layers: list[nn.Module] = [nn.Unflatten(1, (1, 8, 8))]
    for inputs in (1, channels, channels):
        layers += [nn.Conv2d(inputs, channels, 3, padding=1), nn.Tanh()]
    return nn.Sequential(*layers, nn.Flatten(), nn.Linear(channels * 64, 10))


def _setup(name: str, dataset: torch.utils.data.Dataset, settings: dict) -> tuple:
    """``(model, optimizer, loader)`` of one setup, built alike on both ranks from seed 0: DDP (``distributed.wrap``)
    for ``TWO``; a plain copy per rank on its shard for ``APART``; for the one-process setups a plain model and
    one loader of the global batch (or half of it) in the same shuffled order as the two ranks' samplers together."""
    from torch.utils.data import DataLoader, DistributedSampler

    from hybridai.demo import hybrid_model
    from hybridai.training import distributed

    processes, _, exchange, half = SETUPS[name]
    torch.manual_seed(0)
    kind = settings["model"]
    if kind == "cnn":
        model = _cnn_model()
    elif kind == "demo":
        model = hybrid_model(settings["qubits"])
    else:  # sel10, sel12
        model = _sel_model(int(kind.removeprefix("sel")))
    if processes == 2:
        model = distributed.wrap(model, gradient_exchange=settings["gradient_exchange"]) if exchange else model
        loader = distributed.distributed_loader(dataset, settings["batch"] // 2, shuffle=True, seed=0)
    else:
        sampler = DistributedSampler(dataset, num_replicas=1, rank=0, shuffle=True, seed=0)
        loader = DataLoader(dataset, batch_size=settings["batch"] // 2 if half else settings["batch"], sampler=sampler)
    return model, torch.optim.Adam(model.parameters(), lr=0.01), loader


def _train(model: torch.nn.Module, loader: Any, optimizer: Any, epochs: int, first: int) -> tuple[float, int]:
    """``epochs`` epochs from epoch ``first`` (the samplers' shuffles); the summed loss x samples and the samples."""
    loss_fn = torch.nn.CrossEntropyLoss()
    losses, samples = [], 0
    for epoch in range(first, first + epochs):
        loader.sampler.set_epoch(epoch)
        for x, y in loader:
            loss = loss_fn(model(x), y)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            losses.append(loss.detach() * len(x))
            samples += len(x)
    return float(torch.stack(losses).sum()), samples


def _throughput_worker(rank: int, port: int, settings: dict, out: str) -> None:
    """One of two processes holding every setup: a warm-up epoch of each, then ``cycles`` cycles of one timed
    round per setup, in an order rotated every cycle; a one-process setup runs on rank 0 while rank 1 waits at a
    barrier (asleep). Rank 0 writes one row per setup and cycle."""
    from torch.utils.data import TensorDataset

    from hybridai.demo import digits_split
    from hybridai.training import distributed

    torch.set_num_threads(1)
    os.environ.update(
        RANK=str(rank), LOCAL_RANK=str(rank), WORLD_SIZE="2", MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port)
    )
    distributed.init_from_env(backend="gloo", timeout=300)
    x, y, _, _ = digits_split(0)
    usable = len(x) // settings["batch"] * settings["batch"]  # whole global batches: identical work in every setup
    dataset = TensorDataset(x[:usable], y[:usable])
    epochs = max(1, round(settings["samples"] / usable))
    runs = {name: _setup(name, dataset, settings) for name in SETUPS}
    names, rows = list(SETUPS), []
    for cycle in range(-1, settings["cycles"]):  # cycle -1: the warm-up epoch (tapes, plans, allocator, sockets)
        for name in names[cycle % len(names) :] + names[: cycle % len(names)]:
            processes, threads, _, _ = SETUPS[name]
            model, optimizer, loader = runs[name]
            rounds = 1 if cycle < 0 else epochs
            torch.distributed.barrier()
            if rank < processes:
                torch.set_num_threads(threads)
                faults = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
                start = time.perf_counter()
                total, samples = _train(model, loader, optimizer, rounds, 0 if cycle < 0 else 1 + cycle * epochs)
                seconds = time.perf_counter() - start
                faults = resource.getrusage(resource.RUSAGE_SELF).ru_minflt - faults
                torch.set_num_threads(1)
                if processes == 2:  # the loss of the global batches
                    total, samples = distributed.all_reduce_sum([total, samples])
                steps = len(loader) * rounds  # of this rank's own
                global_batches = samples / settings["batch"]
                if rank == 0 and cycle >= 0:
                    rows.append({"setup": name, "cycle": cycle, "epochs": epochs, "seconds": seconds,
                                 "samples_per_s": samples / seconds, "step_ms": 1e3 * seconds / global_batches,
                                 "faults": faults / steps, "loss": total / samples})  # fmt: skip
            torch.distributed.barrier()
    if rank == 0:
        with open(out, "w") as f:
            json.dump(rows, f)
    torch.distributed.destroy_process_group()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def throughput(
    qubits: int = 6,
    batches: tuple[int, ...] = (64, 256),
    samples: int = 10000,
    models: tuple[str, ...] = DEFAULT_MODELS,
    cycles: int = 10,
    allocators: tuple[str, ...] = ("glibc",),
    gradient_exchange: str = "auto",
) -> list[dict]:
    """Rows ``{model, allocator, setup, processes, threads, batch, per_rank_batch, cycle, epochs, seconds, step_ms,
    samples_per_s, faults, loss}``, one per setup, allocator (a key of ``ALLOCATORS``) and cycle; ``faults``: rank
    0's minor page faults per optimizer step of its own; ``loss``: the round's mean training loss.

    ``batches``: global batch sizes of the demo model (samples per optimizer step, split over the processes;
    the others train with ``GLOBAL_BATCH``); ``samples``: about how many training samples one timed round
    processes (whole epochs); ``step_ms``: milliseconds per global batch of samples (per optimizer step, but for
    ``HALF``, which takes two steps per global batch). All setups of a model, batch and allocator run in the same
    two spawned processes, ``cycles`` times interleaved: a machine that slows down for a while slows the rounds
    of one cycle alike, and each cycle gives its own ratios. ``gradient_exchange``: DDP's, as ``distributed.wrap``
    takes it (``"auto"``: the loopback exchange on CPU ranks of one machine; ``"process_group"``: gloo's all-reduce).
    """
    rows = []
    for model in models:
        for batch in (GLOBAL_BATCH[model],) if model in GLOBAL_BATCH else batches:
            for allocator in allocators:
                settings = {"model": model, "qubits": qubits, "batch": batch, "samples": samples, "cycles": cycles,
                            "gradient_exchange": gradient_exchange}  # fmt: skip
                saved = {name: os.environ.pop(name, None) for name in MALLOC_VARIABLES}
                os.environ.update(ALLOCATORS[allocator])  # the spawned processes' environment
                try:
                    measured = _spawn(settings)
                finally:
                    for name, value in saved.items():
                        os.environ.pop(name, None) if value is None else os.environ.update({name: value})
                for row in measured:
                    processes, threads, _, half = SETUPS[row["setup"]]
                    per_rank = batch // 2 if half or processes == 2 else batch
                    rows.append({"model": model, "allocator": allocator, "processes": processes, "threads": threads,
                                 "batch": batch, "per_rank_batch": per_rank} | row)  # fmt: skip
    return rows


def _spawn(settings: dict) -> list[dict]:
    """The rows rank 0 of two freshly spawned processes reports."""
    import torch.multiprocessing as mp

    with tempfile.TemporaryDirectory() as folder:
        out = os.path.join(folder, "result.json")
        mp.spawn(_throughput_worker, args=(_free_port(), settings, out), nprocs=2, join=True, start_method="spawn")
        with open(out) as f:
            return json.load(f)


def group(row: dict) -> tuple[str, int, str]:
    """The rows compared with each other: one model, global batch and allocator."""
    return row["model"], row["batch"], row["allocator"]


def label(key: tuple[str, int, str]) -> str:
    model, batch, allocator = key
    return f"{model}, batch {batch}" + (f", allocator {allocator}" if allocator != "glibc" else "")


def ratios(rows: list[dict], key: tuple, of: str = TWO, over: str = ONE) -> list[float]:
    """Per cycle: samples per second of the setup ``of`` over those of the setup ``over`` (keys of ``SETUPS``);
    ``2 * HALF / ONE``: what two processes would give if each ran its half of the batch as fast as one process
    runs it alone and nothing were exchanged."""
    ours = [r for r in rows if group(r) == key]
    speed = {(r["cycle"], r["setup"]): r["samples_per_s"] for r in ours}
    factor = 2 if of == HALF else 1
    return [factor * speed[(c, of)] / speed[(c, over)] for c in sorted({r["cycle"] for r in ours})]


def step_times(rows: list[dict]) -> dict[tuple, dict[str, float]]:
    """Per (``group``, cycle): the ms per global batch of every setup."""
    times: dict[tuple, dict[str, float]] = {}
    for r in rows:
        times.setdefault((group(r), r["cycle"]), {})[r["setup"]] = r["step_ms"]
    return times


def where_time_goes(rows: list[dict], key: tuple) -> str:
    """A sentence from one model's rows: the medians over cycles of what two processes lose per global batch
    against half the one-process time ``t1 / 2``, in three parts that add up to ``t2 - t1 / 2``: the work every
    rank repeats whatever its batch (``th - t1 / 2``, ``th`` the one-process step time on half the batch), what the
    two processes cost each other on this machine (``ta - th``, ``ta`` the step time of two processes that
    exchange nothing) and the gradient exchange with the ranks' lock-step (``t2 - ta``). Each is the median of its
    own values over the cycles, so the medians need not add up."""
    parts: dict[str, list[float]] = {"one": [], "repeated": [], "machine": [], "exchange": [], "total": []}
    for ms in (ms for (group_, _), ms in step_times(rows).items() if group_ == key):
        t1, th, ta, t2 = ms[ONE], ms[HALF] / 2, ms[APART], ms[TWO]
        for name, value in (("repeated", th - t1 / 2), ("machine", ta - th), ("exchange", t2 - ta)):
            parts[name].append(value)
        parts["total"].append(t2 - t1 / 2)
        parts["one"].append(t1)
    m = {name: statistics.median(values) for name, values in parts.items()}
    t1 = m["one"]
    return (
        f"{label(key)}, ms per global batch (medians over cycles): one process {t1:.1f} (so {t1 / 2:.1f} "
        f"ideally on two); two processes lose {m['total']:.1f} (each number a median of its own over the cycles): "
        f"{m['repeated']:.1f} to the work each rank repeats "
        f"whatever its batch (one process on half the batch against half of t1), {m['machine']:.1f} to each other "
        f"on this machine (two processes that exchange nothing against one alone on half the batch) and "
        f"{m['exchange']:.1f} to the gradient exchange and the ranks' lock-step."
    )


def pays_off(rows: list[dict]) -> str:
    """A sentence from ``rows``: the per-step overhead ``c = t2 - t1 / 2`` two processes add (``t1``, ``t2``: one
    and two processes' ms per global batch in the same cycle; the median over models, batches, allocators and
    cycles) and the one-process step time ``6 c`` from which two processes give at least 1.5x the samples per
    second of one."""
    overheads = [ms[TWO] - ms[ONE] / 2 for ms in step_times(rows).values()]
    c = statistics.median(overheads)
    if c <= 0:
        return (
            f"Two processes add no measurable overhead per step here (median estimate {c:.2f} ms): data-parallel "
            "training pays from the smallest model measured."
        )
    return (
        f"Two processes add about {c:.1f} ms per optimizer step (median over {len(overheads)} measurements of "
        f"t2 - t1 / 2; per measurement {', '.join(f'{o:.1f}' for o in overheads)} ms), so on this machine "
        f"2 processes give >= 1.5x the samples per second of one from a one-process step time of about "
        f"{6 * c:.0f} ms per global batch (>= 1.8x from about {c / (1 / 1.8 - 1 / 2):.0f} ms)."
    )


def summarize(rows: list[dict]) -> list[dict]:
    """One row per model, batch and setup: the medians over cycles of samples per second, step and round times and
    page faults, the loss of the first cycle's round."""
    out = []
    for key in dict.fromkeys((group(r), r["setup"]) for r in rows):
        same = [r for r in rows if (group(r), r["setup"]) == key]
        row = dict(same[0])
        for name in ("samples_per_s", "step_ms", "seconds", "faults"):
            row[name] = statistics.median(r[name] for r in same)
        out.append(row)
    return out


def print_throughput(rows: list[dict], settings: dict) -> None:
    print(
        f"\nthroughput: about {settings['samples']} samples per round, torch {torch.__version__}, {os.cpu_count()} "
        f"CPU cores, CPU: {cpu_model()}"
    )
    print(
        f"models: demo = hybridai.demo.hybrid_model({settings['qubits']}) (statevector); sel10 (sel12) = Linear "
        "64->n, Tanh, n = 10 (12) qubits: angle embedding + 2 StronglyEntanglingLayers (statevector), Linear n->10; "
        "cnn = plain PyTorch, no hybridai: 3 x (Conv2d 3x3, 24 channels, Tanh), Linear 1536->10"
    )
    print(
        f"each model's {len(SETUPS)} setups run in the same two processes, one round each per cycle, "
        f"{settings['cycles']} cycles; samples / s, ms / global batch, seconds / round and page faults / step (minor "
        "faults of rank 0 per optimizer step of its own): medians over the cycles"
    )
    started = {name: " ".join(f"{k}={v}" for k, v in ALLOCATORS[name].items()) for name in ("padded", "kept")}
    print(f"allocator: glibc = glibc's malloc as it comes; padded = the processes started with {started['padded']}; "
          f"kept = with {started['kept']}")  # fmt: skip
    exchange = {"auto": "hybridai's loopback exchange", "process_group": "gloo's all-reduce"}
    print(f"DDP's gradients averaged by: {exchange[settings['gradient_exchange']]} "
          f"(gradient_exchange={settings['gradient_exchange']!r})")  # fmt: skip
    print("| model | global batch | allocator | setup | torch threads per process | batch per rank | epochs / round | "
          "samples / s | ms / global batch | seconds / round | page faults / step | "
          "train loss, first round |")  # fmt: skip
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for row in summarize(rows):
        print(
            f"| {row['model']} | {row['batch']} | {row['allocator']} | {row['setup']} | {row['threads']} | "
            f"{row['per_rank_batch']} | "
            f"{row['epochs']} | {row['samples_per_s']:.0f} | {row['step_ms']:.2f} | "
            f"{row['seconds']:.2f} | {row['faults']:.0f} | {row['loss']:.5f} |"
        )
    print()

    def shown(values: list[float]) -> str:
        return f"{statistics.median(values):.2f}x (cycles: {', '.join(f'{r:.2f}' for r in values)})"

    for key in dict.fromkeys(map(group, rows)):
        print(f"{label(key)}, samples per second of {TWO} / {ONE} = {shown(ratios(rows, key))}, "
              f"/ {THREADS} = {shown(ratios(rows, key, over=THREADS))}; the most two processes could give: "
              f"on this machine now ({APART} / {ONE}) {shown(ratios(rows, key, of=APART))}, on two idle cores "
              f"(2 x {HALF} / {ONE}) {shown(ratios(rows, key, of=HALF))}")  # fmt: skip
    print()
    for key in dict.fromkeys(map(group, rows)):
        print(where_time_goes(rows, key))
    print()
    print(pays_off(rows))


# ----------------------------------------------------------------- memory

MEMORY_MODELS = ("Linear -> LIF", "Linear -> CUBA (learnt alpha)", "Linear -> RepeatEncoder -> LIF")


def _memory_worker(settings: dict) -> dict:
    """One configuration in a fresh process: maxrss growth of the first full step, then saved bytes, peak, time."""
    import resource

    from torch import nn

    from hybridai import CUBA, LIF, RepeatEncoder

    torch.set_num_threads(settings["threads"])
    torch.manual_seed(0)
    steps, batch, neurons, chunk = settings["steps"], settings["batch"], settings["neurons"], settings["chunk"]
    device = torch.device(settings["device"])
    linear = nn.Linear(128, neurons).to(device)
    if settings["model"] == "Linear -> RepeatEncoder -> LIF":  # Linear on [B, 128], then repeated T times
        x, encoder = torch.rand(batch, 128, device=device), RepeatEncoder(steps)
    else:
        x, encoder = torch.rand(steps, batch, 128, device=device), nn.Identity()
    if "CUBA" in settings["model"]:
        layer = CUBA(0.8, 0.9, learn_alpha=True, recompute_steps=chunk).to(device)
    else:
        layer = LIF(0.9, recompute_steps=chunk).to(device)

    def run(inputs: torch.Tensor = x) -> torch.Tensor:
        return layer(encoder(linear(inputs)))

    def step(inputs: torch.Tensor = x) -> None:
        run(inputs).sum().backward()
        linear.zero_grad(set_to_none=True)
        layer.zero_grad(set_to_none=True)

    step(x[:, :1] if x.ndim == 3 else x[:1])  # one sample: lazy initialisation, not the measured peak
    result = {}
    if device.type == "cuda":
        torch.cuda.synchronize()
        before = torch.cuda.memory_allocated()
        torch.cuda.reset_peak_memory_stats()
        step()
        torch.cuda.synchronize()
        result["peak"] = torch.cuda.max_memory_allocated() - before
    else:
        rss_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # KiB on Linux
        step()
        result["rss"] = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - rss_before) * 1024
        from torch.profiler import ProfilerActivity, profile

        with profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof:
            step()
        events = [e for e in prof.events() if e.self_cpu_memory_usage]
        changes = sorted((e.time_range.start, e.self_cpu_memory_usage) for e in events)
        held = peak = 0
        for _, change in changes:
            held += change
            peak = max(peak, held)
        result["peak"] = peak
    storages: dict[int, int] = {}

    def pack(tensor: torch.Tensor) -> torch.Tensor:
        storages[tensor.untyped_storage().data_ptr()] = tensor.untyped_storage().nbytes()
        return tensor

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda tensor: tensor):
        out = run()
    out.sum().backward()
    result["saved"] = sum(storages.values())
    times = []
    for _ in range(settings["repeats"]):
        start = time.perf_counter()
        step()
        if device.type == "cuda":
            torch.cuda.synchronize()
        times.append(time.perf_counter() - start)
    result["seconds"] = statistics.median(times)
    return result


def memory(
    steps: int = 1000, batch: int = 32, neurons: int = 512, chunk: int = 32, repeats: int = 3, threads: int = 1
) -> list[dict]:
    """Rows ``{model, recompute_steps, device, saved, peak, rss, seconds}`` (bytes, seconds per step).

    ``rss`` (peak resident-set growth) is measured on the CPU only; on CUDA ``peak`` is
    ``torch.cuda.max_memory_allocated`` above what was allocated before the step.
    """
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    device = "cuda" if torch.cuda.is_available() else "cpu"
    rows = []
    for model in MEMORY_MODELS:
        for recompute_steps in (None, chunk):
            settings = {"model": model, "steps": steps, "batch": batch, "neurons": neurons, "chunk": recompute_steps}
            settings |= {"repeats": repeats, "threads": threads, "device": device}
            with ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("spawn")) as pool:  # a fresh process
                result = pool.submit(_memory_worker, settings).result()
            rows.append({"model": model, "recompute_steps": recompute_steps, "device": device} | result)
    return rows


def print_memory(rows: list[dict], settings: dict) -> None:
    mib = 2**20
    trace = settings["steps"] * settings["batch"] * settings["neurons"] * 4
    print(
        f"\nmemory: T={settings['steps']} steps, batch {settings['batch']}, {settings['neurons']} neurons "
        f"(one float32 [T, B, N] tensor = {trace / mib:.1f} MiB), forward + backward of spikes.sum(), "
        f"device {rows[0]['device']}, torch {torch.__version__}, {settings['threads']} thread(s)"
    )
    allocator = "torch.cuda" if rows[0]["device"] == "cuda" else "torch CPU allocator"
    print(f"| model | recompute_steps | saved for backward MiB | peak allocated MiB ({allocator}) | "
          "peak RSS growth MiB | s / step |")  # fmt: skip
    print("|---|---|---|---|---|---|")
    for row in rows:
        rss = f"{row['rss'] / mib:.1f}" if "rss" in row else "-"
        print(f"| {row['model']} | {row['recompute_steps'] or 'off'} | {row['saved'] / mib:.1f} | "
              f"{row['peak'] / mib:.1f} | {rss} | {row['seconds']:.3f} |")  # fmt: skip
    print()
    for model in MEMORY_MODELS:
        off, on = (r for r in rows if r["model"] == model)
        ratios = [f"saved {off['saved'] / on['saved']:.2f}x", f"peak allocated {off['peak'] / on['peak']:.2f}x"]
        if "rss" in off and on["rss"] > 0:
            ratios.append(f"peak RSS growth {off['rss'] / on['rss']:.2f}x")
        print(f"{model}: without / with recompute_steps={on['recompute_steps']}: {', '.join(ratios)}; "
              f"time {on['seconds'] / off['seconds']:.2f}x")  # fmt: skip


# ----------------------------------------------------------------- main


def main() -> None:
    from hybridai.training.distributed import GRADIENT_EXCHANGES

    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sections", nargs="+", choices=SECTIONS, default=list(SECTIONS))
    parser.add_argument("--models", nargs="+", choices=MODELS, default=list(DEFAULT_MODELS), help="throughput: models")
    parser.add_argument("--qubits", type=int, default=6, help="throughput: qubits of the demo model")
    parser.add_argument("--batch", type=int, nargs="+", default=[64, 256], help="throughput: demo global batches")
    parser.add_argument("--samples", type=int, default=10000, help="throughput: samples per timed round (about)")
    parser.add_argument("--cycles", type=int, default=10, help="throughput: interleaved rounds of every setup")
    parser.add_argument("--repeats", type=int, default=3, help="memory: timed steps (median)")
    parser.add_argument(
        "--allocators", nargs="+", choices=ALLOCATORS, default=["glibc"], help="throughput: malloc settings"
    )
    parser.add_argument(
        "--gradient-exchange", choices=GRADIENT_EXCHANGES, default="auto", help="throughput: DDP's exchange"
    )
    parser.add_argument("--memory-steps", type=int, default=1000, help="memory: time steps T")
    parser.add_argument("--memory-batch", type=int, default=32, help="memory: batch size")
    parser.add_argument("--neurons", type=int, default=512, help="memory: neurons of the spiking layer")
    parser.add_argument("--recompute-steps", type=int, default=32, help="memory: K of recompute_steps=K")
    parser.add_argument("--threads", type=int, default=1, help="memory: torch threads")
    args = parser.parse_args()
    if "throughput" in args.sections:
        settings = {"qubits": args.qubits, "samples": args.samples, "cycles": args.cycles}
        settings |= {"gradient_exchange": args.gradient_exchange}
        rows = throughput(
            batches=tuple(args.batch), models=tuple(args.models), allocators=tuple(args.allocators), **settings
        )
        print_throughput(rows, settings)
    if "memory" in args.sections:
        settings = {"steps": args.memory_steps, "batch": args.memory_batch, "neurons": args.neurons}
        settings |= {"chunk": args.recompute_steps, "threads": args.threads}
        print_memory(memory(repeats=args.repeats, **settings), settings)


if __name__ == "__main__":
    main()
