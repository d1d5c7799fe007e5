"""``hybridai.profile``: where the time of a hybrid model goes, per layer, domain and backend.

Runs the model once under ``torch.profiler`` with a ``record_function`` range around every
layer's forward (the same layers as ``hybridai.summary``: hybridai layers and leaf modules,
registered by forward hooks that are removed afterwards). With ``backward=True`` it also
runs backward and charges every autograd node to the layer whose forward created it
(matched by the profiler's sequence numbers), so a layer's time is forward plus backward.
Times are host wall-clock milliseconds; CUDA is synchronised at layer boundaries in the
forward pass only, so backward times on a GPU are launch times.
"""

from __future__ import annotations

import bisect
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import torch
from torch import nn

from hybridai.core.errors import ConfigError, invalid, non_negative_int
from hybridai.core.module import HybridModule, _classical_backend_name, _layers
from hybridai.core.text_table import format_table

_PREFIX = "hybridai.layer:"
_FORWARD, _BACKWARD = "hybridai.profile:forward", "hybridai.profile:backward"
_NODE = "autograd::engine::evaluate_function:"


@dataclass
class ProfileReport:
    """The result of ``hybridai.profile``: ``rows`` (one dict per layer), totals, and tables as ``str()``.

    Each row has ``layer``, ``type``, ``domain``, ``backend``, ``calls``, ``forward_ms``,
    ``backward_ms``, ``total_ms`` and ``share`` (of ``total_ms`` of the whole run, 0..1).
    ``outside_ms`` is time spent outside every layer (loss, glue code, the autograd engine).
    """

    rows: list[dict[str, Any]]
    total_ms: float
    outside_ms: float
    backward: bool
    by_backend: dict[tuple[str, str], float] = field(default_factory=dict)

    @property
    def by_domain(self) -> dict[str, float]:
        """Milliseconds per domain (``classical``, ``quantum``, ``spiking``) summed over the layers."""
        totals: dict[str, float] = {}
        for row in self.rows:
            totals[row["domain"]] = totals.get(row["domain"], 0.0) + row["total_ms"]
        return totals

    def table(self) -> str:
        """Per-layer table: layer, domain, backend, calls, forward/backward ms, total ms, share."""
        headers = ["layer", "domain", "backend", "calls"]
        headers += ["forward ms", "backward ms"] if self.backward else []
        headers += ["total ms", "share"]
        rows = []
        for row in self.rows:
            times = [f"{row['forward_ms']:.3f}", f"{row['backward_ms']:.3f}"] if self.backward else []
            rows.append(
                [
                    row["layer"],
                    row["domain"],
                    row["backend"],
                    row["calls"],
                    *times,
                    f"{row['total_ms']:.3f}",
                    _percent(row["share"]),
                ]
            )
        blanks = ["", ""] if self.backward else []
        rows.append(
            ["(outside layers)", "", "", "", *blanks, f"{self.outside_ms:.3f}", _percent(self._share(self.outside_ms))]
        )
        footer = ["total", "", "", sum(r["calls"] for r in self.rows), *blanks, f"{self.total_ms:.3f}", "100.0%"]
        return format_table(headers, rows, footer)

    def summary_table(self) -> str:
        """Time grouped by domain and backend."""
        rows = [
            [domain, backend, f"{ms:.3f}", _percent(self._share(ms))]
            for (domain, backend), ms in sorted(self.by_backend.items(), key=lambda item: -item[1])
        ]
        return format_table(["domain", "backend", "total ms", "share"], rows)

    def _share(self, ms: float) -> float:
        return ms / self.total_ms if self.total_ms > 0 else 0.0

    def __str__(self) -> str:
        what = "forward + backward" if self.backward else "forward"
        return f"{what}, {self.total_ms:.3f} ms\n\n{self.table()}\n\n{self.summary_table()}"


def _percent(share: float) -> str:
    return f"{100 * share:.1f}%"


