"""A ``qiskit_aer.noise.NoiseModel`` read as Aer applies it: per (instruction, qubits) channels and readout errors.

Aer applies an instruction's quantum error right after the instruction: the error given for exactly its qubits
(``add_quantum_error``) if there is one, else the all-qubit error of that instruction
(``add_all_qubit_quantum_error``). Errors are keyed by the instruction's label, or its name when it has none. A
quantum error becomes a channel through Qiskit's own ``quantum_info.SuperOp`` of each of its terms, and then a Pauli
transfer matrix (``channels``), cached per (instruction, qubits), and per error content across noise models
(``_shared_ptm``). As Aer does (``QuantumError::set_circuits``, ``set_generators``: ``p > 1e-10``), terms whose
probability (or Pauli-Lindblad rate) is at most ``AER_THRESHOLD`` are left out, not renormalised: a fake device's
two-qubit errors hold terms of about 9e-11, and keeping them would differ from Aer by as much. Readout errors act on
measured bits: a qubit's own (``add_readout_error``), else the all-qubit one.

Errors on ``measure`` act on the qubit before it is read, as in Aer: sampled values (``shots=N``) apply them (the
measured circuits of ``planning``); exact values (``shots=None``) leave them out, as Aer's ``EstimatorV2`` does (its
circuits have no measurement), together with readout errors. Errors on ``reset`` would follow a reset, which no
circuit hybridai runs here contains (``gates`` refuses resets by name). What Aer itself refuses (probabilities
outside [0, 1], negative rates, non-CPTP channels, ...) is refused when the backend is built
(``hybridai.quantum.qiskit_frontend.noise_checks``).

What is refused (``ConfigError`` naming ``noise_model``), rather than approximated: an error on an instruction whose
qubit count differs from the error's (Aer would put it on the first qubits only), errors on barriers (Aer leaves
them out), correlated (multi-qubit) readout errors, non-local errors of older qiskit-aer versions, and errors Qiskit
cannot turn into a superoperator.
"""

from __future__ import annotations

import pickle
import threading
from typing import Any

import numpy as np

from hybridai.core.errors import ConfigError
from hybridai.quantum.density.channels import ptm_of_superop

ADVICE = "or backend='aer' with this noise model"
AER_THRESHOLD = 1e-10  # qiskit-aer's QuantumError::threshold_


class Noise:
    """The channels of one noise model (or none), looked up per instruction and qubits, cached; shared by threads."""

    def __init__(self, model: Any) -> None:
        self.model = model
        self._cache: dict[tuple, np.ndarray | None] = {}
        self._lock = threading.Lock()
        if model is not None:
            nonlocal_errors = getattr(model, "_nonlocal_quantum_errors", None)
            if nonlocal_errors:
                raise ConfigError(
                    f"noise_model={model} has non-local quantum errors (on {sorted(nonlocal_errors)}); accepted: "
                    f"errors on the instruction's own qubits (add_quantum_error, add_all_qubit_quantum_error), {ADVICE}"
                )
            if not hasattr(model, "_local_quantum_errors") or not hasattr(model, "_default_quantum_errors"):
                raise ConfigError(
                    f"noise_model={model}: this qiskit-aer version's NoiseModel does not keep its errors where "
                    f"hybridai reads them (_local_quantum_errors, _default_quantum_errors); accepted: a NoiseModel of "
                    f"qiskit-aer 0.13 to 0.18, {ADVICE}"
                )

    def error(self, key: str, qubits: tuple[int, ...]) -> Any:
        """Aer's quantum error after instruction ``key`` (label or name) on ``qubits`` (physical, in order), or None."""
        if self.model is None:
            return None
        local = self.model._local_quantum_errors.get(key, {})
        if qubits in local:
            return local[qubits]
        return self.model._default_quantum_errors.get(key)

    def ptm(self, key: str, qubits: tuple[int, ...]) -> np.ndarray | None:
        """The PTM of the error after ``key`` on ``qubits`` (big-endian over ``reversed(qubits)``), or None."""
        cache_key = (key, qubits)
        with self._lock:
            if cache_key in self._cache:
                return self._cache[cache_key]
        error = self.error(key, qubits)
        if error is None:
            made = None
        else:
            if key == "barrier":
                raise ConfigError(
                    f"noise_model has a quantum error on 'barrier' (qubits {list(qubits)}); accepted: errors on "
                    f"gates, applied after them, and on measure, applied before the read (Aer leaves errors on "
                    f"barriers out: remove it), {ADVICE}"
                )
            if error.num_qubits != len(qubits):
                raise ConfigError(
                    f"noise_model has a {error.num_qubits}-qubit error on {key!r}, which acts on {len(qubits)} qubits "
                    f"({list(qubits)}); accepted: errors on as many qubits as their instruction (Aer would apply it to "
                    "the first of them only)"
                )
            try:
                made = _shared_ptm(error)
            except ConfigError:
                raise
            except Exception as exc:
                raise ConfigError(
                    f"noise_model's error on {key!r} (qubits {list(qubits)}) is not a channel Qiskit can write as a "
                    f"superoperator ({type(exc).__name__}: {exc}); accepted: quantum errors of gates, Kraus maps, "
                    f"resets and Paulis, {ADVICE}"
                ) from None
        with self._lock:
            return self._cache.setdefault(cache_key, made)

    def readout(self, qubit: int) -> np.ndarray | None:
        """``[[P(0|0), P(1|0)], [P(0|1), P(1|1)]]`` (rows: the true bit) of ``qubit``'s readout error, or None."""
        if self.model is None:
            return None
        local = self.model._local_readout_errors
        for qubits in local:
            if len(qubits) != 1:
                raise ConfigError(
                    f"noise_model has a correlated readout error on qubits {list(qubits)}; accepted: single-qubit "
                    f"readout errors (add_readout_error(error, [q]), add_all_qubit_readout_error), {ADVICE}"
                )
        error = local.get((qubit,), self.model._default_readout_error)
        return None if error is None else np.asarray(error.probabilities, dtype=np.float64)


