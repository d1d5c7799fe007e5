"""PennyLane and Qiskit objects a user already has, taken where hybridai takes a circuit or a backend.

- A PennyLane ``QNode`` (what ``qml.qnn.TorchLayer`` takes) gives its quantum function (``qnode.func``),
  its device (the backend unless ``backend=`` is given) and its ``diff_method`` (used when the layer's is
  ``"best"``; one the backend does not take is refused by name, never replaced). Its other options change what a
  QNode computes and hybridai's backends cannot take them: each is refused by name when not PennyLane's default
  (``gradient_kwargs``, ``grad_on_execution``, ``max_diff``, ``device_vjp``, ``postselect_mode``, ``mcm_method``,
  ``executor_backend``, ``static_argnums``, an interface other than torch); ``cache``/``cachesize`` only save
  repeated device calls and are taken as they are.
- A PennyLane device object (``qml.device("default.qubit", wires=2)``, ``lightning.qubit``,
  ``default.mixed``, ...) becomes ``"pennylane:<name>"``, with its shots when set (and ``default.mixed``'s
  ``readout_prob``) and its random generator (``rng=`` a copy of the device's ``_rng``, seeded by
  ``qml.device(..., seed=...)``: the first run draws the samples the device's first run would draw in PennyLane,
  and each later run continues the stream); its wires must include ``0 .. n_qubits-1``. A device that carries transforms
  (``qml.noise.insert(dev, ...)``, ``qml.noise.add_noise(dev, noise_model)``, any device transform) or is a
  subclass of its plugin's class becomes ``"pennylane:<name>"`` with ``device=`` a copy of it
  (``hybridai.quantum.pennylane.device_recipes``): the circuits run on that device, its transforms included.
- A Qiskit ``AerSimulator()`` becomes ``"aer"`` (with its ``noise_model`` when set);
  ``AerSimulator.from_backend(FakeManilaV2())`` and a fake backend instance (``FakeManilaV2()``) become
  ``"aer:fake_manila"`` (the device's noise model, qubit count and layout). Aer's own run options
  (shots, method) are not taken: shots belong to the layer (``shots=``).

Neither PennyLane nor Qiskit is imported to recognise an object that comes from elsewhere.
"""

from __future__ import annotations

import copy
import re
import sys
from collections.abc import Callable
from typing import Any, NamedTuple, NoReturn

import numpy as np

from hybridai.core.contracts import Backend
from hybridai.core.errors import ConfigError, invalid
from hybridai.quantum.pennylane.device_recipes import DeviceRecipe, is_kept

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


# QNode execution options that change results or gradients, with PennyLane's defaults (``qml.QNode.__init__``)
QNODE_DEFAULTS: dict[str, Any] = {
    "grad_on_execution": "best",
    "max_diff": 1,
    "device_vjp": False,
    "postselect_mode": None,
    "mcm_method": None,
    "executor_backend": None,
}
TORCH_INTERFACES = ("auto", "torch", "pytorch")


def unpack_qnode(qfunc: Any, role: str) -> QNodeParts | None:
    """The parts of a QNode, or None when ``qfunc`` is not one; ``role`` names the argument in errors. A QNode
    option that hybridai cannot honour (module docstring) is refused by name when it is not the default."""
    if not _is_qnode(qfunc):
        return None
    function = getattr(qfunc, "func", None)
    if not callable(function):
        raise invalid(role, qfunc, "a QNode built from a quantum function (qml.QNode(func, device))")
    method = getattr(qfunc, "diff_method", None)
    if method is not None and not isinstance(method, str):
        _refuse_option(qfunc, role, "diff_method", method, "a diff_method given by name ('best', 'parameter-shift', "
                       "...), or diff_method= of the layer")  # fmt: skip
    _check_options(qfunc, role)
    shots = getattr(qfunc, "shots", None)
    return QNodeParts(function, qfunc.device, shots, method)


def _check_options(qnode: Any, role: str) -> None:
    """Refuse by name each option of ``qnode`` that changes what it computes and is not PennyLane's default."""
    given = dict(getattr(qnode, "execute_kwargs", None) or {})
    for name, default in QNODE_DEFAULTS.items():
        if name in given and given[name] != default:
            _refuse_option(qnode, role, name, given[name], f"the default {name}={default!r}")
    if getattr(qnode, "gradient_kwargs", None):
        _refuse_option(qnode, role, "gradient_kwargs", qnode.gradient_kwargs, "none (hybridai's gradient methods take "
                       "no gradient_kwargs: choose one with diff_method=)")  # fmt: skip
    interface = getattr(qnode, "interface", "auto")
    if str(getattr(interface, "value", interface)) not in TORCH_INTERFACES:
        _refuse_option(qnode, role, "interface", interface, f"one of {TORCH_INTERFACES} (a layer computes in torch)")
    static = getattr(qnode, "static_argnums", ())
    if static not in ((), [], None):
        _refuse_option(qnode, role, "static_argnums", static, "the default () (static arguments are for jax.jit)")


def _refuse_option(qnode: Any, role: str, option: str, value: Any, accepted: str) -> NoReturn:
    name = getattr(getattr(qnode, "func", None), "__qualname__", "its function")
    raise ConfigError(
        f"{role}= the QNode of {name!r} has {option}={value!r}, which hybridai cannot honour; accepted: {accepted}, "
        f"or pass the QNode's function ({role}={role}.func) with backend= and diff_method= of the layer"
    )


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
    else:
        if name == "default.mixed" and getattr(device, "readout_err", None) is not None:
            options["readout_prob"] = device.readout_err
        rng = getattr(device, "_rng", None)  # what the device draws shots from (seeded by qml.device(seed=...))
        if isinstance(rng, np.random.Generator):
            options["rng"] = copy.deepcopy(rng)  # its state now: the user's device is never advanced by hybridai
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
        from hybridai.quantum.qiskit_frontend.fake_devices import fake_name

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


def adopt_qnode_diff_method(
    diff_method: str, qnode_method: str | None, accepted: tuple[str, ...], role: str = "qfunc", backend: str = ""
) -> str:
    """The layer's ``diff_method``: the QNode's when the layer's is ``"best"``; a ConfigError naming ``role`` when
    the backend does not take the QNode's (never replaced by another method)."""
    if diff_method != "best" or not qnode_method or qnode_method == "best":
        return diff_method
    if qnode_method not in accepted:
        raise ConfigError(
            f"{role}= a QNode with diff_method={qnode_method!r}, which backend {backend!r} does not take; accepted: "
            f"a QNode with one of {accepted}, or diff_method= of the layer set to one of them"
        )
    return qnode_method
