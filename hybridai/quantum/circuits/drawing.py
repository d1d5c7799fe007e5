"""Text drawings of recorded circuits, exactly as ``qml.draw`` draws the same circuit as a QNode."""

from __future__ import annotations

import inspect
from collections.abc import Sequence
from typing import Any

import torch

from hybridai.core.errors import ConfigError, suggest
from hybridai.quantum.circuits.recording import recording


def draw_accepted() -> list[str]:
    """The keyword arguments ``qml.draw`` takes besides the circuit (``decimals``, ``level``, ...)."""
    import pennylane as qml

    return [name for name in inspect.signature(qml.draw).parameters if name != "qnode"]


def draw_tape(tape: Any, wires: Sequence[int], **qml_draw_kwargs: Any) -> str:
    """``qml.draw`` of ``tape``'s operations and measurements as a QNode on ``default.qubit`` with ``wires``.

    Parameters are drawn with their values (detached from autograd); ``qml_draw_kwargs`` go to ``qml.draw``
    (``decimals``, ``max_length``, ``show_matrices``, ``level`` ...: ``level="device"`` decomposes for
    ``default.qubit``, whatever backend runs the circuit)."""
    import pennylane as qml

    accepted = draw_accepted()
    unknown = sorted(set(qml_draw_kwargs) - set(accepted))
    if unknown:
        hints = "".join(suggest(u, accepted) for u in unknown)
        raise ConfigError(f"draw() does not accept {unknown}; accepted: {', '.join(accepted)} (qml.draw's).{hints}")
    with recording():
        params = tape.get_parameters(trainable_only=False)
        detached = [p.detach() if torch.is_tensor(p) else p for p in params]
        plain = tape.bind_new_parameters(detached, list(range(len(params))))

        def circuit() -> Any:
            for op in plain.operations:
                qml.apply(op)
            return [qml.apply(m) for m in plain.measurements]

        qnode = qml.QNode(circuit, qml.device("default.qubit", wires=list(wires)))
        return qml.draw(qnode, **qml_draw_kwargs)()
