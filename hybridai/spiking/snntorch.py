"""``from_snntorch(net)``: a spiking model trained in snnTorch as the equivalent hybridai model.

snnTorch steps a network one time step per call (``for t in range(T): spk = net(x[t])``, hidden
state kept inside each ``snn.Leaky``); hybridai takes the whole time-major ``[T, B, ...]`` input
at once and fuses the T steps of each spiking layer. ``from_snntorch`` reads the snnTorch layers
and builds the hybridai ones with the same numbers, so the converted model gives the same spikes
and can then be exported (NIR) or deployed (``hybridai.deploy(model, "loihi")``).
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterator
from typing import Any

import torch
from torch import nn

from hybridai.core.errors import ConfigError, HybridAIError, MissingExtraError, invalid
from hybridai.spiking.encoding import TimeDistributed
from hybridai.spiking.neurons import CUBA, LIF, OUTPUTS
from hybridai.spiking.surrogate import ATan, FastSigmoid, Surrogate

ACCEPTED = (
    "nn.Linear, nn.Conv2d, nn.MaxPool2d, nn.Flatten, nn.Dropout, nn.Identity, snntorch.Leaky or snntorch.Synaptic "
    "(in an nn.Sequential, or as the children of an nn.Module, applied in registration order)"
)
PER_STEP = (nn.Conv2d, nn.MaxPool2d, nn.Flatten)  # take [B, ...]: wrapped in TimeDistributed
# snnTorch surrogates hybridai computes the same gradient for: closure name -> (class, its constant)
SURROGATES: dict[str, tuple[type[ATan] | type[FastSigmoid], str]] = {
    "atan": (ATan, "alpha"),
    "fast_sigmoid": (FastSigmoid, "slope"),
}


def _snntorch() -> Any:
    try:
        import snntorch
    except ImportError:
        raise MissingExtraError("snntorch", "dev", "converting snnTorch models") from None
    return snntorch


def from_snntorch(net: nn.Module, *, output: str = "spikes", dt: float = 1e-3) -> nn.Sequential:
    """The hybridai ``nn.Sequential`` that computes what the snnTorch ``net`` computes, step for step.

    ``net``: an ``nn.Sequential`` (nested ones flattened) of ``nn.Linear``, ``nn.Conv2d``,
    ``nn.MaxPool2d``, ``nn.Flatten``, ``nn.Dropout``, ``nn.Identity``, ``snntorch.Leaky`` and
    ``snntorch.Synaptic`` layers, as snnTorch's tutorials build with ``init_hidden=True``; or a plain
    ``nn.Module`` whose children are only such layers (snnTorch's tutorial ``Net`` with ``fc1``,
    ``lif1``, ``fc2``, ``lif2``). For a plain module the children are taken in registration order:
    this ASSUMES its ``forward`` applies them in that order, one after the other (no skips, no
    recurrence, no other arithmetic), which cannot be checked from outside.

    Returns an ``nn.Sequential`` on time-major ``[T, B, ...]`` tensors: ``Leaky`` becomes ``LIF``,
    ``Synaptic`` becomes ``CUBA`` (beta, alpha and threshold copied, scalar or per neuron, learnable
    ones stay learnable; reset ``"subtract"`` or ``"zero"``); ``nn.Linear`` is copied (it broadcasts
    over T), ``nn.Conv2d``, ``nn.MaxPool2d`` and ``nn.Flatten`` are copied into ``TimeDistributed``;
    ``nn.Identity`` is dropped. Every tensor is a copy in its own dtype and device: training either
    model leaves the other unchanged.

    Hand-over: where snnTorch runs ``for t in range(T): spk = net(x[t])`` (after
    ``snntorch.utils.reset(net)``) and stacks the spikes, the converted model takes the stacked input
    ``x`` ``[T, B, ...]`` in one call and returns the stacked spikes of its last layer, ``[T, B, N]``,
    bit for bit the same (every call starts from zero state, as snnTorch after a reset). A tutorial
    ``Net`` that repeats one static input over ``num_steps`` inside its ``forward`` corresponds to
    ``converted(x.expand(num_steps, *x.shape))`` (or ``hybridai.RepeatEncoder(num_steps)`` first).
    ``output``: what the last spiking layer returns, ``"spikes"`` (default), ``"membrane"`` (the
    trace snnTorch returns as ``mem`` with ``output=True``) or ``"both"``. ``dt``: seconds per step,
    for NIR export and deployment (snnTorch has no time unit).

    Surrogate gradients: snnTorch's ``atan(alpha)`` and ``fast_sigmoid(slope)`` map to hybridai's
    ``ATan`` and ``FastSigmoid`` with the same constant; any other surrogate from
    ``snntorch.surrogate`` (and ``surrogate_disable=True``) becomes hybridai's default ``ATan(alpha=2)``.
    That changes gradients only: every snnTorch surrogate fires by the same step function, so the
    spikes stay identical. A ``spike_grad`` from outside ``snntorch.surrogate`` may fire differently
    and is refused.

    Refused with a ``ConfigError`` naming the layer (``net[2]``, ``net.fc3``) and the attribute:
    any other layer type (subclasses included); any other snnTorch module as a whole, never by its
    children (``RLeaky``, ``RSynaptic``, ``SLSTM``, ``SConv2dLSTM``: hybridai has no recurrent neuron,
    and their recurrent Linear or Conv2d belongs to the neuron); a layer with forward hooks; and what
    hybridai's neurons do not reproduce: ``reset_mechanism="none"``, ``reset_delay=False``, ``inhibition``,
    ``state_quant``, a ``graded_spikes_factor`` other than 1 or a learnt one.
    """
    snn = _snntorch()
    if not isinstance(net, nn.Module):
        raise invalid("net", type(net).__name__, f"a torch.nn.Module made of {ACCEPTED}")
    if output not in OUTPUTS:
        raise invalid("output", output, f"one of {OUTPUTS}")
    neuron_types = (snn.Leaky, snn.Synaptic)
    layers = list(_layers(net, "net", neuron_types))
    spiking = [i for i, (_, layer) in enumerate(layers) if type(layer) in neuron_types]
    if not spiking:
        kinds = ", ".join(type(layer).__name__ for _, layer in layers) or "no layers"
        raise invalid("net", f"{type(net).__name__} of {kinds}", "a model with at least one snntorch.Leaky or Synaptic")
    converted: list[nn.Module] = []
    copies: dict[int, nn.Module] = {}  # a layer used at several positions stays one layer (one set of weights)
    uses: dict[int, str] = {}
    for i, (where, layer) in enumerate(layers):
        first = uses.setdefault(id(layer), where)
        if first != where and type(layer) in neuron_types:
            raise invalid(
                where, type(layer).__name__,
                f"a neuron used once: it is also {first}, and snnTorch keeps one hidden state for both uses, which "
                "hybridai's neurons (a state per layer) do not reproduce; use one neuron object per position",
            )  # fmt: skip
        if id(layer) in copies:
            converted.append(copies[id(layer)])
            continue
        if isinstance(layer, nn.Identity):
            continue
        if type(layer) in neuron_types:
            last = i == spiking[-1]
            converted.append(_neuron(where, layer, snn, output=output if last else "spikes", dt=dt))
        else:
            copied = copy.deepcopy(layer)
            converted.append(TimeDistributed(copied) if isinstance(layer, PER_STEP) else copied)
            copies[id(layer)] = converted[-1]
    return nn.Sequential(*converted)


def _layers(module: nn.Module, where: str, neuron_types: tuple[type, ...]) -> Iterator[tuple[str, nn.Module]]:
    """``(where, layer)`` for each leaf layer of ``module`` in order, each checked to be accepted."""
    accepted = (nn.Linear, nn.Conv2d, nn.MaxPool2d, nn.Flatten, nn.Dropout, nn.Identity, *neuron_types)
    if type(module) in accepted:
        _check_plain(where, module)
        yield where, module
        return
    if _from_snntorch(module):
        # an snnTorch layer not converted (RLeaky, SLSTM, ...) is refused whole: its children (recurrent
        # weights) belong to the neuron, and converting them alone would drop the neuron
        raise invalid(where, type(module).__name__, ACCEPTED)
    if type(module) is not nn.Sequential and (isinstance(module, nn.Sequential) or not list(module.children())):
        raise invalid(where, type(module).__name__, ACCEPTED)
    if type(module) is not nn.Sequential:
        _check_plain(where, module)
    for name, child in module._modules.items():  # every position: named_children would skip a second use
        if child is None:
            continue
        index = f"[{name}]" if isinstance(module, nn.Sequential) else f".{name}"
        yield from _layers(child, where + index, neuron_types)


def _from_snntorch(module: nn.Module) -> bool:
    """Whether ``module``'s class is snnTorch's or built on one of snnTorch's (``RLeaky``, a subclass of ``Leaky``)."""
    return any((getattr(cls, "__module__", None) or "").split(".")[0] == "snntorch" for cls in type(module).__mro__)


