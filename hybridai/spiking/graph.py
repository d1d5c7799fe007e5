"""What kind a layer is, and one lowering of a trained model to a chain of layers (chip compilers, NIR export).

``kind_of(module)`` is the one answer to "what kind of layer is this" (``"dense"``, ``"lif"``,
``"sigma_delta"``, ...): chips declare the kinds they compile with these names, ``hybridai.deploy`` cuts a
model by them, and the spiking kinds (``SPIKING``: stateful over time and time-major) are what every part
of hybridai counts as spiking (``is_spiking``). hybridai's layer classes declare their kind themselves
(``hybridai.spiking.layer_kind.LayerKind``: ``LIF.kind == "lif"``); torch's layers are named in
``TORCH_KINDS``. ``KINDS``, ``NEURONS`` and ``SPIKING`` are read from the classes: a new neuron class
(a ``hybridai.spiking.neurons.SpikingNeuron`` with its own ``kind``) belongs to them once it is defined.

``lower(model, target=..., accepts=..., supported=...)`` walks ``model`` (an ``nn.Sequential``, nested
ones flattened, ``TimeDistributed`` unwrapped, ``nn.Identity`` and ``nn.Dropout`` skipped: no-ops at
inference) and returns a ``LayerGraph``: one ``LayerNode`` per layer with its kind, module, position and
output width. It checks what holds for every target and raises one ``ConfigError`` naming the layer
(``model[i]``), its type and what ``target`` accepts:

- a layer whose kind is not in ``accepts`` (or that hybridai cannot lower at all);
- an ``nn.Linear`` whose ``in_features`` differs from the width before it;
- a decoder that is not the last layer, after a spiking layer (or a sigma-delta read-out);
- a neuron layer (a kind in ``NEURONS``) of unknown size, or whose per-neuron parameters do not match its size;
- a neuron layer built with ``batch_first=True`` (targets run time-major layers only).

Neurons are counted with one rule: a spiking layer has as many neurons as values reach it (the width
before it, ``n_inputs`` for a first layer), else the size it learnt on its last forward call
(``n_neurons``), else the size of its per-neuron parameters. Targets check their own limits on the nodes.
"""

from __future__ import annotations

from collections.abc import Collection, Iterator
from dataclasses import dataclass
from typing import Any

from torch import nn

from hybridai.core.errors import invalid, optional_int
from hybridai.spiking.encoding import TimeDistributed
from hybridai.spiking.layer_kind import KindSet, declared_kind
from hybridai.spiking.neurons import SpikingNeuron

# torch's layer classes, which cannot declare a kind: (module class, kind), first match wins
TORCH_KINDS: tuple[tuple[type[nn.Module], str], ...] = (
    (nn.Linear, "dense"),
    (nn.Conv2d, "conv"),
    (nn.ReLU, "relu"),
    (nn.MaxPool2d, "pool"),
    (nn.Flatten, "flatten"),
)
SKIPPED = (nn.Identity, nn.Dropout)  # no-ops at inference: every target takes them
KINDS = KindSet(lambda cls: True, fixed=(kind for _, kind in TORCH_KINDS))  # every kind ``kind_of`` names
NEURONS = KindSet(lambda cls: cls.has_membrane)  # spiking neurons with a membrane (and a neuron count to check)
SPIKING = KindSet(lambda cls: cls.stateful_over_time)  # stateful over time: they read time-major [T, B, ...] input


def kind_of(module: nn.Module) -> str | None:
    """The kind of ``module`` (one of ``KINDS``: the kind its class declares, else ``TORCH_KINDS``; a
    ``TimeDistributed`` layer is the kind of the layer it wraps), or None for a layer hybridai cannot lower.
    Chips declare the kinds they compile with these names (``ChipCapabilities.layers``), and
    ``hybridai.deploy`` cuts a model by them."""
    while isinstance(module, TimeDistributed):
        module = module.module
    declared = declared_kind(type(module))
    if declared is not None:
        return declared
    return next((kind for cls, kind in TORCH_KINDS if isinstance(module, cls)), None)


def is_spiking(module: nn.Module) -> bool:
    """``module`` is a spiking layer (a kind in ``SPIKING``): stateful over time, reading time-major
    ``[T, B, ...]`` input, so it runs on a neuromorphic chip (or in torch), never cut from its synapses."""
    return kind_of(module) in SPIKING


@dataclass(frozen=True)
class LayerNode:
    """One layer of a lowered model.

    kind: see ``kind_of``. module: the torch layer (the one inside a ``TimeDistributed``).
    index: its position in the model, the ``nn.Sequential`` key (``"3"``; ``"2.0"`` inside a nested one).
    width: values per sample and step it outputs (the neurons of a neuron layer, the units of an
    ``nn.Linear``); None where it depends on the input's spatial size (after a Conv2d, pooling, Flatten).
    n_in: values per sample and step it takes, None when unknown.
    time_distributed: the model wraps it in ``TimeDistributed``.
    """

    kind: str
    module: nn.Module
    index: str
    width: int | None
    n_in: int | None
    time_distributed: bool = False

    @property
    def type_name(self) -> str:
        return type(self.module).__name__

    @property
    def label(self) -> str:
        """``"1: LIF"``: index and type, the name chips give the layer in their reports."""
        return f"{self.index}: {self.type_name}"

    @property
    def where(self) -> str:
        """``"model[1]"`` (``"model[2][0]"`` in a nested ``nn.Sequential``): the argument error messages name."""
        return _where(self.index)


