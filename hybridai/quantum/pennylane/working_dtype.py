"""PennyLane's constants in the circuit's dtype: torch factories called without a dtype inside one PennyLane call
create ``dtype`` instead of torch's default, for this thread only (``working_dtype``)."""

from __future__ import annotations

import contextlib
from typing import Any

import numpy as np
import torch
from torch.overrides import TorchFunctionMode

# torch factories whose dtype, when not given, is torch's default dtype (random ones left out: they
# would be drawn twice)
FACTORIES = frozenset({
    torch.tensor, torch.as_tensor, torch.asarray, torch.scalar_tensor, torch.zeros, torch.ones, torch.empty,
    torch.full, torch.eye, torch.arange, torch.linspace, torch.logspace,
})  # fmt: skip
COMPLEX = {torch.float16: torch.complex32, torch.float32: torch.complex64, torch.float64: torch.complex128}


class WorkingDtype(TorchFunctionMode):
    """Within one PennyLane call, torch factories create Python numbers in ``dtype`` instead of torch's
    default dtype, as ``torch.set_default_dtype(dtype)`` would, but for this thread only (torch function
    modes are thread-local; the default dtype is process-wide).

    PennyLane builds constants with the default dtype (``RZ.compute_eigvals`` on ``default.mixed``,
    lightning's expectation values, which are Python floats): under the usual float32 default, float64
    circuits would silently lose precision.
    """

    def __init__(self, dtype: torch.dtype) -> None:
        super().__init__()
        default = torch.get_default_dtype()
        self.swap = {default: dtype, COMPLEX[default]: COMPLEX[dtype]}

    def __torch_function__(self, func: Any, types: Any, args: tuple = (), kwargs: dict | None = None) -> Any:
        kwargs = kwargs or {}
        out = func(*args, **kwargs)
        if (
            func in FACTORIES
            and kwargs.get("dtype") is None
            and isinstance(out, torch.Tensor)
            and out.dtype in self.swap
            and not (args and isinstance(args[0], torch.Tensor | np.ndarray | np.generic))  # typed data: kept
        ):
            out = func(*args, **{**kwargs, "dtype": self.swap[out.dtype]})
        return out


def working_dtype(dtype: torch.dtype) -> Any:
    """``WorkingDtype(dtype)``, or nothing to do when ``dtype`` is already torch's default."""
    default = torch.get_default_dtype()
    same = dtype == default or dtype not in COMPLEX or default not in COMPLEX
    return contextlib.nullcontext() if same else WorkingDtype(dtype)
