"""LIF and CUBA spiking layers on time-major ``[T, B, ...]`` tensors.

Layout: ``forward`` takes the whole sequence, time-major ``[T, B, neurons...]`` (``[B, T, ...]`` with
``batch_first=True``, as torch's RNNs); ``step(x_t, state)`` takes one step ``[B, neurons...]`` for a
loop of your own. A batch-first tensor given to a time-major layer is not guessed: see
``hybridai.spiking.layout``.

Both run all T steps in one fused autograd node (``hybridai.spiking.fused``) and reproduce snnTorch's
``Leaky`` and ``Synaptic`` (same parameters, ``reset_delay=True``): spikes bit for bit,
gradients to rounding. snnTorch's argument names are accepted where they mean the same
(``spike_grad=``, ``reset_mechanism=``; ``hybridai.spiking.snntorch_arguments``). One time step
lasts ``dt`` seconds; ``dt`` only matters when the layer is exported (NIR) or deployed, where
decays become time constants ``tau = dt / (1 - beta)``.

Long sequences: ``recompute_steps=K`` recomputes the T steps in chunks of K in backward
(inside the fused node): backward keeps the layer's input and the state at chunk boundaries
instead of the membrane (and synaptic) traces and recomputes one chunk at a time; outputs
and gradients are bit-identical.
Under ``torch.autocast`` the layers compute in and return float32 (float64 for float64
inputs; see ``hybridai.core.precision``): a membrane integrated over many steps in bf16 drifts.
"""

from __future__ import annotations

import math
from typing import Any

import torch
from torch import nn

from hybridai.core.errors import ShapeError, invalid
from hybridai.core.module import HybridModule
from hybridai.core.precision import keeps_precision, spiking_dtype
from hybridai.spiking.fused import CUBAFunction, LIFFunction
from hybridai.spiking.layer_kind import LayerKind
from hybridai.spiking.layout import check_sequence, check_step_input, check_time_major, one_step_hint
from hybridai.spiking.neuron_options import OUTPUTS, RESETS, NeuronOptions, neuron_signature
from hybridai.spiking.parameters import parameter_tensor, shown_value
from hybridai.spiking.state import check_finite, initial_state


def _working_dtype(layer: Any, incoming: torch.dtype) -> torch.dtype:
    return spiking_dtype(incoming)


def _write_signature(cls: type) -> None:
    """Give the ``__init__`` that ``cls`` defines (if any) its public signature, ``neuron_signature``."""
    init = vars(cls).get("__init__")
    if init is not None:
        init.__signature__ = neuron_signature(init)