@dataclass(frozen=True)
class LayerGraph:
    """A lowered model: its layers in order (a chain: each feeds the next)."""

    layers: tuple[LayerNode, ...]

    @property
    def n_inputs(self) -> int | None:
        """Values per sample and step the first layer takes (None when unknown, e.g. before a Conv2d)."""
        return self.layers[0].n_in

    @property
    def decoder(self) -> LayerNode | None:
        """The trailing decoder, if any (``lower`` allows decoders only there)."""
        return self.layers[-1] if self.layers[-1].kind == "decoder" else None

    def __iter__(self) -> Iterator[LayerNode]:
        return iter(self.layers)

    def __len__(self) -> int:
        return len(self.layers)


def _where(index: str) -> str:
    return "model" + "".join(f"[{part}]" for part in index.split("."))


def _walk(module: nn.Module, index: str, time_distributed: bool) -> Iterator[tuple[str, nn.Module, bool]]:
    """Every position, by its slot: ``named_children`` would skip the second use of a module used twice."""
    if isinstance(module, nn.Sequential):
        for name, child in module._modules.items():
            if child is not None:
                yield from _walk(child, f"{index}.{name}" if index else name, time_distributed)
    elif isinstance(module, TimeDistributed):
        yield from _walk(module.module, index, True)
    elif not isinstance(module, SKIPPED):
        yield index, module, time_distributed


def _neurons(node_where: str, layer: SpikingNeuron, width: int | None) -> int:
    """The one neuron-count rule (module docstring), with its per-neuron parameters checked against it."""
    tensors = {name: getattr(layer, name) for name in layer.PARAMETERS}
    sizes = {t.numel() for t in tensors.values() if t.numel() > 1}
    n = width or layer.n_neurons or (sizes.pop() if len(sizes) == 1 else None)
    if n is None:
        what = f"the number of neurons of {node_where} ({type(layer).__name__}; its size is unknown)"
        raise invalid("n_inputs", None, what)
    for name, tensor in tensors.items():
        if tensor.numel() not in (1, n):
            raise invalid(f"{node_where}.{name}.shape", tuple(tensor.shape), f"a scalar or {n} per-neuron values")
    return n


def _check_time_major(where: str, layer: SpikingNeuron, target: str) -> None:
    """Chips and NIR run time-major layers: a ``batch_first`` layer is refused, never silently re-read."""
    if layer.batch_first:
        raise invalid(
            f"{where}.batch_first",
            True,
            f"False: {target} runs time-major [T, B, ...] spiking layers; set {where}.batch_first = False "
            "(the parameters stay the same) and give the deployment x.transpose(0, 1)",
        )


def _decodable(nodes: list[LayerNode]) -> bool:
    """A decoder may follow a spiking layer (neurons: spikes or membranes; SigmaDelta: graded messages, whose
    sum over time is the signal they encode), or the read-out Linear of a sigma-delta network."""
    last = nodes[-1].kind
    return last in SPIKING or (last == "dense" and any(n.kind == "sigma_delta" for n in nodes))


def lower(
    model: Any, *, target: str, accepts: Collection[str], supported: str, n_inputs: int | None = None
) -> LayerGraph:
    """``model`` as a ``LayerGraph`` of the kinds in ``accepts``, or one ``ConfigError`` naming the layer.

    target: who the graph is for (``"loihi"``, ``"NIR export"``), named in messages with ``supported``
    (what it takes, in words). model: an ``nn.Sequential`` or one layer. n_inputs: the input width, needed
    only when the model starts with a neuron layer of unknown size.
    """
    accepted = f"{target} takes {supported}"
    n_inputs = optional_int("n_inputs", n_inputs, 1)
    container = isinstance(model, nn.Sequential | TimeDistributed)
    if not isinstance(model, nn.Module) or not (container or kind_of(model)):
        raise invalid("model", type(model).__name__, accepted)
    nodes: list[LayerNode] = []
    width = n_inputs
    for index, layer, time_distributed in _walk(model, "" if isinstance(model, nn.Sequential) else "0", False):
        module: Any = layer  # a layer of the kind kind_of names (its attributes are read by kind)
        kind = kind_of(module)
        where = _where(index)
        if kind is None or kind not in accepts:
            raise invalid(where, type(module).__name__, accepted)
        if nodes and nodes[-1].kind == "decoder":
            decoder = nodes[-1]
            raise invalid(
                where, type(module).__name__, f"nothing after the decoder {decoder.where} ({decoder.type_name})"
            )
        n_in = width
        if kind == "dense":
            if width is not None and module.in_features and module.in_features != width:
                raise invalid(f"{where}.in_features", module.in_features, f"{width} (the previous layer's)")
            n_in, width = module.in_features or width, module.out_features
        elif kind in NEURONS:
            _check_time_major(where, module, target)
            n_in = width = _neurons(where, module, width)
        elif kind == "sigma_delta":
            n_in = width = module.features or width
        elif kind == "decoder" and (not nodes or not _decodable(nodes)):
            raise invalid(
                where,
                type(module).__name__,
                f"a decoder only as the last layer, after a spiking layer (a kind in {tuple(SPIKING)}) or a "
                "sigma-delta network's read-out",
            )
        elif kind in ("conv", "pool", "flatten"):
            width = None
        nodes.append(LayerNode(kind, module, index, width, n_in, time_distributed))
    if not nodes:
        raise invalid("model", f"an empty {type(model).__name__}", accepted)
    return LayerGraph(tuple(nodes))


__all__ = [
    "KINDS",
    "NEURONS",
    "SKIPPED",
    "SPIKING",
    "TORCH_KINDS",
    "LayerGraph",
    "LayerNode",
    "is_spiking",
    "kind_of",
    "lower",
]
