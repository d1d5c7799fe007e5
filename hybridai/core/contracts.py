"""The three backend contracts. A backend *family* is a class registered under a name (such as
``"statevector"``); a configured backend is an instance, built from an optional *target* (the part
of ``"family:target"`` after the colon) and keyword options. Each contract is small and typed:

- ``QuantumExecutor``: ``execute(tapes, config) -> Execution`` for PennyLane tapes;
- ``Placement``: ``place(module) -> module`` puts torch modules (classical or spiking layers) on a
  device or a plugin;
- ``ChipCompiler``: ``compile(model, calibration=) -> CompiledNetwork`` for neuromorphic chips.

Backend objects are shared by many layers and threads: they hold configuration and caches, never
per-call state. Heavy imports of a backend's own stack happen inside its methods.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from typing import Any, ClassVar, NamedTuple

import torch
from torch import nn

from hybridai.core.capabilities import Capabilities, ChipCapabilities, PlacementCapabilities, QuantumCapabilities
from hybridai.core.chip import CompiledNetwork
from hybridai.core.errors import invalid
from hybridai.core.execution import Execution, ExecutionConfig
from hybridai.core.redaction import describe_options

DOMAINS = ("classical", "quantum", "spiking")


class Availability(NamedTuple):
    """Whether a backend family can run here and, if not, why."""

    available: bool
    reason: str = ""


class Backend(ABC):
    """What every backend has: a family, a target, options, a name, capabilities, availability.

    Implement one of the three contracts below, not this class.
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
    def capabilities(self) -> Any:
        """The honest capabilities of this configured backend (the contract's typed record)."""

    @classmethod
    def is_available(cls) -> Availability:
        """Whether the family can run on this machine; the reason when it cannot."""
        return Availability(True)

    def __repr__(self) -> str:
        """Family, target and options; secret-named options (``token=``, ``api_key=`` ...) show ``'***'``."""
        return f"<{type(self).__name__} {self.name!r}{describe_options(dict(sorted(self.options.items())))}>"


class QuantumExecutor(Backend):
    """Executes PennyLane tapes (``QuantumScript``) whose parameters are torch tensors.

    shots, seed: the executor's defaults (its ``shots=`` and ``seed=`` options), for calls whose config and tapes
    set none; ``None``: exact, and fresh randomness.
    """

    domains = ("quantum",)
    shots: int | None = None
    seed: int | None = None

    @property
    @abstractmethod
    def capabilities(self) -> QuantumCapabilities: ...

    @abstractmethod
    def execute(self, tapes: Sequence[Any], config: ExecutionConfig) -> Execution:
        """Run ``tapes`` on ``config.wires`` with the call's shots, seed and gradient method.

        ``tapes`` and ``config`` are settled (``settle``): ``config.shots`` is the shots every tape runs with,
        ``config.seed`` the seed, ``config.diff_method`` a concrete method. ``hybridai.quantum.execution.run.execute``
        settles them before the call; an executor called directly settles them first (``settle`` returns settled
        arguments unchanged).

        Returns one result per tape in PennyLane's layout (a tensor for one measurement, a tuple
        for several; broadcast tapes give a leading batch dimension) and the call's statistics.
        Gradients flow to every torch parameter of the tapes when ``capabilities.differentiable``.
        ``config.mitigation`` is handled by ``hybridai.quantum.execution.run.execute`` unless its engine
        is in ``capabilities.mitigation_engines``.
        """

    def settle(self, tapes: Sequence[Any], config: ExecutionConfig) -> tuple[list[Any], ExecutionConfig]:
        """``tapes`` and ``config`` with the call's shots, seed and gradient method final.

        Shots: ``config.shots``, else the shots of the tapes that set them (one number for all), else this
        executor's ``shots``; every tape is given them (a tape keeps its own shot vector when its total is them).
        Seed: ``config.seed``, else this executor's ``seed``. ``diff_method="best"`` becomes ``best_method``'s
        answer; any other method must be in ``capabilities.diff_methods``.
        """
        tapes = list(tapes)
        shots = config.shots if config.shots is not None else _shots_of(tapes)
        shots = shots if shots is not None else self.shots
        tapes = [t if t.shots.total_shots == shots else t.copy(shots=shots) for t in tapes]
        config = config.replace(shots=shots, seed=config.seed if config.seed is not None else self.seed)
        if config.diff_method == "best":
            return tapes, config.replace(diff_method=self.best_method(tapes, config))
        accepted = self.capabilities.diff_methods
        if config.diff_method not in accepted:
            raise invalid("diff_method", config.diff_method, f"one of {accepted} on {self.name!r}")
        return tapes, config

    def best_method(self, tapes: list[Any], config: ExecutionConfig) -> str:
        """What ``diff_method="best"`` means for ``tapes`` under ``config`` (shots and seed settled): the first of
        ``capabilities.diff_methods`` after ``"best"``, or ``"best"`` itself when the executor names no other
        method (its own choice). Executors whose best method depends on the call (shots, memory) override it."""
        return next((m for m in self.capabilities.diff_methods if m != "best"), "best")

    def native_operations(self, tape: Any) -> list[Any] | None:
        """The operations of ``tape`` that zero-noise folding folds (``hybridai.quantum.execution.run``): the gates
        the executor's noise acts on, where it knows them (a PennyLane device with a noise transform); ``None``:
        hybridai's elementary gates."""
        return None


