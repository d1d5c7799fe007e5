"""Cutting a hybrid model into contiguous segments by domain: spiking, quantum, classical.

The model is an ``nn.Sequential`` (nested ones are flattened; any other module is one layer). Each
layer gets a domain by these rules, in order:

- a quantum layer (``QuantumLayer``, any quantum ``HybridModule``, a PennyLane ``qml.qnn.TorchLayer``) is
  **quantum**, and so is a module of the user's that holds one at any depth (a custom block with a
  ``QuantumLayer`` inside): its quantum layers go to the quantum backend, the rest of it runs with them;
- a spiking region is **spiking**: it holds every LIF/CUBA layer, runs forward from it through the
  layers that follow up to and including the first decoder (``SpikeCountDecoder``, ``RateDecoder``,
  ``MembraneDecoder``), and backward from it through the layers that precede it, up to the model's
  start or an encoder, decoder or quantum layer. These layers act on time-major ``[T, B, ...]``
  tensors and go to the chip together (the ``nn.Linear`` that feeds a LIF layer is its synapses);
- everything else is **classical**, encoders included: an encoder turns features into spikes on the
  host, and the chip receives the spikes.

Neighbouring layers of one domain form one segment. The hand-over between segments is the tensor
at the cut: time-major spikes or event counts ``[T, B, F]`` into a spiking segment, ``[B, F]``
features out of its decoder; a segment's input is moved to its own device and dtype.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from torch import nn

from hybridai.core.errors import invalid
from hybridai.core.module import domain_of
from hybridai.spiking.encoding import (
    DeltaEncoder,
    LatencyEncoder,
    MembraneDecoder,
    RateDecoder,
    RateEncoder,
    RepeatEncoder,
    SpikeCountDecoder,
)
from hybridai.spiking.neurons import CUBA, LIF

DOMAINS = ("spiking", "quantum", "classical")
_ENCODERS = (RateEncoder, RepeatEncoder, LatencyEncoder, DeltaEncoder)
_DECODERS = (SpikeCountDecoder, RateDecoder, MembraneDecoder)


@dataclass(frozen=True)
class Segment:
    """Neighbouring layers of one domain: ``layers`` are ``(index, module)`` pairs, ``index`` the
    ``nn.Sequential`` key (``"3"``; ``"2.0"`` inside a nested one)."""

    domain: str
    layers: tuple[tuple[str, nn.Module], ...]

    @property
    def label(self) -> str:
        """``"spiking [0-2]"``: the domain and the range of layer indices."""
        first, last = self.layers[0][0], self.layers[-1][0]
        return f"{self.domain} [{first}]" if first == last else f"{self.domain} [{first}-{last}]"

    def module(self) -> nn.Sequential:
        """The segment's layers as an ``nn.Sequential`` (the modules themselves, not copies)."""
        return nn.Sequential(*(module for _, module in self.layers))


def flatten(model: nn.Module) -> list[tuple[str, nn.Module]]:
    """The layers of ``model`` in order, nested ``nn.Sequential`` containers flattened."""
    if not isinstance(model, nn.Module):
        raise invalid("model", type(model).__name__, "a trained torch.nn.Module (an nn.Sequential of layers)")
    layers = list(_walk(model, ""))
    if not layers:
        raise invalid("model", "an empty nn.Sequential", "an nn.Sequential with at least one layer")
    return layers


def _walk(module: nn.Module, index: str) -> Iterator[tuple[str, nn.Module]]:
    if isinstance(module, nn.Sequential):
        for name, child in module.named_children():
            yield from _walk(child, f"{index}.{name}" if index else name)
    else:
        yield index or "0", module


def _role(module: nn.Module) -> str:
    if any(domain_of(m) == "quantum" for m in module.modules()):  # a TorchLayer too, and a block holding one
        return "quantum"
    if isinstance(module, LIF | CUBA):
        return "neurons"
    if isinstance(module, _DECODERS):
        return "decoder"
    if isinstance(module, _ENCODERS):
        return "encoder"
    return "plain"


def domains_of(layers: list[tuple[str, nn.Module]]) -> list[str]:
    """The domain of each layer, by the rules of the module docstring."""
    roles = [_role(module) for _, module in layers]
    domains = ["quantum" if role == "quantum" else "classical" for role in roles]
    for i, role in enumerate(roles):
        if role != "neurons" or domains[i] == "spiking":
            continue
        start = i
        while start > 0 and roles[start - 1] in ("plain", "neurons"):
            start -= 1
        stop = i
        while stop + 1 < len(roles) and roles[stop + 1] in ("plain", "neurons", "decoder"):
            stop += 1
            if roles[stop] == "decoder":
                break
        for j in range(start, stop + 1):
            domains[j] = "spiking"
    return domains


def cut(model: nn.Module) -> list[Segment]:
    """``model`` as contiguous segments by domain (module docstring)."""
    layers = flatten(model)
    segments: list[Segment] = []
    for layer, domain in zip(layers, domains_of(layers), strict=True):
        if segments and segments[-1].domain == domain:
            segments[-1] = Segment(domain, (*segments[-1].layers, layer))
        else:
            segments.append(Segment(domain, (layer,)))
    return segments


__all__ = ["DOMAINS", "Segment", "cut", "domains_of", "flatten"]
