"""Other frameworks' objects as ``place``, ``summary`` and ``deploy`` meet them, taught by the packages above core.

core imports nothing above it, yet ``hybridai.place(model, quantum=qml.device(...))`` must take a PennyLane device
as ``QuantumLayer(backend=...)`` does, and a ``qml.qnn.TorchLayer`` inside a model must count as quantum. The
package of a domain registers its readers when it is imported (``hybridai.quantum.adoption`` for the quantum
domain; importing ``hybridai`` imports it):

- a backend reader, ``reader(value, argument, layer)``: a ``quantum=`` value that is not a name or a backend object
  (a PennyLane device, a Qiskit backend) as ``(name or backend object, the options it implies)``, checked for
  ``layer`` when one is given (a device's wires against the layer's qubits); errors name ``argument``;
- a layer reader, ``reader(module)``: a ``ForeignLayer`` describing a module of another framework, or None.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from torch import nn

from hybridai.core.contracts import Backend

BackendReader = Callable[[Any, str, nn.Module | None], tuple[str | Backend, dict[str, Any]]]


@dataclass(frozen=True)
class ForeignLayer:
    """A layer of another framework as hybridai sees it.

    domain: ``"quantum"``. backend: where it runs now, spelt as a backend name (``"pennylane:default.qubit"``).
    size: ``"2 qubits"`` for the summary, or ``""``. adopt: ``adopt(backend)`` builds the hybridai layer that
    stands in its place on ``backend`` (a configured backend object; None keeps where it runs now), with the
    same circuit and weights, or raises a HybridAIError saying why it cannot be adopted exactly.
    """

    domain: str
    backend: str
    size: str
    adopt: Callable[[Backend | None], nn.Module]


_backend_readers: dict[str, BackendReader] = {}
_layer_readers: list[Callable[[nn.Module], ForeignLayer | None]] = []


def register_backend_reader(domain: str, reader: BackendReader) -> None:
    """Let ``place``/``deploy`` take ``domain=`` values that ``reader`` understands (once per domain)."""
    _backend_readers[domain] = reader


def register_layer_reader(reader: Callable[[nn.Module], ForeignLayer | None]) -> None:
    """Let ``summary``/``place``/``deploy`` recognise the modules ``reader`` describes (registered once)."""
    if reader not in _layer_readers:
        _layer_readers.append(reader)


def read_backend(
    domain: str, value: Any, layer: nn.Module | None = None, argument: str | None = None
) -> tuple[str | Backend, dict[str, Any]]:
    """``value`` given for ``domain`` as the registry takes it, ``(name or backend object, implied options)``,
    checked for ``layer`` when given; names and backend objects pass unchanged. ``argument``: the name errors
    give the value (default ``domain``, as in ``place(quantum=...)``)."""
    reader = _backend_readers.get(domain)
    if reader is None or isinstance(value, str | Backend):
        return value, {}
    return reader(value, argument or domain, layer)


def read_layer(module: nn.Module) -> ForeignLayer | None:
    """``module`` described as a layer of another framework, or None when no reader knows it."""
    for reader in _layer_readers:
        found = reader(module)
        if found is not None:
            return found
    return None


__all__ = ["ForeignLayer", "read_backend", "read_layer", "register_backend_reader", "register_layer_reader"]