class SpikingNeuron(HybridModule, LayerKind):
    """A spiking neuron with a membrane, the base of ``LIF`` and ``CUBA`` and of a new neuron model: threshold,
    reset, surrogate, output choice, layout, carried state and ``step`` (the shared keyword options,
    ``NeuronOptions``).

    A subclass declares its kind (``kind = "lif"``: ``hybridai.spiking.graph`` recognises the class by it,
    with no list to edit), names its parameters (``PARAMETERS``) and state tensors (``N_STATES``), takes
    its own parameters in ``__init__(self, <own parameters>, **options)`` and passes ``**options`` on (its
    signature lists the shared options, ``neuron_signature``), and runs the fused recurrence in
    ``_integrate``.
    """

    domain = "spiking"
    default_backend = "torch"
    has_membrane = True
    stateful_over_time = True
    PARAMETERS: tuple[str, ...] = ()
    N_STATES = 1
    threshold: torch.Tensor  # a parameter or a buffer (``learn_threshold``), registered in ``__init__``

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        _write_signature(cls)

    def __init__(self, **options: Any) -> None:
        super().__init__()
        checked = NeuronOptions.of(type(self), options)
        self.recompute_steps = checked.recompute_steps
        self.reset = checked.reset
        self.output = checked.output
        self.surrogate = checked.surrogate
        self.stateful = checked.stateful
        self.batch_first = checked.batch_first
        self.dt = checked.dt
        self._register("threshold", checked.threshold, checked.learn_threshold)
        self.state: Any = None
        self.n_neurons: int | None = None
        self.set_backend(self.default_backend if checked.backend is None else checked.backend)

    def _register(self, name: str, tensor: torch.Tensor, learn: bool) -> None:
        if learn:
            self.register_parameter(name, nn.Parameter(tensor))
        else:
            self.register_buffer(name, tensor)

    def __setstate__(self, state: dict[str, Any]) -> None:
        state.setdefault("batch_first", False)  # layers pickled before batch_first existed were time-major
        super().__setstate__(state)

    def reset_state(self) -> None:
        """Forget the carried state: the next call starts from zero."""
        self.state = None

    def _integrate(
        self,
        x: torch.Tensor,
        parameters: list[torch.Tensor],
        initial: list[torch.Tensor],
        recompute_steps: int | None,
        keep_trace: bool,
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor | None]:
        """The fused recurrence over time-major ``x``: ``(spikes, mem, last membrane, last current or None)``."""
        raise NotImplementedError

    @keeps_precision(_working_dtype)
    def forward(self, x: torch.Tensor, state: Any = None) -> Any:
        """The whole sequence: ``x`` ``[T, B, ...]`` (``[B, T, ...]`` with ``batch_first``) -> ``output``."""
        hint = one_step_hint(type(self).__name__.lower())
        given_shape = tuple(x.shape) if torch.is_tensor(x) else ()
        x = check_sequence(x, batch_first=self.batch_first, hint=hint)
        parameters = self._check_parameters(x, f"x of shape {given_shape}")
        carried = self.state if self.stateful else None
        initial = initial_state(
            x, state, self.N_STATES, carried=carried, given_shape=given_shape, batch_first=self.batch_first
        )
        spikes, mem, last, syn_last = self._integrate(x, parameters, initial, *self._chunking())
        check_finite(x, last, initial, "x")
        self.n_neurons = math.prod(x.shape[2:])
        if self.stateful:
            self.state = last.detach() if syn_last is None else (syn_last.detach().clone(), last.detach())
        outputs = {"spikes": (spikes,), "membrane": (mem,), "both": (spikes, mem)}[self.output]
        if self.batch_first:
            outputs = tuple(out.transpose(0, 1) for out in outputs)
        return outputs[0] if len(outputs) == 1 else outputs

    @keeps_precision(_working_dtype)
    def step(self, x_t: torch.Tensor, state: Any = None) -> tuple[torch.Tensor, Any]:
        """One time step: ``x_t`` ``[B, ...]`` and the state before it -> ``(spikes [B, ...], state after it)``.

        ``state`` is None on the first step (zeros), then what the previous call returned; gradients
        flow through it. A loop of steps gives the spikes and membranes of ``forward`` on the stacked
        input bit for bit, and its gradients to rounding (``forward`` is faster: one fused node).
        ``step`` neither reads nor writes the carried state of ``stateful=True``; ``output`` and
        ``batch_first`` do not apply (the membrane is in the returned state).
        """
        x = check_step_input(x_t).unsqueeze(0)
        parameters = self._check_parameters(x, f"x_t of shape {tuple(x_t.shape)}")
        initial = initial_state(x, state, self.N_STATES, given_shape=tuple(x_t.shape), argument="x_t")
        spikes, mem, last, syn_last = self._integrate(x, parameters, initial, None, True)
        check_finite(x, last, initial, "x_t")
        self.n_neurons = math.prod(x.shape[2:])
        return spikes[0], mem[0] if syn_last is None else (syn_last, mem[0])

    def _check_parameters(self, x: torch.Tensor, shown: str) -> list[torch.Tensor]:
        """The parameters in ``x``'s dtype, checked against its device and neuron shape (``shown``: x as given)."""
        features = tuple(x.shape[2:])
        tensors = []
        for name in self.PARAMETERS:
            tensor = getattr(self, name)
            if tensor.device != x.device:
                raise invalid(
                    "x.device",
                    str(x.device),
                    f"the device of the layer's {name} ({tensor.device}); move the layer with .to({str(x.device)!r}) "
                    "or the input with .to(...)",
                    ShapeError,
                )
            try:
                shape = torch.broadcast_shapes(tensor.shape, features)
            except RuntimeError:
                shape = None
            if shape != features:
                raise ShapeError(
                    f"{name} has shape {tuple(tensor.shape)} but the input {shown}; "
                    f"accepted: a {name} that broadcasts to the neuron shape {features} (a scalar or per neuron)"
                    f"{self._layout_note(shown)}"
                )
            if name == "threshold":  # learnt thresholds can be trained below 0: then every neuron fires every step
                if not bool(((tensor > 0) & (tensor < math.inf)).all()):
                    raise invalid(
                        name, shown_value(tensor.detach()), "finite values > 0 (a threshold <= 0 fires always)"
                    )
            elif not torch.isfinite(tensor).all():
                raise invalid(name, shown_value(tensor.detach()), "finite values")
            tensors.append(tensor.to(x.dtype))
        return tensors

    def _layout_note(self, shown: str) -> str:
        if shown.startswith("x_t"):
            return "; x_t is one time step [B, neurons...]"
        layout = "[B, T, neurons...]" if self.batch_first else "[T, B, neurons...]"
        return f"; this layer reads x as {layout}: a time-last [B, neurons..., T] input needs x.movedim(-1, 0) first"

    def _chunking(self) -> tuple[int | None, bool]:
        """``(recompute_steps, keep_trace)`` for the fused functions: the membrane trace only when it is an output."""
        return self.recompute_steps, self.output != "spikes"

    def size_description(self) -> str:
        sizes = [getattr(self, n).numel() for n in self.PARAMETERS]
        n = self.n_neurons or (max(sizes) if max(sizes) > 1 else None)
        return f"{n:,} neurons" if n else ""

    def extra_repr(self) -> str:
        def show(name: str) -> str:
            tensor = getattr(self, name)
            value = f"{tensor.item():.4g}" if tensor.numel() == 1 else f"<{tuple(tensor.shape)}>"
            return f"{name}={value}{' (learnt)' if isinstance(tensor, nn.Parameter) else ''}"

        names = self.PARAMETERS
        extras = ", stateful=True" if self.stateful else ""
        extras += ", batch_first=True" if self.batch_first else ""
        extras += f", recompute_steps={self.recompute_steps}" if self.recompute_steps else ""
        return (
            f"{', '.join(show(n) for n in names)}, reset={self.reset!r}, surrogate={self.surrogate!r}, "
            f"output={self.output!r}, dt={self.dt:g}{extras}, backend={self.backend!r}"
        )


