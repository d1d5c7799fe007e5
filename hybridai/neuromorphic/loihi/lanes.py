"""The time loop of Loihi 1's compartments, in integer lanes (the runner of ``Compartments.simulate_steps``).

u and v of a whole batch live in one ``[2, B, N]`` integer tensor: int32 where every value the run can reach
provably fits (``Guards``, bounded before the loop from the largest |q|, the decays and the voltage limits),
int64 otherwise. Only the 12-bit decay leaves the integers: the state is converted to float64, multiplied by
``(4096 - offset - d) / 4096`` (exact: a dyadic product of at most 41 + 12 bits) and converted back, a
conversion that truncates toward zero, the chip's rounding; values beyond 2^41 (int64 lanes only) decay in
integers instead (``fixed_point.decay``: a product and a truncating division, slower; exact below 2^51).
Everything else is one in-place integer operation on a preallocated ``[B, N]`` buffer per rule (int32 kernels
move half the bytes of float64 ones): the input added, the bias, the
clip, the refractory hold, the threshold as a 0/1 integer mask (cheaper than a bool comparison) that resets
and holds v by multiplication. Wraps and clips that the bounds show the run cannot reach are skipped: they
could not change a value.
"""

from __future__ import annotations

from typing import NamedTuple, Protocol

import torch

from hybridai.neuromorphic.fixed_point import wrap

INT32_LIMIT = float(2**31)


class Group(Protocol):
    """What the loop reads of a group of compartments (``compartments.Compartments``): its quirk set, size,
    device, decay factors (float64), and registers as int64 tensors, one value or one per compartment."""

    quirks: str
    n: int
    device: torch.device | str
    keep_u: torch.Tensor
    keep_v: torch.Tensor
    vth: torch.Tensor
    bias: torch.Tensor
    vmin: torch.Tensor
    vmax: torch.Tensor
    refractory: torch.Tensor
    uses_refractory: bool


class Guards(NamedTuple):
    """Which wraps and the voltage clip can change a value in this run (the others are skipped), and the
    integer dtype every value of the run fits in."""

    wrap_q: bool  # nengo: q to 22 bits
    wrap_u: bool  # u to 24 bits
    wrap_u_bias: bool  # nengo: u + bias to 24 bits before it reaches v
    clip: bool  # v to [vmin, vmax]
    dtype: torch.dtype  # int32 or int64
    integer_decay: bool  # |u| or |v| may pass 2^41, where a float64 product is no longer exact


class Refractory(NamedTuple):
    """``hold``: v held at 0 by the last step's spikes (a delay of 2 everywhere); else ``counter`` (None: no
    refractory period) counts down in place, ``free`` its 0/1 scratch, ``rest`` its value after a spike's step;
    ``stale_v``: v is not reset after a spike (the hold zeroes it next step)."""

    hold: bool
    counter: torch.Tensor | None
    free: torch.Tensor | None
    rest: torch.Tensor | int | None
    stale_v: bool


def register(x: torch.Tensor, dtype: torch.dtype) -> torch.Tensor | int:
    """A register shared by every compartment as a Python int (an ``alpha``), else the per-compartment tensor in
    ``dtype``."""
    return int(x) if x.numel() == 1 else x.to(dtype)


def lava_wrap(u: torch.Tensor) -> torch.Tensor:
    """Lava's u overflow rule on integers: one conditional subtraction or addition of 2^24 (+2^23 survives)."""
    half = 1 << 23
    return torch.where(u > half, u - 2 * half, torch.where(u <= -half, u + 2 * half, u))


