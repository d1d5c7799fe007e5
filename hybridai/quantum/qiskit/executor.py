"""What the Qiskit families ``aer`` and ``ibm`` share: calls, retries, time-outs and parameter sets split into calls;
each holds a Qiskit front end (``hybridai.quantum.qiskit_frontend.frontend.QiskitFrontEnd``) for its device, noise
model and transpiled circuits.

A tape is converted to a parametrised ``QuantumCircuit`` once per circuit structure and
transpiled once per backend (by its front end); a whole batch, and in training every parameter-shifted copy of
it, goes out as parameter values broadcast in ONE primitive call (split only when a call
would exceed ``max_parameter_sets``). Gradients use the two-term parameter-shift rule for
every gate parameter (``hybridai.quantum.execution.shift_rule``), so they reach the weights AND the inputs.
Statistics of each call (circuits, primitive calls, seconds) come back in its ``Execution``.

- ``aer`` (option ``threads``, default 1: Aer's own threads, which oversubscribe a busy machine):
  exact (``shots=None``: Aer's estimator, statevector or, with noise, density
  matrix), or sampled (``shots=N``: Aer's sampler, real samples, seeded). Noise from a fake
  IBM device (``aer:fake_manila``, any ``qiskit_ibm_runtime.fake_provider`` name) or from
  ``depolarizing=(p1, p2)`` and ``readout_error=p``.
- ``ibm``: ``ibm:fake_<name>`` runs qiskit-ibm-runtime's local testing mode (offline, noisy
  through Aer); ``ibm:<device>`` uses the saved account or the ``QISKIT_IBM_TOKEN`` /
  ``QISKIT_IBM_INSTANCE`` environment variables, through the client-side
  ``qiskit_ibm_runtime.executor_estimator.Estimator``. ``mode="job"|"session"|"batch"``.
  Tokens never appear in hybridai's errors, reprs or logs.

Both transpile at ``optimization_level`` (default 1). Zero-noise extrapolation (``mitigation=ZNE()``)
transpiles its folded circuits at the same level, with a barrier between folded blocks so that no pass
cancels a fold: its noisy value at scale factor 1 is exactly the value of the same layer without
mitigation, whatever the level, and a comparison of "noisy" with "ZNE" is like for like. Global folding
at odd factors (the default ``(1, 3, 5)``) repeats whole optimised blocks, so the noise scales exactly;
partial folds (other factors) and ``folding="random"`` split the circuit into smaller blocks that the
optimiser compresses less, so at levels >= 1 their noise scales only approximately: ``optimization_level=0``
(for the mitigated and the unmitigated runs alike) makes every folded gate a physical gate.
``retries`` (default 2) failed jobs are re-submitted after ``backoff * 2**attempt`` seconds (default
``backoff=1.0``); ``timeout`` (seconds, default None: no limit) bounds the wait for each job. A register
wider than the device (or whose simulated state would not fit in half the RAM, on ``aer``) is refused
with a ``ResourceLimitError`` before anything is converted or allocated.
"""

from __future__ import annotations

import math
import numbers
import time
from abc import abstractmethod
from typing import Any

import numpy as np

from hybridai.core.capabilities import QuantumCapabilities
from hybridai.core.contracts import Availability, QuantumExecutor
from hybridai.core.errors import (
    BackendExecutionError,
    UnsupportedOperationError,
    check_seed,
    check_shots,
    invalid,
    non_negative_int,
    optional_int,
)
from hybridai.core.execution import Execution, ExecutionConfig, ExecutionStats
from hybridai.quantum.execution.config_check import check_config
from hybridai.quantum.execution.shift_rule import parameter_shift
from hybridai.quantum.qiskit.redaction import log, redact
from hybridai.quantum.qiskit_frontend.conversion import convert, tape_results
from hybridai.quantum.qiskit_frontend.fake_devices import fake_names
from hybridai.quantum.qiskit_frontend.frontend import HoldsFrontEnd, qiskit_availability
from hybridai.quantum.qiskit_frontend.options import check_optimization_level, refuse_options

JOB_OPTIONS = ("retries", "backoff", "timeout", "max_parameter_sets")  # how jobs are sent (aer and ibm)
SHARED_OPTIONS = ("shots", "seed", *JOB_OPTIONS, "optimization_level")
MAX_SECONDS = 7 * 24 * 3600.0  # a week: longer back-offs and time-outs are typing mistakes


class Tally:
    """Statistics of one ``execute`` call (never shared between calls)."""

    def __init__(self, shots: int | None) -> None:
        self.calls, self.circuits, self.seconds, self.shots = 0, 0, 0.0, shots or 0

    def stats(self) -> ExecutionStats:
        return ExecutionStats(self.circuits, self.calls, self.circuits * self.shots, self.seconds)