def _shots_of(tapes: list[Any]) -> int | None:
    """The total shots of the tapes that set shots (``tape.shots``), ``None`` when none does; tapes of one call
    that set different shots are refused (one config runs them all)."""
    totals = sorted({t.shots.total_shots for t in tapes if t.shots})
    if len(totals) > 1:
        raise invalid("shots", totals, "one number of shots for all tapes of one call (tape.shots), or "
                      "ExecutionConfig(shots=...) for all of them")  # fmt: skip
    return totals[0] if totals else None


class Placement(Backend):
    """Puts torch modules (classical layers, spiking layers trained in torch) where they run."""

    domains = ("classical", "spiking")

    @property
    @abstractmethod
    def capabilities(self) -> PlacementCapabilities: ...

    @abstractmethod
    def place(self, module: nn.Module) -> nn.Module:
        """Return ``module`` ready to run on this backend (moved, or wrapped)."""


class ChipCompiler(Backend):
    """Compiles a trained spiking (or quantized) network to a chip's number formats.

    Chips take whole networks, not single layers: ``hybridai.deploy`` calls ``compile`` once and
    runs the returned ``CompiledNetwork`` (``hybridai.core.chip``). Compiled networks are not
    differentiable. ``capabilities.layers`` says which layers the chip takes.
    """

    domains = ("spiking",)

    @property
    @abstractmethod
    def capabilities(self) -> ChipCapabilities: ...

    @abstractmethod
    def compile(self, model: nn.Module, *, calibration: torch.Tensor | None = None) -> CompiledNetwork:
        """A ``CompiledNetwork`` for ``model`` (an ``nn.Sequential``), quantized with the help of
        ``calibration`` (a batch in the model's input layout) where the chip needs activation ranges."""


CONTRACTS: tuple[type[Backend], ...] = (QuantumExecutor, Placement, ChipCompiler)
# the typed capabilities record of each contract, in the order of CONTRACTS (zipped: a dict display of abstract
# classes as ``type[Backend]`` keys is refused by mypy, python/mypy#4717)
CAPABILITIES: dict[type[Backend], type[Capabilities]] = dict(
    zip(CONTRACTS, (QuantumCapabilities, PlacementCapabilities, ChipCapabilities), strict=True)
)


def contract_of(cls: type[Backend]) -> type[Backend] | None:
    """The contract ``cls`` implements, or ``None``."""
    return next((c for c in CONTRACTS if issubclass(cls, c)), None)


def capabilities_record(cls: type[Backend]) -> type[Capabilities] | None:
    """The typed capabilities record of the contract ``cls`` implements, or ``None`` when it implements none."""
    contract = contract_of(cls)
    return None if contract is None else CAPABILITIES[contract]
