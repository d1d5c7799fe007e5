"""PennyLane and Qiskit objects a user already has, taken where hybridai takes a circuit or a backend.

- A PennyLane ``QNode`` (what ``qml.qnn.TorchLayer`` takes) gives its quantum function (``qnode.func``),
  its device (the backend unless ``backend=`` is given) and its ``diff_method``.
- A PennyLane device object (``qml.device("default.qubit", wires=2)``, ``lightning.qubit``,
  ``default.mixed``, ...) becomes ``"pennylane:<name>"``, with its shots when set (and ``default.mixed``'s
  ``readout_prob``); its wires must include ``0 .. n_qubits-1``. A device that carries transforms
  (``qml.noise.insert(dev, ...)``, ``qml.noise.add_noise(dev, noise_model)``, any device transform) or is a
  subclass of its plugin's class becomes ``"pennylane:<name>"`` with ``device=`` a copy of it
  (``hybridai.quantum.device_recipes``): the circuits run on that device, its transforms included.
- A Qiskit ``AerSimulator()`` becomes ``"aer"`` (with its ``noise_model`` when set);
  ``AerSimulator.from_backend(FakeManilaV2())`` and a fake backend instance (``FakeManilaV2()``) become
  ``"aer:fake_manila"`` (the device's noise model, qubit count and layout). Aer's own run options
  (shots, method) are not taken: shots belong to the layer (``shots=``).

Neither PennyLane nor Qiskit is imported to recognise an object that comes from elsewhere.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Callable
from typing import Any, NamedTuple

from hybridai.core.contracts import Backend
from hybridai.core.errors import ConfigError, invalid
from hybridai.quantum.device_recipes import DeviceRecipe, is_kept

ACCEPTED = (
    "a backend name such as 'statevector', 'pennylane:default.qubit', 'aer', 'aer:fake_manila' or "
    "'ibm:fake_manila'; a hybridai backend object (hybridai.backends.get(...)); a PennyLane device "
    "(qml.device('default.qubit', wires=n)); a Qiskit AerSimulator() (noise_model= kept) or a fake IBM "
    "backend (FakeManilaV2())"
)
FROM_FAKE = re.compile(r"aer_simulator_from\((fake_\w+)\)")


def _is_qnode(obj: Any) -> bool:
    if "pennylane" not in sys.modules:
        return False
    import pennylane as qml

    return isinstance(obj, qml.QNode)


class QNodeParts(NamedTuple):
    """What a QNode brings: its quantum function, its device, its shots and its gradient method."""

    function: Callable[..., Any]
    device: Any
    shots: Any  # a PennyLane Shots (the QNode's own, from qml.set_shots, or its device's)
    diff_method: str | None


def unpack_qnode(qfunc: Any, role: str) -> QNodeParts | None:
    """The parts of a QNode, or None when ``qfunc`` is not one; ``role`` names the argument in errors."""
    if not _is_qnode(qfunc):
        return None
    function = getattr(qfunc, "func", None)
    if not callable(function):
        raise invalid(role, qfunc, "a QNode built from a quantum function (qml.QNode(func, device))")
    method = getattr(qfunc, "diff_method", None)
    shots = getattr(qfunc, "shots", None)
    return QNodeParts(function, qfunc.device, shots, method if isinstance(method, str) else None)


def backend_spec(
    backend: Any, n_qubits: int | None, shots: Any = None, argument: str = "backend"
) -> tuple[str | Backend, dict[str, Any]]:
    """``backend=`` as what the registry takes: ``(name or backend object, options it implies)``.

    Names and hybridai backend objects pass unchanged; PennyLane devices and Qiskit backends are mapped
    (see the module docstring); anything else is a ConfigError naming ``backend=`` and what is accepted.
    ``shots``: a QNode's shots, used instead of its device's. ``argument``: the name errors give the value
    (``"quantum"`` for ``hybridai.place(model, quantum=...)``)."""
    if isinstance(backend, str | Backend):
        return backend, {}
    if _is_pennylane_device(backend):
        return _from_pennylane(backend, backend.shots if shots is None else shots, n_qubits, argument)
    qiskit = _from_qiskit(backend)
    if qiskit is not None:
        return qiskit
    shown = type(backend).__qualname__ if not isinstance(backend, int | float | bool | type(None)) else backend
    raise invalid(argument, shown, ACCEPTED)


def _is_pennylane_device(obj: Any) -> bool:
    if "pennylane" not in sys.modules:
        return False
    import pennylane as qml

    legacy = getattr(qml.devices, "LegacyDevice", None)
    kinds = (qml.devices.Device,) + ((legacy,) if isinstance(legacy, type) else ())
    return isinstance(obj, kinds)


def _from_pennylane(device: Any, shots: Any, n_qubits: int | None, argument: str) -> tuple[str, dict[str, Any]]:
    """``pennylane:<name>`` with the device's shots; its wires must include ``0 .. n_qubits-1``."""
    name = getattr(device, "short_name", None) or device.name
    wires = getattr(device, "wires", None)
    if wires is not None and n_qubits is not None:
        missing = [w for w in range(n_qubits) if w not in wires]
        if missing:
            raise ConfigError(
                f"{argument}= a {name} device with wires {list(wires)} lacks wires {missing}; accepted: a device whose "
                f"wires include 0..{n_qubits - 1} (n_qubits={n_qubits}), e.g. qml.device({name!r}, wires={n_qubits})"
            )
    options: dict[str, Any] = {}
    if shots is not None and shots.total_shots:
        if shots.has_partitioned_shots:
            raise invalid(argument, f"a {name} device with shots={shots}", "a device with one number of shots")
        options["shots"] = int(shots.total_shots)
    if is_kept(device):  # its transforms (noise insertion, ...) or its own class: kept, never rebuilt by name
        options["device"] = DeviceRecipe(device)
    elif name == "default.mixed" and getattr(device, "readout_err", None) is not None:
        options["readout_prob"] = device.readout_err
    return f"pennylane:{name}", options


