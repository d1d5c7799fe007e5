"""The Qiskit front end an executor holds (``aer``, ``ibm``, ``density``): its device and noise model, what its
circuits are transpiled for, the circuits transpiled once per structure and optimisation level, the measured
circuits of sampled runs, the register checked against the device, and a cache of whatever else the executor makes
once (estimators, plans). One front end per backend object, shared by its threads."""

from __future__ import annotations

import functools
import importlib.util
import threading
from collections.abc import Callable
from typing import Any, TypeVar

from hybridai.core.contracts import Availability
from hybridai.core.errors import ResourceLimitError, missing_extra
from hybridai.quantum.qiskit_frontend.conversion import Converted
from hybridai.quantum.qiskit_frontend.measuring import measured_circuit
from hybridai.quantum.qiskit_frontend.transpiling import (
    Transpiled,
    channel_target,
    simulator_target,
    transpile_converted,
)

QISKIT_PACKAGES = (("qiskit", "qiskit"), ("qiskit_aer", "qiskit-aer"), ("qiskit_ibm_runtime", "qiskit-ibm-runtime"))
T = TypeVar("T")


def qiskit_availability() -> Availability:
    """Whether Qiskit, Qiskit Aer and qiskit-ibm-runtime are installed; the extra to install when one is not."""
    for module, package in QISKIT_PACKAGES:
        if importlib.util.find_spec(module) is None:
            return Availability(False, missing_extra(package, "all", "the Qiskit backends"))
    return Availability(True)


class QiskitFrontEnd:
    """One backend's side of Qiskit; see the module docstring.

    ``name``: the backend's registry name (in messages); ``device``: the IBM device (or fake device) circuits run on,
    None for Aer's own simulator; ``noise_model``: the ``NoiseModel`` Aer's simulator is built for (None:
    noiseless); ``optimization_level`` and ``seed``: the transpiler's (seed 1234 when None).
    """

    def __init__(
        self, name: str, *, device: Any = None, noise_model: Any = None, optimization_level: int = 1,
        seed: int | None = None,
    ) -> None:  # fmt: skip
        self.name, self.device, self.noise_model = name, device, noise_model
        self.optimization_level, self.seed = optimization_level, seed
        self._made: dict[tuple, Any] = {}
        self._lock = threading.Lock()

    def cached(self, key: tuple, make: Callable[[], T]) -> T:
        """``make()`` once per ``key`` (transpiled circuits and the like), shared by all calls."""
        with self._lock:
            if key in self._made:
                return self._made[key]
        made = make()
        with self._lock:
            return self._made.setdefault(key, made)

    def hardware(self) -> Any:
        """What circuits are transpiled for: the device, else ``AerSimulator(noise_model=m)`` (the model's basis
        gates), else ``AerSimulator()``; built once."""
        if self.device is not None:
            return self.device
        return self.cached(("simulator target",), lambda: simulator_target(self.noise_model))

    def transpile_target(self, converted: Converted) -> Any:
        """What ``converted`` is transpiled for: ``hardware()``; with PennyLane channels on a device, the device's
        target extended by the channels' place holders (``transpiling.channel_target``)."""
        if converted.channels and self.device is not None:
            return self.cached(("channel target",), lambda: channel_target(self.device))
        return self.hardware()

    def transpiled(self, converted: Converted, keep_gates: bool) -> Transpiled:
        """The circuit and observables laid out for the hardware, transpiled once per structure at
        ``optimization_level``; at level 0 when ``keep_gates`` (tapes folded by someone else, without barriers
        between the folds). hybridai's own ZNE protects its folds with barriers and asks for ``keep_gates=False``,
        so its circuits are transpiled exactly as unmitigated ones."""
        level = 0 if keep_gates else self.optimization_level

        def make() -> Transpiled:
            target = self.transpile_target(converted)
            return transpile_converted(converted, target, level, self.seed, self.noise_model, self.name)

        return self.cached((converted.key, level), make)

    def measured(self, pair: tuple[Any, list[Any]], basis: dict) -> tuple[Any, tuple[int, ...]]:
        """``measuring.measured_circuit`` of a transpiled pair for ``hardware()``, cached by the structure it was
        transpiled from (its ``key``, ``Transpiled``); built anew for a pair without one."""
        make = functools.partial(measured_circuit, pair[0], basis, self.hardware())
        key = getattr(pair, "key", None)
        return make() if key is None else self.cached(("measured", key, basis["key"]), make)

    def check_register(self, n_qubits: int) -> None:
        """A ResourceLimitError (before converting or transpiling) for a register wider than the device's qubits."""
        device = self.device
        if device is not None and n_qubits > device.num_qubits:
            raise ResourceLimitError(
                f"n_qubits={n_qubits} on {self.name!r}, a device of {device.num_qubits} qubits; accepted: at most "
                f"{device.num_qubits} wires, or a wider device"
            )


class HoldsFrontEnd:
    """What an executor that holds a ``QiskitFrontEnd`` (``frontend``) shows of it: its device, its noise model and
    the circuits it transpiles (``aer``, ``ibm`` and ``density`` mix this in)."""

    frontend: QiskitFrontEnd

    @property
    def device(self) -> Any:
        """The IBM device (or fake device) circuits are transpiled for, or None (Aer's own simulator)."""
        return self.frontend.device

    @property
    def noise_model(self) -> Any:
        """The ``qiskit_aer.noise.NoiseModel`` simulated, or None."""
        return self.frontend.noise_model

    def transpiled(self, converted: Converted, keep_gates: bool) -> Transpiled:
        """``converted`` as this backend runs it: ``QiskitFrontEnd.transpiled``."""
        return self.frontend.transpiled(converted, keep_gates)
