"""Shuffled minibatches of tensors held in memory, along any batch dimension: what ``fit`` takes as ``train_data``.

``TensorBatches(x, y, 32, batch_dim=1, seed=0)`` yields ``(x_batch, y_batch)`` pairs: each pass over it draws one
permutation of the samples from its own generator (``torch.randperm``), so the same seed gives the same batches,
pass after pass, and the global RNG is untouched. ``batch_dim=1`` takes samples from time-major spiking input
``[T, B, ...]``; the targets ``y`` hold one sample per row ``[B, ...]``.
"""

from __future__ import annotations

import math
from collections.abc import Iterator

import torch

from hybridai.core.errors import ShapeError, invalid, non_negative_int, positive_int


class TensorBatches:
    """Minibatches of ``batch_size`` samples of ``x`` (along ``batch_dim``) and ``y`` (along its first dimension), in
    a new seeded order on every pass; the last batch holds the samples left over. ``seed``: None draws one from the
    operating system."""

    def __init__(
        self, x: torch.Tensor, y: torch.Tensor, batch_size: int, *, batch_dim: int = 0, seed: int | None = None
    ) -> None:
        for name, value in (("x", x), ("y", y)):
            if not torch.is_tensor(value):
                raise invalid(name, type(value).__name__, "a torch.Tensor")
        self.batch_size = positive_int("batch_size", batch_size)
        self.batch_dim = non_negative_int("batch_dim", batch_dim)
        if batch_dim >= x.ndim:
            raise invalid("batch_dim", batch_dim, f"a dimension of x, which has {x.ndim} (shape {tuple(x.shape)})")
        if y.ndim == 0 or y.shape[0] != x.shape[batch_dim]:
            raise invalid(
                "y.shape", tuple(y.shape),
                f"one row per sample of x: ({x.shape[batch_dim]}, ...) (x.shape={tuple(x.shape)}, "
                f"batch_dim={batch_dim})",
                ShapeError,
            )  # fmt: skip
        self.x, self.y = x, y
        self.generator = torch.Generator()
        if seed is None:
            self.generator.seed()  # a seed from the operating system
        else:
            self.generator.manual_seed(non_negative_int("seed", seed))

    @property
    def samples(self) -> int:
        return int(self.y.shape[0])

    def __len__(self) -> int:
        return math.ceil(self.samples / self.batch_size)

    def __iter__(self) -> Iterator[tuple[torch.Tensor, torch.Tensor]]:
        for batch in torch.randperm(self.samples, generator=self.generator).split(self.batch_size):
            yield self.x.index_select(self.batch_dim, batch), self.y[batch]


__all__ = ["TensorBatches"]
