"""A PennyLane ``qml.qnn.TorchLayer`` adopted as a ``QuantumLayer``: the same circuit, weights and shapes, re-targeted.

``adopt_torchlayer(torchlayer, backend)`` (what ``hybridai.place(model, quantum=...)`` and ``hybridai.deploy`` do
with a TorchLayer in a model) builds an ``AdoptedTorchLayer``, a ``QuantumLayer`` of the TorchLayer's QNode (its
quantum function and ``diff_method``; its device when ``backend`` is None; its shots as the layer's ``shots``)
that holds the TorchLayer's own ``nn.Parameter`` objects: the same names, values, dtypes and ``requires_grad``,
so that an optimizer built before keeps training them and ``state_dict`` keys stay. It takes and returns what
the TorchLayer did: inputs ``[..., F]`` with any number of batch dimensions (the circuit sees them flattened to
``[B, F]``), outputs as ``QuantumLayer`` shapes them, except that a *tuple* of several measurements comes back
stacked first, ``[n_measurements, ..., width]``, as TorchLayer stacks it (a list gives ``[..., sum of widths]``).

Refused, naming the TorchLayer and the reason, where the adoption could not be exact: a subclass of TorchLayer
(its own ``forward``), an ``input_arg`` that is not the quantum function's first argument, a device without
wires or with wires other than ``0..n-1``, a shot vector, parameters, buffers or submodules besides the QNode's
weights, and hooks (they would not move to the new layer).
"""

from __future__ import annotations

import functools
import inspect
from typing import Any

import torch

from hybridai.core.contracts import Backend
from hybridai.core.errors import ConfigError, HybridAIError, ShapeError
from hybridai.quantum.layer import QuantumLayer

SCALARS = ("ExpectationMP", "VarianceMP")  # one column each; qml.probs of k wires gives 2**k


class _Returns:
    """The quantum function, noting what it returned: TorchLayer stacks a tuple of several measurements."""

    def __init__(self, function: Any) -> None:
        functools.update_wrapper(self, function)
        self.function = function
        self.widths: tuple[int, ...] | None = None  # per measurement of a returned tuple of several, else None

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        returned = self.function(*args, **kwargs)
        several = isinstance(returned, tuple) and len(returned) > 1
        self.widths = tuple(_width(m) for m in returned) if several else None
        return returned


def _width(measurement: Any) -> int:
    return 1 if type(measurement).__name__ in SCALARS else 2 ** len(measurement.wires)


class AdoptedTorchLayer(QuantumLayer):
    """A ``QuantumLayer`` standing in for a ``qml.qnn.TorchLayer``, with its input and output shapes (see the
    module docstring); built by ``adopt_torchlayer``."""

    qfunc: _Returns

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.qfunc = _Returns(self.qfunc)

    def forward(self, inputs: torch.Tensor | None = None) -> torch.Tensor:
        if not torch.is_tensor(inputs) or inputs.ndim <= 2:
            out = super().forward(inputs)
        else:  # TorchLayer takes any number of batch dimensions: flattened for the circuit, restored after
            out = super().forward(inputs.reshape(-1, inputs.shape[-1]))
            out = out.reshape(*inputs.shape[:-1], *out.shape[1:])
        widths = self.qfunc.widths
        if widths is None:
            return out
        if len(set(widths)) != 1:
            raise ShapeError(
                f"qfunc returned a tuple of measurements of widths {list(widths)}, which qml.qnn.TorchLayer cannot "
                "stack either; accepted: measurements of one width in a tuple, or a list (outputs [..., sum of widths])"
            )
        return out.reshape(*out.shape[:-1], len(widths), widths[0]).movedim(-2, 0)


