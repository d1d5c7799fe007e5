"""SigmaDelta: sigma-delta neurons (Loihi 2 style) trained on the chip's integer grid.

A layer after a Linear in ``nn.Sequential``, time-major ``[T, B, N]`` like LIF. Per step it
accumulates the incoming deltas (sigma), adds its bias, applies ReLU on the activation grid,
and sends the change of the activation against what it has sent so far (delta) only when that
change reaches the threshold; the messages are graded (any integer multiple of ``scale``) and zero
otherwise. The next Linear therefore sees deltas, and the sum of a layer's messages over time stays
within one threshold of its (quantized) activation.

Quantization-aware (as lava-dl's sigma-delta blocks): activations, bias and threshold lie on the
grid ``k * scale`` (``k`` an integer), which is what the chip's integer registers hold; each step's
input is floored to the grid before it is summed, as the chip's Dense synapses shift their sums
right (``hybridai.neuromorphic.loihi2``); gradients pass straight through the rounding and the
threshold (the messages' gradient is the gradient of the exact delta ``act_t - act_{t-1}``). Weights
are not this layer's: the ``loihi2`` backend quantizes the preceding Linear when it compiles
(``loihi2.fake_quantize`` trains with those weights). Put ``bias=False`` on that Linear: its bias
would be added to every delta and so accumulate; this layer's ``bias`` is added once, after sigma.

Message rate, for a loss that trades sparsity for accuracy: no state is kept on the layer (a
model may be shared between threads). Run the forward inside ``record_messages()``; the record
(per thread and task, a ``contextvars`` variable) collects every SigmaDelta output of that call::

    with record_messages() as record:
        y = model(x)
    loss = task_loss(y) + 1e-3 * record.l1()      # differentiable proxy of the message count
    record.rate()                                 # fraction of (step, neuron) pairs that sent a message
"""

from __future__ import annotations

import contextlib
import contextvars
import math
from collections.abc import Iterator

import torch
from torch import nn

from hybridai.core.errors import ShapeError, invalid
from hybridai.core.module import HybridModule
from hybridai.spiking.layer_kind import LayerKind
from hybridai.spiking.layout import check_sequence
from hybridai.spiking.parameters import shown_value
from hybridai.spiking.state import check_finite

INPUTS = ("delta", "value")
_RECORD: contextvars.ContextVar[MessageRecord | None] = contextvars.ContextVar("sigma_delta_record", default=None)


class MessageRecord:
    """The messages every SigmaDelta layer sent during a ``record_messages()`` block, in call order."""

    def __init__(self) -> None:
        self.messages: list[torch.Tensor] = []

    def count(self) -> int:
        """Messages sent (non-zero payloads), all layers, steps and samples."""
        return int(sum(int((m != 0).sum()) for m in self.messages))

    def slots(self) -> int:
        """(step, sample, neuron) places a message could have been sent in: what a dense run would send."""
        return int(sum(m.numel() for m in self.messages))

    def rate(self) -> float:
        """``count() / slots()``: 1.0 is a dense network sending every value every step."""
        slots = self.slots()
        return self.count() / slots if slots else 0.0

    def l1(self) -> torch.Tensor:
        """Mean absolute message over all recorded slots: a differentiable proxy for the message rate."""
        if not self.messages:
            return torch.zeros(())
        first, *rest = (m.abs().sum() for m in self.messages)
        return sum(rest, first) / self.slots()


@contextlib.contextmanager
def record_messages() -> Iterator[MessageRecord]:
    """Collect the messages of every SigmaDelta forward run inside the block (this thread/task only)."""
    record = MessageRecord()
    token = _RECORD.set(record)
    try:
        yield record
    finally:
        _RECORD.reset(token)


def _round_ste(x: torch.Tensor) -> torch.Tensor:
    """Round to the nearest integer (half to even), gradient 1."""
    return x + (torch.round(x) - x).detach()


def _floor_ste(x: torch.Tensor) -> torch.Tensor:
    """Round down to an integer, gradient 1."""
    return x + (torch.floor(x) - x).detach()


