"""What quantum layers and kernels share: recording their circuits, checking their inputs and their
backend, running their tapes and keeping what the run cost (the backend keeps nothing per call)."""

from __future__ import annotations

import contextlib
import dataclasses
import inspect
from collections.abc import Callable, Mapping
from typing import Any, cast

import torch

from hybridai.core.contracts import QuantumExecutor
from hybridai.core.errors import SHOTS_MAX, ConfigError, HybridAIError, ShapeError, invalid, positive_int
from hybridai.core.execution import Execution, ExecutionConfig
from hybridai.core.module import HybridModule
from hybridai.quantum.circuits.batch_axis import BatchAxisWatch
from hybridai.quantum.circuits.rebinding import Rebinding
from hybridai.quantum.circuits.recording import record
from hybridai.quantum.circuits.weights import WeightInit, check_weight_shapes, register_weights
from hybridai.quantum.execution.run import check_mitigation, execute
from hybridai.quantum.framework_objects import adopt_circuit, adopt_qnode_diff_method, backend_spec
from hybridai.quantum.pennylane.qnode_transforms import qnode_transforms

# What a circuit function raises when the inputs or weights do not fit it (a feature index out of
# range, a template's weight shape, broadcast sizes, wires): reported as a ShapeError with a hint.
# Anything else (ZeroDivisionError, KeyError, ...) is the function's own error and is re-raised as it is.
SHAPE_ERRORS: tuple[type[BaseException], ...] = (IndexError, ValueError, RuntimeError)


def _shape_errors() -> tuple[type[BaseException], ...]:
    import pennylane as qml

    return (*SHAPE_ERRORS, qml.wires.WireError)


def check_finite(argument: str, value: torch.Tensor) -> torch.Tensor:
    """``value`` if every entry is finite, else a ConfigError naming ``argument`` and the first bad entry."""
    if value.is_floating_point() or value.is_complex():
        finite = torch.isfinite(value.detach())
        if not finite.all():
            index = tuple(int(i) for i in (~finite).nonzero()[0])
            where = f" at {list(index)}" if index else ""
            raise invalid(argument, f"a tensor with {value.detach()[index].item()}{where}", "finite values only")
    return value


def _first_argument(function: Callable[..., Any]) -> str:
    """The name of ``function``'s first parameter (``inputs``, ``x``), for messages; ``inputs`` if unknown."""
    try:
        first = next(iter(inspect.signature(function).parameters.values()), None)
    except (TypeError, ValueError):
        first = None
    return first.name if first is not None and first.kind != inspect.Parameter.VAR_POSITIONAL else "inputs"