def adopt_torchlayer(torchlayer: Any, backend: Backend | str | None) -> AdoptedTorchLayer:
    """``torchlayer`` as an ``AdoptedTorchLayer`` on ``backend`` (None: its QNode's device), holding its very
    parameters; a ConfigError naming it when it cannot be adopted exactly (module docstring)."""
    shown = f"qml.qnn.TorchLayer of {getattr(torchlayer.qnode.func, '__qualname__', 'its QNode')!r}"
    _check_module(torchlayer, shown)
    qnode = torchlayer.qnode
    _check_input_arg(qnode.func, torchlayer.input_arg, shown)
    weights = dict(torchlayer.qnode_weights)
    try:
        layer = AdoptedTorchLayer(
            qnode,
            _n_qubits(qnode.device, shown),
            {name: tuple(p.shape) for name, p in weights.items()},
            backend=backend,
            shots=_shots(qnode, shown),
            init=_kept,  # no random draw: the TorchLayer's own parameters replace these below
        )
    except HybridAIError as exc:
        exc.args = (f"{shown} cannot be adopted as a QuantumLayer: {exc}", *exc.args[1:])
        raise
    for name, parameter in weights.items():
        layer.register_parameter(name, parameter)
    return layer.train(torchlayer.training)


def _kept(tensor: torch.Tensor) -> torch.Tensor:
    return tensor


def _refused(shown: str, why: str, accepted: str) -> ConfigError:
    return ConfigError(f"{shown} cannot be adopted as a QuantumLayer: {why}; accepted: {accepted}")


def _check_module(torchlayer: Any, shown: str) -> None:
    """A plain TorchLayer: no subclass, hooks, or tensors and modules besides the QNode's weights."""
    import pennylane as qml

    if type(torchlayer) is not qml.qnn.TorchLayer:
        raise _refused(shown, f"it is a {type(torchlayer).__qualname__}, whose forward may differ", "a TorchLayer")
    hooks = [n for n in ("_forward_hooks", "_forward_pre_hooks", "_backward_hooks", "_backward_pre_hooks")
             if getattr(torchlayer, n, None)]  # fmt: skip
    if hooks:
        raise _refused(shown, f"it has {', '.join(h.strip('_') for h in hooks)}, which would be lost",
                       "a TorchLayer without hooks (register them on the adopted layer after placing)")  # fmt: skip
    weights = torchlayer.qnode_weights
    parameters = dict(torchlayer.named_parameters(recurse=False))
    same = parameters.keys() == weights.keys() and all(parameters[n] is weights[n] for n in weights)
    if not same or list(torchlayer.buffers()) or list(torchlayer.children()):
        raise _refused(
            shown, f"it holds parameters {sorted(parameters)}, buffers or submodules besides its QNode's weights "
            f"{sorted(weights)}", "a TorchLayer whose parameters are its qnode_weights",
        )  # fmt: skip


def _check_input_arg(function: Any, input_arg: str, shown: str) -> None:
    """TorchLayer passes the inputs by name, QuantumLayer as the first argument: they must be the same one."""
    try:
        first = next(iter(inspect.signature(function).parameters.values()), None)
    except (TypeError, ValueError):
        first = None
    if first is None or first.name != input_arg or first.kind is not first.POSITIONAL_OR_KEYWORD:
        raise _refused(
            shown, f"its input argument {input_arg!r} is not the first argument of its quantum function",
            f"a quantum function whose first argument is {input_arg!r}, e.g. def circuit({input_arg}, weights)",
        )  # fmt: skip


def _n_qubits(device: Any, shown: str) -> int:
    """The device's wires as ``n_qubits``: they must be ``0..n-1``, the wires a QuantumLayer has."""
    wires = getattr(device, "wires", None)
    labels = None if wires is None else list(wires)
    if not labels or labels != list(range(len(labels))):
        name = getattr(device, "short_name", None) or getattr(device, "name", "the")
        raise _refused(
            shown, f"its {name} device has wires {labels}", f"a device with wires 0..n-1, e.g. qml.device({name!r}, "
            "wires=n) (a QuantumLayer's wires are 0..n_qubits-1)",
        )  # fmt: skip
    return len(labels)


def _shots(qnode: Any, shown: str) -> int | None:
    """The QNode's shots (its own or its device's) as the layer's ``shots``; None when analytic."""
    shots = getattr(qnode, "shots", None)
    if shots is None or not shots.total_shots:
        return None
    if shots.has_partitioned_shots:
        raise _refused(shown, f"its QNode has a shot vector {shots}", "one number of shots (qml.set_shots)")
    return int(shots.total_shots)


__all__ = ["AdoptedTorchLayer", "adopt_torchlayer"]
