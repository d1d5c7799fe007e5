"""Backend family ``pennylane``: tapes executed on any installed PennyLane device.

The target is the device name (``pennylane:default.qubit``, ``pennylane:lightning.qubit``,
``pennylane:default.mixed``, ...). Options are passed to ``qml.device``, except ``shots``, which
becomes the default shots of calls whose config and tapes set none, and ``seed``, the default of
``ExecutionConfig.seed``, and ``rng``, a ``numpy.random.Generator`` (what a PennyLane device object's own generator,
seeded by ``qml.device(..., seed=...)``, becomes: ``hybridai.quantum.framework_objects``): each unseeded device
the backend makes draws from a copy of it, so the first run gives the samples the user's device would give on its
first run in PennyLane, and later runs continue that stream (the user's generator is never advanced). Broadcast
tapes run natively under backprop; for other gradient methods PennyLane's own ``broadcast_expand`` splits them and
all parts go out in ONE ``qml.execute`` call.

One backend object serves many layers and threads: devices are cached per register and every call
into a device holds that device's lock (some devices, lightning for one, keep their state between
calls), and PennyLane itself runs under hybridai's PennyLane lock (``hybridai.quantum.circuits.recording``: its
transforms build operations in a process-wide queue). A seeded call runs on a fresh device seeded for
it, so the same seed gives the same samples on every call and in every thread.

``device=`` (what a PennyLane device object with transforms, ``qml.noise.insert(dev, ...)`` or
``qml.noise.add_noise(dev, ...)``, becomes: ``hybridai.quantum.pennylane.device_recipes``) runs every tape on a copy
of that
device, so that its own preprocessing, noise insertion included, applies; other ``qml.device`` options are then
refused (they are the device's own). Unseeded calls share one copy, whose random generator advances from call
to call as the user's device would; a seeded call runs on a fresh copy seeded for it. Such a device is never
called exact (its transforms change the circuit), and has noise when a transform adds it; zero-noise folding
folds the gates its noise meets (``native_operations``).

Circuits compute in the dtype of their parameters (float64 stays float64 under torch's float32 default)
without touching torch's process-wide default dtype. Registers whose state would not fit in half the RAM are
refused first.
"""

from __future__ import annotations

import copy
import functools
import importlib.util
import inspect
import threading
import time
from importlib import metadata
from typing import Any

import numpy as np
import torch

from hybridai.core.capabilities import QuantumCapabilities
from hybridai.core.contracts import Availability, QuantumExecutor
from hybridai.core.errors import (
    BackendNotFoundError,
    BackendUnavailableError,
    ConfigError,
    UnsupportedOperationError,
    check_seed,
    check_shots,
    invalid,
    suggest,
)
from hybridai.core.execution import Execution, ExecutionConfig, ExecutionStats
from hybridai.quantum.circuits.decomposition import pauli_measure_route
from hybridai.quantum.circuits.hermiticity import check_hermitian
from hybridai.quantum.circuits.recording import lock as recording_lock
from hybridai.quantum.circuits.recording import recording
from hybridai.quantum.execution.resources import check_state_memory
from hybridai.quantum.pennylane.device_recipes import DeviceRecipe, as_recipe
from hybridai.quantum.pennylane.working_dtype import working_dtype

GRADIENT_RULES = ("parameter-shift", "finite-diff")  # work on every device
MIXED_STATE_DEVICES = ("default.mixed", "default.qutrit.mixed")
NOT_QUBIT = {
    "default.qutrit": "qutrits",
    "default.qutrit.mixed": "qutrits",
    "default.gaussian": "continuous-variable modes",
}
# devices that hold a 2^n statevector per parameter set (their memory is checked before each run)
STATEVECTOR_DEVICES = ("default.qubit", "lightning.qubit", "lightning.gpu", "lightning.kokkos")
# Device entry points that run circuits; each is wrapped to hold the device's lock.
DEVICE_CALLS = (
    "execute",
    "compute_derivatives",
    "execute_and_compute_derivatives",
    "compute_jvp",
    "execute_and_compute_jvp",
    "compute_vjp",
    "execute_and_compute_vjp",
)


def _loads(name: str) -> bool:
    """Whether the PennyLane device ``name`` can be made here (its own dependencies installed)."""
    import pennylane as qml

    try:
        with recording():
            qml.device(name, wires=1)
    except Exception:
        return False
    return True


def _installed_devices() -> list[str]:
    import pennylane as qml

    return sorted(qml.plugin_devices)


