"""The state a spiking layer starts a call from (given, carried or zeros), and the check that it stayed finite.

A state is one tensor ``[B, neurons...]`` per state variable: the membrane for LIF, ``(syn, mem)`` for
CUBA. Errors name where the state came from (the ``state`` argument or the carried state) and, where
the shapes tell, a layout mix-up (``hybridai.spiking.layout``).
"""

from __future__ import annotations

from typing import Any

import torch

from hybridai.core.errors import ConfigError, ShapeError, invalid
from hybridai.spiking.layout import state_layout_hint

CARRIED = "the carried state (call reset_state() to start afresh)"


def initial_state(
    x: torch.Tensor,
    given: Any,
    n_states: int,
    *,
    carried: Any = None,
    given_shape: tuple[int, ...],
    argument: str = "x",
    batch_first: bool = False,
) -> list[torch.Tensor]:
    """The initial state(s) for time-major ``x``, each ``[B, ...]``: ``given``, else ``carried``, else zeros.

    given_shape: ``x`` as the caller gave it (for messages); argument: its name (``"x"`` or ``"x_t"``).
    """
    shape = tuple(x.shape[1:])
    accepted = "a tensor of shape [B, ...] = " if n_states == 1 else "a tuple (syn, mem) of tensors of shape "
    source = "state"
    if given is None and carried is not None:
        given, source = carried, CARRIED
    if given is None:
        return [torch.zeros(shape, dtype=x.dtype, device=x.device) for _ in range(n_states)]
    parts = (given,) if n_states == 1 else given
    if not isinstance(parts, tuple | list) or len(parts) != n_states or not all(torch.is_tensor(p) for p in parts):
        raise invalid(source, type(given).__name__, f"{accepted}{shape}", ShapeError)
    for part in parts:
        if part.device != x.device:
            raise invalid(f"{source} device", str(part.device), f"the device of {argument} ({x.device})", ShapeError)
        if part.is_complex():
            raise invalid(f"{source} dtype", part.dtype, f"a real dtype (the dtype of {argument})", ShapeError)
        if tuple(part.shape) != shape:
            hint = (
                "" if argument == "x_t" else state_layout_hint(given_shape, tuple(part.shape), batch_first=batch_first)
            )
            raise invalid(
                f"{source} shape",
                tuple(part.shape),
                f"{accepted}{shape} for {argument} of shape {given_shape}{hint}",
                ShapeError,
            )
    return [p.to(x.dtype) for p in parts]


def _first_non_finite_step(x: torch.Tensor) -> int | None:
    bad = (~torch.isfinite(x)).flatten(1).any(1).nonzero()
    return int(bad[0]) if len(bad) else None


def check_finite(
    x: torch.Tensor, last_mem: torch.Tensor, initial: list[torch.Tensor], argument: str = "x", *, what: str = "membrane"
) -> None:
    """A NaN or inf anywhere in ``x`` or the state persists to the last membrane: name where it came from.

    ``last_mem`` may be any result that a NaN or inf reaches (SigmaDelta passes its activations, ``what``)."""
    if torch.isfinite(last_mem).all():
        return
    step = _first_non_finite_step(x)
    if step is not None:
        where = f" at time step {step}" if argument == "x" else ""
        raise ConfigError(f"{argument} contains NaN or inf{where}; accepted: finite values")
    if not all(bool(torch.isfinite(s).all()) for s in initial):
        raise invalid("state", "a tensor containing NaN or inf", "finite values")
    largest = float(x.detach().abs().max())
    raise invalid(
        argument,
        f"a tensor with |values| up to {largest:.4g}",
        f"inputs whose {what} stays finite in {x.dtype} (it overflowed to inf)",
    )


__all__ = ["check_finite", "initial_state"]
