"""The Backend contract: the small surface every backend, built-in or plugin, provides.

A backend *family* is a class (registered under a name such as ``"pennylane"``); a
configured backend is an instance of it, built from an optional *target* (the part of
``"family:target"`` after the colon) and keyword options. Heavy imports of a backend's
own stack happen inside its methods, never at module import.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import Any, ClassVar, NamedTuple

DOMAINS = ("classical", "quantum", "spiking")


@dataclass(frozen=True)
class Capabilities:
    """What a configured backend can honestly do.

    differentiable: gradients flow through ``execute`` (by autograd or a gradient rule).
    exact: results are exact (no sampling, no noise) up to floating point.
    shots: results can be sampled with a finite number of shots.
    noise: the backend models noise (a noisy simulator or real hardware).
    max_qubits / max_neurons: size limit, ``None`` when only memory limits it.
    diff_methods: gradient methods accepted by ``execute`` (quantum backends).
    devices: torch devices the backend computes on.
    """

    differentiable: bool = False
    exact: bool = True
    shots: bool = False
    noise: bool = False
    max_qubits: int | None = None
    max_neurons: int | None = None
    diff_methods: tuple[str, ...] = ()
    devices: tuple[str, ...] = ("cpu",)
    extra: dict[str, Any] = field(default_factory=dict, compare=False, hash=False)


class Availability(NamedTuple):
    """Whether a backend family can run here and, if not, why."""

    available: bool
    reason: str = ""


class Backend(ABC):
    """Base class of all backends.

    Subclasses set ``family`` (by the ``register`` decorator) and ``domains`` (the
    domains they execute), implement ``capabilities`` and the execute method of their
    domain (see ``ClassicalBackend`` and ``QuantumBackend``), and may override
    ``is_available`` and ``__init__`` (to parse ``target`` and options).
    """

    family: ClassVar[str] = ""
    domains: ClassVar[tuple[str, ...]] = ()

    def __init__(self, target: str | None = None, **options: Any) -> None:
        self.target = target
        self.options = options

    @property
    def name(self) -> str:
        """The registry name this backend answers to: ``family`` or ``family:target``."""
        return f"{self.family}:{self.target}" if self.target else self.family

    @property
    @abstractmethod
    def capabilities(self) -> Capabilities:
        """The honest capabilities of this configured backend."""

    @classmethod
    def is_available(cls) -> Availability:
        """Whether the family can run on this machine; the reason when it cannot."""
        return Availability(True)

    def __repr__(self) -> str:
        opts = "".join(f", {k}={v!r}" for k, v in sorted(self.options.items()))
        return f"<{type(self).__name__} {self.name!r}{opts}>"


class ClassicalBackend(Backend):
    """Runs ordinary torch modules (and spiking layers trained in torch)."""

    @abstractmethod
    def place(self, module: Any) -> Any:
        """Return ``module`` ready to run on this backend (moved, or wrapped)."""


class QuantumBackend(Backend):
    """Executes PennyLane tapes (``QuantumScript``) whose parameters are torch tensors."""

    @abstractmethod
    def execute(self, tapes: list[Any], *, wires: Any, diff_method: str = "best") -> list[Any]:
        """Execute ``tapes`` on ``wires`` and return one result per tape.

        Results follow PennyLane's layout: a tensor for one measurement, a tuple of
        tensors for several; a broadcast tape gives results with a leading batch
        dimension. Gradients must flow to every torch parameter of the tapes when
        ``capabilities.differentiable`` is true.
        """


class NeuromorphicBackend(Backend):
    """Compiles a trained spiking (or quantized) model to a chip's number formats and runs it.

    Neuromorphic chips take whole networks, not single layers: ``hybridai.deploy`` calls
    ``compile`` once and then runs the returned ``CompiledNetwork`` (see
    ``hybridai.neuromorphic.activity``). Compiled networks are not differentiable.
    """

    domains = ("spiking",)

    @abstractmethod
    def compile(self, model: Any, *, calibration: Any = None) -> Any:
        """Return a ``CompiledNetwork`` for ``model`` (an ``nn.Sequential``), quantized with the help of
        ``calibration`` (a batch in the model's input layout) where the chip needs activation ranges."""