_write_signature(SpikingNeuron)


class LIF(SpikingNeuron):
    """Leaky integrate-and-fire neurons (snnTorch's ``Leaky``), all T steps fused.

    ``U_t = beta * U_{t-1} + x_t - threshold * S_{t-1}`` (reset by subtraction) or
    ``U_t = beta * (1 - S_{t-1}) * U_{t-1} + x_t`` (reset to zero); ``S_t = U_t > threshold``.

    Layout: ``lif(x)`` takes the whole sequence ``x`` ``[T, B, ...]`` (time-major; ``[B, T, ...]``
    with ``batch_first=True``) and returns the same shape. A batch-first tensor given to a time-major
    layer is NOT detected from its shape alone: say which with ``batch_first``.

    Args:
        beta: membrane decay per step in [0, 1] (scalar or per neuron); clamped to [0, 1]
            when learnt, as snnTorch does.
        threshold: firing threshold > 0 (membrane units; scalar or per neuron). A threshold <= 0 (given, or
            learnt down to it) is refused: every neuron would fire at every step whatever its input.
        reset: ``"subtract"`` or ``"zero"``.
        surrogate: ``"atan"`` (default, alpha=2), ``"fast_sigmoid"`` (slope=25),
            or an instance from ``hybridai.spiking.surrogate`` with other constants.
        learn_beta, learn_threshold: make them trainable parameters.
        output: ``"spikes"`` (default), ``"membrane"`` (the trace ``U``), or ``"both"`` (a tuple).
        stateful: carry the final membrane (detached) into the next call; ``reset_state()`` clears it.
        batch_first: take and return ``[B, T, ...]`` (the state stays ``[B, ...]``). Chip deployments
            and NIR export take time-major layers only and refuse it.
        dt: seconds per time step (used by NIR export and deployment).
        backend: spiking backend name, default ``"torch"``.
        recompute_steps: ``None`` (default) or K: recompute the T steps in chunks of K in
            backward. Backward keeps the input x and ceil(T/K) states instead of the membrane
            trace, which is then never allocated (one [T, B, N] tensor less at the peak; two for
            CUBA with a learnt alpha); each chunk is recomputed once in backward. Outputs and
            gradients are bit-identical. K near sqrt(T) keeps the extra buffers smallest.
        **snntorch_options: snnTorch's names, where they mean the same: ``spike_grad`` (hybridai's
            ``surrogate``; ``snntorch.surrogate.atan()``/``fast_sigmoid()`` are translated),
            ``reset_mechanism`` (``reset``), and ``init_hidden=False``, ``reset_delay=True``, ...
            Anything else is a ``ConfigError`` saying what hybridai calls it.

    ``forward(x, state=mem0)`` starts from a given membrane ``[B, ...]`` (gradients flow into it).

    Custom loops (snnTorch's ``spk, mem = lif(cur, mem)``)::

        state = None
        for x_t in x.unbind(0):                 # x: [T, B, N]
            spk, state = lif.step(x_t, state)   # state: the membrane [B, N]

    gives ``lif(x)`` step by step, bit for bit. ``lif(cur, mem)`` with a ``[B, N]`` ``cur`` is refused
    with a pointer to ``step``: ``forward`` always takes a sequence.
    """

    kind = "lif"
    PARAMETERS = ("beta", "threshold")
    beta: torch.Tensor
    N_STATES = 1

    def __init__(self, beta: float | torch.Tensor = 0.9, *, learn_beta: bool = False, **options: Any) -> None:
        super().__init__(**options)
        self._register("beta", parameter_tensor("beta", beta, 0.0, 1.0), learn_beta)

    def _integrate(
        self,
        x: torch.Tensor,
        parameters: list[torch.Tensor],
        initial: list[torch.Tensor],
        recompute_steps: int | None,
        keep_trace: bool,
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, None]:
        beta, threshold = parameters
        spikes, mem, last = LIFFunction.apply(
            x,
            beta.clamp(0, 1),
            threshold,
            initial[0],
            self.reset == "zero",
            self.surrogate,
            recompute_steps,
            keep_trace,
        )
        return spikes, mem, last, None


