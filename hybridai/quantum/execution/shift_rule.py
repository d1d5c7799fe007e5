"""The two-term parameter-shift rule, reusable by any executor without autograd.

An executor that can only evaluate circuits numerically (a Qiskit primitive, a plugin QPU) gives
``parameter_shift`` one function, ``evaluate``, that runs many parameter sets of its circuits in ONE
backend call. ``parameter_shift`` asks it for the unshifted values and, for every parameter that
needs a gradient, the values at +-pi/2, and returns torch values whose backward pass applies the
rule. Every parameter must enter its circuit through a gate with the two-term rule (RX, RY, RZ,
PhaseShift, IsingXX/YY/ZZ: shift pi/2, factor 1/2); a parameter used by several gates is passed
once per use (autograd sums the uses).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import numpy as np
import torch

# evaluate(values) -> expectations: values[i] is [S_i, B_i, P_i] (parameter sets of circuit i),
# the answer for circuit i is [S_i, B_i, R_i] (R_i measured columns).
Evaluate = Callable[[list[np.ndarray]], list[np.ndarray]]


def parameter_shift(
    circuits: Sequence[Sequence[torch.Tensor]], batches: Sequence[int], evaluate: Evaluate
) -> list[torch.Tensor]:
    """Values ``[B_i, R_i]`` (float64) of each circuit for its parameters (each a scalar or ``[B_i]``),
    differentiable by the parameter-shift rule; ``evaluate`` is called exactly once."""
    sizes = [len(params) for params in circuits]
    flat = [p for params in circuits for p in params]
    need = tuple(torch.is_grad_enabled() and p.requires_grad for p in flat)
    return list(_ShiftRule.apply(evaluate, tuple(sizes), tuple(batches), need, *flat))


def shifted_values(base: np.ndarray, shifted: Sequence[int]) -> np.ndarray:
    """``[1 + 2K, B, P]``: ``base [B, P]``, then +pi/2 and -pi/2 on each of the K ``shifted`` columns."""
    values = [base]
    for k in shifted:
        for sign in (1.0, -1.0):
            v = base.copy()
            v[:, k] += sign * math.pi / 2
            values.append(v)
    return np.stack(values)


class _ShiftRule(torch.autograd.Function):
    @staticmethod
    def forward(ctx, evaluate: Evaluate, sizes: tuple, batches: tuple, need: tuple, *flat: torch.Tensor):
        bases, shifts, start = [], [], 0
        for size, batch in zip(sizes, batches, strict=True):
            params = flat[start : start + size]
            columns = [np.broadcast_to(p.detach().cpu().double().numpy(), (batch,)) for p in params]
            bases.append(np.stack(columns, -1) if params else np.zeros((batch, 0)))
            shifts.append([k for k in range(size) if need[start + k]])
            start += size
        answers = evaluate([shifted_values(b, s) for b, s in zip(bases, shifts, strict=True)])
        ctx.sizes, ctx.shifts, ctx.batched = sizes, shifts, [p.dim() > 0 for p in flat]
        ctx.jacobians = [torch.from_numpy((a[1::2] - a[2::2]) / 2) for a in map(np.asarray, answers)]  # [K, B, R]
        return tuple(torch.from_numpy(np.array(a[0], dtype=np.float64)) for a in answers)

    @staticmethod
    def backward(ctx, *grads: torch.Tensor):
        out: list[torch.Tensor | None] = []
        for shifted, size, jacobian, grad in zip(ctx.shifts, ctx.sizes, ctx.jacobians, grads, strict=True):
            per_circuit: list[torch.Tensor | None] = [None] * size
            for j, k in enumerate(shifted):
                per_circuit[k] = (jacobian[j].to(grad) * grad).sum(-1)  # [B]
            out.extend(per_circuit)
        for i, g in enumerate(out):
            if g is not None and not ctx.batched[i]:
                out[i] = g.sum()
        return (None, None, None, None, *out)
