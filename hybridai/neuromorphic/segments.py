"""Cutting a hybrid model into contiguous segments by domain, asking the chip what it takes.

The model is an ``nn.Sequential`` (nested ones are flattened; any other module is one layer). What kind a
layer is comes from one place, ``hybridai.spiking.kind_of``; the spiking kinds (stateful over time,
time-major ``[T, B, ...]``: LIF, CUBA, SigmaDelta, ...) are ``hybridai.spiking.graph.SPIKING``. Each layer gets a
domain by these rules, in order:

- a quantum layer (``QuantumLayer``, any quantum ``HybridModule``, a PennyLane ``qml.qnn.TorchLayer``) is
  **quantum**, and so is a module of the user's that holds one at any depth (a custom block with a
  ``QuantumLayer`` inside): its quantum layers go to the quantum backend, the rest of it runs with them;
- a spiking region is **spiking**: it holds every spiking layer, runs forward from it through the layers
  that follow up to and including the first decoder (``SpikeCountDecoder``, ``RateDecoder``,
  ``MembraneDecoder``), and backward from it through the layers that precede it, up to the model's
  start or an encoder, decoder or quantum layer. These layers act on time-major ``[T, B, ...]`` tensors
  and go to the chip together (the ``nn.Linear`` that feeds a LIF layer is its synapses). A chip that
  declares the kinds it compiles (``ChipCapabilities.layers``) bounds its regions: they extend only
  through layers of those kinds (``nn.Identity`` and ``nn.Dropout`` are no-ops every chip takes), and a
  spiking layer of a kind it does not compile is refused by name, with what it takes;
- a chip that takes frames (``ChipCapabilities.frames``, Akida) instead gets the model's **front end**:
  the longest run of layers it takes from the first one (with at least one ``nn.Linear`` or
  ``nn.Conv2d``), refused by name when the first layer is not one of them. Where the chip takes ReLU
  layers, its hidden layers are ReLU layers: the run ends at its output layer, the first ``nn.Linear`` or
  ``nn.Conv2d`` that no ReLU follows (a CNN's feature Linear feeding a host ``Linear -> Tanh`` ends it);
- everything else is **classical**, encoders included: an encoder turns features into spikes on the
  host, and the chip receives the spikes.

Without a chip (a torch placement, or ``None``) and for a chip that declares nothing (a plugin's choice:
its ``compile`` refuses what it cannot take), spiking regions follow the first rules unbounded. The
segment a chip compiles is domain ``spiking`` (the chip's, as ``deploy(chip=)`` names it), whatever its
layers; its label says what runs there: ``spiking`` for LIF, CUBA or SigmaDelta layers, ``activations`` for
a chip segment without them (Akida's ReLU front end, which sends non-zero activations, not spikes).

Layers are positions, not objects: a module used twice (one ``nn.Linear`` or ``QuantumLayer`` at two positions)
is two layers, each with its own domain, as the model runs it.

Neighbouring layers of one domain form one segment. The hand-over between segments is the tensor
at the cut: time-major spikes or event counts ``[T, B, F]`` into a spiking segment, ``[B, F]``
features out of its decoder; a segment's input is moved to its own device and dtype.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from torch import nn

from hybridai.core import registry
from hybridai.core.capabilities import ChipCapabilities
from hybridai.core.contracts import ChipCompiler
from hybridai.core.errors import ConfigError, invalid
from hybridai.core.module import domain_of
from hybridai.spiking.encoding import DeltaEncoder, LatencyEncoder, RateEncoder, RepeatEncoder
from hybridai.spiking.graph import SKIPPED, SPIKING, kind_of

DOMAINS = ("spiking", "quantum", "classical")
_ENCODERS = (RateEncoder, RepeatEncoder, LatencyEncoder, DeltaEncoder)
_WEIGHTED = ("dense", "conv")  # a frames chip's front end computes something: at least one of these


@dataclass(frozen=True)
class Segment:
    """Neighbouring layers of one domain: ``layers`` are ``(index, module)`` pairs, ``index`` the
    ``nn.Sequential`` key (``"3"``; ``"2.0"`` inside a nested one)."""

    domain: str
    layers: tuple[tuple[str, nn.Module], ...]

    @property
    def computes(self) -> str:
        """What runs in the segment: its domain, except ``"activations"`` for a chip segment without spiking layers
        (Akida's ReLU front end)."""
        if self.domain == "spiking" and not any(
            kind_of(m) in SPIKING for _, layer in self.layers for m in layer.modules()
        ):
            return "activations"
        return self.domain

    @property
    def label(self) -> str:
        """``"spiking [0-2]"``: what runs in the segment (``computes``) and the range of layer indices."""
        first, last = self.layers[0][0], self.layers[-1][0]
        return f"{self.computes} [{first}]" if first == last else f"{self.computes} [{first}-{last}]"

    def module(self) -> nn.Sequential:
        """The segment's layers as an ``nn.Sequential`` (the modules themselves, not copies)."""
        return nn.Sequential(*(module for _, module in self.layers))


def where(index: str) -> str:
    """``"model[3]"`` (``"model[2][0]"`` in a nested ``nn.Sequential``): the layer as messages name it."""
    return "model" + "".join(f"[{part}]" for part in index.split("."))


def layer_name(index: str, module: nn.Module) -> str:
    """``"model[3] (SigmaDelta)"``: the layer and its type."""
    return f"{where(index)} ({type(module).__name__})"


def flatten(model: nn.Module) -> list[tuple[str, nn.Module]]:
    """The layers of ``model`` in order, nested ``nn.Sequential`` containers flattened."""
    if not isinstance(model, nn.Module):
        raise invalid("model", type(model).__name__, "a trained torch.nn.Module (an nn.Sequential of layers)")
    layers = list(_walk(model, ""))
    if not layers:
        raise invalid("model", "an empty nn.Sequential", "an nn.Sequential with at least one layer")
    return layers


def _walk(module: nn.Module, index: str) -> Iterator[tuple[str, nn.Module]]:
    """Every position, by its slot: ``named_children`` would skip the second use of a module used twice."""
    if isinstance(module, nn.Sequential):
        for name, child in module._modules.items():
            if child is not None:
                yield from _walk(child, f"{index}.{name}" if index else name)
    else:
        yield index or "0", module


def _role(module: nn.Module) -> str:
    if any(domain_of(m) == "quantum" for m in module.modules()):  # a TorchLayer too, and a block holding one
        return "quantum"
    kind = kind_of(module)
    if kind in SPIKING:
        return "spiking"
    if kind == "decoder":
        return "decoder"
    if isinstance(module, _ENCODERS):
        return "encoder"
    return "plain"


class _Chip:
    """What segmentation asks of a chip: its name (for messages) and what it takes."""

    def __init__(self, caps: ChipCapabilities | None, name: str) -> None:
        self.name = name
        self.layers = tuple(caps.layers) if caps is not None else ()
        self.frames = bool(caps is not None and caps.frames)
        self.takes = (caps.takes if caps is not None else "") or f"the layer kinds {', '.join(self.layers)}"

    def takes_layer(self, module: nn.Module) -> bool:
        """True for a layer the chip compiles (any layer when it declares nothing)."""
        return not self.layers or isinstance(module, SKIPPED) or kind_of(module) in self.layers


def domains_of(
    layers: list[tuple[str, nn.Module]], chip_capabilities: ChipCapabilities | None = None, chip: str = "the chip"
) -> list[str]:
    """The domain of each layer, by the rules of the module docstring (``chip``: its name, for refusals)."""
    spec = _Chip(chip_capabilities, chip)
    roles = [_role(module) for _, module in layers]
    domains = ["quantum" if role == "quantum" else "classical" for role in roles]
    if spec.layers:
        _refuse_spiking_layers(layers, roles, spec)
    if spec.frames:
        stop = _front_end(layers, roles, spec)
        return ["spiking"] * (stop + 1) + domains[stop + 1 :]
    taken = [role != "quantum" and spec.takes_layer(module) for (_, module), role in zip(layers, roles, strict=True)]
    for i, role in enumerate(roles):
        if role != "spiking" or domains[i] == "spiking":
            continue
        start = i
        while start > 0 and roles[start - 1] in ("plain", "spiking") and taken[start - 1]:
            start -= 1
        stop = i
        while stop + 1 < len(roles) and roles[stop + 1] in ("plain", "spiking", "decoder") and taken[stop + 1]:
            stop += 1
            if roles[stop] == "decoder":
                break
        for j in range(start, stop + 1):
            domains[j] = "spiking"
    return domains


def _refuse_spiking_layers(layers: list[tuple[str, nn.Module]], roles: list[str], chip: _Chip) -> None:
    """A spiking layer of a kind the chip does not compile cannot run anywhere in this deployment: named."""
    for (index, module), role in zip(layers, roles, strict=True):
        kind = kind_of(module)
        if role == "spiking" and kind not in chip.layers:
            others = [name for name in chips_taking(kind) if name != chip.name]
            elsewhere = f"; {kind} layers run on {', '.join(repr(n) for n in others)}" if others else ""
            accepted = f"a layer {chip.name} compiles ({chip.name} does not take {kind} layers): {chip.name} takes "
            raise invalid(where(index), type(module).__name__, accepted + chip.takes + elsewhere)


def _front_end(layers: list[tuple[str, nn.Module]], roles: list[str], chip: _Chip) -> int:
    """The index of the last layer of a frames chip's front end (module docstring), or a refusal naming why."""
    accepted = f"a first layer {chip.name} compiles: it takes frames [B, ...] into the model's front end, and "
    accepted += f"{chip.name} takes {chip.takes}"
    index, first = layers[0]
    if roles[0] == "quantum" or not chip.takes_layer(first):
        raise invalid(where(index), type(first).__name__, accepted)
    stop = 0
    while stop + 1 < len(layers) and roles[stop + 1] != "quantum" and chip.takes_layer(layers[stop + 1][1]):
        stop += 1
    if "relu" in chip.layers:  # hidden layers are ReLU layers: a weighted layer no ReLU follows is the output layer
        kinds = [kind_of(module) for _, module in layers[: stop + 1]]
        weighted = [i for i, kind in enumerate(kinds) if kind in _WEIGHTED]
        for this, following in zip(weighted, weighted[1:], strict=False):
            if "relu" not in kinds[this + 1 : following]:
                stop = following - 1
                break
    if not any(kind_of(module) in _WEIGHTED for _, module in layers[: stop + 1]):
        names = ", ".join(layer_name(i, m) for i, m in layers[: stop + 1])
        raise ConfigError(
            f"model front end {names} is not valid: no nn.Linear or nn.Conv2d for {chip.name} to compute; "
            f"accepted: a front end with one, as {chip.name} takes {chip.takes}"
        )
    return stop


def chip_families() -> list[str]:
    """The registered chip families (those whose class is a ``ChipCompiler``), built-in and plugin, for refusals."""
    names = []
    for family in registry.families():
        try:
            if issubclass(registry.backend_class(family), ChipCompiler):
                names.append(family)
        except Exception:  # a family that cannot load is simply not named
            continue
    return names


def chips_taking(kind: str | None) -> list[str]:
    """The registered, available chip families whose default instance compiles ``kind`` layers (for refusals: it
    loads every backend family once)."""
    names = []
    for family in registry.families():
        try:
            cls = registry.backend_class(family)
            if issubclass(cls, ChipCompiler) and cls.is_available().available and kind in cls().capabilities.layers:
                names.append(family)
        except Exception:  # a family that cannot load or build by default is simply not named
            continue
    return names


def cut(
    model: nn.Module, chip_capabilities: ChipCapabilities | None = None, *, chip: str = "the chip"
) -> list[Segment]:
    """``model`` as contiguous segments by domain (module docstring); ``chip_capabilities``: the chip's, when a chip
    compiles the spiking segments (``chip``: its name, for refusals)."""
    layers = flatten(model)
    segments: list[Segment] = []
    for layer, domain in zip(layers, domains_of(layers, chip_capabilities, chip), strict=True):
        if segments and segments[-1].domain == domain:
            segments[-1] = Segment(domain, (*segments[-1].layers, layer))
        else:
            segments.append(Segment(domain, (layer,)))
    return segments


def chip_front(
    model: nn.Sequential, chip_capabilities: ChipCapabilities, *, chip: str
) -> tuple[nn.Module, nn.Sequential | None]:
    """The model's leading chip segment (what ``hybridai.deploy(model, chip=chip)`` compiles: ``cut``) and the layers
    after it (None when the chip takes the whole model, which is then returned as it is), for quantization-aware
    training. A model whose first layer is not in a chip segment, or with a second chip segment, is refused by name."""
    segments = cut(model, chip_capabilities, chip=chip)
    index, first = segments[0].layers[0]
    if segments[0].domain != "spiking":
        raise invalid(
            where(index), type(first).__name__,
            f"a first layer {chip} compiles: the chip part leads the model (hybridai.deploy(model, chip={chip!r}) "
            f"runs it on the chip, the layers after it on the host; an encoder runs before it), and {chip} takes "
            + (chip_capabilities.takes or ", ".join(chip_capabilities.layers)),
        )  # fmt: skip
    later = [s for s in segments[1:] if s.domain == "spiking"]
    if later:
        index, module = later[0].layers[0]
        raise invalid(
            where(index), type(module).__name__,
            f"host layers after the leading chip part {segments[0].label}: one chip part per model (quantize a "
            "later one on its own)",
        )  # fmt: skip
    if len(segments) == 1:
        return model, None
    rest = [module for segment in segments[1:] for _, module in segment.layers]
    return segments[0].module(), nn.Sequential(*rest)


__all__ = [
    "DOMAINS",
    "Segment",
    "chip_front",
    "chips_taking",
    "cut",
    "domains_of",
    "flatten",
    "layer_name",
    "where",
]
