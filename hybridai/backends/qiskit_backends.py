"""Backend families ``aer`` (qiskit-aer) and ``ibm`` (IBM Quantum Runtime), through Qiskit.

A tape is converted to a parametrised ``QuantumCircuit`` once per circuit structure and
transpiled once per backend; a whole batch, and in training every parameter-shifted copy of
it, goes out as parameter values broadcast in ONE primitive call (split only when a call
would exceed ``max_parameter_sets``). Gradients use the two-term parameter-shift rule for
every gate parameter, so they reach the weights AND the inputs.

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
"""

from __future__ import annotations

import importlib.util
import logging
import math
import os
import sys
import threading
import time
from typing import Any

import numpy as np
import torch

from ..errors import BackendExecutionError, BackendNotFoundError, BackendUnavailableError, invalid, suggest
from ..quantum.qiskit_convert import Converted, convert
from .base import Availability, Capabilities, QuantumBackend
from .registry import register

log = logging.getLogger("hybridai.qiskit")
TOKEN_VARIABLES = ("QISKIT_IBM_TOKEN",)
ACCOUNT_HELP = (
    "save an account with qiskit_ibm_runtime.QiskitRuntimeService.save_account(...) or set the environment "
    "variables QISKIT_IBM_TOKEN and QISKIT_IBM_INSTANCE (optionally QISKIT_IBM_CHANNEL)"
)


def secrets() -> list[str]:
    """Token values hybridai must never print (environment variables of qiskit-ibm-runtime)."""
    return [v for v in (os.environ.get(k) for k in TOKEN_VARIABLES) if v]


def redact(text: str) -> str:
    for secret in secrets():
        text = text.replace(secret, "***")
    return text


_redacting = False


def redact_logs() -> None:
    """From now on, log records (of any library) have token values replaced by '***'.

    Installed when an ``ibm`` backend is first created, before qiskit-ibm-runtime runs;
    it wraps the record factory, so records are clean whichever handler receives them.
    """
    global _redacting
    if _redacting:
        return
    make_record = logging.getLogRecordFactory()

    def factory(*args: Any, **kwargs: Any) -> logging.LogRecord:
        record = make_record(*args, **kwargs)
        if secrets():
            record.msg = redact(str(record.msg))
            if record.args:
                items = record.args if isinstance(record.args, tuple) else (record.args,)
                record.args = tuple(redact(a) if isinstance(a, str) else a for a in items)
        return record

    logging.setLogRecordFactory(factory)
    _redacting = True


def fake_backend(name: str) -> Any:
    """``fake_manila`` -> ``qiskit_ibm_runtime.fake_provider.FakeManilaV2()``."""
    from qiskit_ibm_runtime import fake_provider

    classes = {
        cls.__name__.removesuffix("V2").removeprefix("Fake").lower(): cls
        for cls in vars(fake_provider).values()
        if isinstance(cls, type) and cls.__name__.startswith("Fake") and cls.__name__.endswith("V2")
    }
    key = name.removeprefix("fake_").replace("_", "").lower()
    if key not in classes:
        names = sorted(f"fake_{k}" for k in classes)
        raise BackendNotFoundError(
            f"no fake IBM device named {name!r} in qiskit_ibm_runtime.fake_provider; "
            f"accepted: one of {len(names)} names such as {', '.join(names[:6])}.{suggest(name, names)}"
        )
    return classes[key]()