_SHARED_LOCK = threading.Lock()
_DEVICE_MODELS: dict[str, Any] = {}  # fake-device class -> NoiseModel.from_backend of it, never handed out


def device_noise_model(device: Any) -> Any:
    """``NoiseModel.from_backend(device)`` for a fake device, built once per device class and deep-copied for each
    backend (each owns its model, as on ``aer``): building it takes about 0.1 s, a copy a fifth of that."""
    import copy

    from qiskit_aer.noise import NoiseModel

    key = f"{type(device).__module__}.{type(device).__qualname__}"
    with _SHARED_LOCK:
        template = _DEVICE_MODELS.get(key)
    if template is None:
        template = NoiseModel.from_backend(device)
        with _SHARED_LOCK:
            template = _DEVICE_MODELS.setdefault(key, template)
    return copy.deepcopy(template)


_SHARED: dict[bytes, np.ndarray] = {}  # content of a QuantumError -> its PTM (read-only), for every Noise
SHARED_LIMIT = 20_000  # PTMs kept; beyond it, new ones are computed per Noise only


def _shared_ptm(error: Any) -> np.ndarray:
    """The PTM of ``error``, computed once per content: backends made one after another from the same device or
    rates (every ``density:fake_<device>`` builds its own ``NoiseModel``) hold equal errors, and a superoperator
    costs milliseconds per error. The content is the error's ``to_dict()`` without its random ``id``: its
    instructions with their parameters (Kraus matrices, Pauli labels) and probabilities, exactly."""
    from qiskit_aer.noise import QuantumError

    if not isinstance(error, QuantumError):  # Pauli(-Lindblad) errors: computed per Noise
        return ptm_of_superop(_superop(error))
    try:
        content = {k: v for k, v in error.to_dict().items() if k != "id"}
        key = pickle.dumps(content, protocol=pickle.HIGHEST_PROTOCOL)
    except Exception:  # an instruction without a plain description: computed per Noise
        return ptm_of_superop(_superop(error))
    with _SHARED_LOCK:
        found = _SHARED.get(key)
    if found is not None:
        return found
    made = ptm_of_superop(_superop(error))
    made.flags.writeable = False
    with _SHARED_LOCK:
        if len(_SHARED) < SHARED_LIMIT:
            made = _SHARED.setdefault(key, made)
    return made


def _superop(error: Any) -> np.ndarray:
    """Qiskit's column-stacked superoperator of ``error`` as Aer keeps it (terms above ``AER_THRESHOLD``)."""
    from qiskit.quantum_info import SuperOp
    from qiskit_aer.noise import PauliError, PauliLindbladError, QuantumError

    d = 2**error.num_qubits
    if isinstance(error, QuantumError | PauliError):
        terms = (
            zip(error.circuits, error.probabilities, strict=True)
            if isinstance(error, QuantumError)
            else zip(error.paulis, error.probabilities, strict=True)
        )
        total = np.zeros((d * d, d * d), dtype=np.complex128)
        for term, p in terms:
            if p > AER_THRESHOLD:
                total += p * np.asarray(SuperOp(term).data)
        return total
    if isinstance(error, PauliLindbladError):
        kept = np.abs(error.rates) > AER_THRESHOLD
        return np.asarray(SuperOp(PauliLindbladError(error.generators[kept], error.rates[kept])).data)
    raise ConfigError(
        f"noise_model holds a {type(error).__name__}; accepted: QuantumError, PauliError and PauliLindbladError of "
        f"qiskit_aer.noise, {ADVICE}"
    )
