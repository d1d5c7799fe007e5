"""Backend family ``pennylane``: tapes executed on any installed PennyLane device.

The target is the device name (``pennylane:default.qubit``, ``pennylane:lightning.qubit``,
``pennylane:default.mixed``, ...). Options are passed to ``qml.device`` (``seed`` for
example), except ``shots``, which becomes the default shots of tapes that set none.
Broadcast tapes run natively under backprop; for other gradient methods PennyLane's own
``broadcast_expand`` splits them and all parts go out in ONE ``qml.execute`` call.
"""

from __future__ import annotations

import importlib.util
import threading
from contextlib import contextmanager
from typing import Any

import torch

from ..errors import BackendNotFoundError, invalid, suggest
from .base import Availability, Capabilities, QuantumBackend
from .registry import register

GRADIENT_RULES = ("parameter-shift", "finite-diff")  # work on every device
MIXED_STATE_DEVICES = ("default.mixed", "default.qutrit.mixed")

_dtype_lock = threading.Lock()


@contextmanager
def _default_dtype(dtype: torch.dtype):
    """Some devices (lightning) hand results to torch in the default dtype: keep float64."""
    with _dtype_lock:
        previous = torch.get_default_dtype()
        torch.set_default_dtype(dtype)
        try:
            yield
        finally:
            torch.set_default_dtype(previous)


def _installed_devices() -> list[str]:
    import pennylane as qml

    return sorted(qml.plugin_devices)


@register("pennylane")
class PennyLaneBackend(QuantumBackend):
    """Any installed PennyLane device; differentiable through PennyLane's torch interface."""

    domains = ("quantum",)

    def __init__(self, target: str | None = None, **options: Any) -> None:
        target = target or "default.qubit"
        names = _installed_devices()
        if target not in names:
            raise BackendNotFoundError(
                f"backend='pennylane:{target}': no PennyLane device named {target!r} is installed; "
                f"installed: {', '.join(names)}.{suggest(target, names)}"
            )
        if options.get("mitigation") is not None:
            raise invalid(
                "mitigation", options["mitigation"], "None on PennyLane devices; ZNE runs on 'aer:...' or 'ibm:...'"
            )
        options.pop("mitigation", None)
        shots = options.pop("shots", None)
        if shots is not None and (isinstance(shots, bool) or not isinstance(shots, int) or shots < 1):
            raise invalid("shots", shots, "None (exact) or a positive int")
        self.shots = shots
        super().__init__(target, **options)
        self._devices: dict[tuple, Any] = {}
        self._lock = threading.Lock()

    @classmethod
    def is_available(cls) -> Availability:
        if importlib.util.find_spec("pennylane") is None:
            return Availability(False, "pennylane is not installed: pip install pennylane")
        return Availability(True)

    def device(self, wires: Any) -> Any:
        """The PennyLane device for ``wires``, created once and cached."""
        import pennylane as qml

        key = tuple(qml.wires.Wires(wires))
        with self._lock:
            if key not in self._devices:
                try:
                    self._devices[key] = qml.device(self.target, wires=list(key), **self.options)
                except TypeError as exc:  # an option the device does not take
                    raise invalid(
                        "options", self.options, f"options that the {self.target} device takes ({exc})"
                    ) from None
            return self._devices[key]

    @property
    def capabilities(self) -> Capabilities:
        from pennylane.devices import ExecutionConfig

        dev = self.device([0])
        native = tuple(
            m for m in ("backprop", "adjoint") if dev.supports_derivatives(ExecutionConfig(gradient_method=m))
        )
        noise = self.target in MIXED_STATE_DEVICES
        return Capabilities(
            differentiable=True,
            exact=self.shots is None,
            shots=True,
            noise=noise,
            diff_methods=("best", *native, *GRADIENT_RULES),
            devices=("cpu", "cuda") if "backprop" in native else ("cpu",),
        )

    def _method(self, dev: Any, diff_method: str, tape: Any) -> str:
        from pennylane.devices import ExecutionConfig

        if diff_method != "best":
            accepted = self.capabilities.diff_methods
            if diff_method not in accepted:
                raise invalid("diff_method", diff_method, f"one of {accepted} on {self.name!r}")
            return diff_method
        for method in ("backprop", "adjoint"):
            if dev.supports_derivatives(ExecutionConfig(gradient_method=method), tape):
                return method
        return "parameter-shift"

    def execute(self, tapes: list[Any], *, wires: Any, diff_method: str = "best") -> list[Any]:
        import pennylane as qml

        dev = self.device(wires)
        if self.shots is not None:
            tapes = [t if t.shots else t.copy(shots=self.shots) for t in tapes]
        dtype = max(
            (p.dtype for t in tapes for p in t.get_parameters(trainable_only=False) if torch.is_tensor(p)),
            key=lambda d: torch.finfo(d).bits if d.is_floating_point else 0,
            default=torch.get_default_dtype(),
        )
        dtype = dtype if dtype.is_floating_point else torch.get_default_dtype()
        method = self._method(dev, diff_method, tapes[0]) if tapes else "best"
        with _default_dtype(dtype):
            if method == "backprop":  # broadcast natively
                return list(qml.execute(tapes, dev, diff_method=method))
            split = [qml.transforms.broadcast_expand(t) for t in tapes]
            flat = [t for parts, _ in split for t in parts]
            results = list(qml.execute(flat, dev, diff_method=method))
        out, start = [], 0
        for parts, post in split:
            out.append(post(results[start : start + len(parts)]))
            start += len(parts)
        return out
