"""Data-parallel training helpers on top of ``torch.distributed`` (gloo on CPU, NCCL on CUDA).

Launch with ``torchrun --nproc-per-node N script.py``; in the script::

    distributed.init_from_env()                  # reads RANK, WORLD_SIZE, LOCAL_RANK, MASTER_*
    distributed.seed_everything(0, model)        # seed + rank for torch, numpy, encoders, backends
    model = distributed.wrap(model)              # DistributedDataParallel (a no-op in one process)
    loader = distributed.distributed_loader(train_set, batch_size=32)   # per-rank batches
    history = hybridai.training.fit(model, loader, None, loss, optimizer, epochs=5)

Every rank builds its own quantum and spiking backends: they live in the model, and DDP only
broadcasts parameters and buffers. Without a process group every helper falls back to one process.
"""

from __future__ import annotations

import datetime
import math
import os
import random
from collections.abc import Sequence
from typing import Any

import torch
import torch.distributed as dist
from torch import nn

from hybridai.core.errors import ConfigError, bounded_int, invalid, non_negative_int, positive_int

__all__ = [
    "all_reduce_sum",
    "distributed_loader",
    "init_from_env",
    "is_distributed",
    "local_rank",
    "rank",
    "seed_everything",
    "sharded_gram",
    "unwrap",
    "world_size",
    "wrap",
]

BACKENDS = ("gloo", "nccl")


def is_distributed() -> bool:
    """True when a ``torch.distributed`` process group is initialised."""
    return dist.is_available() and dist.is_initialized()


def rank() -> int:
    """This process's rank in the group; 0 without a process group."""
    return dist.get_rank() if is_distributed() else 0


def world_size() -> int:
    """Number of processes in the group; 1 without a process group."""
    return dist.get_world_size() if is_distributed() else 1


def local_rank() -> int:
    """This process's index on its machine (torchrun's ``LOCAL_RANK``); 0 when unset."""
    value = os.environ.get("LOCAL_RANK", "0")
    try:
        return int(value)
    except ValueError:
        raise invalid("LOCAL_RANK (environment variable)", value, "a non-negative int (set by torchrun)") from None


def init_from_env(backend: str | None = None, timeout: float | None = None) -> bool:
    """Join the process group described by torchrun's environment; return True when distributed.

    Reads ``RANK``, ``WORLD_SIZE``, ``LOCAL_RANK``, ``MASTER_ADDR`` and ``MASTER_PORT``. Without
    ``WORLD_SIZE`` (a plain ``python script.py``) nothing happens and False is returned; an already
    initialised group is kept. ``backend``: ``"gloo"`` or ``"nccl"``; default NCCL when CUDA is
    available, else gloo. With NCCL the CUDA device ``LOCAL_RANK`` becomes the current device (one
    GPU per process: ``--nproc-per-node`` at most the machine's GPUs).
    ``timeout``: seconds this rank waits to join the group and at each collective for the other
    ranks before failing (default: torch's, 30 minutes for gloo, 10 for NCCL).

    On many machines (``torchrun --nnodes N --rdzv-backend c10d --rdzv-endpoint HOST:PORT``) torchrun's
    rendezvous assigns the ranks and sets the same variables, ``MASTER_ADDR``/``MASTER_PORT`` naming a
    store that the torchrun of rank 0's machine holds, which ``env://`` joins (``TORCHELASTIC_USE_AGENT_STORE``).
    """
    if backend is not None and backend not in BACKENDS:
        raise invalid("backend", backend, f"None (nccl with CUDA, else gloo) or one of {BACKENDS}")
    if timeout is not None and (
        isinstance(timeout, bool) or not isinstance(timeout, int | float) or not 0 < timeout < math.inf
    ):
        raise invalid("timeout", timeout, "None or a positive number of seconds")
    if is_distributed():
        return True
    if "WORLD_SIZE" not in os.environ:
        return False
    for name in ("RANK", "WORLD_SIZE"):
        value = os.environ.get(name, "")
        if not value.isdigit():
            raise invalid(f"{name} (environment variable)", value, "a non-negative int (set by torchrun)")
    size = int(os.environ["WORLD_SIZE"])
    if not int(os.environ["RANK"]) < size:
        raise invalid("RANK (environment variable)", os.environ["RANK"], f"0 to {size - 1} (WORLD_SIZE={size})")
    missing = [name for name in ("MASTER_ADDR", "MASTER_PORT") if name not in os.environ]
    if missing:
        raise ConfigError(
            f"WORLD_SIZE={os.environ['WORLD_SIZE']} is set but {', '.join(missing)} is not; accepted: launch "
            "with torchrun, or set RANK, WORLD_SIZE, MASTER_ADDR and MASTER_PORT together"
        )
    backend = backend or ("nccl" if torch.cuda.is_available() else "gloo")
    if backend == "nccl":
        if not torch.cuda.is_available():
            raise invalid("backend", backend, "'gloo' on a machine without CUDA")
        gpus = torch.cuda.device_count()
        if not local_rank() < gpus:
            raise invalid(
                "LOCAL_RANK (environment variable)",
                os.environ["LOCAL_RANK"],
                f"0 to {gpus - 1}: this machine has {gpus} GPU(s), so at most --nproc-per-node {gpus}",
            )
        torch.cuda.set_device(local_rank())
    limit = None if timeout is None else datetime.timedelta(seconds=timeout)  # None: torch's default
    dist.init_process_group(backend, init_method="env://", timeout=limit)
    return True