def _check_plain(where: str, module: nn.Module) -> None:
    """Refuse what would run code the conversion does not see (hooks; parametrized layers fail the type check)."""
    hooks = ("_forward_hooks", "_forward_pre_hooks")
    if any(getattr(module, name, None) for name in hooks):
        raise invalid(f"{where} forward hooks", type(module).__name__, f"a layer without hooks; {ACCEPTED}")
    if isinstance(module, nn.MaxPool2d) and module.return_indices:
        raise invalid(f"{where}.return_indices", True, "False (the pooled tensor only)")


def _neuron(where: str, layer: Any, snn: Any, *, output: str, dt: float) -> LIF | CUBA:
    """The LIF (for ``Leaky``) or CUBA (for ``Synaptic``) with ``layer``'s numbers, or a ConfigError."""
    label = f"{where} ({type(layer).__name__})"
    reset = _reset(label, layer)
    _check_unsupported(label, layer)
    surrogate = _surrogate(label, layer)
    decays = ("alpha", "beta") if isinstance(layer, snn.Synaptic) else ("beta",)
    options: dict[str, Any] = {
        "threshold": layer.threshold.detach(),
        "learn_threshold": isinstance(layer.threshold, nn.Parameter),
        "reset": reset,
        "surrogate": surrogate,
        "output": output,
        "dt": dt,
    }
    for name in decays:  # snnTorch clamps decays to [0, 1] when it uses them; so does hybridai
        options[name] = getattr(layer, name).detach().clamp(0, 1)
        options[f"learn_{name}"] = isinstance(getattr(layer, name), nn.Parameter)
    try:
        neuron = CUBA(**options) if isinstance(layer, snn.Synaptic) else LIF(**options)
    except HybridAIError as error:
        raise ConfigError(f"{label}: {error}") from None
    with torch.no_grad():  # the stored (unclamped) values, so that training resumes from the same point
        for name in decays:
            getattr(neuron, name).copy_(getattr(layer, name))
    return neuron


