"""A small training loop: tqdm progress, per-epoch metrics, early stopping, callbacks."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable

import torch

from ..errors import ConfigError


def _epoch(model, data, loss_fn, optimizer, train: bool, device, progress: bool, desc: str) -> float:
    model.train(train)
    total, count = 0.0, 0
    batches = data
    if progress:
        from tqdm.auto import tqdm

        batches = tqdm(data, desc=desc, leave=False)
    with torch.set_grad_enabled(train):
        for x, y in batches:
            if device is not None:
                x, y = x.to(device), y.to(device)
            loss = loss_fn(model(x), y)
            if train:
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
            total += float(loss.detach()) * len(x)
            count += len(x)
    return total / max(count, 1)


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
) -> list[dict]:
    """Train ``model`` for up to ``epochs`` epochs; return one dict of metrics per epoch.

    Each dict holds ``epoch``, ``train_loss`` and (with ``val_data``) ``val_loss``. With ``patience``,
    training stops once ``val_loss`` has not improved for that many epochs. A callback returning
    ``False`` stops training too. A ``DistributedSampler`` on the loader gets ``set_epoch`` each epoch.
    """
    if not isinstance(epochs, int) or epochs < 1:
        raise ConfigError(f"fit: epochs must be a positive int, got {epochs!r}")
    history: list[dict] = []
    best, waited = math.inf, 0
    for epoch in range(epochs):
        sampler = getattr(train_data, "sampler", None)
        if hasattr(sampler, "set_epoch"):
            sampler.set_epoch(epoch)
        metrics = {
            "epoch": epoch,
            "train_loss": _epoch(
                model, train_data, loss, optimizer, True, device, progress, f"epoch {epoch + 1}/{epochs}"
            ),
        }
        if val_data is not None:
            metrics["val_loss"] = _epoch(model, val_data, loss, optimizer, False, device, progress, "val")
        history.append(metrics)
        stop = any(cb(epoch, metrics) is False for cb in callbacks)
        if patience is not None and "val_loss" in metrics:
            if metrics["val_loss"] < best:
                best, waited = metrics["val_loss"], 0
            else:
                waited += 1
                stop = stop or waited >= patience
        if stop:
            break
    return history