class QiskitBackend(HoldsFrontEnd, QuantumExecutor):
    """Shared machinery of the Qiskit families ``aer`` and ``ibm``: calls, retries, the shift rule. Each family builds
    its ``frontend`` (device, noise model, transpiled circuits) once its options are checked."""

    shared_options: tuple[str, ...] = SHARED_OPTIONS  # the options of QiskitBackend the family takes
    own_options: tuple[str, ...] = ()  # the family's options besides the shared ones (listed in errors)

    @classmethod
    def known_targets(cls) -> list[str]:
        """Every fake IBM device of the installed provider (``fake_manila``, ``fake_brisbane``, ...)."""
        return fake_names()

    def __init__(
        self,
        target: str | None = None,
        *,
        shots: int | None = None,
        seed: int | None = None,
        retries: int = 2,
        backoff: float = 1.0,
        timeout: float | None = None,
        max_parameter_sets: int | None = None,
        optimization_level: int = 1,
        **options: Any,
    ) -> None:
        check_shots(shots)
        check_seed(seed)
        optional_int("max_parameter_sets", max_parameter_sets, 1)
        non_negative_int("retries", retries)
        if not _is_real(backoff) or not 0 <= backoff <= MAX_SECONDS:
            raise invalid("backoff", backoff, f"seconds in [0, {MAX_SECONDS}] (the delay before the first retry)")
        if timeout is not None and (not _is_real(timeout) or not 0 < timeout <= MAX_SECONDS):
            raise invalid("timeout", timeout, f"None (wait as long as the job takes) or seconds in (0, {MAX_SECONDS}]")
        check_optimization_level(optimization_level)
        refuse_options(f"{self.family}:{target}" if target else self.family, options,
                       [*self.shared_options, *self.own_options])  # fmt: skip
        given = {"shots": shots, "seed": seed, "retries": retries, "backoff": backoff, "timeout": timeout,
                 "max_parameter_sets": max_parameter_sets, "optimization_level": optimization_level}  # fmt: skip
        defaults = {"retries": 2, "backoff": 1.0, "optimization_level": 1}
        # options: what differs from the defaults (the repr, and rebuilding the backend after unpickling)
        super().__init__(target, **{k: v for k, v in given.items() if v is not None and v != defaults.get(k)})
        self.shots, self.seed, self.retries = shots, seed, retries
        self.backoff, self.timeout = float(backoff), None if timeout is None else float(timeout)
        self.max_parameter_sets, self.optimization_level = max_parameter_sets, optimization_level

    @classmethod
    def is_available(cls) -> Availability:
        return qiskit_availability()

    # -- provided by each family -------------------------------------------------------------

    @abstractmethod
    def estimate(
        self, pairs: list[tuple[Any, list[Any]]], values: list[np.ndarray], config: ExecutionConfig, tally: Tally
    ) -> list:
        """Expectations ``[S_f, B, R]`` of each (circuit, observables) pair for its values ``[S_f, B, P_f]``,
        all in ONE primitive call (``run_job``); ``config.shots`` is already resolved."""

    # -- shared ------------------------------------------------------------------------------

    @property
    def capabilities(self) -> QuantumCapabilities:
        return QuantumCapabilities(
            differentiable=True,
            exact=False,
            shots=True,
            noise=True,
            diff_methods=("best", "parameter-shift"),
            devices=("cpu",),
            # ZNE's folded circuits come with a barrier between folded blocks (hybridai.quantum.execution.run) and
            # are transpiled at optimization_level like any other: the scale-factor-1 circuit IS the unmitigated one
            folds_need_barriers=True,
        )

    def run_job(self, submit: Any, tally: Tally) -> Any:
        """``submit()`` a job and return its result, retrying failures with exponential back-off."""
        tally.calls += 1
        for attempt in range(self.retries + 1):
            job = None
            started = time.perf_counter()
            try:
                job = submit()
                return job.result(timeout=self.timeout) if self.timeout else job.result()
            except (TypeError, ValueError) as exc:
                if job is None:
                    raise  # a malformed request: retrying cannot help
                job_id = _job_id(job)
                raise BackendExecutionError(  # the simulator refused the request (Aer: an invalid noise model, ...)
                    f"{self.name!r}: job {job_id} was refused: {type(exc).__name__}: {redact(str(exc))}; not retried "
                    "(the same request would be refused again); accepted: a request the primitive takes (see its "
                    "message)",
                    job_id=job_id,
                ) from None
            except Exception as exc:  # job failures and time-outs
                error = exc
            finally:
                tally.seconds += time.perf_counter() - started
            job_id = _job_id(job)
            if attempt == self.retries:
                raise BackendExecutionError(
                    f"{self.name!r}: job {job_id} failed after {attempt + 1} attempt(s): "
                    f"{type(error).__name__}: {redact(str(error))}; accepted: retry later, or raise retries= "
                    f"(now {self.retries}) or timeout= (now {self.timeout})",
                    job_id=job_id,
                ) from None
            delay = self.backoff * 2**attempt
            log.warning("%s: job %s failed (%s); retrying in %.1f s", self.name, job_id, redact(str(error)), delay)
            time.sleep(delay)
        raise AssertionError("unreachable")

    def _calls(self, sizes: list[int]) -> list[list[tuple[int, int, int]]]:
        """Group (pair, start, stop) slices of parameter sets into calls of at most ``max_parameter_sets``."""
        limit = self.max_parameter_sets
        if limit is None or sum(sizes) <= limit:
            return [[(f, 0, n) for f, n in enumerate(sizes)]]
        calls, current, room = [], [], limit
        for f, n in enumerate(sizes):
            start = 0
            while start < n:
                take = min(room, n - start)
                current.append((f, start, start + take))
                start, room = start + take, room - take
                if room == 0:
                    calls.append(current)
                    current, room = [], limit
        return calls + ([current] if current else [])

    def _estimates(self, result: Any, rows: int, width: int) -> np.ndarray:
        """One circuit's expectations from ``estimate`` as ``[rows, width]``: its ``[1, rows, width]`` (or
        ``[rows, width]``) finite values, else a BackendExecutionError (never reshaped into other rows)."""
        try:
            array = np.asarray(result, dtype=np.float64)
        except (TypeError, ValueError):
            raise self._broken(type(result).__name__, f"a real array [1, {rows}, {width}]") from None
        if array.shape not in ((1, rows, width), (rows, width)) or not np.isfinite(array).all():
            shown = f"{type(result).__name__} of shape {array.shape}" + (
                "" if np.isfinite(array).all() else " with non-finite values"
            )
            raise self._broken(shown, f"finite expectations [1, {rows}, {width}] (parameter sets x observables)")
        return array.reshape(rows, width)

    def _broken(self, got: str, accepted: str) -> BackendExecutionError:
        return BackendExecutionError(f"{self.name!r}: estimate() returned {got}; accepted: {accepted} (a bug in the "
                                     "backend)")  # fmt: skip

    def check_resources(self, n_qubits: int, config: ExecutionConfig) -> None:
        """Refuse (before converting or transpiling) a register wider than the device's qubit count."""
        self.frontend.check_register(n_qubits)

    def execute(self, tapes: Any, config: ExecutionConfig) -> Execution:
        """All tapes, every parameter set of their batches and every parameter shift in ONE primitive call
        (more only when ``max_parameter_sets`` splits it)."""
        tapes, config = self.settle(tapes, config)
        check_config(self, config)
        self.check_resources(len(config.wires), config)
        tally = Tally(config.shots)
        converted = [convert(tape, list(config.wires)) for tape in tapes]
        refuse_channels(self, [s for c in converted for s in c.channels])
        pairs = [self.transpiled(c, config.keep_gates) for c in converted]
        batches = [tape.batch_size or 1 for tape in tapes]

        def evaluate(values: list[np.ndarray]) -> list[np.ndarray]:
            flat = [v.reshape(v.shape[0] * v.shape[1], v.shape[-1]) for v in values]
            evs = [np.zeros((len(v), len(c.observables))) for v, c in zip(flat, converted, strict=True)]
            for call in self._calls([len(v) for v in flat]):
                out = self.estimate(
                    [pairs[f] for f, _, _ in call], [flat[f][a:b][None] for f, a, b in call], config, tally
                )
                if not isinstance(out, list | tuple) or len(out) != len(call):
                    got = f"{len(out)} arrays" if isinstance(out, list | tuple) else type(out).__name__
                    raise self._broken(f"{got} for {len(call)} circuit(s)", "one array [1, B, R] per circuit")
                for (f, a, b), result in zip(call, out, strict=True):
                    evs[f][a:b] = self._estimates(result, b - a, evs[f].shape[1])
                tally.circuits += sum(b - a for _, a, b in call)
            return [e.reshape(v.shape[0], v.shape[1], -1) for e, v in zip(evs, values, strict=True)]

        raws = parameter_shift([c.params for c in converted], batches, evaluate)
        results = [tape_results(tape, c, raw) for tape, c, raw in zip(tapes, converted, raws, strict=True)]
        return Execution(results, tally.stats())


