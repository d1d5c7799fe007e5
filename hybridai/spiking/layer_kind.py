"""What a layer class says about itself (``LayerKind``), and the kinds the layer classes declare (``KindSet``).

A hybridai layer class (``LIF``, ``CUBA``, ``SigmaDelta``, the decoders) names its kind in the class
attribute ``kind`` (the name chips declare and ``hybridai.deploy`` cuts a model by) and says how it treats
time: ``has_membrane`` (a neuron with a membrane, whose neuron count lowering checks) and
``stateful_over_time`` (it carries a state from one time step to the next, so it reads time-major
``[T, B, ...]`` input and is never cut from its synapses). ``hybridai.spiking.graph``'s registries
(``KINDS``, ``NEURONS``, ``SPIKING``) are ``KindSet``s: read from the classes defined so far at each use,
so a new layer class is recognised once it is defined, with no list to edit.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Set
from typing import ClassVar


class LayerKind:
    """A layer class that declares its kind (class attributes, read by ``hybridai.spiking.graph.kind_of``).

    kind: the kind's name, e.g. ``"lif"``; a class that leaves it out (an abstract base) declares none.
    has_membrane: a neuron with a membrane (in ``graph.NEURONS``). stateful_over_time: state carried from
    step to step, time-major input (in ``graph.SPIKING``). A subclass inherits its parent's kind unless it
    declares its own.
    """

    kind: ClassVar[str]
    has_membrane: ClassVar[bool] = False
    stateful_over_time: ClassVar[bool] = False


def declared_kind(cls: type) -> str | None:
    """The kind ``cls`` declares (its own or inherited), None for a class that declares none."""
    kind = getattr(cls, "kind", None) if issubclass(cls, LayerKind) else None
    return kind if isinstance(kind, str) else None


def declaring_classes() -> Iterator[type[LayerKind]]:
    """Every ``LayerKind`` class defined so far (and not garbage-collected) that declares a kind, parents first."""
    seen: set[type] = set()
    pending: list[type] = [LayerKind]
    while pending:
        subclasses: list[type] = pending.pop(0).__subclasses__()
        for sub in subclasses:
            if sub not in seen:
                seen.add(sub)
                pending.append(sub)
                if declared_kind(sub) is not None:
                    yield sub


class KindSet(Set[str]):
    """The kinds ``fixed`` and those declared by the ``LayerKind`` classes for which ``holds`` is true.

    Read from the classes at each use (membership, iteration, ``len``): ``fixed`` in its order, then the
    declared kinds sorted by name.
    """

    def __init__(self, holds: Callable[[type[LayerKind]], bool], fixed: Iterable[str] = ()) -> None:
        self._holds = holds
        self._fixed = tuple(fixed)

    def _kinds(self) -> dict[str, None]:
        declared = sorted({cls.kind for cls in declaring_classes() if self._holds(cls)})
        return dict.fromkeys((*self._fixed, *declared))

    def __contains__(self, kind: object) -> bool:
        return kind in self._kinds()

    def __iter__(self) -> Iterator[str]:
        return iter(tuple(self._kinds()))

    def __len__(self) -> int:
        return len(self._kinds())

    def __repr__(self) -> str:
        return f"KindSet{tuple(self._kinds())}"


__all__ = ["KindSet", "LayerKind", "declared_kind", "declaring_classes"]
