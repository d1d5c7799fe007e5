"""Multiply-accumulates of a float model per sample: the work a conventional (dense) accelerator does."""

from __future__ import annotations

import math

import torch
from torch import nn

from hybridai.core.errors import ResourceLimitError, ShapeError, invalid, positive_int

MAX_SAMPLE_VALUES = 2**28  # 1 GiB of float32


def dense_macs(model: nn.Module, input_shape: tuple[int, ...]) -> int:
    """MACs per sample of every ``nn.Linear`` and ``nn.Conv2d`` in ``model`` for one input of ``input_shape``.

    input_shape: the per-sample shape (no batch dimension), e.g. ``(64,)`` or ``(1, 8, 8)``. Zeros are
    multiplied too (a dense accelerator skips nothing); biases and activations are not counted. Found by
    running one zero sample through ``model`` with forward hooks.
    """
    if not isinstance(model, nn.Module):
        raise invalid("model", type(model).__name__, "a torch.nn.Module")
    if not isinstance(input_shape, tuple | list):
        raise invalid("input_shape", input_shape, "a tuple of positive ints, the per-sample shape")
    for i, size in enumerate(input_shape):
        positive_int(f"input_shape[{i}]", size)
    if math.prod(input_shape) > MAX_SAMPLE_VALUES:  # one zero sample is allocated and run: refused before that
        raise ResourceLimitError(
            f"input_shape={tuple(input_shape)} is not valid: one sample of {math.prod(input_shape):,} values would be "
            f"allocated and run; accepted: at most {MAX_SAMPLE_VALUES:,} values per sample (2^28)"
        )
    total = 0

    def hook(module: nn.Module, _inputs: tuple, output: torch.Tensor) -> None:
        nonlocal total
        if isinstance(module, nn.Linear):
            total += output.numel() * module.in_features
        elif isinstance(module, nn.Conv2d):  # each output value takes (in / groups) * kh * kw products
            total += output.numel() * (module.in_channels // module.groups) * math.prod(module.kernel_size)

    handles = [m.register_forward_hook(hook) for m in model.modules() if isinstance(m, nn.Linear | nn.Conv2d)]
    param = next(model.parameters(), None)
    x = torch.zeros(1, *input_shape, device=param.device if param is not None else "cpu")
    was_training = model.training
    model.eval()
    try:
        with torch.no_grad():
            model(x if param is None else x.to(param.dtype))
    except RuntimeError as exc:
        raise ShapeError(
            f"input_shape={tuple(input_shape)} is not valid; accepted: the per-sample shape the model takes "
            f"(one zero sample of this shape failed: {exc})"
        ) from None
    finally:
        model.train(was_training)
        for h in handles:
            h.remove()
    return int(total)
