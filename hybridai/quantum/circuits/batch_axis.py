"""Catching a common habit while a circuit is recorded: indexing the batch axis of the inputs.

Inside a quantum function, features are ``inputs[..., i]`` (or ``inputs[:, i]``): the inputs are a batch
``[B, F]`` broadcast through the circuit. ``inputs[i]`` (the habit of per-sample code) selects sample i
instead; it raises a raw torch error when ``B`` differs from the number of qubits and silently gives wrong
values when they are equal. ``BatchAxisWatch`` refuses it, by name, as it happens: an integer index, or
iteration, on the first axis of the batch tensor itself. A module watches the first recording of each input
shape (``QuantumModule.record``): a function that indexes the batch only on some later call, after a branch on
values, is not caught.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch
from torch.overrides import TorchFunctionMode

from hybridai.core.errors import ShapeError

_ITERATION = frozenset({torch.Tensor.__iter__, torch.Tensor.unbind, torch.unbind})


def _integer(index: Any) -> bool:
    if isinstance(index, bool):
        return False
    if isinstance(index, int | np.integer):
        return True
    return torch.is_tensor(index) and index.ndim == 0 and not index.is_floating_point() and index.dtype != torch.bool


def _selects_samples(index: Any) -> bool:
    """Whether ``batch[index]`` picks rows by an integer on the first axis (``x[0]``, ``x[i, 2]``)."""
    first = index[0] if isinstance(index, tuple) and index else index
    return _integer(first)


class BatchAxisWatch(TorchFunctionMode):
    """While active, an integer index or iteration on the first axis of ``batch`` (``[B, F]``) raises a
    ShapeError naming ``role`` (the circuit function) and ``argument`` (its input's name)."""

    def __init__(self, batch: torch.Tensor, role: str, argument: str) -> None:
        super().__init__()
        self.batch, self.role, self.argument = batch, role, argument

    def __torch_function__(self, func: Any, types: Any, args: tuple = (), kwargs: dict | None = None) -> Any:
        kwargs = kwargs or {}
        if args and args[0] is self.batch:
            if func is torch.Tensor.__getitem__ and _selects_samples(args[1]):
                self._refuse(f"indexed {self.argument}[{_shown(args[1])}]")
            if func in _ITERATION and kwargs.get("dim", args[1] if len(args) > 1 else 0) == 0:
                self._refuse(f"iterated over {self.argument}")
        return func(*args, **kwargs)

    def _refuse(self, what: str) -> None:
        b, f = self.batch.shape
        raise ShapeError(
            f"{self.role} {what}, which selects samples of the batch axis: {self.argument} is the whole "
            f"batch [B, F] = [{b}, {f}], broadcast through the circuit; accepted: index features on the last axis, "
            f"{self.argument}[..., i] (or {self.argument}[:, i])"
        )


def _shown(index: Any) -> str:
    parts = index if isinstance(index, tuple) else (index,)
    return ", ".join(str(int(p)) if _integer(p) else "..." if p is Ellipsis else ":" for p in parts)
