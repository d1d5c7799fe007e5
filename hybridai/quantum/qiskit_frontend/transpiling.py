"""Converted circuits transpiled for what they run on: a device, Aer's simulator of a noise model (whose basis gates
are the model's), or a device's target with PennyLane channels' place holders added."""

from __future__ import annotations

from typing import Any

from hybridai.quantum.qiskit_frontend.conversion import Converted
from hybridai.quantum.qiskit_frontend.noise_checks import warn_if_no_error_lands

DEFAULT_TRANSPILER_SEED = 1234  # the transpiler's seed when the backend has none: the same layout on every run


class Transpiled(tuple):
    """``(circuit, observables)`` laid out for the hardware, with ``key``: the structure they were transpiled from
    (the converted tape's exact key and the optimisation level), for caches keyed by value."""

    key: tuple

    def __new__(cls, circuit: Any, observables: list[Any], key: tuple) -> Transpiled:
        made = super().__new__(cls, (circuit, observables))
        made.key = key
        return made


def transpile_converted(
    converted: Converted, target: Any, level: int, seed: int | None, noise_model: Any, name: str
) -> Transpiled:
    """``converted``'s circuit transpiled for ``target`` (a backend or a ``Target``; None: kept as converted) at
    ``level`` and its observables laid out as the circuit is, keyed ``(converted.key, level)``. Warns (naming the
    backend ``name``) when none of ``noise_model``'s gate errors lands on the transpiled circuit."""
    from qiskit import transpile
    from qiskit.transpiler import Target

    key = (converted.key, level)
    if target is None:
        return Transpiled(converted.circuit, converted.observables, key)
    where = {"target": target} if isinstance(target, Target) else {"backend": target}
    seed_transpiler = seed if seed is not None else DEFAULT_TRANSPILER_SEED
    circuit = transpile(converted.circuit, **where, optimization_level=level, seed_transpiler=seed_transpiler)
    warn_if_no_error_lands(noise_model, circuit, name)
    return Transpiled(circuit, [o.apply_layout(circuit.layout) for o in converted.observables], key)


def simulator_target(noise_model: Any) -> Any:
    """What Aer builds for ``noise_model``, ``AerSimulator(noise_model=m)``, whose basis gates are the model's (so a
    model's errors land where Aer puts them); ``AerSimulator()`` without a model."""
    from qiskit_aer import AerSimulator

    return AerSimulator() if noise_model is None else AerSimulator(noise_model=noise_model)


def channel_target(device: Any) -> Any:
    """``device``'s transpiler target with the PennyLane channels' place holder (``kraus``, any width) added, so that
    channels are routed and laid out with the gates, onto the physical qubits of their wires."""
    import copy

    from qiskit.circuit import Instruction

    target = copy.deepcopy(device.target)
    target.add_instruction(Instruction, name="kraus")
    return target