class QuantumModule(HybridModule):
    """A HybridModule of the quantum domain; subclasses call ``construct`` in their constructor (it sets
    ``n_qubits``, ``weight_shapes``, ``shots``, ``diff_method`` and ``mitigation``) and ``run``."""

    domain = "quantum"
    default_backend = "statevector"
    last_execution: Execution | None = None
    # set by ``construct``
    qnode_transforms: Any = None  # a QNode's own transforms (hybridai.quantum.pennylane.qnode_transforms)
    n_qubits: int
    weight_shapes: dict[str, tuple[int, ...]]
    shots: int | None
    diff_method: str
    mitigation: Any  # a ZNE, or None
    _rebinding: Rebinding  # what is reused between recordings of the circuit function (``rebind=``)

    def construct(
        self,
        function: Any,
        role: str,
        accepted: str,
        own: Callable[[Callable[..., Any]], bool],
        *,
        n_qubits: Any,
        weight_shapes: Mapping[str, int | tuple[int, ...]],
        init: WeightInit | Mapping[str, WeightInit] | None,
        backend: Any,
        backend_options: dict[str, Any],
        shots: Any,
        diff_method: str,
        mitigation: Any,
        rebind: bool | str,
    ) -> None:
        """The construction quantum layers and kernels share, in this order: ``n_qubits`` checked; the ``rebind``
        mode; a QNode's own transforms, and its function, device (the backend when ``backend`` is None) and
        diff_method taken (``function`` given as ``role``); ``function`` refused unless callable (``accepted`` says
        what ``role`` takes); ``shots`` checked; ``own(function)``, which keeps what the subclass holds of its own
        (the function included) and says whether the function's first argument receives inputs; ``weight_shapes``
        checked against the function and the weights registered (``init``); the backend set; ``diff_method`` (the
        QNode's for ``"best"``) and ``mitigation`` checked against it."""
        self.n_qubits = positive_int("n_qubits", n_qubits)
        self._rebinding = Rebinding(rebind)
        self.qnode_transforms = qnode_transforms(function, role, backend)  # applied in run, or rewriting the tapes
        function, backend, backend_options, qnode_method = adopt_circuit(
            function, role, backend, self.n_qubits, backend_options
        )
        if not callable(function):
            raise invalid(role, function, accepted)
        self.shots = None if shots is None else positive_int("shots", shots, SHOTS_MAX)
        inputs = own(function)
        self.weight_shapes = check_weight_shapes(self, function, weight_shapes, role, inputs=inputs)
        register_weights(self, self.weight_shapes, init)
        self.set_backend(self.default_backend if backend is None else backend, **backend_options)  # max_qubits checked
        methods = self.resolved_backend.capabilities.diff_methods
        diff_method = adopt_qnode_diff_method(diff_method, qnode_method, methods, role, self.backend)
        if diff_method not in methods:
            raise invalid("diff_method", diff_method, f"one of {methods} on backend {self.backend!r}")
        self.diff_method = diff_method
        self.mitigation = check_mitigation(self.resolved_backend, mitigation)

    @property
    def resolved_backend(self) -> QuantumExecutor:
        """The configured quantum executor (created on first use)."""
        # the quantum domain resolves to QuantumExecutors only: registry.get checks the contract
        return cast(QuantumExecutor, super().resolved_backend)

    @property
    def wires(self) -> list[int]:
        """The wires ``0 .. n_qubits-1``."""
        return list(range(self.n_qubits))

    def set_backend(self, backend: Any, **options: Any) -> QuantumModule:
        """Re-target this module: a registry name, a backend object, a PennyLane device or a Qiskit backend
        (``hybridai.quantum.framework_objects``); ``options`` override those a device or Qiskit backend implies."""
        spec, implied = backend_spec(backend, getattr(self, "n_qubits", None))
        super().set_backend(spec, **{**implied, **options})
        return self

    def _runs_on(self) -> tuple[Any, list[str] | None]:
        """The user's device this module runs on (None: the backend's own) and its QNode's transforms' names."""
        transforms = self.qnode_transforms
        return self._backend_options.get("device"), None if transforms is None else list(transforms.names)

    def backend_repr(self) -> str:
        """``backend='pennylane:default.mixed'``, with the user's device when it runs on one (its transforms shown)
        and the QNode's own transforms, for reprs."""
        device, transforms = self._runs_on()
        shown = f"backend={self.backend!r}" + ("" if device is None else f", device={device!r}")
        return shown + ("" if transforms is None else f", qnode_transforms={transforms}")

    def backend_description(self) -> str:
        """The backend name, with the user's device when it runs on one (its transforms shown) and the QNode's own
        transforms: ``summary()`` never shows a noisy device as its plain noiseless name."""
        device, transforms = self._runs_on()
        text = self.backend if device is None else f"{self.backend} {device!r}"
        return text if transforms is None else f"{text}, QNode transforms {transforms}"

    def check_backend(self, backend: Any) -> None:
        """Refuse a backend with fewer qubits (``capabilities.max_qubits``) than this module's ``n_qubits``."""
        n_qubits = getattr(self, "n_qubits", None)
        limit = getattr(backend.capabilities, "max_qubits", None)
        if n_qubits is not None and limit is not None and n_qubits > limit:
            raise invalid("n_qubits", n_qubits, f"at most {limit} on backend {backend.name!r} (its qubit count)")

    def weight_tensors(self, dtype: torch.dtype | None = None) -> dict[str, torch.Tensor]:
        """The trainable weights by name (``weight_shapes``), cast to ``dtype`` (autograd flows through the
        cast); a ConfigError names a weight holding NaN or infinity."""
        weights = {}
        for name in self.weight_shapes:
            weight = check_finite(name, getattr(self, name))
            weights[name] = weight if dtype is None else weight.to(dtype)
        return weights

    def record(
        self,
        function: Callable[..., Any],
        role: str,
        args: tuple,
        shown: str,
        hint: str,
        weights: dict[str, torch.Tensor] | None = None,
    ) -> Any:
        """The tape ``function(*args, **weights)`` records (under hybridai's PennyLane lock).

        ``role`` names the function in errors, ``shown`` describes its inputs and ``hint`` what to check
        when it fails on them; errors of the function's own making are re-raised as they are. ``weights``:
        the tensors to pass (default ``weight_tensors`` in the dtype of the first argument)."""
        if weights is None:
            weights = self.weight_tensors(args[0].dtype if args else None)
        batch = args[0] if args and torch.is_tensor(args[0]) and args[0].ndim == 2 else None
        # the batch axis is watched on the first recording of each input shape (a habit of the code, not of the
        # values): later recordings run without the watch's cost
        checked = self.__dict__.setdefault("_batch_axis_checked", set())
        key = None if batch is None else (role, tuple(batch.shape), batch.dtype)
        watch = (
            contextlib.nullcontext()
            if batch is None or key in checked
            else BatchAxisWatch(batch, role, _first_argument(function))
        )
        try:
            with watch:
                tape = record(function, *args, shots=self.shots, **weights)
            if key is not None:
                checked.add(key)
            return tape
        except HybridAIError:
            raise
        except _shape_errors() as exc:
            raise ShapeError(
                f"{role} could not build a circuit from {shown} and weight_shapes={self.weight_shapes}: "
                f"{type(exc).__name__}: {exc}; {hint}"
            ) from exc

    def check_tape(self, tape: Any, role: str) -> Any:
        """``tape`` if it acts on this module's wires only."""
        bad = [w for w in tape.wires if w not in self.wires]
        if bad:
            raise ConfigError(
                f"{role} uses wires {bad}; accepted: wires 0..{self.n_qubits - 1} (n_qubits={self.n_qubits})"
            )
        return tape

    def run(self, tapes: list[Any]) -> list[Any]:
        """Results of ``tapes`` on this module's backend (in ONE backend call, mitigation included)."""
        config = ExecutionConfig(
            tuple(self.wires), self.shots, diff_method=self.diff_method, mitigation=self.mitigation
        )
        done = execute(self.resolved_backend, tapes, config)
        self.last_execution = dataclasses.replace(done, results=[])  # statistics only: no autograd graph kept
        return done.results

    @property
    def last_mitigation(self) -> Any:
        """The ``ZNEResult`` of the last run (noisy values per scale factor; a list for several tapes), if any."""
        return None if self.last_execution is None else self.last_execution.mitigation

    @property
    def execution_stats(self) -> dict[str, Any] | None:
        """Circuits, primitive calls, shots and seconds of the last run."""
        return None if self.last_execution is None else dataclasses.asdict(self.last_execution.stats)