class CUBA(SpikingNeuron):
    """Current-based synapse + LIF neurons (snnTorch's ``Synaptic``), all T steps fused.

    ``I_t = alpha * I_{t-1} + x_t``; ``U_t = beta * U_{t-1} + I_t - threshold * S_{t-1}``
    (subtract) or ``U_t = (1 - S_{t-1}) * (beta * U_{t-1} + I_t)`` (zero, snnTorch's rule);
    ``S_t = U_t > threshold``. Arguments, layout (``batch_first``) and snnTorch names as for ``LIF``,
    plus ``alpha`` (synaptic decay per step in [0, 1]) and ``learn_alpha``. The state is the tuple
    ``(syn, mem)``, each ``[B, ...]``: ``forward(x, state=(syn0, mem0))``, and in a loop of your own
    ``spk, (syn, mem) = cuba.step(x_t, state)`` (``state=None`` on the first step).
    """

    kind = "cuba"
    PARAMETERS = ("alpha", "beta", "threshold")
    N_STATES = 2
    alpha: torch.Tensor
    beta: torch.Tensor

    def __init__(
        self,
        alpha: float | torch.Tensor = 0.8,
        beta: float | torch.Tensor = 0.9,
        *,
        learn_alpha: bool = False,
        learn_beta: bool = False,
        **options: Any,
    ) -> None:
        super().__init__(**options)
        self._register("alpha", parameter_tensor("alpha", alpha, 0.0, 1.0), learn_alpha)
        self._register("beta", parameter_tensor("beta", beta, 0.0, 1.0), learn_beta)

    def _integrate(
        self,
        x: torch.Tensor,
        parameters: list[torch.Tensor],
        initial: list[torch.Tensor],
        recompute_steps: int | None,
        keep_trace: bool,
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
        alpha, beta, threshold = parameters
        syn0, mem0 = initial
        spikes, mem, syn_last, last = CUBAFunction.apply(
            x,
            alpha.clamp(0, 1),
            beta.clamp(0, 1),
            threshold,
            syn0,
            mem0,
            self.reset == "zero",
            self.surrogate,
            recompute_steps,
            keep_trace,
        )
        return spikes, mem, last, syn_last


__all__ = ["CUBA", "LIF", "OUTPUTS", "RESETS", "SpikingNeuron", "check_time_major"]