def profile(
    model: nn.Module,
    inputs: Any,
    *,
    backward: bool = False,
    loss: Callable[[Any], torch.Tensor] | None = None,
    warmup: int = 1,
) -> ProfileReport:
    """Profile one forward (and with ``backward=True`` one backward) pass of ``model`` on ``inputs``.

    Args:
        model: any ``nn.Module``; hybridai layers report their domain and backend, plain
            modules count as classical on torch.
        inputs: a tensor (``model(inputs)``), a tuple or list (``model(*inputs)``) or a dict
            (``model(**inputs)``).
        backward: also run backward; parameter gradients are restored afterwards.
        loss: maps the output to the scalar to differentiate; default the sum of every
            floating output tensor.
        warmup: unprofiled runs first (lazy backend set-up and plan caches are not timed).

    Returns a ``ProfileReport``; ``print(report)`` shows the per-layer and per-backend tables.
    """
    if not isinstance(model, nn.Module):
        raise invalid("model", type(model).__name__, "a torch.nn.Module")
    if not isinstance(backward, bool):
        raise invalid("backward", backward, "True or False")
    if loss is not None and not callable(loss):
        raise invalid("loss", loss, "None or a callable mapping the model's output to a scalar tensor")
    non_negative_int("warmup", warmup)
    call = _caller(model, inputs)
    layers = _unique_layers(model)
    grads = {p: None if p.grad is None else p.grad.clone() for p in model.parameters()}
    try:
        for _ in range(warmup):
            _run(call, backward, loss)
        # the profiler's C++ library prints "profiler_start/stop" lines to stderr unless told not to; a
        # user's own KINETO_LOG_LEVEL wins (read when the library first starts)
        os.environ.setdefault("KINETO_LOG_LEVEL", "6")
        with _labelled(layers), torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as prof:
            _run(call, backward, loss)
    finally:
        for param, grad in grads.items():
            param.grad = grad
    return _report(list(prof.events()), layers, backward)


def _caller(model: nn.Module, inputs: Any) -> Callable[[], Any]:
    if torch.is_tensor(inputs):
        return lambda: model(inputs)
    if isinstance(inputs, tuple | list):
        return lambda: model(*inputs)
    if isinstance(inputs, dict) and all(isinstance(k, str) for k in inputs):
        return lambda: model(**inputs)
    raise invalid(
        "inputs",
        type(inputs).__name__,
        "a torch.Tensor, a tuple or list of positional arguments, or a dict of keyword arguments",
    )


def _run(call: Callable[[], Any], backward: bool, loss: Callable[[Any], torch.Tensor] | None) -> None:
    with torch.profiler.record_function(_FORWARD):
        out = call()
        if backward:
            scalar = loss(out) if loss is not None else _sum_outputs(out)
    if not backward:
        return
    if not torch.is_tensor(scalar) or scalar.numel() != 1 or not scalar.requires_grad:
        got = f"a tensor of shape {tuple(scalar.shape)}" if torch.is_tensor(scalar) else type(scalar).__name__
        got += "" if not torch.is_tensor(scalar) or scalar.requires_grad else " that does not require grad"
        raise ConfigError(
            f"backward=True needs a scalar loss that requires grad, got {got}; accepted: a model with "
            "trainable parameters and loss=a function returning a one-element tensor (or backward=False)"
        )
    with torch.profiler.record_function(_BACKWARD):
        scalar.backward()


def _sum_outputs(out: Any) -> Any:
    tensors = [t for t in _tensors(out) if t.is_floating_point() or t.is_complex()]
    if not tensors:
        return out
    return sum(t.real.float().sum() if t.is_complex() else t.float().sum() for t in tensors)


def _tensors(value: Any) -> Iterator[torch.Tensor]:
    if torch.is_tensor(value):
        yield value
    elif isinstance(value, tuple | list):
        for item in value:
            yield from _tensors(item)
    elif isinstance(value, dict):
        for item in value.values():
            yield from _tensors(item)


def _unique_layers(model: nn.Module) -> list[tuple[str, nn.Module]]:
    """The summary's layers, each module once (a shared module keeps its first name)."""
    seen: set[int] = set()
    layers = []
    for name, layer in _layers(model):
        if id(layer) not in seen:
            seen.add(id(layer))
            layers.append((name, layer))
    return layers