class _ShiftRule(torch.autograd.Function):
    """Expectations ``[B, R]`` of a circuit (or its folds); backward by the parameter-shift rule.

    ``run(base [B, P], shifted)`` returns noisy values ``[F, B, R]`` (F folded circuits; 1
    without mitigation) and their Jacobian ``[F, K, B, R]`` for the K ``shifted`` parameters,
    all from ONE primitive call; ``combine`` maps ``[F, B, R]`` to (values ``[B, R]``,
    d values / d noisy ``[F, B, R]``), so mitigated gradients follow by the chain rule.
    """

    @staticmethod
    def forward(ctx, run: Any, combine: Any, batch: int, differentiate: tuple[bool, ...], *params: torch.Tensor):
        base = np.stack([np.broadcast_to(p.detach().cpu().double().numpy(), (batch,)) for p in params], -1)
        base = base if params else np.zeros((batch, 0))
        shifted = [k for k, need in enumerate(differentiate) if need]
        noisy, jacobians = run(base, shifted)
        value, weights = combine(noisy)
        ctx.shifted = shifted
        ctx.batched = [p.dim() > 0 for p in params]
        if shifted:
            ctx.jacobian = torch.as_tensor((weights[:, None] * jacobians).sum(0))  # [K, B, R]
        return torch.as_tensor(np.asarray(value), dtype=torch.float64)

    @staticmethod
    def backward(ctx, grad: torch.Tensor):
        grads: list[torch.Tensor | None] = [None] * len(ctx.batched)
        for j, k in enumerate(ctx.shifted):
            g = (ctx.jacobian[j].to(grad) * grad).sum(-1)
            grads[k] = g if ctx.batched[k] else g.sum()
        return (None, None, None, None, *grads)