def refuse_channels(backend: QuantumExecutor, channels: list[Any]) -> None:
    """An UnsupportedOperationError naming PennyLane noise channels, which Aer and IBM's primitives do not run."""
    if channels:
        density = f"'density:{backend.target}'" if backend.target else "'density'"
        raise UnsupportedOperationError(
            f"{backend.name!r} cannot run the PennyLane noise channels {sorted({s.name for s in channels})}; accepted: "
            f"backend={density} (the same circuit with its channels{' and this device' if backend.target else ''}"
            f"; rates constant, trainable or per sample, differentiable) or 'pennylane:default.mixed'"
        )


def column(observables: list[Any]) -> np.ndarray:
    """Observables as an object array ``[R, 1, 1]`` that broadcasts against values ``[S, B]``."""
    column = np.empty((len(observables), 1, 1), dtype=object)
    for i, obs in enumerate(observables):
        column[i, 0, 0] = obs
    return column


def _is_real(value: Any) -> bool:
    """A finite real number (not a bool)."""
    return isinstance(value, numbers.Real) and not isinstance(value, bool) and math.isfinite(value)


def _job_id(job: Any) -> str:
    """The job's id for messages, redacted (``redaction``): a service may build it from the token it was sent."""
    try:
        return redact(str(job.job_id())) if job is not None else "(not submitted)"
    except Exception:
        return "(unknown)"
