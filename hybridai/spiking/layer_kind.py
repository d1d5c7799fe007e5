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

import functools
import weakref
from collections.abc import Callable, Iterable, Iterator, Set
from typing import Any, ClassVar


class LayerKind:
    """A layer class that declares its kind (class attributes, read by ``hybridai.spiking.graph.kind_of``).

    kind: the kind's name, e.g. ``"lif"``; a class that leaves it out (an abstract base) declares none.
    has_membrane: a neuron with a membrane (in ``graph.NEURONS``). stateful_over_time: state carried from
    step to step, time-major input (in ``graph.SPIKING``). A subclass inherits its parent's kind unless it
    declares its own. Defining the class lists it (``declaring_classes``).
    """

    kind: ClassVar[str]
    has_membrane: ClassVar[bool] = False
    stateful_over_time: ClassVar[bool] = False

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if declared_kind(cls) is not None:
            _DECLARING.add(cls)


class _Declaring:
    """The classes that declare a kind, in definition order, held weakly (a class garbage-collected leaves),
    and a generation number that changes whenever one comes or goes (what ``KindSet`` caches by)."""

    def __init__(self) -> None:
        self._classes: dict[int, weakref.ReferenceType[type[LayerKind]]] = {}
        self.generation = 0

    def add(self, cls: type[LayerKind]) -> None:
        self._classes[id(cls)] = weakref.ref(cls, functools.partial(self._drop, id(cls)))
        self.generation += 1

    def _drop(self, key: int, _gone: object) -> None:
        self._classes.pop(key, None)
        self.generation += 1

    def classes(self) -> tuple[type[LayerKind], ...]:
        return tuple(cls for ref in tuple(self._classes.values()) if (cls := ref()) is not None)


_DECLARING = _Declaring()


def declared_kind(cls: type) -> str | None:
    """The kind ``cls`` declares (its own or inherited), None for a class that declares none."""
    kind = getattr(cls, "kind", None) if issubclass(cls, LayerKind) else None
    return kind if isinstance(kind, str) else None


def declaring_classes() -> tuple[type[LayerKind], ...]:
    """Every ``LayerKind`` class defined so far (and not garbage-collected) that declares a kind."""
    return _DECLARING.classes()


class KindSet(Set[str]):
    """The kinds ``fixed`` and those declared by the ``LayerKind`` classes for which ``holds`` is true.

    Read from the classes at each use (membership, iteration, ``len``): ``fixed`` in its order, then the
    declared kinds sorted by name.
    """

    def __init__(self, holds: Callable[[type[LayerKind]], bool], fixed: Iterable[str] = ()) -> None:
        self._holds = holds
        self._fixed = tuple(fixed)
        self._cache: tuple[int, dict[str, None]] | None = None  # (the registry's generation, the kinds)

    def _kinds(self) -> dict[str, None]:
        cache = self._cache
        if cache is None or cache[0] != _DECLARING.generation:
            generation = _DECLARING.generation
            declared = sorted({cls.kind for cls in declaring_classes() if self._holds(cls)})
            cache = self._cache = (generation, dict.fromkeys((*self._fixed, *declared)))
        return cache[1]

    def __contains__(self, kind: object) -> bool:
        return kind in self._kinds()

    def __iter__(self) -> Iterator[str]:
        return iter(tuple(self._kinds()))

    def __len__(self) -> int:
        return len(self._kinds())

    def __repr__(self) -> str:
        return f"KindSet{tuple(self._kinds())}"


__all__ = ["KindSet", "LayerKind", "declared_kind", "declaring_classes"]