def _reset(label: str, layer: nn.Module) -> str:
    """``"subtract"`` or ``"zero"``: the rule the layer runs (its ``state_function``), else a ConfigError."""
    running: Callable | None = getattr(layer, "state_function", None)
    rules = {"_base_sub": "subtract", "_base_zero": "zero", "_base_int": "none"}
    mechanism = rules.get(getattr(running, "__name__", ""), getattr(layer, "reset_mechanism", None))
    if mechanism not in ("subtract", "zero"):
        raise invalid(f"{label}.reset_mechanism", mechanism, "'subtract' or 'zero' (hybridai's LIF and CUBA resets)")
    if not getattr(layer, "reset_delay", True):
        raise invalid(
            f"{label}.reset_delay",
            False,
            "True (hybridai resets the membrane one step after a spike, as snnTorch's default)",
        )
    return mechanism


def _check_unsupported(label: str, layer: nn.Module) -> None:
    """Refuse the snnTorch options whose spikes hybridai's neurons would not reproduce."""
    if getattr(layer, "inhibition", False):
        raise invalid(f"{label}.inhibition", True, "False (hybridai has no winner-take-all inhibition)")
    if getattr(layer, "state_quant", False):
        quantizer = getattr(layer.state_quant, "__name__", type(layer.state_quant).__name__)
        raise invalid(f"{label}.state_quant", quantizer, "False (hybridai does not quantize the state while stepping)")
    factor = getattr(layer, "graded_spikes_factor", None)
    if isinstance(factor, nn.Parameter):
        raise invalid(f"{label}.learn_graded_spikes_factor", True, "False (hybridai's spikes are 0 or 1)")
    if factor is not None and bool((torch.as_tensor(factor) != 1).any()):
        shown = factor.item() if factor.numel() == 1 else f"tensor of shape {tuple(factor.shape)}"
        raise invalid(f"{label}.graded_spikes_factor", shown, "1.0 (hybridai's spikes are 0 or 1)")


def _surrogate(label: str, layer: nn.Module) -> Surrogate:
    """hybridai's surrogate equal to the layer's, or ATan(alpha=2) for other snnTorch surrogates (see from_snntorch)."""
    if getattr(layer, "surrogate_disable", False):
        return ATan()
    spike_grad: Any = layer.spike_grad  # a function or callable object (snnTorch has no annotations)
    owner = getattr(spike_grad, "__self__", spike_grad)
    module = getattr(owner, "__module__", None) or ""
    if module != "snntorch.surrogate":
        name = getattr(spike_grad, "__name__", type(spike_grad).__name__)
        raise invalid(
            f"{label}.spike_grad",
            name,
            "a surrogate from snntorch.surrogate (they all fire by the step function U > threshold; "
            "another function may fire differently)",
        )
    maker = getattr(spike_grad, "__qualname__", "").split(".")[0]
    if maker not in SURROGATES or not getattr(spike_grad, "__closure__", None):
        return ATan()
    cls, constant = SURROGATES[maker]
    constants = dict(
        zip(spike_grad.__code__.co_freevars, (c.cell_contents for c in spike_grad.__closure__), strict=True)
    )
    return cls(constants[constant]) if constant in constants else cls()


__all__ = ["from_snntorch"]
