"""Placement checks (classical and spiking domains): backends that ``place(module)`` torch modules.

A classical backend receives plain modules (here a small float64 MLP) through
``hybridai.place(model, classical=...)``; a spiking backend receives spiking layers
(here ``LIF`` after a Linear layer, time-major input) through ``place(model, spiking=...)``.
The reference is the same model left on plain torch (CPU, float64).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

import torch
from torch import nn

from hybridai.core.contracts import Placement
from hybridai.core.module import HybridModule, place, summary
from hybridai.testing.common import need, saved_and_loaded, seed_pair, state_dict_round_trip
from hybridai.testing.suite import ConformanceError, Subject, close, expect_error, in_threads, same_as_serial, seeded

ATOL = 1e-10  # float64 outputs and gradients of backends that claim exact=True


@dataclass(frozen=True)
class ProbeModel:
    domain: str
    build: Callable[[], nn.Module]
    inputs: Callable[[], torch.Tensor]
    finite_differences: bool  # False for spikes: a step function has no useful finite differences


def _mlp(seed: int = 0) -> nn.Module:
    return seeded(seed, lambda: nn.Sequential(nn.Linear(8, 16), nn.Tanh(), nn.Linear(16, 4))).double()


def _spiking(seed: int = 0) -> nn.Module:
    from hybridai.spiking import LIF

    return seeded(seed, lambda: nn.Sequential(nn.Linear(4, 5), LIF(beta=0.8, threshold=0.5, output="both"))).double()


def _x(shape: tuple[int, ...], scale: float) -> torch.Tensor:
    g = torch.Generator().manual_seed(99)
    return (torch.rand(*shape, generator=g, dtype=torch.float64) * 2 - 1) * scale


class _Build(Protocol):
    """Builds a probe model; another ``seed`` gives other initial weights."""

    def __call__(self, seed: int = 0) -> nn.Module: ...


PROBES: dict[str, tuple[ProbeModel, _Build]] = {
    "classical": (ProbeModel("classical", _mlp, lambda: _x((5, 8), 1.0), True), _mlp),
    "spiking": (ProbeModel("spiking", _spiking, lambda: _x((6, 3, 4), 2.0), False), _spiking),
}


def _probe(domain: str) -> tuple[ProbeModel, _Build]:
    return PROBES[domain]


def _placed(s: Subject, domain: str, model: nn.Module, **extra: Any) -> nn.Module:
    return place(model, **{domain: s.name}, **{**s.options, **extra})


def _random(s: Subject, domain: str) -> bool:
    """Whether a placed probe gives different outputs on two runs of the same input (noise): such a
    backend must take ``seed=`` (PlacementCapabilities has no noise flag: the outputs tell)."""

    def compute() -> bool:
        probe, build = _probe(domain)
        placed = _placed(s, domain, build())
        with torch.no_grad():
            return not torch.equal(_forward(placed, probe.inputs()), _forward(placed, probe.inputs()))

    return s.once(f"{domain}-random", compute)


def _flat(out: Any) -> torch.Tensor:
    parts = out if isinstance(out, tuple | list) else (out,)
    return torch.cat([p.reshape(-1) for p in parts])


def _forward(model: nn.Module, x: torch.Tensor) -> torch.Tensor:
    tensors = list(model.parameters()) + list(model.buffers())
    device = tensors[0].device if tensors else x.device
    return _flat(model(x.to(device))).cpu()


def _coefficients(n: int) -> torch.Tensor:
    c = torch.randn(n, generator=torch.Generator().manual_seed(5), dtype=torch.float64)
    return c / c.norm()


def _grads(model: nn.Module, x: torch.Tensor) -> tuple[torch.Tensor | None, list[torch.Tensor | None]]:
    x = x.clone().requires_grad_(True)
    out = _forward(model, x)
    (out * _coefficients(out.numel())).sum().backward()
    return x.grad, [None if p.grad is None else p.grad.cpu() for p in model.parameters()]


def _of(module: nn.Module, domain: str) -> bool:
    return isinstance(module, HybridModule) and module.domain == domain


def placement(domain: str) -> Callable[[Subject], str]:
    def check(s: Subject) -> str:
        """place() returns a runnable model on declared devices; the summary names the backend of its
        hybridai layers (wrapped or spiking layers)."""
        probe, build = _probe(domain)
        placed = _placed(s, domain, build())
        out = _forward(placed, probe.inputs())
        reference = _forward(build(), probe.inputs())
        if out.shape != reference.shape or not torch.isfinite(out).all():
            raise ConformanceError(f"placed model gave {tuple(out.shape)} (finite: {bool(torch.isfinite(out).all())})")
        table = summary(placed, show=False)
        wrapped = [m for m in placed.modules() if _of(m, domain)]
        if wrapped and s.family not in table:  # plain modules that were only moved show their torch device
            raise ConformanceError(f"hybridai.summary of the placed model does not name {s.family!r}:\n{table}")
        devices = s.capabilities.devices
        owners = [placed] if domain == "classical" else [m for m in placed.modules() if _of(m, domain)]
        for owner in owners:
            for name, tensor in list(owner.named_parameters()) + list(owner.named_buffers()):
                if tensor.device.type not in {torch.device(d).type for d in devices}:
                    raise ConformanceError(f"{name} is on {tensor.device}, not on a declared device {devices}")
        kinds = sorted({type(m).__name__ for m in placed.modules() if isinstance(m, HybridModule)})
        names = f"summary names {s.family!r}" if wrapped else "modules moved (summary shows their torch device)"
        return f"{domain} probe placed; {names}; hybridai layers: {', '.join(kinds) or 'none'}"

    return check


def exact_values(domain: str) -> Callable[[Subject], str]:
    def check(s: Subject) -> str:
        """exact=True: outputs equal the same model on plain torch (float64)."""
        need(s.capabilities.exact, "claims exact=False")
        probe, build = _probe(domain)
        with torch.no_grad():
            got = _forward(_placed(s, domain, build()), probe.inputs())
            expected = _forward(build(), probe.inputs())
        worst = close(got, expected, s.cache.get("atol", ATOL), "claims exact=True but outputs", rtol=1e-12)
        return f"max |difference| {worst:.1e} from plain torch"

    return check


def gradients(domain: str) -> Callable[[Subject], str]:
    def check(s: Subject) -> str:
        """differentiable=True: gradients equal finite differences (classical) and, when exact, plain torch."""
        caps = s.capabilities
        need(caps.differentiable, "claims differentiable=False")
        probe, build = _probe(domain)
        noisy = _random(s, domain)
        placed = _placed(s, domain, build(), **({"seed": 5} if noisy else {}))
        gx, maybe_gp = _grads(placed, probe.inputs())
        gp = [g for g in maybe_gp if g is not None]
        if gx is None or len(gp) < len(maybe_gp):
            raise ConformanceError("claims differentiable=True but no gradient reached the input or a parameter")
        if not torch.isfinite(gx).all() or not all(torch.isfinite(g).all() for g in gp):
            raise ConformanceError("gradients contain NaN or inf")
        done = []
        if probe.finite_differences and not noisy:
            fd, analytic = _directional(placed, probe.inputs(), gx, gp)
            close(analytic, fd, 1e-6 * (1 + abs(float(fd))), "directional derivative vs central finite differences")
            done.append("finite differences")
        if caps.exact:
            rx, rp = _grads(build(), probe.inputs())
            atol = s.cache.get("atol", ATOL)
            close(gx, rx, atol, "claims exact and differentiable but input gradients", rtol=1e-9)
            if [tuple(g.shape) for g in gp] == [None if r is None else tuple(r.shape) for r in rp]:
                for i, (g, r) in enumerate(zip(gp, rp, strict=True)):
                    close(g, r, atol, f"claims exact and differentiable but gradients of parameter {i}", rtol=1e-9)
            done.append("plain torch")
        if not done:
            return "gradients flow and are finite (noisy: not compared)"
        return f"gradients w.r.t. input and parameters equal {' and '.join(done)}"

    return check


def _directional(model: nn.Module, x: torch.Tensor, gx: torch.Tensor, gp: list[torch.Tensor]):
    """(central difference along a random direction, the same derivative from the gradients)."""
    g = torch.Generator().manual_seed(17)
    vx = torch.randn(x.shape, generator=g, dtype=torch.float64)
    params = list(model.parameters())
    vp = [torch.randn(p.shape, generator=g, dtype=torch.float64).to(p) for p in params]
    h = 1e-6

    def loss_at(sign: float) -> torch.Tensor:
        with torch.no_grad():
            for p, v in zip(params, vp, strict=True):
                p.add_(sign * h * v)
            out = _forward(model, x + sign * h * vx)
            for p, v in zip(params, vp, strict=True):
                p.sub_(sign * h * v)
        return (out * _coefficients(out.numel())).sum()

    fd = (loss_at(1.0) - loss_at(-1.0)) / (2 * h)
    analytic = (gx * vx).sum() + sum((a * v.cpu()).sum() for a, v in zip(gp, vp, strict=True))
    return fd, analytic


def noise_per_seed(domain: str) -> Callable[[Subject], str]:
    def check(s: Subject) -> str:
        """Outputs that differ run to run (noise): the same seed= gives the same outputs, another seed others."""
        need(_random(s, domain), "outputs repeat exactly: nothing random to seed")
        probe, build = _probe(domain)
        backends = seed_pair(s, "random outputs")
        with torch.no_grad():
            a, b, c = (_forward(place(build(), **{domain: backend}), probe.inputs()) for backend in backends)
        if not torch.equal(a, b):
            raise ConformanceError(
                f"two instances with seed=11 gave different outputs (max difference {float((a - b).abs().max()):.3g})"
            )
        if torch.equal(a, c):
            raise ConformanceError("seed=11 and seed=12 gave identical outputs: is the seed ignored?")
        return "seed 11 twice identical, seed 12 differs"

    return check


def input_errors(domain: str) -> Callable[[Subject], str]:
    def check(s: Subject) -> str:
        """place(non-module) and, for wrapped layers, an input of the wrong width are HybridAIErrors."""
        backend = s.make()
        if not isinstance(backend, Placement):
            raise ConformanceError(f"{type(backend).__name__} is not a Placement: placement checks do not apply")
        got = [expect_error(lambda: backend.place("not a module"), "place('not a module')", ("module",))]  # type: ignore[arg-type]
        probe, build = _probe(domain)
        placed = _placed(s, domain, build())
        wrapped = [m for m in placed.modules() if _of(m, domain)]
        if domain == "classical" and wrapped:
            x = probe.inputs()[:, :-1]
            got.append(expect_error(lambda: placed(x), f"placed model on input of shape {tuple(x.shape)}", ("shape",)))
        return f"place(non-module) -> {got[0]}" + (f"; wrong input width -> {got[1]}" if len(got) > 1 else "")

    return check


def _reproducible(s: Subject, domain: str) -> dict[str, Any]:
    """``seed=`` for a backend whose outputs are random, else nothing (deterministic even when inexact)."""
    return {"seed": 11} if _random(s, domain) else {}


def serialization(domain: str) -> Callable[[Subject], str]:
    def check(s: Subject) -> str:
        """A placed model survives torch.save/torch.load and a state_dict round trip with the same outputs."""
        probe, build = _probe(domain)
        extra = _reproducible(s, domain)
        placed = _placed(s, domain, build(), **extra)
        loaded = saved_and_loaded(placed)
        with torch.no_grad():
            first, after_load = _forward(placed, probe.inputs()), _forward(loaded, probe.inputs())
        close(after_load, first, 1e-12, "outputs after torch.save/torch.load")
        if summary(loaded, show=False) != summary(placed, show=False):
            raise ConformanceError("hybridai.summary differs after torch.save/torch.load")
        fresh = _placed(s, domain, _probe(domain)[1](1), **extra)
        state_dict_round_trip(placed, fresh)
        with torch.no_grad():
            restored = _forward(fresh, probe.inputs())
        close(restored, first, 1e-12, "outputs after a state_dict round trip into a freshly placed model")
        return "torch.save/torch.load and state_dict round trip give the same outputs" + (" (seeded)" if extra else "")

    return check


def _job(s: Subject, domain: str, model: nn.Module, k: int = 0) -> Callable[[], list[torch.Tensor | None]]:
    """Two rounds of outputs (and gradients when differentiable) of ``model`` on input ``k``."""
    probe, _ = _probe(domain)
    x = probe.inputs() * (1 + 0.1 * k)
    differentiable = s.capabilities.differentiable

    def rounds() -> list[torch.Tensor | None]:
        out: list[torch.Tensor | None] = []
        for _ in range(2):
            if differentiable:
                gx, gp = _grads(model, x)
                model.zero_grad()
                out += [gx, *gp]
            with torch.no_grad():
                out.append(_forward(model, x))
        return out

    return rounds


def thread_safety(domain: str) -> Callable[[Subject], str]:
    def check(s: Subject) -> str:
        """Two instances (each with its own placed model) in two threads match the serial run."""
        _, build = _probe(domain)
        extra = _reproducible(s, domain)
        serial = [_job(s, domain, _placed(s, domain, build(), **extra))() for _ in range(2)]
        models = [_placed(s, domain, build(), **extra) for _ in range(2)]
        same_as_serial(in_threads(_job(s, domain, models[0]), _job(s, domain, models[1])), serial)
        what = " (outputs and gradients)" if s.capabilities.differentiable else ""
        return f"2 instances x 2 rounds{what} match"

    return check


def shared_instance(domain: str) -> Callable[[Subject], str]:
    def check(s: Subject) -> str:
        """ONE instance places and runs 4 models in 4 threads: the same as 4 fresh instances one after the
        other (backends hold no per-call state)."""
        _, build = _probe(domain)
        extra = _reproducible(s, domain)
        serial = [_job(s, domain, place(build(k), **{domain: s.make(**extra)}), k)() for k in range(4)]
        shared = s.make(**extra)
        models = [build(k) for k in range(4)]  # built here: seeding torch's global generator is not thread-safe
        jobs = [lambda k=k: _job(s, domain, place(models[k], **{domain: shared}), k)() for k in range(4)]
        same_as_serial(in_threads(*jobs), serial)
        return "1 instance placing 4 models in 4 threads x 2 rounds" + (" (seeded)" if extra else "") + " match"

    return check


def checks(domain: str) -> tuple[tuple[str, Callable[[Subject], str]], ...]:
    return (
        ("placement", placement(domain)),
        ("exact values", exact_values(domain)),
        ("gradients", gradients(domain)),
        ("noise per seed", noise_per_seed(domain)),
        ("errors on bad input", input_errors(domain)),
        ("serialization", serialization(domain)),
        ("thread safety", thread_safety(domain)),
        ("shared instance", shared_instance(domain)),
    )