def _device_options(name: str) -> list[str]:
    """The keyword options the device ``name``'s constructor takes (``wires`` left out: hybridai sets them)."""
    import pennylane as qml

    try:
        params = inspect.signature(qml.plugin_devices[name].load().__init__).parameters.values()
    except Exception:  # a device whose signature cannot be read: its options go unlisted
        return []
    kinds = (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)
    return [p.name for p in params if p.kind in kinds and p.name not in ("self", "wires")]


def _deferred_wires(tapes: list[Any], wires: tuple) -> tuple:
    """The wires PennyLane's deferred measurement (``qml.measure``/``qml.cond`` without shots) may add to a tape:
    one per mid-circuit measurement, labelled from one past the largest integer wire, as it labels them."""
    from pennylane.measurements import MidMeasureMP

    count = max((sum(isinstance(op, MidMeasureMP) for op in t.operations) for t in tapes), default=0)
    if not count:
        return ()
    start = max((w for w in (*wires, *(w for t in tapes for w in t.wires)) if isinstance(w, int)), default=-1) + 1
    return tuple(range(start, start + count))


def _postselection_route(tapes: list[Any], name: str) -> UnsupportedOperationError:
    """The refusal of ``qml.measure(..., postselect=...)`` on a device that cannot apply ``qml.Projector``."""
    from pennylane.measurements import MidMeasureMP

    op = next(op for t in tapes for op in t.operations if isinstance(op, MidMeasureMP) and op.postselect is not None)
    return UnsupportedOperationError(
        f"{name!r} cannot postselect a mid-circuit measurement (qml.measure(wires={op.wires[0]!r}, postselect="
        f"{op.postselect})): its device applies no qml.Projector; accepted: backend='pennylane:default.qubit', or "
        "qml.measure without postselect= on this backend"
    )


def _on_register(tape: Any, wires: tuple) -> Any:
    """``tape`` with its measurements of every wire (``qml.probs()``) measuring ``wires``, the register's."""
    import pennylane as qml

    if all(mp.wires or mp.obs is not None or mp.mv is not None for mp in tape.measurements):
        return tape
    mps = [mp if mp.wires or mp.obs is not None or mp.mv is not None else type(mp)(wires=qml.wires.Wires(wires))
           for mp in tape.measurements]  # fmt: skip
    return tape.copy(measurements=mps)


def _guarded(device: Any) -> Any:
    """``device`` with each of its ``DEVICE_CALLS`` holding one lock: some devices (lightning) keep
    their state between calls, and one device serves every thread. The PennyLane recording lock is taken
    first (devices build operations too, in backward passes as well), then the device's own."""
    lock = threading.RLock()

    def wrap(call: Any) -> Any:
        @functools.wraps(call)
        def guarded(*args: Any, **kwargs: Any) -> Any:
            with recording_lock(), lock:
                return call(*args, **kwargs)

        return guarded

    for name in DEVICE_CALLS:
        call = getattr(device, name, None)
        if callable(call):
            setattr(device, name, wrap(call))  # instance attributes: the class (and PennyLane's checks) unchanged
    return device


