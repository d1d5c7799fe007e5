"""What the quantum package teaches ``place``, ``summary`` and ``deploy`` (``hybridai.core.foreign``), on import.

- ``quantum=`` takes what ``QuantumLayer(backend=...)`` takes (``framework_objects.backend_spec``): a PennyLane
  device (with its shots; its wires checked against each layer's qubits) or a Qiskit backend (``AerSimulator()``
  with its noise model, a fake IBM device), besides names and backend objects;
- a ``qml.qnn.TorchLayer`` in a model is quantum: the summary shows its qubits and its device as backend, and
  ``place``/``deploy`` adopt it as a ``QuantumLayer`` (``torchlayer.adopt_torchlayer``).
"""

from __future__ import annotations

import functools
import sys
from typing import Any

from torch import nn

from hybridai.core.contracts import Backend
from hybridai.core.errors import HybridAIError
from hybridai.core.foreign import ForeignLayer, register_backend_reader, register_layer_reader
from hybridai.quantum.framework_objects import backend_spec
from hybridai.quantum.torchlayer import adopt_torchlayer


def read_backend(value: Any, argument: str, layer: nn.Module | None) -> tuple[str | Backend, dict[str, Any]]:
    """``value`` (``quantum=``) as the registry takes it, checked against ``layer``'s qubits when given."""
    return backend_spec(value, getattr(layer, "n_qubits", None), argument=argument)


def read_torchlayer(module: nn.Module) -> ForeignLayer | None:
    """A ``qml.qnn.TorchLayer`` as a quantum layer on its device; None for any other module."""
    if "pennylane" not in sys.modules:
        return None
    import pennylane as qml

    if not isinstance(module, qml.qnn.TorchLayer):
        return None
    device = module.qnode.device
    try:
        backend = str(backend_spec(device, None, getattr(module.qnode, "shots", None))[0])
    except HybridAIError:  # a shot vector: the summary still names the device
        backend = f"pennylane:{getattr(device, 'short_name', None) or device.name}"
    wires = getattr(device, "wires", None)
    size = "" if wires is None else f"{len(wires)} qubits"
    return ForeignLayer("quantum", backend, size, functools.partial(adopt_torchlayer, module))


register_backend_reader("quantum", read_backend)
register_layer_reader(read_torchlayer)

__all__ = ["read_backend", "read_torchlayer"]
