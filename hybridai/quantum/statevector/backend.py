"""Backend family ``statevector``: hybridai's own batched torch executor.

Targets: none (compute on the device of the inputs), ``cpu``, ``cuda``, ``cuda:N``.
Options: ``dtype`` (``"complex128"``, default, or ``"complex64"``), ``seed`` (for shots),
``max_memory`` (bytes; default half the free GPU memory or half the RAM),
``fuse_max_qubits`` (largest register whose constant blocks become one unitary, default 10).
Gradients (``diff_method``): ``"backprop"`` (autograd through every step: exact, fastest, keeps one
state per step), ``"adjoint"`` (``adjoint.py``: one forward pass over the batch and one backward sweep of
inverse gates, keeping about five states), ``"parameter-shift"`` (``shifts.py``: every shifted circuit of
the batch in ONE run, exact or sampled), and ``"best"`` (settled before the run: ``best_method``):
parameter-shift with shots; without shots backprop, or adjoint when backprop's stored states would exceed
``max_memory``.
With ``shots``, values are estimated from samples drawn from the batched states (``torch.multinomial``
per sample, ``torch.Generator`` seeded by ``seed``); their gradients use the parameter-shift rule on
sampled values (``"best"`` or ``"parameter-shift"``).
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from typing import Any

import numpy as np
import torch

from hybridai.core.capabilities import QuantumCapabilities
from hybridai.core.contracts import QuantumExecutor
from hybridai.core.devices import resolve_torch_device
from hybridai.core.errors import (
    ConfigError,
    UnsupportedOperationError,
    check_seed,
    check_shots,
    invalid,
    non_negative_int,
    optional_int,
)
from hybridai.core.execution import Execution, ExecutionConfig, ExecutionStats
from hybridai.quantum.circuits.tape_structure import structure
from hybridai.quantum.execution.resources import memory_limit
from hybridai.quantum.execution.shift_rule import parameter_shift
from hybridai.quantum.statevector.adjoint import ADJOINT_STATES, run_adjoint
from hybridai.quantum.statevector.gates import SUGGESTION, Converter
from hybridai.quantum.statevector.measurement import Measurement, measure_exact, measure_sampled
from hybridai.quantum.statevector.memory import MIN_STATES, check_memory, check_size
from hybridai.quantum.statevector.plan import Plan, initial_steps
from hybridai.quantum.statevector.shifts import flatten_results, shift_form, split_columns, stacked_operations

DTYPES = {"complex128": torch.complex128, "complex64": torch.complex64}
PLAN_CACHE_SIZE = 256
DIFF_METHODS = ("best", "backprop", "adjoint", "parameter-shift")


def _measurement_key(mp: Any) -> tuple:
    obs = mp.obs
    if obs is None:
        obs_key = None
    elif obs.pauli_rep is not None:
        obs_key = tuple(tuple(pw.items()) for pw in obs.pauli_rep)
    else:
        obs_key = (obs.name, tuple(obs.wires))
    return (type(mp).__name__, tuple(mp.wires), obs_key)


class StatevectorBackend(QuantumExecutor):
    """Exact (or sampled) statevector simulation in torch, batched, planned and cached."""

    def __init__(
        self,
        target: str | None = None,
        *,
        dtype: str | torch.dtype = "complex128",
        seed: int | None = None,
        max_memory: int | None = None,
        fuse_max_qubits: int = 10,
        shots: int | None = None,
    ) -> None:
        self.torch_device = (
            None if target is None else resolve_torch_device(target, "statevector", types=("cpu", "cuda"))
        )
        if isinstance(dtype, torch.dtype):
            dtype = str(dtype).removeprefix("torch.")
        if dtype not in DTYPES:
            raise invalid("dtype", dtype, f"one of {sorted(DTYPES)}")
        self.cdtype = DTYPES[dtype]
        optional_int("max_memory", max_memory, 0)
        check_shots(shots)
        check_seed(seed)
        non_negative_int("fuse_max_qubits", fuse_max_qubits)
        options: dict[str, Any] = {"dtype": dtype}
        options.update(
            {k: v for k, v in (("seed", seed), ("max_memory", max_memory), ("shots", shots)) if v is not None}
        )
        super().__init__(None if target is None else str(self.torch_device), **options)
        self.max_memory, self.fuse_max_qubits, self.shots, self.seed = max_memory, fuse_max_qubits, shots, seed
        self._plans: OrderedDict[tuple, tuple[Plan | None, list[Measurement]]] = OrderedDict()
        self._fits: dict[tuple, bool] = {}  # backprop's stored states fit the limit, by tape structure
        self._lock = threading.Lock()

    @property
    def capabilities(self) -> QuantumCapabilities:
        devices = (str(self.torch_device),) if self.torch_device is not None else ("cpu", "cuda")
        return QuantumCapabilities(
            differentiable=True,
            exact=self.shots is None,
            shots=True,
            noise=False,
            diff_methods=DIFF_METHODS,
            devices=devices,
            dtype=str(self.cdtype).removeprefix("torch."),
        )

    def _device_of(self, tensors: list[torch.Tensor]) -> torch.device:
        if self.torch_device is not None:
            return self.torch_device
        return tensors[0].device if tensors else torch.device("cpu")

    def _plan(self, key: tuple, make: Any) -> tuple[Plan | None, list[Measurement]]:
        with self._lock:
            if key in self._plans:
                self._plans.move_to_end(key)
                return self._plans[key]
        made = make()
        with self._lock:
            self._plans[key] = made
            while len(self._plans) > PLAN_CACHE_SIZE:
                self._plans.popitem(last=False)
        return made

    def execute(self, tapes: Any, config: ExecutionConfig) -> Execution:
        tapes, config = self.settle(tapes, config)
        if config.mitigation is not None:
            raise invalid("mitigation", config.mitigation, f"None on {self.name!r} (exact: nothing to mitigate)")
        results, stats = [], ExecutionStats()
        for tape in tapes:
            started = time.perf_counter()
            result, shots, circuits = self._execute(tape, list(config.wires), config)
            results.append(result)
            stats = stats + ExecutionStats(circuits, 1, circuits * shots, time.perf_counter() - started)
        return Execution(results, stats)

    def _prepared(
        self,
        operations: Any,
        mps: Any,
        wires: list,
        device: torch.device,
        b: int,
        check: Any = None,
        planned: bool = True,
    ) -> tuple:
        """(plan, measurements, steps) of ``operations`` measured by ``mps`` on ``b`` states; ``check(keys)`` is
        called with the steps' keys before planning (which takes seconds and GiB at 24 qubits)."""
        n = len(wires)
        converter = Converter({w: i for i, w in enumerate(wires)}, self.cdtype, device)
        steps = converter.convert(operations)
        if check is not None:
            check([s.key for s in steps])
        fuse = n <= self.fuse_max_qubits and (b >= 2 * 2**n or n <= 4)  # up to 4 qubits building U is trivial
        key = (
            tuple(wires),
            tuple(s.key for s in steps),
            fuse,
            device,
            self.cdtype,
            tuple(map(_measurement_key, mps)),
        )

        def build() -> Plan | None:  # the adjoint route runs ``steps`` itself: no backprop plan to build
            return Plan([s.key for s in steps], n, fuse, device, self.cdtype) if planned else None

        # measurements keep an equal converter: same key
        plan, measurements = self._plan(key, lambda: (build(), [Measurement(mp, n, converter, device) for mp in mps]))
        if plan is None and planned:  # cached by an adjoint run: the plan is built once, the measurements kept
            plan = build()
            with self._lock:
                self._plans[key] = (plan, measurements)
        return plan, measurements, steps

    def best_method(self, tapes: list[Any], config: ExecutionConfig) -> str:
        """``"parameter-shift"`` with shots; without, ``"backprop"``, or ``"adjoint"`` when backprop's stored states
        (one per planned step) would exceed the memory limit for a tape that needs gradients."""
        if config.shots:
            return "parameter-shift"
        wires = list(config.wires)
        return "backprop" if all(self._backprop_fits(tape, wires) for tape in tapes) else "adjoint"

    def _backprop_fits(self, tape: Any, wires: list) -> bool:
        """Whether backprop's stored states for ``tape`` fit the memory limit (True when it needs no gradient); the
        plan made to count them is cached for the run, and the answer by the tape's structure (which holds the
        batch size): a later tape of that structure is not converted twice."""
        n = len(wires)
        tensors, device, b, limit = self._sizes(tape, n)
        if not (torch.is_grad_enabled() and any(p.requires_grad for p in tensors)):
            return True
        shape = structure(tape)
        if shape is None:
            return self._count_fits(tape, wires, device, b, limit)
        key = ("backprop fits", shape, tuple(wires), device, self.cdtype, limit)
        with self._lock:
            known = self._fits.get(key)
        if known is None:
            known = self._count_fits(tape, wires, device, b, limit)
            with self._lock:
                self._fits[key] = known
                while len(self._fits) > PLAN_CACHE_SIZE:
                    del self._fits[next(iter(self._fits))]
        return known

    def _count_fits(self, tape: Any, wires: list, device: torch.device, b: int, limit: int) -> bool:
        n = len(wires)

        def fewest(keys: list[tuple]) -> None:  # the fewer of backprop's and adjoint's states, refused before planning
            backprop = MIN_STATES + (initial_steps(keys) < len(keys))  # a step after the initial state: one more
            check_size(n, b, self.cdtype, limit, min(backprop, ADJOINT_STATES))

        plan, _, _ = self._prepared(tape.operations, tape.measurements, wires, device, b, fewest)
        assert plan is not None  # planned=True
        itemsize = self.cdtype.itemsize
        return itemsize * 2**n * b * (len(plan.funcs) + MIN_STATES) + plan.fused_runs * itemsize * 4**n * 8 <= limit

    def _sizes(self, tape: Any, n: int) -> tuple[list[torch.Tensor], torch.device, int, int]:
        """(tensor parameters, device, batch size, memory limit) of ``tape``, its size checked before converting and
        planning allocate anything of size 2^n."""
        tensors = [p for p in tape.get_parameters(trainable_only=False) if torch.is_tensor(p)]
        device = self._device_of(tensors)
        b = tape.batch_size or 1
        limit = self.max_memory if self.max_memory is not None else memory_limit(device)
        check_size(n, b, self.cdtype, limit)
        return tensors, device, b, limit

    def _method(self, config: ExecutionConfig, needs_grad: bool) -> str:
        """The gradient method this run uses (``"none"`` when no gradient is needed)."""
        method = config.diff_method
        if not needs_grad:
            return "none"
        if config.shots and method != "parameter-shift":
            raise ConfigError(
                f"shots={config.shots} with diff_method={method!r} on {self.name!r}: sampled values have no autograd "
                "gradient; accepted: diff_method='parameter-shift' (or 'best') with shots, or shots=None"
            )
        return method

    def _execute(self, tape: Any, wires: list, config: ExecutionConfig) -> tuple[Any, int, int]:
        """(results, shots per circuit, circuits run) of one tape."""
        n = len(wires)
        tensors, device, b, limit = self._sizes(tape, n)
        shots = config.shots
        if tape.shots and tape.shots.has_partitioned_shots:
            raise UnsupportedOperationError(f"shot vectors ({tape.shots}) on the statevector backend; {SUGGESTION}")
        needs_grad = torch.is_grad_enabled() and any(p.requires_grad for p in tensors)
        method = self._method(config, needs_grad)
        generator = None
        if shots:
            generator = torch.Generator()
            generator.seed() if config.seed is None else generator.manual_seed(config.seed)
        if method == "parameter-shift":
            result, circuits = self._shifted(tape, wires, device, b, limit, shots, generator)
            return result, shots or 0, circuits

        def fewest(keys: list[tuple]) -> None:  # the gradient's states at the least, refused before planning
            backprop = MIN_STATES + (initial_steps(keys) < len(keys))  # a step after the initial state: one more
            states = {"adjoint": ADJOINT_STATES, "backprop": backprop}
            check_size(n, b, self.cdtype, limit, states.get(method, MIN_STATES))

        plan, measurements, steps = self._prepared(
            tape.operations, tape.measurements, wires, device, b, fewest, planned=method != "adjoint"
        )
        mps = tape.measurements
        if method == "adjoint" or plan is None:
            check_size(n, b, self.cdtype, limit, ADJOINT_STATES)
            measure = lambda psi: measure_exact(measurements, mps, psi)  # noqa: E731
            results = run_adjoint(steps, n, b, self.cdtype, device, measure, limit)
        else:
            check_memory(plan, n, b, self.cdtype, limit)
            if not shots and plan.tail is not None and all(m.diagonal for m in measurements):
                psi, rows = plan.run_to_tail(steps, b)  # a last permutation goes into the Z-vectors
                results = measure_exact(measurements, mps, psi, rows)
            else:
                psi = plan.run(steps, b)
                if shots and generator is not None:  # the generator is made above exactly when there are shots
                    results = measure_sampled(measurements, mps, psi, shots, generator)
                else:
                    results = measure_exact(measurements, mps, psi)
        if tape.batch_size is None:
            results = [r.squeeze(0) for r in results]
        return (tuple(results) if len(results) > 1 else results[0]), shots or 0, b

    def _shifted(
        self, tape: Any, wires: list, device: torch.device, b: int, limit: int, shots: int | None, generator: Any
    ) -> Any:
        """Values differentiable by the parameter-shift rule: all ``S`` shifted parameter sets of the batch run
        as ONE batch of ``S * b`` circuits (sampled with ``shots``, else exact); also the number of circuits."""
        kinds = [type(mp).__name__ for mp in tape.measurements]
        if any(k in ("StateMP", "DensityMatrixMP") for k in kinds):
            raise UnsupportedOperationError(
                f"parameter-shift gradients of {kinds} on {self.name!r} (expval, var and probs only); accepted: "
                "diff_method='backprop' or 'adjoint' with shots=None"
            )
        form = shift_form(tape.operations)
        rdtype = torch.float32 if self.cdtype == torch.complex64 else torch.float64
        widths: list[int] = []
        circuits: list[int] = []

        def evaluate(values: list[np.ndarray]) -> list[np.ndarray]:
            (v,) = values
            rows = v.shape[0] * v.shape[1]
            check_size(len(wires), rows, self.cdtype, limit)
            operations = stacked_operations(form, v, rdtype, device)
            plan, measurements, steps = self._prepared(operations, tape.measurements, wires, device, rows)
            with torch.no_grad():
                psi = plan.run(steps, rows)
                if shots:
                    results = measure_sampled(measurements, tape.measurements, psi, shots, generator)
                else:
                    results = measure_exact(measurements, tape.measurements, psi)
            widths[:] = [r.shape[1] if r.dim() > 1 else 0 for r in results]
            circuits.append(rows)
            return [flatten_results(results, rows).cpu().numpy().reshape(v.shape[0], v.shape[1], -1)]

        (raw,) = parameter_shift([form.params], [b], evaluate)
        return split_columns(raw.to(device, rdtype), widths, tape.batch_size is not None), sum(circuits)
