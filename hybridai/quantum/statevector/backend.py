"""Backend family ``statevector``: hybridai's own batched torch executor.

Targets: none (compute on the device of the inputs), ``cpu``, ``cuda``, ``cuda:N``.
Options: ``dtype`` (``"complex128"``, default, or ``"complex64"``), ``seed`` (for shots),
``max_memory`` (bytes; default half the free GPU memory or half the RAM),
``fuse_max_qubits`` (largest register whose constant blocks become one unitary, default 10).
Exact results are differentiable by autograd (``diff_method="backprop"``); results with
shots are sampled and carry no gradient.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from typing import Any

import torch

from hybridai.core.capabilities import QuantumCapabilities
from hybridai.core.contracts import QuantumExecutor
from hybridai.core.devices import resolve_torch_device
from hybridai.core.errors import (
    ConfigError,
    UnsupportedOperationError,
    invalid,
    non_negative_int,
    optional_int,
)
from hybridai.core.execution import Execution, ExecutionConfig, ExecutionStats
from hybridai.quantum.statevector.gates import SUGGESTION, Converter
from hybridai.quantum.statevector.measurement import Measurement, measure_exact
from hybridai.quantum.statevector.planning import Plan, check_memory, check_size, memory_limit

DTYPES = {"complex128": torch.complex128, "complex64": torch.complex64}
PLAN_CACHE_SIZE = 256


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
        optional_int("shots", shots, 1)
        optional_int("seed", seed, 0)
        non_negative_int("fuse_max_qubits", fuse_max_qubits)
        options = {"dtype": dtype}
        options.update(
            {k: v for k, v in (("seed", seed), ("max_memory", max_memory), ("shots", shots)) if v is not None}
        )
        super().__init__(None if target is None else str(self.torch_device), **options)
        self.max_memory, self.fuse_max_qubits, self.shots, self.seed = max_memory, fuse_max_qubits, shots, seed
        self._plans: OrderedDict[tuple, tuple[Plan, list[Measurement]]] = OrderedDict()
        self._lock = threading.Lock()

    @property
    def capabilities(self) -> QuantumCapabilities:
        devices = (str(self.torch_device),) if self.torch_device is not None else ("cpu", "cuda")
        return QuantumCapabilities(
            differentiable=True,
            exact=self.shots is None,
            shots=True,
            noise=False,
            diff_methods=("best", "backprop"),
            devices=devices,
            dtype=str(self.cdtype).removeprefix("torch."),
        )

    def _device_of(self, tape: Any) -> torch.device:
        if self.torch_device is not None:
            return self.torch_device
        for p in tape.get_parameters(trainable_only=False):
            if torch.is_tensor(p):
                return p.device
        return torch.device("cpu")

    def _plan(self, key: tuple, make: Any) -> tuple[Plan, list[Measurement]]:
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
        if config.diff_method not in ("best", "backprop"):
            raise invalid("diff_method", config.diff_method, f"one of ('best', 'backprop') on {self.name!r}")
        if config.mitigation is not None:
            raise invalid("mitigation", config.mitigation, f"None on {self.name!r} (exact: nothing to mitigate)")
        results, stats = [], ExecutionStats()
        for tape in tapes:
            started = time.perf_counter()
            result, shots = self._execute(tape, list(config.wires), config)
            results.append(result)
            b = tape.batch_size or 1
            stats = stats + ExecutionStats(b, 1, b * shots, time.perf_counter() - started)
        return Execution(results, stats)

    def _execute(self, tape: Any, wires: list, config: ExecutionConfig) -> tuple[Any, int]:
        n = len(wires)
        device = self._device_of(tape)
        b = tape.batch_size or 1
        limit = self.max_memory if self.max_memory is not None else memory_limit(device)
        check_size(n, b, self.cdtype, limit)  # before converting and planning allocate anything of size 2^n
        converter = Converter({w: i for i, w in enumerate(wires)}, self.cdtype, device)
        steps = converter.convert(tape.operations)
        fuse = n <= self.fuse_max_qubits and b >= 2 * 2**n
        key = (
            tuple(wires),
            tuple(s.key for s in steps),
            fuse,
            device,
            self.cdtype,
            tuple(map(_measurement_key, tape.measurements)),
        )

        def make() -> tuple[Plan, list[Measurement]]:
            measurements = [Measurement(mp, n, converter, device) for mp in tape.measurements]
            return Plan([s.key for s in steps], n, fuse, device, self.cdtype), measurements

        plan, measurements = self._plan(key, make)  # measurements keep an equal converter: same key
        check_memory(plan, n, b, self.cdtype, limit)
        shots = config.shots or (tape.shots.total_shots if tape.shots else self.shots)
        if tape.shots and tape.shots.has_partitioned_shots:
            raise UnsupportedOperationError(f"shot vectors ({tape.shots}) on the statevector backend; {SUGGESTION}")
        if (
            shots
            and torch.is_grad_enabled()
            and any(torch.is_tensor(p) and p.requires_grad for p in tape.get_parameters(trainable_only=False))
        ):
            raise ConfigError(
                f"shots={shots} on {self.name!r} gives sampled values without gradients, but gradients were "
                "requested; accepted: evaluate under torch.no_grad(), train with shots=None, or use "
                "backend='pennylane:default.qubit' for parameter-shift gradients with shots"
            )
        psi = plan.run(steps, b)
        mps = tape.measurements
        if shots:
            generator = torch.Generator()
            seed = config.seed if config.seed is not None else self.seed
            generator.seed() if seed is None else generator.manual_seed(seed)
            results = [m.sampled(psi, mp, shots, generator) for m, mp in zip(measurements, mps, strict=True)]
        else:
            results = measure_exact(measurements, mps, psi)
        if tape.batch_size is None:
            results = [r.squeeze(0) for r in results]
        return (tuple(results) if len(results) > 1 else results[0]), shots or 0
