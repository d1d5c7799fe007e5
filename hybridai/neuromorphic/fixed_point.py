"""Fixed-point rules shared by every emulated chip: integer checks, two's-complement wraps, decays, devices.

Chip-independent: the Loihi 1 and Loihi 2 emulators (``loihi``, ``loihi2``) both build on these, so that no
chip package imports another. ``wrap`` and ``int32`` are the wraps of numpy's fixed-width integers (Lava's
models compute in numpy ``int32``); ``decay`` is the 12-bit multiplicative decay that rounds toward zero
(Loihi 1's compartments and Lava's Loihi 2 neuron models alike); ``graded_sums`` is Lava's Dense rule on integer
messages (both chips' netx exports and the Loihi 2 emulator use it); ``check_integer`` takes integer spike counts,
messages or registers in any dtype that holds whole numbers; ``check_device`` and ``check_emulator`` check
what an emulator backend is given (a torch device, no target, known options).
"""

from __future__ import annotations

from typing import Any

import torch

from hybridai.core.errors import BackendUnavailableError, ShapeError, invalid

DEVICE_TYPES = ("cpu", "cuda")  # where the emulators run (a meta tensor has no values)


def check_integer(x: Any, argument: str, *, rank: int | None = 3, non_negative: bool = False) -> torch.Tensor:
    """``x`` as int64 if it holds integers (any dtype whose values are whole numbers), else a ShapeError."""
    dims = {3: " [T, B, N]", 2: " [N, F]"}.get(rank or 0, "")
    what = "a torch.Tensor of integers" + (f" with {rank} dimensions{dims}" if rank else "")
    if not torch.is_tensor(x):
        raise invalid(argument, type(x).__name__, what, ShapeError)
    if x.device.type not in DEVICE_TYPES:  # a meta tensor has no values to emulate
        raise invalid(f"{argument}.device", str(x.device), "a tensor on the CPU or a CUDA device", ShapeError)
    if rank is not None and (x.ndim != rank or 0 in x.shape):
        raise invalid(f"{argument}.shape", tuple(x.shape), f"a non-empty tensor with {rank} dimensions", ShapeError)
    if x.is_complex():
        raise invalid(f"{argument}.dtype", x.dtype, "an integer, bool or real dtype holding whole numbers", ShapeError)
    if x.is_floating_point():
        bad = ~torch.isfinite(x) | (x != torch.round(x))
        if bad.any():
            raise invalid(
                argument,
                f"tensor with non-integer value {x[bad].flatten()[0].item()!r}",
                "whole numbers (integer spike counts per time bin, e.g. event bins)",
                ShapeError,
            )
    if x.numel() and (x.is_floating_point() or x.dtype == getattr(torch, "uint64", None)):
        values = x.detach() if x.is_floating_point() else x.detach().double()  # torch has few uint64 kernels
        low, high = torch.aminmax(values)  # int64 conversion would wrap values beyond 2^63 silently
        largest = max(abs(float(low)), abs(float(high)))
        if largest >= 2.0**63:
            raise invalid(argument, f"tensor with |values| up to {largest:.4g}", "integers below 2^63", ShapeError)
    x = x.to(torch.int64)
    if non_negative and (x < 0).any():
        raise invalid(argument, f"tensor with minimum {int(x.min())}", "non-negative spike counts", ShapeError)
    return x


def decay(x: torch.Tensor, d: torch.Tensor | int, offset: int) -> torch.Tensor:
    """``sign(x) * ((|x| * (4096 - offset - d)) >> 12)``: multiplies by the decay, rounding toward zero."""
    return torch.div(x * (4096 - offset - d), 4096, rounding_mode="trunc")


def wrap(x: torch.Tensor, bits: int) -> torch.Tensor:
    """Two's-complement wrap of ``x`` to a signed (bits + 1)-bit integer."""
    half = 1 << bits
    return ((x + half) & (2 * half - 1)) - half


def int32(x: torch.Tensor) -> torch.Tensor:
    """``x`` wrapped to a signed 32-bit integer, as numpy int32 arithmetic wraps in Lava's models."""
    return wrap(x, 31)


def wrap_f64(x: torch.Tensor, bits: int) -> torch.Tensor:
    """``wrap`` on integers held in float64 (exact; under autograd its gradient is the identity)."""
    period = float(1 << (bits + 1))
    return x - period * torch.floor((x + period / 2) / period)


def check_device(spec: Any) -> torch.device:
    """``spec`` as a torch device an emulator can run on here (the CPU or an existing CUDA device)."""
    accepted = "a torch device string: 'cpu', 'cuda' or 'cuda:N'"
    if not isinstance(spec, str | torch.device):
        raise invalid("device", spec, accepted)
    try:
        device = torch.device(spec)
    except (RuntimeError, ValueError):
        raise invalid("device", spec, accepted) from None
    if device.type == "cuda":
        if not torch.cuda.is_available():
            raise BackendUnavailableError(
                f"device={spec!r}: CUDA is not available on this machine (torch.cuda.is_available() is False); "
                "accepted here: 'cpu'"
            )
        if device.index is not None and device.index >= torch.cuda.device_count():
            raise BackendUnavailableError(
                f"device={spec!r}: this machine has {torch.cuda.device_count()} CUDA device(s)"
            )
    elif device.type != "cpu":
        raise invalid("device", spec, accepted)
    return device


def check_emulator(family: str, target: str | None, options: dict[str, Any], accepted: tuple[str, ...]) -> None:
    """Refuse a target (an emulator family has none) and options outside ``accepted``."""
    if target is not None:
        raise invalid(
            "backend", f"{family}:{target}", f"'{family}' (the emulator; a real board would come as a plugin family)"
        )
    if options:
        raise invalid("options", sorted(options), f"only {accepted}")


__all__ = ["DEVICE_TYPES", "check_device", "check_emulator", "check_integer", "decay", "int32", "wrap", "wrap_f64"]


def graded_sums(weights: torch.Tensor, messages: torch.Tensor, weight_exp: int) -> torch.Tensor:
    """``(weights @ messages[t]) << weight_exp`` (``>> -weight_exp``: floor) for every step, int64 ``[T, B, M]``,
    wrapped at 32 bits as Lava's int32 buffer: the Dense rule without its one-step buffer. ``weights`` are the
    effective ones (``effective_weights``) and ``messages`` int64, both checked by the caller."""
    s, w = messages, weights
    bound = float(s.abs().max()) * float(w.abs().sum(1).max()) if s.numel() else 0.0
    accum = s.double() @ w.double().T  # one GEMM for all steps
    if bound * 2.0 ** max(weight_exp, 0) < 2**31:  # no sum or shift leaves int32: exact float64, no wraps
        return (accum.mul_(2.0**weight_exp).floor_() if weight_exp else accum).long()  # floor: arithmetic shift
    accum = accum.long() if bound < 2**53 else (s.cpu() @ w.cpu().T).to(s.device)
    accum = wrap(accum, 31)
    return wrap(accum << weight_exp, 31) if weight_exp > 0 else accum >> -weight_exp