def _from_qiskit(backend: Any) -> tuple[str, dict[str, Any]] | None:
    """``aer`` / ``aer:fake_<name>`` for an AerSimulator or a fake IBM backend; None for other objects."""
    module = type(backend).__module__
    if module.startswith("qiskit_aer"):
        from qiskit_aer import AerSimulator

        if isinstance(backend, AerSimulator):
            fake = FROM_FAKE.fullmatch(str(backend.name))
            if fake:
                return f"aer:{fake.group(1)}", {}
            noise = getattr(backend.options, "noise_model", None)
            return "aer", ({} if noise is None else {"noise_model": noise})
    if "qiskit_ibm_runtime" in sys.modules:  # a fake IBM device, of the provider's classes or a subclass
        from hybridai.quantum.qiskit.fake_devices import fake_name

        name = fake_name(backend)
        if name is not None:
            return f"aer:{name}", {}
    return None


def adopt_circuit(
    qfunc: Any, role: str, backend: Any, n_qubits: int | None, options: dict[str, Any]
) -> tuple[Any, Any, dict[str, Any], str | None]:
    """``(function, backend, options, the QNode's diff_method)`` for a layer given ``qfunc`` and ``backend=``:
    a QNode gives its function and, when ``backend`` is None, its device (with its shots) as the backend."""
    parts = unpack_qnode(qfunc, role)
    if parts is None:
        return qfunc, backend, options, None
    if backend is None:
        backend, implied = backend_spec(parts.device, n_qubits, parts.shots)
        options = {**implied, **options}
    return parts.function, backend, options, parts.diff_method


def adopt_qnode_diff_method(diff_method: str, qnode_method: str | None, accepted: tuple[str, ...]) -> str:
    """The layer's ``diff_method``: the QNode's when the layer's is ``"best"`` and the backend accepts it."""
    if diff_method == "best" and qnode_method and qnode_method != "best" and qnode_method in accepted:
        return qnode_method
    return diff_method