class Loop:
    """The state of one ``simulate_steps`` call: preallocated buffers in the run's integer lanes, updated in place."""

    def __init__(self, group: Group, guards: Guards, steps: int, batch: int, record: tuple[str, ...]) -> None:
        dtype, device, n = guards.dtype, group.device, group.n
        self.nengo, self.guards = group.quirks == "nengo", guards
        # thresholds and biases as tensors in the lanes (one value or one per compartment): torch compares and
        # adds a tensor faster than a Python number
        self.vth, self.bias = group.vth.to(dtype), group.bias.to(dtype)
        self.vmin, self.vmax = group.vmin.to(dtype), group.vmax.to(dtype)
        # shared voltage limits as a pair of numbers (clamp_ takes two tensors or two numbers), else None
        self.v_limits: tuple[int, int] | None = None
        if group.vmin.numel() == group.vmax.numel() == 1:
            self.v_limits = (int(group.vmin), int(group.vmax))
        self.uv = torch.zeros(2, batch, n, dtype=dtype, device=device)  # u and v, decayed together
        self.uv_f64 = torch.empty(2, batch, n, dtype=torch.float64, device=device)
        self.u, self.v = self.uv[0], self.uv[1]
        keep_uv = torch.stack([group.keep_u.expand(n), group.keep_v.expand(n)]).unsqueeze(1)
        if group.keep_u.numel() == group.keep_v.numel() == 1:
            keep_uv = keep_uv[:, :, :1].contiguous()
        self.keep_uv = keep_uv
        # the decay factors as integers over 4096, for values beyond float64's exact products
        self.factor_uv = torch.round(keep_uv * 4096).to(dtype) if guards.integer_decay else None
        self.spiked = torch.zeros_like(self.u)  # the last step's spikes as 1/0
        self.q = torch.empty_like(self.u)  # a step's input converted into the lanes
        self.traces = {name: torch.empty((steps, batch, n), dtype=dtype, device=device) for name in record}
        self.spikes = torch.empty((steps, batch, n), dtype=torch.bool, device=device)
        self.refractory = self._refractory(group, record)

    def _refractory(self, group: Group, record: tuple[str, ...]) -> Refractory:
        """How refractory periods act (nengo rules; Lava has none): a delay of 2 everywhere holds v at 0
        exactly one step after a spike, which the last step's spikes say; otherwise a counter. With a delay
        >= 2 everywhere, a compartment that spiked is held at 0 next step whatever its v, so v's reset is only
        needed to record it."""
        if not group.uses_refractory:
            return Refractory(False, None, None, None, False)
        stale_v = int(group.refractory.min()) >= 2 and "v" not in record
        if bool((group.refractory == 2).all()):
            return Refractory(True, None, None, None, stale_v)
        rest = register((group.refractory - 1).clamp(min=0), self.u.dtype)  # the counter after the spike's step
        return Refractory(False, torch.zeros_like(self.u), torch.empty_like(self.u), rest, stale_v)

    def input(self, q_t: torch.Tensor | None) -> torch.Tensor | None:
        """One step's input (integers in any dtype) in the lanes, wrapped to q's 22 bits where it can reach them."""
        if q_t is None:
            return None
        if self.guards.wrap_q:  # wrapped in int64 (every |q| < 2^52), then in the lanes
            return self.q.copy_(wrap(q_t.to(torch.int64), 21))
        if q_t.dtype != self.q.dtype:  # exact: whole numbers within the lanes' range
            q_t = self.q.copy_(q_t)
        return q_t

    def step(self, t: int, q_t: torch.Tensor | None, biased: bool) -> None:
        """Decay, integrate, wrap, clip, hold, spike, reset: one update of every compartment."""
        u, v, spiked, guards, refractory = self.u, self.v, self.spiked, self.guards, self.refractory
        if self.factor_uv is not None:  # decay in integers (as fixed_point.decay), toward zero
            self.uv.mul_(self.factor_uv).div_(4096, rounding_mode="trunc")
        else:  # decay in float64, truncated toward zero
            self.uv.copy_(self.uv_f64.copy_(self.uv).mul_(self.keep_uv))
        if q_t is not None:
            u.add_(q_t)
        if guards.wrap_u:
            u.copy_(wrap(u, 23) if self.nengo else lava_wrap(u))
        if biased and guards.wrap_u_bias:
            v.add_(wrap(u + self.bias, 23))
        else:
            v.add_(u)
            if biased:
                v.add_(self.bias)  # exact integer sums: the same as adding u + bias (nengo) or bias to v (Lava)
        if guards.clip:
            if self.v_limits is not None:
                v.clamp_(*self.v_limits)
            else:
                v.clamp_(self.vmin, self.vmax)
        counter = refractory.counter
        if refractory.hold:  # held at 0 the step after a spike
            v.addcmul_(v, spiked, value=-1)
        elif counter is not None:  # held at 0 while the refractory counter runs
            v.mul_(torch.le(counter, 0, out=refractory.free))
        if "v_pre" in self.traces:
            self.traces["v_pre"][t] = v
        torch.gt(v, self.vth, out=spiked)  # strict threshold, as 1/0
        self.spikes[t].copy_(spiked)
        if not refractory.stale_v:
            v.addcmul_(v, spiked, value=-1)  # reset to zero
        if counter is not None:  # count down to 0; a spike (never while counting) sets refractory - 1
            counter.sub_(1).clamp_(min=0)
            if isinstance(refractory.rest, int):
                counter.add_(spiked, alpha=refractory.rest)
            else:
                assert refractory.rest is not None  # set with the counter (Loop._refractory)
                counter.addcmul_(spiked, refractory.rest)
        if "u" in self.traces:
            self.traces["u"][t] = u
        if "v" in self.traces:
            self.traces["v"][t] = v