def _unmitigated(noisy: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    return noisy[0], np.ones_like(noisy)


def _shifted_values(base: np.ndarray, occurrences: Any, shifted: list[int]) -> tuple[np.ndarray, list[tuple[int, int]]]:
    """Values ``[S, B, P_f]`` of one circuit: base, then +-pi/2 on each occurrence of a shifted parameter."""
    v = occurrences.values(base) if occurrences is not None else base
    position = {k: i for i, k in enumerate(shifted)}
    index = occurrences.index if occurrences is not None else np.arange(base.shape[-1])
    targets = [(j, position[int(index[j])]) for j in range(v.shape[-1]) if int(index[j]) in position]
    values = [v]
    for j, _ in targets:
        for sign in (1.0, -1.0):
            w = v.copy()
            w[:, j] += sign * math.pi / 2
            values.append(w)
    return np.stack(values), targets


class QiskitBackend(QuantumBackend):
    """Shared machinery of the Qiskit families: conversion, transpilation cache, calls, retries."""

    domains = ("quantum",)

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
        mitigation: Any = None,
        **options: Any,
    ) -> None:
        for name, value in (("shots", shots), ("seed", seed), ("max_parameter_sets", max_parameter_sets)):
            if value is not None and (
                isinstance(value, bool) or not isinstance(value, int) or value < 1 - (name == "seed")
            ):
                raise invalid(name, value, "None or a positive int")
        if isinstance(retries, bool) or not isinstance(retries, int) or retries < 0:
            raise invalid("retries", retries, "a non-negative int")
        if optimization_level not in (0, 1, 2, 3):
            raise invalid("optimization_level", optimization_level, "0, 1, 2 or 3")
        if options:
            raise invalid(
                "options", options, "shots, seed, retries, backoff, timeout, max_parameter_sets, optimization_level, "
                "mitigation (aer: threads, depolarizing, readout_error; ibm: mode, resilience_level)",
            )  # fmt: skip
        super().__init__(target, **{k: v for k, v in (("shots", shots), ("seed", seed)) if v is not None}, **options)
        self.shots, self.seed, self.retries, self.backoff, self.timeout = shots, seed, retries, backoff, timeout
        self.max_parameter_sets, self.optimization_level = max_parameter_sets, optimization_level
        from ..quantum.mitigation import ZNE

        if mitigation is not None and not isinstance(mitigation, ZNE):
            raise invalid("mitigation", mitigation, "None or hybridai.ZNE(...)")
        if mitigation is not None and mitigation.engine == "ibm" and not isinstance(self, IBMBackend):
            raise invalid(
                "mitigation", mitigation, "engine='mitiq' on this backend (engine='ibm' needs an 'ibm:' backend)"
            )
        self.mitigation = mitigation
        if mitigation is not None:
            self.options["mitigation"] = mitigation
        self.last_zne: Any = None
        self._transpiled: dict[tuple, tuple[Any, list[Any], Any]] = {}
        self._lock = threading.Lock()
        self.calls = 0
        self.circuits = 0
        self.primitive_seconds = 0.0  # time spent waiting for primitive jobs (the executions)
        self.last_step: dict[str, int] = {"calls": 0, "circuits": 0}

    @classmethod
    def is_available(cls) -> Availability:
        for package, extra in (
            ("qiskit", "qiskit"),
            ("qiskit_aer", "qiskit-aer"),
            ("qiskit_ibm_runtime", "qiskit-ibm-runtime"),
        ):
            if importlib.util.find_spec(package) is None:
                return Availability(False, f"{package} is not installed: pip install {extra}")
        return Availability(True)

    # -- to be provided by each family -------------------------------------------------------

    def hardware(self) -> Any:
        """The backend circuits are transpiled for (``None``: no transpilation target)."""
        return None

    def estimate(self, pairs: list[tuple[Any, list[Any]]], values: list[np.ndarray], shots: int | None) -> list:
        """Expectations ``[S_f, B, R]`` of each (circuit, observables) pair for its values ``[S_f, B, P_f]``,
        all in ONE primitive call."""
        raise NotImplementedError

    # -- shared ------------------------------------------------------------------------------

    @property
    def capabilities(self) -> Capabilities:
        return Capabilities(
            differentiable=True,
            exact=False,
            shots=True,
            noise=True,
            diff_methods=("best", "parameter-shift"),
            devices=("cpu",),
            extra={"calls": self.calls, "circuits": self.circuits},
        )

    def transpiled(self, converted: Converted) -> tuple[Any, list[Any]]:
        """The circuit and observables laid out for the hardware, transpiled once per structure."""
        with self._lock:
            cached = self._transpiled.get(converted.key)
        if cached is None:
            from qiskit import transpile

            target = self.hardware()
            if target is None:
                circuit, observables = converted.circuit, converted.observables
            else:
                circuit = transpile(
                    converted.circuit, backend=target, optimization_level=self.optimization_level,
                    seed_transpiler=self.seed if self.seed is not None else 1234,
                )  # fmt: skip
                observables = [o.apply_layout(circuit.layout) for o in converted.observables]
            cached = (circuit, observables)
            with self._lock:
                self._transpiled[converted.key] = cached
        return cached

    def folded(self, converted: Converted) -> list[tuple[Any, list[Any], Any]]:
        """Mitiq-folded circuits (one per scale factor), re-transpiled at level 0 so folds survive."""
        key = ("zne", converted.key, self.mitigation)
        with self._lock:
            cached = self._transpiled.get(key)
        if cached is None:
            from qiskit import transpile

            from ..quantum.mitigation import fold

            target = self.hardware()
            cached = []
            for circuit, occurrences in fold(converted.circuit, self.mitigation):
                if target is not None:
                    circuit = transpile(circuit, backend=target, optimization_level=0, seed_transpiler=1234)
                    observables = [o.apply_layout(circuit.layout) for o in converted.observables]
                else:
                    observables = converted.observables
                cached.append((circuit, observables, occurrences))
            with self._lock:
                self._transpiled[key] = cached
        return cached

    def run_job(self, submit: Any) -> Any:
        """``submit()`` a job and return its result, retrying failures with exponential back-off."""
        for attempt in range(self.retries + 1):
            job = None
            started = time.perf_counter()
            try:
                job = submit()
                return job.result(timeout=self.timeout) if self.timeout else job.result()
            except (TypeError, ValueError):
                if job is None:
                    raise  # a malformed request: retrying cannot help
                error = sys.exc_info()[1]
            except Exception as exc:  # job failures and time-outs
                error = exc
            finally:
                self.primitive_seconds += time.perf_counter() - started
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

    def execute(self, tapes: list[Any], *, wires: Any, diff_method: str = "best") -> list[Any]:
        if diff_method not in ("best", "parameter-shift"):
            raise invalid("diff_method", diff_method, f"one of ('best', 'parameter-shift') on {self.name!r}")
        calls0, circuits0 = self.calls, self.circuits
        out = [self._execute(tape, list(wires)) for tape in tapes]
        self.last_step = {"calls": self.calls - calls0, "circuits": self.circuits - circuits0}
        return out

    def _execute(self, tape: Any, wires: list) -> Any:
        from ..quantum.mitigation import ZNEResult

        converted = convert(tape, wires)
        zne = self.mitigation if self.mitigation is not None and self.mitigation.engine == "mitiq" else None
        circuits = self.folded(converted) if zne is not None else [(*self.transpiled(converted), None)]
        batch = tape.batch_size or 1
        params = [p if torch.is_tensor(p) else torch.tensor(float(p)) for p in converted.params]
        shots = tape.shots.total_shots if tape.shots else self.shots
        n_obs = len(converted.observables)

        def run(base: np.ndarray, shifted: list[int]) -> tuple[np.ndarray, np.ndarray]:
            prepared = [_shifted_values(base, occurrences, shifted) for _, _, occurrences in circuits]
            flat = [values.reshape(-1, values.shape[-1]) for values, _ in prepared]
            evs = [np.zeros((len(v), n_obs)) for v in flat]
            for call in self._calls([len(v) for v in flat]):
                pairs = [(circuits[f][0], circuits[f][1]) for f, _, _ in call]
                out = self.estimate(pairs, [flat[f][a:b][None] for f, a, b in call], shots)
                for (f, a, b), result in zip(call, out, strict=True):
                    evs[f][a:b] = np.asarray(result).reshape(b - a, n_obs)
                self.calls += 1
                self.circuits += sum(b - a for _, a, b in call)
            noisy = np.zeros((len(circuits), batch, n_obs))
            jacobian = np.zeros((len(circuits), len(shifted), batch, n_obs))
            for f, ((values, targets), e) in enumerate(zip(prepared, evs, strict=True)):
                e = e.reshape(values.shape[0], batch, n_obs)
                noisy[f] = e[0]
                for i, (j, k) in enumerate(targets):
                    scale = circuits[f][2].scale[j] if circuits[f][2] is not None else 1.0
                    jacobian[f, k] += scale * (e[1 + 2 * i] - e[2 + 2 * i]) / 2
            return noisy, jacobian

        def combine(noisy: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
            if zne is None:
                return _unmitigated(noisy)
            value, weights = zne.combine(noisy)
            coefficients = zne.coefficients if zne.linear else None
            self.last_zne = ZNEResult(zne.scale_factors, noisy.copy(), value, zne.extrapolation, coefficients)
            return value, weights

        differentiate = tuple(torch.is_grad_enabled() and p.requires_grad for p in params)
        raw = _ShiftRule.apply(run, combine, batch, differentiate, *params)
        results = []
        for kind, where in converted.post:
            if kind == "expval":
                value = raw[:, where]
            elif kind == "var":
                value = raw[:, where[1]] - raw[:, where[0]] ** 2
            else:
                value = raw[:, where]
            results.append(value if tape.batch_size is not None else value.squeeze(0))
        return tuple(results) if len(results) > 1 else results[0]


def _column(observables: list[Any]) -> np.ndarray:
    """Observables as an object array ``[R, 1, 1]`` that broadcasts against values ``[S, B]``."""
    column = np.empty((len(observables), 1, 1), dtype=object)
    for i, obs in enumerate(observables):
        column[i, 0, 0] = obs
    return column


def _job_id(job: Any) -> str:
    try:
        return str(job.job_id()) if job is not None else "(not submitted)"
    except Exception:
        return "(unknown)"


def _noise_from_rates(depolarizing: Any, readout_error: float | None) -> Any:
    from qiskit_aer.noise import NoiseModel, ReadoutError, depolarizing_error

    model = NoiseModel()
    if depolarizing is not None:
        p1, p2 = depolarizing if isinstance(depolarizing, tuple | list) else (depolarizing, depolarizing)
        if not (0 <= p1 <= 1 and 0 <= p2 <= 1):
            raise invalid("depolarizing", depolarizing, "a probability p or a pair (p1, p2) in [0, 1]")
        one = ["rx", "ry", "rz", "p", "h", "x", "y", "z", "s", "sdg", "t", "tdg", "sx", "sxdg", "u"]
        two = ["cx", "cz", "cy", "swap", "rxx", "ryy", "rzz", "ecr", "iswap", "ch"]
        model.add_all_qubit_quantum_error(depolarizing_error(p1, 1), one)
        model.add_all_qubit_quantum_error(depolarizing_error(p2, 2), two)
    if readout_error is not None:
        if not 0 <= readout_error <= 1:
            raise invalid("readout_error", readout_error, "a probability in [0, 1]")
        q = readout_error
        model.add_all_qubit_readout_error(ReadoutError([[1 - q, q], [q, 1 - q]]))
    return model


@register("aer")
class AerBackend(QiskitBackend):
    """qiskit-aer: exact, sampled, or noisy (fake IBM device or given rates)."""

    def __init__(
        self, target: str | None = None, *, depolarizing: Any = None, readout_error: float | None = None, **options: Any
    ) -> None:
        threads = options.pop("threads", 1)
        if isinstance(threads, bool) or not isinstance(threads, int) or threads < 0:
            raise invalid("threads", threads, "a non-negative int (0: all cores)")
        super().__init__(target, **options)
        self.threads = threads
        self.device = fake_backend(target) if target else None
        if self.options.get("depolarizing") is None and depolarizing is not None:
            self.options["depolarizing"] = depolarizing
        if readout_error is not None:
            self.options["readout_error"] = readout_error
        if self.device is not None:
            from qiskit_aer.noise import NoiseModel

            self.noise_model = NoiseModel.from_backend(self.device)
        elif depolarizing is not None or readout_error is not None:
            self.noise_model = _noise_from_rates(depolarizing, readout_error)
        else:
            self.noise_model = None
        if self.mitigation is not None and self.noise_model is None:
            import warnings

            warnings.warn("ZNE on the noiseless 'aer' backend changes nothing but the cost", stacklevel=3)
        self._primitives: dict[str, Any] = {}

    @property
    def capabilities(self) -> Capabilities:
        caps = super().capabilities
        noisy = self.noise_model is not None
        return Capabilities(
            differentiable=True, exact=self.shots is None and not noisy, shots=True, noise=noisy,
            max_qubits=self.device.num_qubits if self.device is not None else None,
            diff_methods=caps.diff_methods, devices=caps.devices, extra=caps.extra,
        )  # fmt: skip

    def hardware(self) -> Any:
        if self.device is not None:
            return self.device
        from qiskit_aer import AerSimulator

        return AerSimulator()

    def _estimator(self) -> Any:
        if "estimator" not in self._primitives:
            from qiskit_aer.primitives import EstimatorV2

            backend_options = {
                "method": "density_matrix" if self.noise_model is not None else "statevector",
                "max_parallel_threads": self.threads,
            }
            if self.noise_model is not None:
                backend_options["noise_model"] = self.noise_model
            run_options = {} if self.seed is None else {"seed_simulator": self.seed}
            self._primitives["estimator"] = EstimatorV2(
                options={"default_precision": 0.0, "backend_options": backend_options, "run_options": run_options}
            )
        return self._primitives["estimator"]

    def _sampler(self) -> Any:
        if "sampler" not in self._primitives:
            from qiskit_aer.primitives import SamplerV2

            backend_options = {"method": "statevector" if self.noise_model is None else "automatic",
                               "max_parallel_threads": self.threads}  # fmt: skip
            if self.noise_model is not None:
                backend_options["noise_model"] = self.noise_model
            self._primitives["sampler"] = SamplerV2(
                default_shots=self.shots or 1024, seed=self.seed, options={"backend_options": backend_options}
            )
        return self._primitives["sampler"]

    def estimate(self, pairs: list[tuple[Any, list[Any]]], values: list[np.ndarray], shots: int | None) -> list:
        if shots is None and self.options.get("readout_error") is not None:
            raise invalid("shots", None, "a number of shots when readout_error is set (readout errors act on samples)")
        if shots is None:
            pubs = [(c, _column(o), v) for (c, o), v in zip(pairs, values, strict=True)]
            result = self.run_job(lambda: self._estimator().run(pubs))
            return [np.moveaxis(np.asarray(r.data.evs), 0, -1) for r in result]  # each [S, B, R]
        return self._sampled(pairs, values, shots)

    def _sampled(self, pairs: list[tuple[Any, list[Any]]], values: list[np.ndarray], shots: int) -> list:
        """Expectations from real samples: one measured circuit per qubit-wise commuting basis."""
        plan = [(circuit, observables, _basis_groups(observables)) for circuit, observables in pairs]
        pubs = [
            (self._measured(circuit, basis), v)
            for (circuit, _, groups), v in zip(plan, values, strict=True)
            for basis in groups
        ]
        result = iter(self.run_job(lambda: self._sampler().run(pubs, shots=shots)))
        outs = []
        for f, (circuit, observables, groups) in enumerate(plan):
            out = np.zeros(values[f].shape[:2] + (len(observables),))
            n = circuit.num_qubits
            expectation: dict[str, np.ndarray] = {}
            for basis in groups:
                labels = sorted(basis["labels"])
                expectation.update(zip(labels, _parities(next(result).data.meas, labels, n), strict=True))
            for r, obs in enumerate(observables):
                for label, coeff in zip(obs.paulis.to_labels(), obs.coeffs, strict=True):
                    term = 1.0 if set(label) == {"I"} else expectation[label]
                    out[..., r] += float(np.real(coeff)) * term
            outs.append(out)
        return outs

    def _measured(self, circuit: Any, basis: dict) -> Any:
        key = ("measured", id(circuit), basis["key"])
        with self._lock:
            if key in self._transpiled:
                return self._transpiled[key]
        from qiskit import transpile

        measured = circuit.copy()
        n = circuit.num_qubits
        for q, letter in basis["letters"].items():
            if letter == "X":
                measured.h(q)
            elif letter == "Y":
                measured.sdg(q)
                measured.h(q)
        measured.measure_all()
        measured = transpile(measured, backend=self.hardware(), optimization_level=0, seed_transpiler=1234)
        if measured.num_clbits != n:
            raise AssertionError("measured circuit lost classical bits")
        with self._lock:
            self._transpiled[key] = measured
        return measured


def _parities(bits: Any, labels: list[str], n: int) -> list[np.ndarray]:
    """Mean of (-1)^(parity of the measured bits under each label's letters), per parameter set."""
    unpacked = np.unpackbits(bits.array, axis=-1)[..., -n:]  # [..., shots, n], clbit 0 last
    masks = np.array([[c != "I" for c in label[-n:]] for label in labels], dtype=np.uint8).T  # [n, W]
    parity = (unpacked.astype(np.uint16) @ masks) & 1  # [..., shots, W]
    means = (1.0 - 2.0 * parity).mean(axis=-2)  # [..., W]
    return [means[..., w] for w in range(len(labels))]


def _basis_groups(observables: list[Any]) -> list[dict]:
    """Greedy qubit-wise commuting groups of the Pauli labels of ``observables``."""
    groups: list[dict] = []
    for obs in observables:
        for label in obs.paulis.to_labels():
            if set(label) == {"I"}:
                continue
            n = len(label)
            letters = {n - 1 - i: c for i, c in enumerate(label) if c != "I"}
            for group in groups:
                if all(group["letters"].get(q, c) == c for q, c in letters.items()):
                    group["letters"].update(letters)
                    group["labels"].add(label)
                    break
            else:
                groups.append({"letters": dict(letters), "labels": {label}})
    for group in groups:
        group["key"] = tuple(sorted(group["letters"].items()))
    return groups


@register("ibm")
class IBMBackend(QiskitBackend):
    """IBM Quantum Runtime: local testing mode on ``fake_*`` devices, or a real account."""

    MODES = ("job", "session", "batch")

    def __init__(
        self, target: str | None = None, *, mode: str = "job", resilience_level: int = 0, **options: Any
    ) -> None:
        redact_logs()
        if not target:
            raise invalid("backend", "ibm", "'ibm:fake_<name>' (offline) or 'ibm:<device>' (an IBM Quantum account)")
        if mode not in self.MODES:
            raise invalid("mode", mode, f"one of {self.MODES}")
        if resilience_level not in (0, 1, 2):
            raise invalid("resilience_level", resilience_level, "0, 1 or 2")
        options.setdefault("shots", 4096)
        super().__init__(target, **options)
        self.options.update(mode=mode, resilience_level=resilience_level)
        self.mode, self.resilience_level = mode, resilience_level
        self.local = target.startswith("fake_")
        self.device = fake_backend(target) if self.local else self._account_backend(target)
        self._estimator_obj: Any = None

    @staticmethod
    def _account_backend(name: str) -> Any:
        try:
            from qiskit_ibm_runtime import QiskitRuntimeService

            service = QiskitRuntimeService()
        except Exception as exc:
            raise BackendUnavailableError(
                f"backend='ibm:{name}' needs an IBM Quantum account ({type(exc).__name__}: {redact(str(exc))}); "
                f"{ACCOUNT_HELP}; offline, use 'ibm:fake_<name>' such as 'ibm:fake_manila'"
            ) from None
        try:
            return service.backend(name)
        except Exception as exc:
            raise BackendNotFoundError(f"backend='ibm:{name}': {type(exc).__name__}: {redact(str(exc))}") from None

    @property
    def capabilities(self) -> Capabilities:
        caps = super().capabilities
        return Capabilities(
            differentiable=True, exact=False, shots=True, noise=True, max_qubits=self.device.num_qubits,
            diff_methods=caps.diff_methods, devices=caps.devices, extra=caps.extra,
        )  # fmt: skip

    def hardware(self) -> Any:
        return self.device

    def estimator(self) -> Any:
        """The client-side Estimator (created once; Session or Batch as configured)."""
        if self._estimator_obj is None:
            from qiskit_ibm_runtime import Batch, Session
            from qiskit_ibm_runtime.executor_estimator import Estimator

            mode = {"job": lambda d: d, "session": lambda d: Session(backend=d), "batch": lambda d: Batch(backend=d)}
            estimator = Estimator(mode=mode[self.mode](self.device))
            estimator.options.resilience_level = self.resilience_level
            estimator.options.default_precision = 1 / math.sqrt(self.shots)
            if self.resilience_level == 0:
                estimator.options.twirling.enable_gates = False
                estimator.options.twirling.enable_measure = False
            if self.seed is not None and self.local:
                estimator.options.simulator.seed_simulator = self.seed
            zne = self.mitigation
            if zne is not None and zne.engine == "ibm":
                self._ibm_zne(estimator, zne)
            self._estimator_obj = estimator
        return self._estimator_obj

    @staticmethod
    def _ibm_zne(estimator: Any, zne: Any) -> None:
        """qiskit-ibm-runtime's own ZNE (client-side resilience); warns about what it ignores."""
        import warnings

        extrapolator = {
            "linear": "linear",
            "exp": "exponential",
            "richardson": f"polynomial_degree_{len(zne.scale_factors) - 1}",
            "poly": f"polynomial_degree_{zne.order}",
        }[zne.extrapolation]
        estimator.options.resilience.zne_mitigation = True
        estimator.options.resilience.zne.noise_factors = list(zne.scale_factors)
        estimator.options.resilience.zne.extrapolator = extrapolator
        estimator.options.resilience.zne.amplifier = "gate_folding"
        if zne.folding == "global":
            warnings.warn(
                "ZNE(engine='ibm') folds two-qubit gates (amplifier 'gate_folding'), not the whole circuit: "
                "folding='global' is not available there",
                stacklevel=3,
            )
        if zne.seed is not None:
            warnings.warn("ZNE(engine='ibm') ignores seed= (IBM's folding chooses gates itself)", stacklevel=3)

    def estimate(self, pairs: list[tuple[Any, list[Any]]], values: list[np.ndarray], shots: int | None) -> list:
        pubs = [(c, _column(o), v) for (c, o), v in zip(pairs, values, strict=True)]
        precision = 1 / math.sqrt(shots or self.shots)
        result = self.run_job(lambda: self.estimator().run(pubs, precision=precision))
        return [np.moveaxis(np.asarray(r.data.evs), 0, -1) for r in result]