class SigmaDelta(HybridModule, LayerKind):
    """Sigma-delta neurons: ReLU activation, delta messages above ``threshold``, on the grid ``scale``.

    ``threshold``: the smallest change of the activation that is sent (> 0; rounded up to a whole
    number of ``scale`` steps, at least one). ``scale``: one integer step of the chip's activation
    register (e.g. ``2 ** -6``). ``bias``: per-neuron bias added after sigma (needs ``features``);
    ``learn_bias`` makes it a parameter. ``input="delta"`` (default) accumulates the input (it is
    the previous layer's deltas through a Linear; each step floored to the grid); ``input="value"``
    takes the input as the activation itself (a first layer delta-encoding frames; rounded to the
    grid, half to even). ``cum_error=True`` (default) takes the delta against the sum of what was
    sent (the unsent residue carries over), so small changes add up until they are sent and the
    receiver's sum stays within one threshold of the activation: Loihi 2's rule
    (``loihi2.run_sigma_delta`` with its ``cum_error=False``; Lava always carries the residue, its own
    ``cum_error`` is a different rule). ``cum_error=False`` takes it against the previous step's
    activation, so a change below the threshold is never sent: not a chip rule (the ``loihi2``
    backend refuses it).
    """

    domain = "spiking"
    default_backend = "torch"
    kind = "sigma_delta"
    stateful_over_time = True

    def __init__(
        self,
        threshold: float = 0.1,
        scale: float = 2.0**-6,
        *,
        features: int | None = None,
        bias: float = 0.0,
        learn_bias: bool = False,
        input: str = "delta",  # noqa: A002 - the name says what the layer reads
        cum_error: bool = True,
    ) -> None:
        super().__init__()
        if not isinstance(scale, (int, float)) or isinstance(scale, bool) or not (0 < scale < math.inf):
            raise invalid("scale", scale, "a finite number > 0 (one integer step of the activation grid)")
        if not isinstance(threshold, (int, float)) or isinstance(threshold, bool) or not (0 < threshold < math.inf):
            raise invalid("threshold", threshold, "a finite number > 0")
        if input not in INPUTS:
            raise invalid("input", input, f"one of {INPUTS}")
        if features is not None and (not isinstance(features, int) or isinstance(features, bool) or features < 1):
            raise invalid("features", features, "a positive int (the number of neurons) or None")
        if not isinstance(bias, (int, float)) or isinstance(bias, bool) or not math.isfinite(bias):
            raise invalid("bias", bias, "a finite number")
        if learn_bias and features is None:
            raise invalid("learn_bias", learn_bias, "False unless features= gives the number of neurons")
        self.scale = float(scale)
        self.threshold_steps = max(1, math.ceil(threshold / scale - 1e-9))
        self.input = input
        self.cum_error = bool(cum_error)
        self.features = features
        initial = torch.full((features,) if features else (), float(bias))
        if learn_bias:
            self.bias = nn.Parameter(initial)
        else:
            self.register_buffer("bias", initial)
        self.set_backend(self.default_backend)

    @property
    def threshold(self) -> float:
        """The threshold on the grid: ``threshold_steps * scale``."""
        return self.threshold_steps * self.scale

    def integer_bias(self) -> torch.Tensor:
        """The bias in grid steps (int64), as a chip register holds it."""
        return torch.round(self.bias.detach() / self.scale).to(torch.int64)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """``x`` ``[T, B, N]`` -> the messages ``[T, B, N]`` (multiples of ``scale``, zero where none was sent)."""
        x = check_sequence(x)
        if not x.is_floating_point():
            raise invalid("x.dtype", x.dtype, "a floating tensor", ShapeError)
        if self.features is not None and x.shape[-1] != self.features:
            raise invalid("x.shape", tuple(x.shape), f"[T, B, {self.features}] (features={self.features})", ShapeError)
        self._check_bias(x)
        grid = x / self.scale
        sigma = torch.cumsum(_floor_ste(grid), dim=0) if self.input == "delta" else _round_ste(grid)
        before = sigma + _round_ste(self.bias.to(x.dtype) / self.scale)
        check_finite(x, before.detach(), [], "x", what="activation")  # as LIF: NaN, inf and overflows, named
        steps = torch.relu(before)
        messages = self._encode(steps.detach())
        exact = torch.diff(steps, dim=0, prepend=torch.zeros_like(steps[:1]))
        out = (messages + exact - exact.detach()) * self.scale
        record = _RECORD.get()
        if record is not None:
            record.messages.append(out)
        return out

    def _check_bias(self, x: torch.Tensor) -> None:
        """The bias on ``x``'s device and finite (a learnt one can be trained to NaN), else an error naming it."""
        if self.bias.device != x.device:
            raise invalid(
                "x.device",
                str(x.device),
                f"the device of the layer's bias ({self.bias.device}); move the layer with .to({str(x.device)!r}) "
                "or the input with .to(...)",
                ShapeError,
            )
        if not bool(torch.isfinite(self.bias.detach()).all()):
            raise invalid("bias", shown_value(self.bias.detach()), "finite values")

    def _encode(self, steps: torch.Tensor) -> torch.Tensor:
        """Integer activations ``[T, ...]`` -> integer delta messages (the threshold rule, no gradient)."""
        reference = torch.zeros_like(steps[0])
        sent = []
        for act in steps:
            delta = act - reference
            message = torch.where(delta.abs() >= self.threshold_steps, delta, torch.zeros_like(delta))
            reference = reference + message if self.cum_error else act
            sent.append(message)
        return torch.stack(sent)

    def extra_repr(self) -> str:
        bias = f"{self.bias.item():g}" if self.bias.numel() == 1 else f"<{tuple(self.bias.shape)}>"
        return (
            f"threshold={self.threshold:g} ({self.threshold_steps} steps), scale={self.scale:g}, bias={bias}, "
            f"input={self.input!r}, cum_error={self.cum_error}"
        )
