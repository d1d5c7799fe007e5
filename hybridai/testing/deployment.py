"""Chip compiler checks: they compile whole networks (``ChipCompiler.compile``) into a ``CompiledNetwork``.

A chip that declares the layer kinds it compiles (``capabilities.layers``, what ``hybridai.deploy`` cuts a model
by) must list every kind of the probe it compiles, and ``capabilities.frames`` must match its input layout.
Three probe networks: a spiking one (Linear -> LIF -> Linear -> LIF, reset to zero, binary input
spikes ``[T, B, F]``), a quantizable ReLU one (Linear -> ReLU -> Linear, inputs ``[B, F]`` in
[0, 1]) and a sigma-delta one (SigmaDelta -> Linear -> SigmaDelta -> Linear, frames ``[T, B, F]`` in
[0, 1]). A chip must compile at least one; the others may be refused with a HybridAIError.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import torch
from torch import nn

from hybridai.core.contracts import ChipCompiler
from hybridai.core.errors import HybridAIError
from hybridai.testing.suite import ConformanceError, Subject, expect_error, in_threads, seeded


class ProbeNetwork(NamedTuple):
    name: str
    build: Callable[[], nn.Module]
    inputs: Callable[[], torch.Tensor]
    time_major: bool  # inputs [T, B, F] (else [B, F])


def _spiking() -> nn.Module:
    from hybridai.spiking import LIF

    return seeded(
        3, lambda: nn.Sequential(nn.Linear(6, 5), LIF(0.8, reset="zero"), nn.Linear(5, 3), LIF(0.8, reset="zero"))
    )


def _spikes() -> torch.Tensor:
    return (torch.rand(8, 4, 6, generator=torch.Generator().manual_seed(4)) < 0.5).float()


def _relu() -> nn.Module:
    return seeded(3, lambda: nn.Sequential(nn.Linear(6, 5), nn.ReLU(), nn.Linear(5, 3)))


def _values() -> torch.Tensor:
    return torch.rand(4, 6, generator=torch.Generator().manual_seed(4))


def _sigma_delta() -> nn.Module:
    from hybridai.spiking import SigmaDelta

    def build() -> nn.Module:
        return nn.Sequential(
            SigmaDelta(threshold=0.05, scale=2**-6, input="value"),
            nn.Linear(6, 5, bias=False),
            SigmaDelta(threshold=0.05, scale=2**-8, features=5, bias=0.1),
            nn.Linear(5, 3, bias=False),
        )

    return seeded(3, build)


def _frames() -> torch.Tensor:
    return torch.rand(8, 4, 6, generator=torch.Generator().manual_seed(4))


PROBES = (
    ProbeNetwork("spiking", _spiking, _spikes, True),
    ProbeNetwork("ReLU", _relu, _values, False),
    ProbeNetwork("sigma-delta", _sigma_delta, _frames, True),
)


def _chip(s: Subject) -> ChipCompiler:
    """A fresh instance of the subject, which these checks run only for chip compilers."""
    backend = s.make()
    if not isinstance(backend, ChipCompiler):
        raise ConformanceError(f"{type(backend).__name__} is not a ChipCompiler")
    return backend


def _compile(backend: ChipCompiler, probe: ProbeNetwork, model: nn.Module | None = None) -> Any:
    """``backend.compile`` of ``model`` (default: the probe's network, built now), with the probe's inputs as the
    calibration batch where the chip takes one."""
    calibration = probe.inputs() if backend.capabilities.takes_calibration else None
    return backend.compile(probe.build() if model is None else model, calibration=calibration)


def _compiled(s: Subject) -> tuple[ProbeNetwork, Any]:
    """The first probe the backend compiles, and its compiled network (cached)."""

    def compile_one() -> tuple[ProbeNetwork, Any]:
        refusals = []
        for probe in PROBES:
            try:
                return probe, _compile(_chip(s), probe)
            except HybridAIError as exc:
                refusals.append(f"{probe.name}: {type(exc).__name__}: {exc}")
        raise ConformanceError("compiled no probe network; " + "; ".join(refusals))

    return s.once("compiled", compile_one)


def compile_and_run(s: Subject) -> str:
    """compile() a probe network; run() returns outputs in the float model's layout and sane activity counts."""
    from hybridai.core.chip import ChipRun

    probe, compiled = _compiled(s)
    x = probe.inputs()
    run = compiled.run(x)
    if not isinstance(run, ChipRun):
        raise ConformanceError(f"run() returned {type(run).__name__}; accepted: hybridai.core.chip.ChipRun")
    with torch.no_grad():
        reference = probe.build()(x)
    if tuple(run.outputs.shape) != tuple(reference.shape) or not torch.isfinite(run.outputs).all():
        raise ConformanceError(
            f"outputs of shape {tuple(run.outputs.shape)}; the float model gives {tuple(reference.shape)}"
        )
    batch = x.shape[1] if probe.time_major else x.shape[0]
    if run.samples != batch or run.time_steps < 1 or run.latency_steps < 0 or not run.layers:
        raise ConformanceError(
            f"samples={run.samples} (batch {batch}), time_steps={run.time_steps}, latency_steps={run.latency_steps}, "
            f"{len(run.layers)} layers: not a consistent ChipRun"
        )
    for layer in run.layers:
        if not (0 <= layer.active_updates <= layer.neuron_updates and 0 <= layer.spikes and layer.synaptic_ops >= 0):
            raise ConformanceError(f"inconsistent activity counts {layer}")
    return f"{probe.name} probe: outputs {tuple(run.outputs.shape)}, {len(run.layers)} layers counted; " + _declared(
        s, probe
    )


def _declared(s: Subject, probe: ProbeNetwork) -> str:
    """``capabilities.layers`` (what ``hybridai.deploy`` cuts a model by) names known kinds and covers the probe the
    chip compiled; ``frames`` agrees with the probe's layout."""
    from hybridai.spiking.graph import KINDS, SKIPPED, kind_of

    caps = s.make().capabilities
    known = set(KINDS)
    unknown = sorted(set(caps.layers) - known)
    if unknown:
        raise ConformanceError(f"capabilities.layers names {unknown}; accepted: kinds of {sorted(known)}")
    if not caps.layers:
        return "no layer kinds declared (deploy sends it the spiking region whole)"
    used = {kind_of(m) for m in probe.build().modules() if not isinstance(m, (nn.Sequential, *SKIPPED))}
    missing = sorted(k for k in used - set(caps.layers) if k is not None)
    if missing:
        raise ConformanceError(
            f"compile() took the {probe.name} probe, whose {missing} layers capabilities.layers {list(caps.layers)} "
            "does not list: hybridai.deploy would cut them away from the chip"
        )
    if caps.frames == probe.time_major:
        raise ConformanceError(
            f"capabilities.frames={caps.frames}, but the chip compiled the {probe.name} probe, whose input is "
            f"{'time-major [T, B, F]' if probe.time_major else 'frames [B, F]'}"
        )
    return f"declared layers {list(caps.layers)} cover the probe"


def determinism(s: Subject) -> str:
    """Two runs of one compiled network, and a second compile, give identical outputs and activity."""
    probe, compiled = _compiled(s)
    first, second = compiled.run(probe.inputs()), compiled.run(probe.inputs())
    again = _compile(_chip(s), probe).run(probe.inputs())
    for name, other in (("second run", second), ("second compile", again)):
        if not torch.equal(first.outputs, other.outputs) or first.layers != other.layers:
            raise ConformanceError(f"the {name} gave different outputs or activity")
    return "repeat runs and recompiles identical"


def bad_input(s: Subject) -> str:
    """compile(non-module), compile(unsupported layer), run(wrong width) and, on a chip that declares it takes no
    calibration batch, compile(calibration=batch) are HybridAIErrors."""
    backend = _chip(s)
    probe, compiled = _compiled(s)
    x = probe.inputs()[..., :-1]
    got = [
        expect_error(lambda: backend.compile("not a model"), "compile('not a model')", ("model",)),  # type: ignore[arg-type]
        expect_error(lambda: backend.compile(nn.Sequential(nn.Tanh())), "compile(Sequential(Tanh()))", ("Tanh",)),
        expect_error(lambda: compiled.run(x), f"run() on input of shape {tuple(x.shape)}", ("shape",)),
    ]
    if not backend.capabilities.takes_calibration:  # declared: a batch given anyway is refused, not ignored
        batch = probe.inputs()
        got.append(expect_error(lambda: backend.compile(probe.build(), calibration=batch), "compile(calibration=...)",
                                ("calibration",)))  # fmt: skip
    return "; ".join(got)


def shared_instance(s: Subject) -> str:
    """ONE instance compiles and runs the probe in 4 threads at once: outputs and activity as a fresh
    instance gives (compilers hold no per-call state)."""
    probe, _ = _compiled(s)
    inputs = [probe.inputs()[:, k:] if probe.time_major else probe.inputs()[k:] for k in range(3)] + [probe.inputs()]

    models = [probe.build() for _ in range(2 * len(inputs))]  # here: seeding torch is not thread-safe

    def job(backend: Any, model: nn.Module, x: torch.Tensor) -> Any:
        return _compile(backend, probe, model).run(x)

    serial = [job(s.make(), models[k], x) for k, x in enumerate(inputs)]
    shared = s.make()
    threaded = in_threads(*(lambda k=k, x=x: job(shared, models[4 + k], x) for k, x in enumerate(inputs)))
    for k, (got, expected) in enumerate(zip(threaded, serial, strict=True)):
        if not torch.equal(got.outputs, expected.outputs) or got.layers != expected.layers:
            raise ConformanceError(f"thread {k} gave other outputs or activity than a fresh instance run serially")
    return "1 instance compiling and running in 4 threads: outputs and activity as serially"


CHECKS = (
    ("compile and run", compile_and_run),
    ("determinism", determinism),
    ("errors on bad input", bad_input),
    ("shared instance", shared_instance),
)
