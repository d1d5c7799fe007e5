"""Mixed precision: quantum and spiking layers keep their own precision under ``torch.autocast``.

Under autocast (bf16 on the CPU, fp16/bf16 on CUDA) classical layers run in low precision,
but a statevector in bf16 or a membrane that integrates 1000 steps in fp16 gives wrong
answers. A method decorated with ``keeps_precision`` therefore runs with autocast switched
off and its floating tensor arguments cast to the layer's *working dtype*:

* quantum layers (``QuantumLayer``, ``QuantumKernel``): float64, or float32 when the backend
  simulates in complex64 (``statevector`` with ``dtype="complex64"``);
* spiking layers (``LIF``, ``CUBA``): float32, or float64 when the input is float64.

Their outputs come back in float32 (float64 when the input was float64): autocast casts
float32 down to bf16/fp16 for the next classical layer but never touches float64, so a
float64 output would make that layer fail with a dtype mismatch. Gradients flow back to the
inputs in the inputs' own dtype. Outside autocast nothing changes: layers compute in the
dtype they are given.
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Callable
from typing import Any, TypeVar

import torch

Method = TypeVar("Method", bound=Callable[..., Any])

_DEVICE_TYPES = ("cpu", "cuda")


def autocast_devices(*tensors: Any) -> list[str]:
    """The device types (``"cpu"``, ``"cuda"``, ...) on which autocast is enabled right now."""
    types = set(_DEVICE_TYPES) | {t.device.type for t in tensors if torch.is_tensor(t)}
    return sorted(t for t in types if torch.amp.is_autocast_available(t) and torch.is_autocast_enabled(t))


def quantum_dtype(backend: Any) -> torch.dtype:
    """Working dtype of a quantum layer on ``backend``: float32 for complex64 simulation, else float64."""
    return torch.float32 if backend.capabilities.dtype == "complex64" else torch.float64


def spiking_dtype(incoming: torch.dtype) -> torch.dtype:
    """Working dtype of a spiking layer: float32, or the input's dtype when it is wider (float64)."""
    return torch.promote_types(incoming, torch.float32)


def _cast(value: Any, dtype: torch.dtype) -> Any:
    if torch.is_tensor(value) and value.is_floating_point() and value.dtype != dtype:
        return value.to(dtype)
    if isinstance(value, tuple | list) and any(torch.is_tensor(v) for v in value):
        return type(value)(_cast(v, dtype) for v in value)
    return value


def _first_floating(values: Any) -> torch.Tensor | None:
    for value in values:
        if torch.is_tensor(value) and value.is_floating_point():
            return value
        if isinstance(value, tuple | list):
            found = _first_floating(value)
            if found is not None:
                return found
    return None


def output_dtype(incoming: torch.dtype) -> torch.dtype:
    """What a layer under autocast returns: float32, or float64 when its input was float64."""
    return torch.promote_types(incoming, torch.float32)


def keeps_precision(working_dtype: Callable[[Any, torch.dtype], torch.dtype]) -> Callable[[Method], Method]:
    """Decorate a layer method so that it runs outside autocast in ``working_dtype(self, incoming)``.

    ``incoming`` is the dtype of the first floating tensor argument. Only when autocast is
    enabled: autocast is disabled inside, floating tensor arguments (and tuples of them) are
    cast to the working dtype and floating outputs to ``output_dtype(incoming)``; otherwise
    the method runs untouched.
    """

    def decorate(method: Method) -> Method:
        @functools.wraps(method)
        def wrapper(self: Any, *args: Any, **kwargs: Any) -> Any:
            values = [*args, *kwargs.values()]
            devices = autocast_devices(*values)
            if not devices:
                return method(self, *args, **kwargs)
            first = _first_floating(values)
            incoming = first.dtype if first is not None else torch.float32
            dtype = working_dtype(self, incoming)
            args = tuple(_cast(a, dtype) for a in args)
            kwargs = {k: _cast(v, dtype) for k, v in kwargs.items()}
            with contextlib.ExitStack() as stack:
                for device in devices:
                    stack.enter_context(torch.autocast(device, enabled=False))
                return _cast(method(self, *args, **kwargs), output_dtype(incoming))

        return wrapper  # type: ignore[return-value]

    return decorate