def seed_everything(seed: int, model: nn.Module | None = None) -> int:
    """Seed Python, NumPy and torch (CPU and CUDA) with ``seed + rank``; return that seed.

    With ``model``, every module with a ``reseed`` method (``RateEncoder``) restarts from
    ``seed + rank``, and every hybridai layer whose backend was configured with a ``seed`` option
    (shots, noise) gets a backend seeded with ``seed + rank``: ranks draw independent samples, and
    the same seed gives the same numbers. DDP copies rank 0's initial parameters to every rank.
    """
    non_negative_int("seed", seed)
    if model is not None and not isinstance(model, nn.Module):
        raise invalid("model", type(model).__name__, "None or a torch.nn.Module")
    import numpy as np

    ours = seed + rank()
    random.seed(ours)
    np.random.seed(ours % 2**32)
    torch.manual_seed(ours)
    if model is not None:
        from hybridai.core.module import HybridModule

        for module in model.modules():
            reseed = getattr(module, "reseed", None)
            if callable(reseed):
                reseed(ours)
            elif isinstance(module, HybridModule) and "seed" in module.backend_options:
                module.set_backend(module.backend, **{**module.backend_options, "seed": ours})
    return ours


GRADIENT_EXCHANGES = ("auto", "process_group")


def wrap(model: nn.Module, *, gradient_exchange: str = "auto", **ddp_options: Any) -> nn.Module:
    """``DistributedDataParallel(model)`` when a process group is initialised, else ``model``.

    On CUDA the model's device becomes ``device_ids``; on CPU none is given (gloo). Move the model
    to its device before wrapping. ``ddp_options`` go to DDP (``find_unused_parameters=True`` ...).
    ``gradient_exchange``: ``"auto"`` averages the gradients of CPU ranks that share one machine in the
    training thread over loopback sockets (``hybridai.training.gradient_exchange``: gloo's own thread costs a
    small model milliseconds per step when every core trains), and leaves every other case to DDP;
    ``"process_group"`` always leaves it to DDP's all-reduce. Both give the mean gradient of all ranks. DDP takes
    one communication hook: to register your own (PowerSGD, compression), wrap with ``"process_group"``.
    """
    if not isinstance(model, nn.Module):
        raise invalid("model", type(model).__name__, "a torch.nn.Module")
    if gradient_exchange not in GRADIENT_EXCHANGES:
        raise invalid("gradient_exchange", gradient_exchange, f"one of {GRADIENT_EXCHANGES}")
    if not is_distributed() or isinstance(model, nn.parallel.DistributedDataParallel):
        return model
    device = next((p.device for p in model.parameters()), torch.device("cpu"))
    if device.type == "cuda":
        ddp_options.setdefault("device_ids", [device.index if device.index is not None else local_rank()])
    wrapped = nn.parallel.DistributedDataParallel(model, **ddp_options)
    if gradient_exchange == "auto" and device.type == "cpu" and dist.get_backend() == "gloo" and world_size() > 1:
        from hybridai.training.gradient_exchange import LoopbackAverage, average_hook

        exchange = LoopbackAverage.connect()
        if exchange is not None:
            wrapped.register_comm_hook(exchange, average_hook)
    return wrapped


