"""Quantum executor checks: result layout and statistics, exact values, gradients, shots per seed,
errors, serialization and thread safety of ``QuantumExecutor.execute(tapes, ExecutionConfig(...))``.

The probe circuits are small (3 qubits, one entangling layer) and use only gates every
backend should know (RX, Rot, CNOT) and Pauli-word expectations. The reference is
hybridai's ``statevector`` backend (PennyLane's ``default.qubit`` when the subject is
``statevector`` itself), in float64.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import torch

from hybridai.core import registry
from hybridai.core.contracts import QuantumExecutor
from hybridai.core.execution import Execution, ExecutionConfig, ExecutionStats
from hybridai.testing.common import deterministic, need, saved_and_loaded, state_dict_round_trip
from hybridai.testing.suite import ConformanceError, Subject, close, expect_error, in_threads, same_as_serial

N_QUBITS = 3
WIRES = tuple(range(N_QUBITS))
BATCH = 4
SHOTS = 2000  # shots of the sampled tapes in the shots check
ATOL = 1e-10  # values and gradients of backends that claim exact=True (float64), as DESIGN.md asks


def probe_circuit(inputs, weights):
    """Angle embedding, one strongly entangling layer, three Pauli-word expectations."""
    import pennylane as qml

    qml.AngleEmbedding(inputs, wires=WIRES)
    qml.StronglyEntanglingLayers(weights, wires=WIRES)
    return [qml.expval(qml.PauliZ(0)), qml.expval(qml.PauliZ(1) @ qml.PauliZ(2)), qml.expval(qml.PauliX(1))]


def probe_single(inputs, weights):
    """The same circuit with one measurement (a tensor, not a tuple, in PennyLane's layout)."""
    import pennylane as qml

    qml.AngleEmbedding(inputs, wires=WIRES)
    qml.StronglyEntanglingLayers(weights, wires=WIRES)
    return qml.expval(qml.PauliY(0) @ qml.PauliZ(2))


def parameters(grad: bool = False) -> tuple[torch.Tensor, torch.Tensor]:
    """Seeded inputs ``[BATCH, 3]`` and weights ``[1, 3, 3]`` in float64 (fresh leaf tensors)."""
    g = torch.Generator().manual_seed(1234)
    inputs = (torch.rand(BATCH, N_QUBITS, generator=g, dtype=torch.float64) * 2 - 1) * math.pi
    weights = torch.rand(1, N_QUBITS, 3, generator=g, dtype=torch.float64) * 2 * math.pi
    return inputs.requires_grad_(grad), weights.requires_grad_(grad)


def tapes(inputs: torch.Tensor, weights: torch.Tensor, shots: int | None = None) -> list[Any]:
    """Three probe tapes: broadcast with 3 measurements, broadcast with 1, one sample with 3."""
    import pennylane as qml

    make = lambda f, x: qml.tape.make_qscript(f, shots=shots)(x, weights)  # noqa: E731
    return [make(probe_circuit, inputs), make(probe_single, inputs), make(probe_circuit, inputs[0])]


def stack(result: Any) -> torch.Tensor:
    """One tape's result (a tensor or a tuple of tensors) as one float64 tensor ``[n_measurements, ...]``."""
    parts = result if isinstance(result, tuple | list) else (result,)
    return torch.stack([torch.as_tensor(p).to(torch.float64) for p in parts])


def execute(backend: Any, batch: list[Any], **config: Any) -> Execution:
    """``backend.execute(batch, ExecutionConfig(wires=WIRES, **config))``, checked to be an ``Execution``
    with one result per tape."""
    run = backend.execute(batch, ExecutionConfig(wires=WIRES, **config))
    if not isinstance(run, Execution):
        raise ConformanceError(f"execute() returned {type(run).__name__}; accepted: hybridai.backends.Execution")
    if not isinstance(run.results, list | tuple) or len(run.results) != len(batch):
        got = len(run.results) if isinstance(run.results, list | tuple) else type(run.results).__name__
        raise ConformanceError(f"execute({len(batch)} tapes) returned Execution.results of {got}: one per tape")
    return run


def reference_backend(s: Subject):
    return registry.get("pennylane:default.qubit" if s.family == "statevector" else "statevector")


def reference(s: Subject) -> tuple[list[torch.Tensor], list[torch.Tensor]]:
    """Reference values of the three probe tapes and gradients of ``loss`` on the first (computed once)."""

    def compute():
        backend = reference_backend(s)
        inputs, weights = parameters(grad=True)
        results = execute(backend, tapes(inputs, weights)).results
        loss(results[0]).backward()
        return [stack(r).detach() for r in results], [inputs.grad, weights.grad]

    return s.once("quantum-reference", compute)


def coefficients() -> torch.Tensor:
    """Fixed weights ``[3, BATCH]`` of unit norm: the probe loss is ``sum(c * results)``."""
    c = torch.randn(3, BATCH, generator=torch.Generator().manual_seed(7), dtype=torch.float64)
    return c / c.norm()


def loss(result: Any) -> torch.Tensor:
    return (stack(result) * coefficients()).sum()


def run(
    backend: Any, grad: bool = False, shots: int | None = None, first_only: bool = False, seed: int | None = None
) -> tuple[list[torch.Tensor], list[Any]]:
    """Values of the probe tapes (or the first only) on ``backend`` and, with ``grad``, gradients of the
    loss on the first. ``shots`` go on the tapes and in the config (as QuantumLayer does), ``seed`` in the
    config."""
    inputs, weights = parameters(grad)
    batch = tapes(inputs, weights, shots)
    results = execute(backend, batch[:1] if first_only else batch, shots=shots, seed=seed).results
    grads: list[Any] = []
    if grad:
        value = loss(results[0])
        if not value.requires_grad:
            raise ConformanceError("claims differentiable=True but the results carry no autograd graph")
        value.backward()
        grads = [inputs.grad, weights.grad]
    return [stack(r).detach() for r in results], grads


def _check_stats(stats: Any) -> str:
    if not isinstance(stats, ExecutionStats):
        raise ConformanceError(f"Execution.stats is {type(stats).__name__}; accepted: hybridai.backends.ExecutionStats")
    for name in ("circuits", "calls", "shots"):
        value = getattr(stats, name)
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise ConformanceError(f"Execution.stats.{name}={value!r}; accepted: a non-negative int")
    if isinstance(stats.seconds, bool) or not isinstance(stats.seconds, int | float) or not stats.seconds >= 0:
        raise ConformanceError(f"Execution.stats.seconds={stats.seconds!r}; accepted: a non-negative number")
    return f"{stats.circuits} circuits, {stats.calls} calls, {stats.shots} shots"


def layout(s: Subject) -> str:
    """execute() returns an Execution: results in PennyLane's layout (a tuple per tape with several
    measurements, batch dimension first) and ExecutionStats with non-negative counts."""
    with torch.no_grad():
        run = execute(s.make(), tapes(*parameters()))
    results = run.results
    expected = [(3, (BATCH,)), (None, (BATCH,)), (3, ())]
    for i, (result, (n, shape)) in enumerate(zip(results, expected, strict=True)):
        parts = result if n is not None else (result,)
        if n is not None and not (isinstance(result, tuple | list) and len(result) == n):
            raise ConformanceError(f"tape {i} has {n} measurements: expected a tuple of {n}, got {type(result)}")
        if n is None and not torch.is_tensor(result):
            raise ConformanceError(f"tape {i} has one measurement: expected a tensor, got {type(result).__name__}")
        for part in parts:
            if not torch.is_tensor(part):
                raise ConformanceError(f"tape {i}: results must be torch tensors, got {type(part).__name__}")
            if tuple(part.shape) != shape:
                raise ConformanceError(f"tape {i}: result of shape {tuple(part.shape)}, expected {shape}")
            if not torch.isfinite(part).all() or part.abs().max() > 1 + 1e-6:
                raise ConformanceError(f"tape {i}: Pauli expectations outside [-1, 1]: {part.tolist()}")
    stats = _check_stats(run.stats)
    return f"3 tapes: tuple of 3 x [{BATCH}], tensor [{BATCH}], tuple of 3 scalars; stats: {stats}"


def exact_values(s: Subject) -> str:
    """A backend claiming exact=True gives the reference values to ATOL (float64)."""
    need(s.capabilities.exact, "claims exact=False")
    expected, _ = reference(s)
    with torch.no_grad():
        got, _ = run(s.make())
    worst = max(
        close(g, e, s.cache.get("atol", ATOL), f"claims exact=True but values of tape {i}", rtol=0)
        for i, (g, e) in enumerate(zip(got, expected, strict=True))
    )
    return f"max |difference| {worst:.1e} from {reference_backend(s).name!r}"


def _shifted(backend: Any, picks: list[tuple[int, int, int]], seed: int | None) -> tuple[torch.Tensor, torch.Tensor]:
    """Parameter-shift derivatives of the loss from the backend's own values: w.r.t. every input (one
    broadcast tape shifting each feature of every sample) and w.r.t. the weights ``picks``; ONE execute call."""
    import pennylane as qml

    inputs, weights = parameters()
    shifted = []
    for i in range(N_QUBITS):
        for sign in (1.0, -1.0):
            x = inputs.clone()
            x[:, i] += sign * math.pi / 2
            shifted.append(x)
    batch = [qml.tape.make_qscript(probe_circuit)(torch.cat(shifted), weights)]
    for index in picks:
        for sign in (1.0, -1.0):
            w = weights.clone()
            w[index] += sign * math.pi / 2
            batch.append(qml.tape.make_qscript(probe_circuit)(inputs, w))
    with torch.no_grad():
        values = [stack(r) for r in execute(backend, batch, seed=seed).results]
    c = coefficients()
    by_input = values[0].reshape(3, N_QUBITS, 2, BATCH)  # [measurement, feature, sign, sample]
    d_inputs = ((by_input[:, :, 0] - by_input[:, :, 1]) / 2 * c[:, None]).sum(0)  # [feature, sample]
    d_weights = torch.stack([((values[1 + 2 * k] - values[2 + 2 * k]) / 2 * c).sum() for k in range(len(picks))])
    return d_inputs, d_weights


def gradients(s: Subject) -> str:
    """differentiable=True: gradients equal the reference (exact) or the shift rule on its own values."""
    caps = s.capabilities
    need(caps.differentiable, "claims differentiable=False")
    atol = s.cache.get("atol", ATOL)
    if caps.exact:
        _, expected = reference(s)
        _, got = run(s.make(), grad=True)
        for name, g, e in zip(("inputs", "weights"), got, expected, strict=True):
            if g is None:
                raise ConformanceError(f"claims differentiable=True but no gradient reached the {name}")
            close(g, e, atol, f"claims exact and differentiable but gradients w.r.t. {name}")
        return f"gradients w.r.t. inputs and weights equal {reference_backend(s).name!r} to {atol:g}"
    backend, seed = s.make(), (5 if caps.shots else None)
    _, got = run(backend, grad=True, first_only=True, seed=seed)
    if any(g is None for g in got):
        raise ConformanceError("claims differentiable=True but no gradient reached the inputs or the weights")
    order = torch.randperm(N_QUBITS * 3, generator=torch.Generator().manual_seed(3))[:3].tolist()
    picks = [(0, p // 3, p % 3) for p in order]
    exp_inputs, exp_weights = _shifted(backend, picks, seed)
    sigma = _sigma(backend, seed)
    tol = max(6 * sigma, 1e-7)
    how = "deterministic values" if sigma == 0 else f"sampled values, sigma {sigma:.3g} per expectation"
    close(got[0].T, exp_inputs, tol, "gradients w.r.t. inputs vs the shift rule on the backend's own values")
    close(
        torch.stack([got[1][i] for i in picks]), exp_weights, tol,
        "gradients w.r.t. weights vs the shift rule on the backend's own values",
    )  # fmt: skip
    return f"not exact: gradients equal the parameter-shift rule on its own {how} (tolerance {tol:.2g})"


def _sigma(backend: Any, seed: int | None) -> float:
    """Standard deviation of one expectation: 1/sqrt(shots) when the backend samples by default (its
    ``shots`` attribute or option), 0 when its values repeat exactly, else measured from repetitions."""
    shots = getattr(backend, "shots", None) or backend.options.get("shots")
    if isinstance(shots, int) and shots > 0:
        return 1 / math.sqrt(shots)
    with torch.no_grad():
        repeat = [run(backend, first_only=True, seed=seed)[0][0] for _ in range(3)]
    if deterministic(repeat):
        return 0.0
    return 3 * float(torch.stack(repeat).std(0).max())


def shots_per_seed(s: Subject) -> str:
    """shots=True: ExecutionConfig(seed=11) gives the same samples on every call and every instance,
    seed=12 others (the seed travels with the call: no random stream kept between calls)."""
    caps = s.capabilities
    need(caps.shots, "claims shots=False")
    backend = s.make()
    with torch.no_grad():
        sample = lambda b, seed: run(b, shots=SHOTS, seed=seed)[0][0]  # noqa: E731
        first, again = sample(backend, 11), sample(backend, 11)
        fresh, changed = sample(s.make(), 11), sample(backend, 12)
    for what, other in (("a second call on the same instance", again), ("another instance", fresh)):
        if not torch.equal(first, other):
            raise ConformanceError(
                f"seed=11 gave different samples on {what} (max difference {float((first - other).abs().max()):.3g}):"
                " the same ExecutionConfig.seed must give the same samples (no random stream kept between calls)"
            )
    if torch.equal(first, changed):
        raise ConformanceError(
            f"seed=11 and seed=12 gave identical values with shots={SHOTS}: is the seed (or are the shots) ignored?"
        )
    detail = f"shots={SHOTS}: seed 11 identical on a second call and another instance, seed 12 differs"
    if not caps.noise:
        expected, _ = reference(s)
        close(first, expected[0], 6 / math.sqrt(SHOTS) * 2, f"sampled values (shots={SHOTS}) vs exact values")
        detail += "; samples within 12/sqrt(shots) of exact"
    return detail


def input_errors(s: Subject) -> str:
    """A diff_method it does not accept and a negative shots are HybridAIErrors naming the argument."""
    backend = s.make()
    if not isinstance(backend, QuantumExecutor):
        raise ConformanceError(f"{type(backend).__name__} is not a QuantumExecutor: quantum checks do not apply")
    got = [
        expect_error(
            lambda: backend.execute(
                tapes(*parameters())[:1], ExecutionConfig(wires=WIRES, diff_method="no-such-method")
            ),
            "execute(..., ExecutionConfig(diff_method='no-such-method'))",
            must_name=("diff_method", "no-such-method"),
        )
    ]
    if s.capabilities.shots:
        got.append(expect_error(lambda: s.make(shots=-5).capabilities, f"get({s.name!r}, shots=-5)", ("shots",)))
    return f"bad diff_method -> {got[0]}" + (f"; shots=-5 -> {got[1]}" if len(got) > 1 else "")


def _layer(s: Subject, seed_init: int, **extra: Any) -> Any:
    from hybridai.quantum.layer import QuantumLayer

    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed_init)
        shapes = {"weights": (1, N_QUBITS, 3)}
        return QuantumLayer(probe_circuit, N_QUBITS, shapes, backend=s.name, **s.options, **extra)


def _reproducible(s: Subject) -> tuple[dict[str, Any], bool]:
    """Backend options that make default runs reproducible (``seed=`` when they are noisy or sampled) and
    whether values can be compared at all."""
    caps = s.capabilities
    if caps.exact:
        return {}, True
    if caps.shots or caps.noise:
        return {"seed": 11}, True
    return {}, False


def serialization(s: Subject) -> str:
    """A QuantumLayer on this backend survives torch.save/torch.load and a state_dict round trip."""
    extra, comparable = _reproducible(s)
    layer = _layer(s, 0, **extra).double()
    loaded = saved_and_loaded(layer)
    x = parameters()[0]
    with torch.no_grad():
        first, after_load = layer(x), loaded(x)
    if loaded.backend != layer.backend:
        raise ConformanceError(f"after torch.load the layer's backend is {loaded.backend!r}, not {layer.backend!r}")
    fresh = _layer(s, 1, **extra).double()
    state_dict_round_trip(layer, fresh)
    with torch.no_grad():
        restored = fresh(x)
    for name, p in layer.named_parameters():
        if not torch.equal(p, dict(fresh.named_parameters())[name]):
            raise ConformanceError(f"parameter {name} changed in the state_dict round trip")
    if not comparable:
        return "saved, loaded and run (values not compared: not exact and no seed)"
    close(after_load, first, 1e-12, "outputs after torch.save/torch.load")
    close(restored, first, 1e-12, "outputs after a state_dict round trip")
    return "torch.save/torch.load and state_dict round trip give the same outputs" + (" (seeded)" if extra else "")


def _job(s: Subject, k: int = 0) -> Callable[[Any], list[torch.Tensor | None]]:
    """Job ``k``: two rounds of values (and gradients when differentiable) of the first probe tape with
    parameters of its own; odd jobs of a backend claiming shots sample with ExecutionConfig(shots, seed).

    The tapes are built here, in the calling thread: PennyLane records tapes in a process-global queue,
    so building them in the worker threads would test PennyLane's queuing rather than the backend."""
    caps = s.capabilities
    sampled = caps.shots and k % 2 == 1
    rounds = []
    for _ in range(2):
        inputs, weights = parameters(grad=caps.differentiable and not sampled)
        inputs = (inputs.detach() + 0.1 * k).requires_grad_(inputs.requires_grad)
        rounds.append((inputs, weights, tapes(inputs, weights, SHOTS if sampled else None)[:1]))

    def work(backend: Any) -> list[torch.Tensor | None]:
        out: list[torch.Tensor | None] = []
        for inputs, weights, batch in rounds:
            if sampled:
                with torch.no_grad():
                    results = execute(backend, batch, shots=SHOTS, seed=100 + k).results
            else:
                results = execute(backend, batch).results
            out.append(stack(results[0]).detach())
            if inputs.requires_grad:
                value = loss(results[0])
                if not value.requires_grad:
                    raise ConformanceError("claims differentiable=True but the results carry no autograd graph")
                value.backward()
                out += [inputs.grad, weights.grad]
        return out

    return work


def thread_safety(s: Subject) -> str:
    """Two instances in two threads give what they give one after the other (values and gradients)."""
    extra, comparable = _reproducible(s)
    need(comparable, "values are not reproducible (not exact and no seed): nothing to compare")
    serial = [_job(s)(s.make(**extra)), _job(s)(s.make(**extra))]
    a, b, jobs = s.make(**extra), s.make(**extra), [_job(s), _job(s)]
    same_as_serial(in_threads(lambda: jobs[0](a), lambda: jobs[1](b)), serial)
    what = "values and gradients" if s.capabilities.differentiable else "values"
    return f"2 instances in 2 threads: {what} as when run serially"


def shared_instance(s: Subject) -> str:
    """ONE instance used by 4 threads at once gives what 4 fresh instances give one after the other
    (backends hold no per-call state: shots, seed and results travel with each call)."""
    extra, comparable = _reproducible(s)
    need(comparable, "values are not reproducible (not exact and no seed): nothing to compare")
    serial = [_job(s, k)(s.make(**extra)) for k in range(4)]
    shared, jobs = s.make(**extra), [_job(s, k) for k in range(4)]
    same_as_serial(in_threads(*(lambda k=k: jobs[k](shared) for k in range(4))), serial)
    caps = s.capabilities
    what = ("values and gradients" if caps.differentiable else "values") + (", sampled jobs" if caps.shots else "")
    return f"1 instance in 4 threads x 2 rounds: {what} as 4 fresh instances serially"


CHECKS = (
    ("result layout", layout),
    ("exact values", exact_values),
    ("gradients", gradients),
    ("shots per seed", shots_per_seed),
    ("errors on bad input", input_errors),
    ("serialization", serialization),
    ("thread safety", thread_safety),
    ("shared instance", shared_instance),
)
