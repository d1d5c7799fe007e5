"""Typed access to the modules of a lowered model (``hybridai.spiking.graph.LayerNode``), for the chip plans.

``lower`` gives each node its kind by the class of its module (``kind_of``: ``"dense"`` is an ``nn.Linear``,
``"conv"`` an ``nn.Conv2d``, a neuron's kind the one its class declares, ...), so a plan that has checked a
node's kind knows the class of its module; ``LayerNode.module`` is typed ``nn.Module``. ``module_of`` returns
the module as that class, asserting the invariant (never false for the nodes ``lower`` builds).
"""

from __future__ import annotations

from typing import TypeVar

from torch import nn

from hybridai.spiking.graph import LayerNode

M = TypeVar("M", bound=nn.Module)


def module_of(node: LayerNode, cls: type[M]) -> M:
    """``node.module`` as a ``cls``: the class its kind names."""
    module = node.module
    assert isinstance(module, cls), f"{node.where} of kind {node.kind!r} holds a {node.type_name}, not a {cls.__name__}"
    return module
