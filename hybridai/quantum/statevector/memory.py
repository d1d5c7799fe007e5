"""The statevector executor's memory checks: the bytes a run's kept statevectors (and fused unitaries) take,
refused above the backend's ``max_memory`` before anything of that size is allocated."""

from __future__ import annotations

from typing import TYPE_CHECKING

import torch

from hybridai.core.errors import ResourceLimitError

if TYPE_CHECKING:
    from hybridai.quantum.statevector.plan import Plan

MIN_STATES = 4  # the fewest statevectors a run keeps (initial state, result, probabilities, a gradient)


def check_size(n: int, b: int, cdtype: torch.dtype, limit: int, states: int = MIN_STATES, fused_runs: int = 0) -> None:
    """Refuse (before allocating anything) a run of ``b`` states of ``n`` qubits that would keep ``states``
    statevectors (and ``fused_runs`` fused 2^n x 2^n unitaries) above ``limit`` bytes. Called with the
    lower bound before converting and planning (which allocate 2^n index arrays), and again with the
    plan's own count."""
    itemsize = cdtype.itemsize
    estimate = itemsize * (2**n) * b * states + fused_runs * itemsize * 4**n * 8
    if estimate > limit:
        raise ResourceLimitError(
            f"the statevector backend would need about {estimate / 2**30:.4g} GiB for n_qubits={n}, "
            f"batch {b}, {cdtype} ({states} states kept for backward), above max_memory={limit / 2**30:.4g} GiB; "
            "accepted: a smaller batch or fewer qubits, dtype='complex64', or a larger max_memory= (bytes)"
        )


def check_memory(plan: Plan, n: int, b: int, cdtype: torch.dtype, limit: int) -> None:
    """Refuse (before running) a plan whose states kept for backward would exceed ``limit``."""
    check_size(n, b, cdtype, limit, len(plan.funcs) + MIN_STATES, plan.fused_runs)