def count_entering(
    u: torch.Tensor, v: torch.Tensor, q: torch.Tensor | None, spiked: torch.Tensor | None, scratch: torch.Tensor
) -> torch.Tensor:
    """How many lanes have a non-zero u, v or q (v counted as 0 where ``spiked`` is 1: a reset not yet applied),
    computed in ``scratch`` (the same integer dtype)."""
    entering = torch.addcmul(v, v, spiked, value=-1, out=scratch) if spiked is not None else scratch.copy_(v)
    entering.bitwise_or_(u)
    if q is not None:
        entering.bitwise_or_(q)
    return torch.count_nonzero(entering)


class Activity:
    """Counts active updates: those whose compartment has a non-zero u, v or q entering the update, or a
    bias acting on it. Before the biases act, counted step by step; while they act, every compartment with a
    bias is active, and the others' u, v and q are gathered step by step and counted at the end."""

    def __init__(self, group: Group, loop: Loop, steps: int, first_biased: int) -> None:
        device, dtype = group.device, loop.u.dtype
        self.steps, self.first_biased, self.stale_v = steps, first_biased, loop.refractory.stale_v
        self.counted = torch.zeros((), dtype=torch.int64, device=device)
        self.scratch = torch.empty_like(loop.u)
        unbiased = (group.bias == 0).nonzero().flatten() if group.bias.numel() > 1 else None
        gather = unbiased is not None and 0 < unbiased.numel() and first_biased < steps
        # the compartments without a bias, whose u, v and q are gathered while the biases act (None: no gathering)
        self.unbiased = unbiased if gather else None
        if self.unbiased is not None:
            shape = (steps - first_biased, 2, loop.u.shape[0], self.unbiased.numel())
            self.gathered_uv = torch.empty(shape, dtype=dtype, device=device)
        self.gathered_q: torch.Tensor | None = None
        per_sample = int((group.bias != 0).sum()) * (1 if group.bias.numel() > 1 else group.n)
        self.bias_active = per_sample * loop.u.shape[0]

    def observe(self, t: int, loop: Loop, q_t: torch.Tensor | None) -> None:
        """Note what enters step ``t``'s update (before it)."""
        if t < self.first_biased:
            spiked = loop.spiked if self.stale_v else None
            self.counted += count_entering(loop.u, loop.v, q_t, spiked, self.scratch)
        elif self.unbiased is not None:
            row = t - self.first_biased
            torch.index_select(loop.uv, 2, self.unbiased, out=self.gathered_uv[row])
            if q_t is not None:
                if self.gathered_q is None:
                    shape = (len(self.gathered_uv), *self.gathered_uv.shape[2:])
                    self.gathered_q = torch.zeros(shape, dtype=q_t.dtype, device=q_t.device)
                torch.index_select(q_t, 1, self.unbiased, out=self.gathered_q[row])

    def total(self, spikes: torch.Tensor) -> int:
        """The active updates of the run whose spikes are ``spikes`` ``[T, B, N]``."""
        first, steps = self.first_biased, self.steps
        active = (steps - first) * self.bias_active + int(self.counted)
        if self.unbiased is None:
            return active
        entering = self.gathered_uv[:, 0] != 0
        v_entering = self.gathered_uv[:, 1] != 0
        if self.stale_v:  # v not reset after a spike enters as 0
            before = torch.zeros_like(v_entering)
            start = max(first, 1)
            before[start - first :] = spikes[start - 1 : steps - 1].index_select(2, self.unbiased)
            v_entering &= ~before
        entering |= v_entering
        if self.gathered_q is not None:
            entering |= self.gathered_q != 0
        return active + int(entering.sum())
