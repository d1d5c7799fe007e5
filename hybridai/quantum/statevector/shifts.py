"""Parameter-shift gradients on the statevector backend: every shifted circuit of a batch in ONE run.

``shift_form(operations)`` rewrites a tape's operations so that every parameter that needs a gradient
enters through ONE gate with the two-term rule (PennyLane ``parameter_frequencies == [(1,)]``: RX, RY,
RZ, PhaseShift, IsingXX/YY/ZZ, MultiRZ, PauliRot ...; other gates are decomposed), each parameter a
scalar or a ``[B]`` column. ``stacked_operations`` binds ``S`` parameter sets of the ``B`` samples
(``[S, B, P]``, as ``hybridai.quantum.execution.shift_rule`` asks for them) as ONE broadcast batch of ``S * B``
circuits; operations without a shifted parameter are repeated ``S`` times along their batch. The
backend runs that batch once (exact, or sampled with shots) and ``shift_rule.parameter_shift`` turns
the ``S`` answers into values and gradients.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from hybridai.quantum.circuits.decomposition import walk
from hybridai.quantum.circuits.recording import recording
from hybridai.quantum.statevector.gates import SUGGESTION


@dataclass
class ShiftForm:
    """Operations with their shifted parameters taken out: ``entries[i]`` is ``(op, k)`` where the op's one
    parameter is column ``k`` of the parameter sets, or ``(op, None)`` for an op that stays as it is."""

    entries: list[tuple[Any, int | None]]
    params: list[torch.Tensor]


def _needs_grad(op: Any) -> bool:
    return torch.is_grad_enabled() and any(torch.is_tensor(p) and p.requires_grad for p in op.parameters)


def _two_term(op: Any) -> bool:
    if op.num_params != 1:
        return False
    try:
        return [tuple(f) for f in op.parameter_frequencies] == [(1,)]
    except Exception:  # no generator known: not a two-term gate
        return False


def shift_form(operations: Any) -> ShiftForm:
    """``operations`` with every parameter needing a gradient in a two-term gate of its own."""
    entries: list[tuple[Any, int | None]] = []
    params: list[torch.Tensor] = []

    def take(op: Any) -> bool:
        if not _needs_grad(op):
            entries.append((op, None))
        elif _two_term(op) and op.parameters[0].dim() <= 1:
            entries.append((op, len(params)))
            params.append(op.parameters[0])
        else:
            return False
        return True

    walk(
        operations,
        take,
        cannot="parameter-shift gradients on the statevector backend cannot pass through",
        remedy="it shifts gates with a two-term rule (RX, RY, RZ, PhaseShift, IsingXX, ...) and their "
        f"decompositions; accepted: diff_method='backprop' or 'adjoint' with shots=None, or {SUGGESTION}",
    )
    return ShiftForm(entries, params)


def _repeat(op: Any, s: int) -> Any:
    """``op`` with its batch (if any) repeated ``s`` times, shift-major (``[S * B, ...]``)."""
    from pennylane.ops.functions import bind_new_parameters

    if op.batch_size is None or s == 1:
        return op
    params = []
    for p, nd in zip(op.parameters, op.ndim_params, strict=True):
        t = p if torch.is_tensor(p) else torch.as_tensor(np.asarray(p))
        params.append(t.repeat(s, *([1] * nd)) if t.dim() > nd else t)
    return bind_new_parameters(op, params)


def stacked_operations(form: ShiftForm, values: np.ndarray, dtype: torch.dtype, device: Any) -> list[Any]:
    """The operations of ``S * B`` circuits for the parameter sets ``values [S, B, P]`` (shift-major)."""
    from pennylane.ops.functions import bind_new_parameters

    s, b, p = values.shape
    columns = torch.as_tensor(values.reshape(s * b, p), dtype=dtype, device=device)
    with recording():
        return [_repeat(op, s) if k is None else bind_new_parameters(op, [columns[:, k]]) for op, k in form.entries]


def flatten_results(results: list[torch.Tensor], rows: int) -> torch.Tensor:
    """Measurement results (``[rows]`` or ``[rows, d]`` each) as columns ``[rows, R]``."""
    return torch.cat([r.reshape(rows, -1).to(torch.float64) for r in results], -1)


def split_columns(raw: torch.Tensor, widths: list[int], batched: bool) -> Any:
    """Columns ``[B, R]`` back into one result per measurement (PennyLane's layout)."""
    out, start = [], 0
    for width in widths:
        part = raw[:, start] if width == 0 else raw[:, start : start + width]
        start += max(width, 1)
        out.append(part if batched else part.squeeze(0))
    return tuple(out) if len(out) > 1 else out[0]