class PennyLaneBackend(QuantumExecutor):
    """Any installed PennyLane device; differentiable through PennyLane's torch interface."""

    target: str  # never None: default.qubit when none is given

    @classmethod
    def known_targets(cls) -> list[str]:
        """The installed PennyLane devices that simulate qubits, read from their entry points without importing
        PennyLane: ``default.qubit`` given as a family suggests ``pennylane:default.qubit``."""
        names = {ep.name for ep in metadata.entry_points(group="pennylane.plugins")}
        return sorted(names - set(NOT_QUBIT))

    def __init__(self, target: str | None = None, **options: Any) -> None:
        target = target or "default.qubit"
        names = _installed_devices()
        if target not in names:
            raise BackendNotFoundError(
                f"backend='pennylane:{target}': no PennyLane device named {target!r} is installed; "
                f"installed: {', '.join(names)}.{suggest(target, names)}"
            )
        if target in NOT_QUBIT:
            qubit = [n for n in names if n not in NOT_QUBIT and _loads(n)]
            raise ConfigError(
                f"backend='pennylane:{target}' simulates {NOT_QUBIT[target]}, not the qubit circuits hybridai's layers "
                f"and kernels run; accepted: a qubit device ({', '.join(qubit)})"
            )
        shots = options.pop("shots", None)
        self.shots = check_shots(shots)
        self.seed = check_seed(options.pop("seed", None))
        self.rng = self._generator(options.pop("rng", None))
        self.recipe = self._recipe(target, options.pop("device", None), options)
        if self.recipe is not None and self.rng is not None:
            raise invalid("rng", "a numpy Generator", "None with device= (the device draws from its own generator)")
        super().__init__(target, **options)
        kept = (("shots", self.shots), ("seed", self.seed), ("rng", self.rng), ("device", self.recipe))
        self.options.update({k: v for k, v in kept if v is not None})
        self._devices: dict[tuple, Any] = {}
        self._lock = threading.Lock()
        if self.recipe is None:
            try:
                self.device([0])  # refuses options the device does not take now, not at the first call
            except ImportError as exc:  # a device whose own dependency is missing (default.tensor: quimb)
                raise BackendUnavailableError(
                    f"backend='pennylane:{target}' needs a package that is not installed ({exc}); accepted: that "
                    "package installed, or another device (pennylane:default.qubit, pennylane:lightning.qubit)"
                ) from None

    @staticmethod
    def _generator(rng: Any) -> np.random.Generator | None:
        """``rng=`` as a copy of the generator given (None when none is)."""
        if rng is None:
            return None
        if not isinstance(rng, np.random.Generator):
            raise invalid("rng", type(rng).__name__, "a numpy.random.Generator (np.random.default_rng(seed)) or None")
        return copy.deepcopy(rng)

    @staticmethod
    def _recipe(target: str, device: Any, options: dict[str, Any]) -> DeviceRecipe | None:
        """``device=`` as a ``DeviceRecipe`` of a ``target`` device, with no other ``qml.device`` options."""
        if device is None:
            return None
        recipe = as_recipe(device)
        if recipe.name != target:
            raise invalid("device", recipe, f"a {target} device on backend 'pennylane:{target}' (or backend="
                          f"'pennylane:{recipe.name}')")  # fmt: skip
        if options:
            raise ConfigError(
                f"backend='pennylane:{target}' with device= does not take the qml.device option(s) {sorted(options)}; "
                "accepted: shots, seed; set the others on the device itself"
            )
        return recipe

    @classmethod
    def is_available(cls) -> Availability:
        if importlib.util.find_spec("pennylane") is None:
            return Availability(False, "pennylane is not installed: pip install pennylane")
        return Availability(True)

    def _make_device(self, wires: tuple, seed: int | None) -> Any:
        import pennylane as qml

        if self.recipe is not None:
            return _guarded(self.recipe.build(seed))
        options = {k: v for k, v in self.options.items() if k not in ("shots", "seed", "rng")}
        if seed is not None:
            options["seed"] = seed
        try:
            device = qml.device(self.target, wires=list(wires), **options)
            if seed is None and self.rng is not None:  # the user's device's stream, continued on this device
                if not isinstance(getattr(device, "_rng", None), np.random.Generator):
                    raise invalid("rng", "a numpy Generator", f"None on {self.name!r}: its devices draw their "
                                  "random numbers in their own way (qml.device(..., seed=...) seeds them)")  # fmt: skip
                device._rng = copy.deepcopy(self.rng)
            return _guarded(device)
        except TypeError as exc:  # an option the device does not take
            accepted = sorted({"shots", "seed", *_device_options(self.target)})
            unknown = sorted(set(options) - set(accepted)) or sorted(options)
            hints = "".join(suggest(u, accepted) for u in unknown)
            raise ConfigError(
                f"backend={self.name!r} does not accept the option(s) {unknown} ({exc}); accepted: "
                f"{', '.join(accepted)}; or device= (a {self.target} device object, with its transforms).{hints}"
            ) from None

    def device(self, wires: Any, seed: int | None = None) -> Any:
        """The PennyLane device for ``wires``: cached when unseeded, fresh (seeded with ``seed``) otherwise; with
        ``device=``, a copy of that device (its wires must include ``wires``)."""
        import pennylane as qml

        key = tuple(qml.wires.Wires(wires))
        if self.recipe is not None:
            missing = [w for w in key if self.recipe.wires is not None and w not in self.recipe.wires]
            if missing:
                raise invalid("wires", list(key), f"wires of backend= {self.recipe!r} (it lacks {missing})")
            key = ()
        if seed is not None:
            return self._make_device(key, seed)
        with self._lock:
            if key not in self._devices:
                self._devices[key] = self._make_device(key, None)
            return self._devices[key]

    @property
    def capabilities(self) -> QuantumCapabilities:
        from pennylane.devices import ExecutionConfig as DeviceConfig

        dev = self.device([0])
        native = tuple(m for m in ("backprop", "adjoint") if dev.supports_derivatives(DeviceConfig(gradient_method=m)))
        noise = self.target in MIXED_STATE_DEVICES or (self.recipe is not None and self.recipe.adds_noise)
        return QuantumCapabilities(
            differentiable=True,
            exact=self.shots is None and not noise and self.recipe is None,
            shots=True,
            noise=noise,
            diff_methods=("best", *native, *GRADIENT_RULES),
            devices=("cpu", "cuda") if "backprop" in native else ("cpu",),
        )

    def native_operations(self, tape: Any) -> list[Any] | None:
        """The operations zero-noise folding folds (``QuantumExecutor.native_operations``): with ``device=``, the gates
        its noise meets (``DeviceRecipe.native_operations``); None (hybridai's elementary gates) otherwise."""
        return None if self.recipe is None else self.recipe.native_operations(tape)

    def best_method(self, tapes: list[Any], config: ExecutionConfig) -> str:
        """The first of ``"backprop"`` and ``"adjoint"`` the device differentiates the first tape by (with its
        settled shots), else ``"parameter-shift"``."""
        from pennylane.devices import ExecutionConfig as DeviceConfig

        if not tapes:
            return "parameter-shift"
        extra = () if self.recipe is not None else _deferred_wires(tapes, config.wires)  # a recipe's wires are its own
        dev = self.device((*config.wires, *extra))
        for method in ("backprop", "adjoint"):
            if dev.supports_derivatives(DeviceConfig(gradient_method=method), tapes[0]):
                return method
        return "parameter-shift"

    def _check_method(self, dev: Any, diff_method: str, tape: Any) -> None:
        """Refuse ``backprop`` or ``adjoint`` where the device cannot differentiate ``tape`` by it."""
        from pennylane.devices import ExecutionConfig as DeviceConfig

        if diff_method in ("backprop", "adjoint") and not dev.supports_derivatives(
            DeviceConfig(gradient_method=diff_method), tape
        ):  # a mid-circuit measurement under adjoint, say: refused here rather than deep inside PennyLane
            why = " (mid-circuit measurements: qml.measure)" if _deferred_wires([tape], ()) else ""
            raise invalid(
                "diff_method", diff_method, f"'best', 'parameter-shift' or 'finite-diff' for this circuit{why} "
                f"on {self.name!r}, whose device cannot differentiate it by {diff_method}",
            )  # fmt: skip

    def execute(self, tapes: Any, config: ExecutionConfig) -> Execution:
        """Every tape in ONE ``qml.execute`` call (broadcast tapes split by PennyLane when needed)."""
        tapes, config = self.settle(tapes, config)
        if config.mitigation is not None:
            raise invalid("mitigation", config.mitigation, f"None here: {self.name!r} runs ZNE through "
                          "hybridai.quantum.execution.run.execute")  # fmt: skip
        if tapes and (self.target in STATEVECTOR_DEVICES or self.target == "default.mixed"):
            copies = max(t.batch_size or 1 for t in tapes)  # broadcast tapes hold one state per parameter set
            wires = len(config.wires) + len(_deferred_wires(tapes, config.wires))
            wires = wires if self.recipe is None or self.recipe.wires is None else len(self.recipe.wires)
            check_state_memory(self.name, wires, density=self.target == "default.mixed", copies=copies)
        started = time.perf_counter()
        results = self._run(tapes, config)
        circuits = sum(t.batch_size or 1 for t in tapes)
        total = sum((t.batch_size or 1) * (t.shots.total_shots or 0) for t in tapes if t.shots)
        return Execution(results, ExecutionStats(circuits, 1, total, time.perf_counter() - started))

    def _run(self, tapes: list[Any], config: ExecutionConfig) -> list[Any]:
        if not tapes:
            return []
        with recording():  # PennyLane's transforms and devices build operations: never while another thread records
            return self._run_recorded(tapes, config)

    def _run_recorded(self, tapes: list[Any], config: ExecutionConfig) -> list[Any]:
        import pennylane as qml

        per_row = [_rows_of_channels(t) for t in tapes]
        if any(s is not None for s in per_row):  # PennyLane's channels do not broadcast: one tape per row
            parts = [[t] if s is None else s for t, s in zip(tapes, per_row, strict=True)]
            answers = iter(self._run_recorded([t for p in parts for t in p], config))
            rows = [[next(answers) for _ in p] for p in parts]
            return [r[0] if s is None else _stacked_rows(r) for r, s in zip(rows, per_row, strict=True)]
        if self.target in STATEVECTOR_DEVICES and any(isinstance(op, qml.operation.Channel) for t in tapes
                                                      for op in t.operations):  # fmt: skip
            raise UnsupportedOperationError(
                f"{self.name!r} simulates pure states and cannot apply the noise channels of this circuit; accepted: "
                "backend='density' (channels with constant, trainable or per-sample rates, differentiable) or "
                "'pennylane:default.mixed'"
            )
        pauli = next((op for t in tapes for op in t.operations if op.name == "PauliMeasure"), None)
        if pauli is not None:  # PennyLane's own DeviceError otherwise
            raise UnsupportedOperationError(f"{self.name!r} cannot run {pauli_measure_route(pauli)}")
        for mp in (mp for t in tapes for mp in t.measurements):
            check_hermitian(mp.obs, self.name)  # PennyLane would return a complex value; every backend refuses it
        extra = _deferred_wires(tapes, config.wires)  # mid-circuit measurements deferred onto wires of their own
        if extra:  # the device is wider than the register: measurements of "every wire" name the register's
            tapes = [_on_register(t, config.wires) for t in tapes]
            lacking = [w for w in extra if self.recipe is not None and self.recipe.wires is not None
                       and w not in self.recipe.wires]  # fmt: skip
            if lacking:
                raise UnsupportedOperationError(
                    f"{self.name!r} defers each mid-circuit measurement (qml.measure) onto a wire of its own, wires "
                    f"{list(extra)} here, which backend= {self.recipe!r} lacks; accepted: that device made with "
                    f"wires={len(config.wires) + len(extra)} (qml.device(..., wires=n_qubits + one per qml.measure))"
                )
        dev = self.device((*config.wires, *extra), config.seed)
        method = config.diff_method
        self._check_method(dev, method, tapes[0])
        dtype = max(
            (p.dtype for t in tapes for p in t.get_parameters(trainable_only=False) if torch.is_tensor(p)),
            key=lambda d: torch.finfo(d).bits if d.is_floating_point else 0,
            default=torch.get_default_dtype(),
        )
        try:
            with working_dtype(dtype if dtype.is_floating_point else torch.get_default_dtype()):
                if method == "backprop":  # broadcast natively
                    return list(qml.execute(tapes, dev, diff_method=method))
                split = [qml.transforms.broadcast_expand(t) for t in tapes]
                flat = [t for parts, _ in split for t in parts]
                results = list(qml.execute(flat, dev, diff_method=method))
        except ValueError as exc:  # PennyLane's deferred measurement postselects with qml.Projector
            if "Postselection is not allowed" in str(exc):
                raise _postselection_route(tapes, self.name) from None
            raise
        out, start = [], 0
        for parts, post in split:
            out.append(post(results[start : start + len(parts)]))
            start += len(parts)
        return out


