"""A small training loop: tqdm progress, per-epoch metrics, early stopping, callbacks, AMP, TensorBoard.

Works unchanged under ``torchrun`` with a DDP model and a ``DistributedSampler`` (see
``hybridai.training.distributed``): losses are averaged over all ranks, weighted by samples, so
every rank returns the same history and takes the same early-stopping decision; only rank 0
shows progress bars and writes TensorBoard logs.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Iterable
from contextlib import nullcontext
from typing import Any

import torch

from hybridai.core.errors import MissingExtraError, ShapeError, invalid, non_negative_int, optional_int, positive_int
from hybridai.training import distributed

AMP_DTYPES = {"cpu": (torch.bfloat16,), "cuda": (torch.float16, torch.bfloat16)}


def _epoch(model, data, loss_fn, optimizer, train: bool, device, progress: bool, desc: str, amp, scaler, batch_dim):
    """One pass over ``data``; returns this rank's (summed loss x samples, samples).

    The losses stay on their device until the pass ends (one copy to the host per pass, no synchronisation per
    step); the sum is taken in float64 in batch order."""
    model.train(train)
    losses: list[torch.Tensor] = []
    counts: list[int] = []
    batches = data
    if progress:
        from tqdm.auto import tqdm

        batches = tqdm(data, desc=desc, leave=False)
    with torch.set_grad_enabled(train):
        for x, y in batches:
            if device is not None:
                x, y = x.to(device), y.to(device)
            with torch.autocast(amp[0], dtype=amp[1]) if amp is not None else nullcontext():
                loss = loss_fn(model(x), y)
            if train:
                optimizer.zero_grad()
                if scaler is not None:
                    scaler.scale(loss).backward()
                    scaler.step(optimizer)
                    scaler.update()
                else:
                    loss.backward()
                    optimizer.step()
            counts.append(_samples(x, batch_dim))
            losses.append(loss.detach().reshape(()))
    values = torch.stack(losses).cpu().tolist() if losses else []
    total = 0.0
    for value, samples in zip(values, counts, strict=True):
        total += value * samples
    return total, sum(counts)


def _samples(x, batch_dim: int) -> int:
    """The samples in the batch ``x``: its length along ``batch_dim`` (``len(x)`` for dimension 0)."""
    if batch_dim == 0:
        return len(x)
    if not torch.is_tensor(x) or x.ndim <= batch_dim:
        shown = tuple(x.shape) if torch.is_tensor(x) else type(x).__name__
        raise invalid("batch_dim", batch_dim, f"a dimension of every batch's x (one has {shown})", ShapeError)
    return int(x.shape[batch_dim])


def _device_type(model: torch.nn.Module, device) -> str:
    if device is not None:
        return torch.device(device).type
    return next((p.device.type for p in model.parameters()), "cpu")


def _check_arguments(model, train_data, val_data, loss, optimizer, epochs, patience, callbacks, device, progress):
    if not isinstance(model, torch.nn.Module):
        raise invalid("model", type(model).__name__, "a torch.nn.Module")
    for name, data in (("train_data", train_data), ("val_data", val_data)):
        if (data is not None or name == "train_data") and not isinstance(data, Iterable):
            accepted = "an iterable of (x, y) batches such as a DataLoader"
            raise invalid(name, type(data).__name__, accepted if name == "train_data" else f"None or {accepted}")
    if not callable(loss):
        raise invalid("loss", loss, "a callable loss(output, target) -> scalar tensor")
    if not isinstance(optimizer, torch.optim.Optimizer):
        raise invalid("optimizer", type(optimizer).__name__, "a torch.optim.Optimizer")
    positive_int("epochs", epochs)
    optional_int("patience", patience, 1)
    if isinstance(callbacks, str | bytes) or not isinstance(callbacks, Iterable):
        raise invalid("callbacks", callbacks, "an iterable of callables callback(epoch, metrics)")
    callbacks = list(callbacks)
    for i, cb in enumerate(callbacks):
        if not callable(cb):
            raise invalid(f"callbacks[{i}]", cb, "a callable callback(epoch, metrics)")
    if device is not None:
        try:
            torch.device(device)
        except (RuntimeError, TypeError):
            accepted = "None, a torch.device or a device string such as 'cpu' or 'cuda:0'"
            raise invalid("device", device, accepted) from None
    if not isinstance(progress, bool):
        raise invalid("progress", progress, "True or False")
    return callbacks


def _check_amp(amp: Any, model: torch.nn.Module, device: Any) -> tuple[str, torch.dtype] | None:
    """``(device type, dtype)`` that ``torch.autocast`` takes for ``amp``; None without autocast."""
    if amp is None:
        return None
    device_type = _device_type(model, device)
    accepted = AMP_DTYPES.get(device_type)
    if accepted is None:
        raise invalid("amp", amp, f"None on device type {device_type!r} (autocast here supports {list(AMP_DTYPES)})")
    if amp not in accepted:
        names = " or ".join(str(d) for d in accepted)
        raise invalid("amp", amp, f"None or {names} on device type {device_type!r}")
    return device_type, amp


def _summary_writer(logdir):
    if isinstance(logdir, bool) or not isinstance(logdir, str | os.PathLike):
        raise invalid("tensorboard", logdir, "None or a log folder (str or path)")
    try:
        import tensorboard  # noqa: F401  (torch.utils.tensorboard needs it)
        from torch.utils.tensorboard import SummaryWriter
    except ImportError as exc:
        raise MissingExtraError("tensorboard", "tensorboard", "fit(tensorboard=...)") from exc
    return SummaryWriter(log_dir=os.fspath(logdir)) if distributed.rank() == 0 else None


def fit(
    model: torch.nn.Module,
    train_data: Iterable,
    val_data: Iterable | None,
    loss: Callable,
    optimizer: torch.optim.Optimizer,
    epochs: int,
    *,
    patience: int | None = None,
    callbacks: Iterable[Callable[[int, dict], object]] = (),
    device=None,
    progress: bool = True,
    amp: torch.dtype | None = None,
    tensorboard: str | os.PathLike | None = None,
    batch_dim: int = 0,
    desc: str = "",
) -> list[dict]:
    """Train ``model`` for up to ``epochs`` epochs; return one dict of metrics per epoch.

    Each dict holds ``epoch``, ``train_loss`` and (with ``val_data``) ``val_loss``: the mean of
    ``loss`` over the epoch's samples (weighting each batch by its size; over all ranks when a
    process group is initialised). With ``patience``, training stops once ``val_loss`` has not
    improved for that many epochs. A callback returning ``False`` (on any rank) stops training too.
    A ``DistributedSampler`` on the loader gets ``set_epoch`` each epoch.

    ``amp``: ``None`` (full precision) or the autocast dtype of forward and loss: ``torch.bfloat16``
    on CPU, ``torch.float16`` or ``torch.bfloat16`` on CUDA (float16 adds a ``GradScaler``).
    ``tensorboard``: a log folder; rank 0 writes each epoch's metrics and learning rate there
    (needs ``pip install 'hybridai[tensorboard]'``).

    ``batch_dim``: the dimension of each batch's ``x`` that holds its samples, by which its loss is weighted (1 for
    time-major spiking input ``[T, B, ...]``; ``hybridai.training.TensorBatches`` batches along it). ``desc``: a
    label for the progress bars (``"hybrid: epoch 1/15"``).
    """
    callbacks = _check_arguments(
        model, train_data, val_data, loss, optimizer, epochs, patience, callbacks, device, progress
    )
    non_negative_int("batch_dim", batch_dim)
    if not isinstance(desc, str):
        raise invalid("desc", desc, "a str: the progress bars' label")
    autocast = _check_amp(amp, model, device)
    scaler = torch.amp.GradScaler(autocast[0]) if autocast is not None and autocast[1] == torch.float16 else None
    progress = progress and distributed.rank() == 0
    writer = None if tensorboard is None else _summary_writer(tensorboard)
    history: list[dict] = []
    best, waited = math.inf, 0
    label = f"{desc}: " if desc else ""
    try:
        for epoch in range(epochs):
            sampler = getattr(train_data, "sampler", None)
            if sampler is not None and hasattr(sampler, "set_epoch"):
                sampler.set_epoch(epoch)
            bar = f"{label}epoch {epoch + 1}/{epochs}"
            sums = _epoch(model, train_data, loss, optimizer, True, device, progress, bar, autocast, scaler, batch_dim)
            if val_data is not None:
                val = f"{label}val"
                sums += _epoch(
                    model, val_data, loss, optimizer, False, device, progress, val, autocast, None, batch_dim
                )
            sums = distributed.all_reduce_sum(sums)
            metrics = {"epoch": epoch, "train_loss": sums[0] / max(sums[1], 1)}
            if val_data is not None:
                metrics["val_loss"] = sums[2] / max(sums[3], 1)
            history.append(metrics)
            if writer is not None:
                for name, value in metrics.items():
                    if name != "epoch":
                        writer.add_scalar(name, value, epoch)
                writer.add_scalar("lr", optimizer.param_groups[0]["lr"], epoch)
                writer.flush()
            stop = any([cb(epoch, metrics) is False for cb in callbacks])  # every callback runs
            stop = distributed.all_reduce_sum([stop])[0] > 0  # one rank's callback stops them all
            if patience is not None and "val_loss" in metrics:
                if metrics["val_loss"] < best:
                    best, waited = metrics["val_loss"], 0
                else:
                    waited += 1
                    stop = stop or waited >= patience
            if stop:
                break
    finally:
        if writer is not None:
            writer.close()
    return history
