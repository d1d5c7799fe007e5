"""The noise of an executor that speaks Qiskit (``aer``, ``density``) from its options: a fake device named by the
target, ``noise_model=`` a ``qiskit_aer.noise.NoiseModel``, or the rates ``depolarizing=`` and ``readout_error=``
(a ``NoiseModel`` of hybridai's own, on every gate it lets the transpiler use)."""

from __future__ import annotations

import numbers
from typing import Any, NamedTuple

from hybridai.core.errors import ConfigError, invalid
from hybridai.quantum.qiskit_frontend.fake_devices import fake_backend
from hybridai.quantum.qiskit_frontend.noise_checks import check_noise_model

# The basis of hybridai's own rate models: every gate a circuit transpiled for AerSimulator(noise_model=...) of such a
# model can contain is one of these (the transpiler targets exactly the model's basis gates), and each carries the
# error, so no gate escapes the rates (merging H.S.T gives a noisy 'u', never an error-free 'u3').
RATE_GATES_1 = ("rx", "ry", "rz", "p", "h", "x", "y", "z", "s", "sdg", "t", "tdg", "sx", "sxdg", "u")
RATE_GATES_2 = ("cx", "cz", "cy", "swap", "rxx", "ryy", "rzz", "ecr", "iswap", "ch")


class ResolvedNoise(NamedTuple):
    """An executor's device (a fake IBM device, or None), its noise model (None: noiseless) and the noise options
    that were given (for the backend's ``options``)."""

    device: Any
    model: Any
    options: dict[str, Any]


def resolve_noise(
    family: str, target: str | None, depolarizing: Any, readout_error: Any, noise_model: Any
) -> ResolvedNoise:
    """The fake device named by ``target`` (or None) and the noise from ``noise_model=``, else the device's
    (``NoiseModel.from_backend``), else the rates (or None: noiseless); contradictory options are refused, naming
    ``family`` in the routes they suggest."""
    if noise_model is not None:
        check_noise_model(noise_model)  # what Aer refuses, refused now (never a job sent and retried)
        if depolarizing is not None or readout_error is not None:
            raise ConfigError(
                f"noise_model= cannot be combined with {_rates(depolarizing, readout_error)}; accepted: one "
                "source of noise (add the rates to your NoiseModel)"
            )
    device = fake_backend(target) if target else None
    if device is not None and (depolarizing is not None or readout_error is not None):
        raise ConfigError(
            f"{_rates(depolarizing, readout_error)} would be ignored on backend='{family}:{target}', which brings the "
            f"device's own noise; accepted: backend='{family}' with the rates, or noise_model= a NoiseModel to "
            "replace the device's noise"
        )
    given = {"depolarizing": depolarizing, "readout_error": readout_error, "noise_model": noise_model}
    options = {key: value for key, value in given.items() if value is not None}
    if noise_model is not None:
        return ResolvedNoise(device, noise_model, options)
    if device is not None:
        from qiskit_aer.noise import NoiseModel

        return ResolvedNoise(device, NoiseModel.from_backend(device), options)
    if depolarizing is not None or readout_error is not None:
        return ResolvedNoise(device, _noise_from_rates(depolarizing, readout_error), options)
    return ResolvedNoise(device, None, options)


def _noise_from_rates(depolarizing: Any, readout_error: Any) -> Any:
    """A ``NoiseModel`` on ``RATE_GATES_1``/``RATE_GATES_2`` with depolarizing errors after every gate and a
    readout error on every qubit, for the rates given."""
    from qiskit_aer.noise import NoiseModel, ReadoutError, depolarizing_error

    model = NoiseModel(basis_gates=[*RATE_GATES_1, *RATE_GATES_2])
    if depolarizing is not None:
        accepted = "a probability p or a pair (p1, p2) of probabilities in [0, 1] (one- and two-qubit gates)"
        pair = depolarizing if isinstance(depolarizing, tuple | list) else (depolarizing, depolarizing)
        if len(pair) != 2:
            raise invalid("depolarizing", depolarizing, accepted)
        p1, p2 = (_probability("depolarizing", p, accepted, depolarizing) for p in pair)
        model.add_all_qubit_quantum_error(depolarizing_error(p1, 1), list(RATE_GATES_1))
        model.add_all_qubit_quantum_error(depolarizing_error(p2, 2), list(RATE_GATES_2))
    if readout_error is not None:
        q = _probability("readout_error", readout_error, "a probability in [0, 1] (a flipped measured bit)")
        model.add_all_qubit_readout_error(ReadoutError([[1 - q, q], [q, 1 - q]]))
    return model


def _probability(argument: str, value: Any, accepted: str, given: Any = None) -> float:
    """``value`` as a float if it is a real number (not a bool) in [0, 1], else a ConfigError showing ``given``
    (the whole argument, ``value`` by default)."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not 0 <= float(value) <= 1:
        raise invalid(argument, value if given is None else given, accepted)
    return float(value)


def _rates(depolarizing: Any, readout_error: Any) -> str:
    """'depolarizing=..., readout_error=...' for the rates that were given."""
    given = (("depolarizing", depolarizing), ("readout_error", readout_error))
    return " and ".join(f"{k}={v!r}" for k, v in given if v is not None)