def unwrap(model: nn.Module) -> nn.Module:
    """The module inside a DDP wrapper (to save checkpoints without ``module.`` prefixes)."""
    return model.module if isinstance(model, nn.parallel.DistributedDataParallel) else model


def distributed_loader(
    dataset: Any,
    batch_size: int,
    *,
    shuffle: bool = True,
    seed: int = 0,
    drop_last: bool = False,
    **loader_options: Any,
) -> torch.utils.data.DataLoader:
    """A DataLoader over this rank's share of ``dataset`` (a ``DistributedSampler``).

    ``batch_size`` is per rank: the global batch is ``batch_size * world_size()``. Every rank sees
    ``ceil(len(dataset) / world_size)`` samples (a few repeated to even out) unless ``drop_last``.
    ``shuffle`` reorders per epoch from ``seed`` (``fit`` calls ``set_epoch``). Without a process
    group: an ordinary DataLoader, shuffled from ``seed``. ``loader_options`` go to the DataLoader.
    """
    from torch.utils.data import DataLoader, DistributedSampler

    positive_int("batch_size", batch_size)
    if not hasattr(dataset, "__len__") or not hasattr(dataset, "__getitem__"):
        raise invalid("dataset", type(dataset).__name__, "a map-style dataset with __len__ and __getitem__")
    bounded_int("seed", seed)
    for name in ("sampler", "batch_sampler"):
        if name in loader_options:
            raise invalid(name, loader_options[name], "not given: distributed_loader builds the sampler")
    if is_distributed():
        sampler: DistributedSampler[int] = DistributedSampler(
            dataset, shuffle=bool(shuffle), seed=seed, drop_last=bool(drop_last)
        )
        return DataLoader(dataset, batch_size=batch_size, sampler=sampler, drop_last=drop_last, **loader_options)
    generator = torch.Generator().manual_seed(seed) if shuffle else None
    shuffle = bool(shuffle)
    return DataLoader(dataset, batch_size, shuffle=shuffle, generator=generator, drop_last=drop_last, **loader_options)


def _reduce_device() -> torch.device:
    if dist.get_backend() == "nccl":
        return torch.device("cuda", torch.cuda.current_device())
    return torch.device("cpu")


def all_reduce_sum(values: Sequence[float]) -> list[float]:
    """Element-wise sums of ``values`` over all ranks (float64); ``values`` itself in one process."""
    accepted = "a sequence of numbers (the same length on every rank)"
    if isinstance(values, str | bytes):
        raise invalid("values", values, accepted)
    try:
        values = [float(v) for v in values]
    except (TypeError, ValueError):
        raise invalid("values", values, accepted) from None
    if not is_distributed():
        return values
    tensor = torch.tensor(values, dtype=torch.float64, device=_reduce_device())
    dist.all_reduce(tensor, op=dist.ReduceOp.SUM)
    return tensor.tolist()


def sharded_gram(kernel: Any, X: Any, Y: Any = None) -> torch.Tensor:
    """The kernel matrix ``kernel(X, Y)`` ``[N, M]`` computed by all ranks together; every rank gets all of it.

    Each rank computes its share of the samples' features and its own rows
    (``hybridai.quantum.kernels.sharded.gram_shards``: each pair once, about ``N * M / world_size`` overlaps per
    rank), then the rows are gathered. Equal to the single-process ``kernel(X, Y)`` to rounding; no autograd
    history. To keep the matrix divided (memory per rank ~ N^2 / world_size) use ``gram_shards`` and the kernel
    methods beside it (``ShardedKernelRidge``, ``sharded_alignment``). Without a process group: ``kernel(X, Y)``.
    """
    from hybridai.quantum.kernels.quantum_kernel import QuantumKernel
    from hybridai.quantum.kernels.sharded import gram_shards

    if not isinstance(kernel, QuantumKernel):
        raise invalid("kernel", type(kernel).__name__, "a hybridai.QuantumKernel")
    if not is_distributed():
        return kernel(X, Y)
    return gram_shards(kernel, X, Y).gather()