class _labelled:
    """Forward hooks that open a ``record_function`` range per layer call, removed on exit."""

    def __init__(self, layers: list[tuple[str, nn.Module]]) -> None:
        self.layers = layers
        self.handles: list[Any] = []
        self.open: dict[int, list[Any]] = {}

    def __enter__(self) -> _labelled:
        for name, layer in self.layers:
            self.handles.append(layer.register_forward_pre_hook(self._opener(_PREFIX + name)))
            self.handles.append(layer.register_forward_hook(self._close, always_call=True))
        return self

    def __exit__(self, *exc: Any) -> None:
        for handle in self.handles:
            handle.remove()

    def _opener(self, label: str) -> Callable[..., None]:
        def pre_hook(module: nn.Module, args: Any) -> None:
            _synchronize()
            scope = torch.profiler.record_function(label)
            scope.__enter__()
            self.open.setdefault(id(module), []).append(scope)

        return pre_hook

    def _close(self, module: nn.Module, args: Any, output: Any) -> None:
        _synchronize()
        stack = self.open.get(id(module))
        if stack:
            stack.pop().__exit__(None, None, None)


def _synchronize() -> None:
    if torch.cuda.is_available() and torch.cuda.is_initialized():
        torch.cuda.synchronize()


def _ms(event: Any) -> float:
    return (event.time_range.end - event.time_range.start) / 1000.0


def _report(events: list[Any], layers: list[tuple[str, nn.Module]], backward: bool) -> ProfileReport:
    phases = {e.name: e for e in events if e.name in (_FORWARD, _BACKWARD)}
    total = sum(_ms(e) for e in phases.values())
    forward_phase = phases[_FORWARD].time_range
    ranges = sorted(
        (e.time_range.start, e.time_range.end, e.name[len(_PREFIX) :]) for e in events if e.name.startswith(_PREFIX)
    )
    starts = [r[0] for r in ranges]

    def layer_at(time: float) -> str | None:
        index = bisect.bisect_right(starts, time) - 1
        return ranges[index][2] if index >= 0 and ranges[index][1] >= time else None

    # the autograd node with sequence number s was made by the last forward op that carried s
    creator: dict[int, tuple[float, str | None]] = {}
    for e in events:
        start = e.time_range.start
        if e.sequence_nr >= 0 and forward_phase.start <= start <= forward_phase.end and not e.name.startswith(_NODE):
            if e.sequence_nr not in creator or start >= creator[e.sequence_nr][0]:
                creator[e.sequence_nr] = (start, layer_at(start))
    forward_ms: dict[str, float] = {}
    calls: dict[str, int] = {}
    for start, end, name in ranges:
        forward_ms[name] = forward_ms.get(name, 0.0) + (end - start) / 1000.0
        calls[name] = calls.get(name, 0) + 1
    backward_ms: dict[str, float] = {}
    for e in events:
        if e.name.startswith(_NODE) and e.sequence_nr in creator:
            owner = creator[e.sequence_nr][1]
            if owner is not None:
                backward_ms[owner] = backward_ms.get(owner, 0.0) + _ms(e)
    rows: list[dict[str, Any]] = []
    by_backend: dict[tuple[str, str], float] = {}
    for name, layer in layers:
        if isinstance(layer, HybridModule):
            domain, backend = layer.domain, layer.backend
        else:
            domain, backend = "classical", _classical_backend_name(layer)
        ms = forward_ms.get(name, 0.0) + backward_ms.get(name, 0.0)
        rows.append(
            {
                "layer": name,
                "type": type(layer).__name__,
                "domain": domain,
                "backend": backend,
                "calls": calls.get(name, 0),
                "forward_ms": forward_ms.get(name, 0.0),
                "backward_ms": backward_ms.get(name, 0.0),
                "total_ms": ms,
                "share": ms / total if total > 0 else 0.0,
            }
        )
        by_backend[(domain, backend)] = by_backend.get((domain, backend), 0.0) + ms
    outside = max(total - sum(r["total_ms"] for r in rows), 0.0)
    return ProfileReport(rows=rows, total_ms=total, outside_ms=outside, backward=backward, by_backend=by_backend)