def _rows_of_channels(tape: Any) -> list[Any] | None:
    """The tape split into one tape per row when a noise channel's rate differs per row (PennyLane's channels take
    one rate: ``default.mixed`` cannot broadcast them), else None."""
    import pennylane as qml
    from pennylane.ops.functions import bind_new_parameters

    def dims(op: Any) -> tuple[int, ...]:
        """The unbatched number of dimensions of each parameter (a channel's ``ndim_params`` follows its data)."""
        if isinstance(op, qml.operation.Channel):
            return (2 if op.name == "QubitChannel" else 0,) * len(op.data)
        return op.ndim_params if op.batch_size is not None else tuple(qml.math.ndim(p) for p in op.data)

    rows = None
    for op in tape.operations:
        if isinstance(op, qml.operation.Channel):
            rows = next((qml.math.shape(p)[0] for p, nd in zip(op.data, dims(op), strict=True)
                         if qml.math.ndim(p) > nd), rows)  # fmt: skip
    if rows is None:
        return None

    def row(op: Any, b: int) -> Any:
        batched = [qml.math.ndim(p) > nd for p, nd in zip(op.data, dims(op), strict=True)]
        if not any(batched):
            return op
        return bind_new_parameters(op, [p[b] if s else p for p, s in zip(op.data, batched, strict=True)])

    return [qml.tape.QuantumScript([row(op, b) for op in tape.operations], tape.measurements, shots=tape.shots)
            for b in range(rows)]  # fmt: skip


def _stacked_rows(results: list[Any]) -> Any:
    """One result per row (each a measurement or a tuple of them) stacked into the broadcast layout."""
    if isinstance(results[0], tuple):
        return tuple(torch.stack([torch.as_tensor(r[i]) for r in results]) for i in range(len(results[0])))
    return torch.stack([torch.as_tensor(r) for r in results])
