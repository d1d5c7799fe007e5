"""A Qiskit ``QuantumCircuit`` where a layer or a kernel takes a quantum function, as Qiskit Machine Learning
takes it.

- ``QuantumLayer(circuit, input_params=[...], weight_params=[...], observables=...)`` is
  ``TorchConnector(EstimatorQNN(circuit=..., input_params=..., weight_params=..., observables=...))``: inputs
  ``[B, len(input_params)]`` bound in that order, ONE trainable tensor ``weights`` of shape
  ``(len(weight_params),)`` initialised uniform in [-1, 1] as TorchConnector does, outputs ``[B, n_observables]``
  (the default observable is EstimatorQNN's: Z⊗Z⊗…⊗Z over all qubits, one output).
- ``QuantumKernel(feature_map=circuit)`` is ``FidelityQuantumKernel(feature_map=circuit)``: the features bound to
  ``circuit.parameters`` in Qiskit's order; with ``training_params=[...]`` (``TrainableFidelityQuantumKernel``'s
  ``training_parameters``) those are the trainable tensor ``weights`` and the others, in order, the features.

The circuit is read once (``from_circuit``) into a ``CircuitFunction``, an ordinary PennyLane quantum function
``f(inputs, weights)`` that the layer or kernel records like any other, so every backend runs it. ``n_qubits``
comes from the circuit. Qiskit is imported only when such a circuit is given.
"""

from __future__ import annotations

import inspect
import sys
from typing import Any, NamedTuple

import torch
from torch import nn

from hybridai.core.errors import invalid
from hybridai.quantum.qiskit_frontend.from_circuit import PLGate, apply, read_circuit
from hybridai.quantum.qiskit_frontend.observables import Terms, expectations, read_observables

WEIGHTS = "weights"  # the one trainable tensor of a circuit's weight_params / training_params


def is_circuit(obj: Any) -> bool:
    """Whether ``obj`` is a ``qiskit.QuantumCircuit`` (without importing Qiskit for anything else)."""
    if "qiskit" not in sys.modules:
        return False
    from qiskit import QuantumCircuit

    return isinstance(obj, QuantumCircuit)


def torch_connector_init(tensor: torch.Tensor) -> torch.Tensor:
    """TorchConnector's default initial weights: uniform in [-1, 1]."""
    return nn.init.uniform_(tensor, -1.0, 1.0)


class CircuitFunction:
    """A read Qiskit circuit as a PennyLane quantum function ``f(inputs, weights)`` (``f(x, weights)`` for a
    feature map; either argument absent where no parameter is bound to it): column ``k`` of the inputs
    (``inputs[..., k]``, so batches broadcast) is parameter ``inputs[k]``, entry ``k`` of the weights is
    parameter ``weights[k]``. Returns the expectations of ``observables`` (nothing for a feature map). Pickled
    (``torch.save``, ``copy.deepcopy``) as its Qiskit circuit, read again on loading."""

    def __init__(self, circuit: Any, inputs: list[str], weights: list[str],
                 observables: list[Terms] | None, input_argument: str) -> None:  # fmt: skip
        self.circuit, self.input_argument = circuit, input_argument
        self.gates: list[PLGate] = read_circuit(circuit)
        self.inputs, self.weights, self.observables = inputs, weights, observables
        kind = inspect.Parameter.POSITIONAL_OR_KEYWORD
        names = ([input_argument] if inputs else []) + ([WEIGHTS] if weights else [])
        self.__signature__ = inspect.Signature([inspect.Parameter(name, kind) for name in names])

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        arguments = list(self.__signature__.bind(*args, **kwargs).arguments.values())
        values = {}
        if self.inputs:
            features = arguments.pop(0)
            values.update({name: features[..., k] for k, name in enumerate(self.inputs)})
        if self.weights:
            weights = arguments.pop(0)
            values.update({name: weights[..., k] for k, name in enumerate(self.weights)})
        apply(self.gates, values)
        return None if self.observables is None else expectations(self.observables)

    def __reduce__(self) -> tuple:
        return (CircuitFunction, (self.circuit, self.inputs, self.weights, self.observables, self.input_argument))

    def __repr__(self) -> str:
        return f"CircuitFunction(inputs={self.inputs}, weights={self.weights}, gates={len(self.gates)})"


class Adopted(NamedTuple):
    """What a layer or kernel takes from a circuit in place of its quantum function and its arguments."""

    function: CircuitFunction
    n_qubits: int
    weight_shapes: dict[str, tuple[int, ...]]
    n_inputs: int | None  # the input width (n_inputs of a layer, n_features of a kernel); None: no inputs


def adopt_layer_circuit(qfunc: Any, n_qubits: Any, weight_shapes: Any, n_inputs: Any, *, input_params: Any,
                        weight_params: Any, observables: Any) -> Adopted | None:  # fmt: skip
    """A ``QuantumLayer``'s circuit as EstimatorQNN takes it (module docstring); None when ``qfunc`` is no
    circuit, where the circuit keywords must be None."""
    if not is_circuit(qfunc):
        _only_with_circuit("qfunc", input_params=input_params, weight_params=weight_params, observables=observables)
        return None
    _check_common("qfunc", qfunc, n_qubits, weight_shapes)
    inputs = _parameter_names("input_params", input_params, qfunc)
    weights = _parameter_names("weight_params", weight_params, qfunc)
    _check_partition("qfunc", qfunc, inputs, weights)
    _check_width("n_inputs", n_inputs, len(inputs), "len(input_params)")
    layout = getattr(qfunc, "layout", None)
    virtual = getattr(layout, "_input_qubit_count", None) or qfunc.num_qubits  # as EstimatorQNN reads it
    terms = read_observables(observables, qfunc.num_qubits, virtual)
    function = CircuitFunction(qfunc, inputs, weights, terms, "inputs")
    return Adopted(function, qfunc.num_qubits, {WEIGHTS: (len(weights),)} if weights else {}, len(inputs) or None)


def adopt_kernel_circuit(feature_map: Any, n_qubits: Any, weight_shapes: Any, n_features: Any, *,
                         training_params: Any) -> Adopted | None:  # fmt: skip
    """A ``QuantumKernel``'s feature map as FidelityQuantumKernel (TrainableFidelityQuantumKernel with
    ``training_params``) takes it; None when ``feature_map`` is no circuit (then ``training_params`` is None)."""
    if not is_circuit(feature_map):
        _only_with_circuit("feature_map", training_params=training_params)
        return None
    _check_common("feature_map", feature_map, n_qubits, weight_shapes)
    weights = _parameter_names("training_params", training_params, feature_map)
    features = [p.name for p in feature_map.parameters if p.name not in weights]
    if not features:
        accepted = "a feature map with at least one parameter that is not in training_params (the features)"
        raise invalid("feature_map", _shown(feature_map), accepted)
    _check_width("n_features", n_features, len(features), "the number of feature parameters")
    function = CircuitFunction(feature_map, features, weights, None, "x")
    return Adopted(function, feature_map.num_qubits, {WEIGHTS: (len(weights),)} if weights else {}, len(features))


def _shown(circuit: Any) -> str:
    return f"QuantumCircuit({circuit.name!r}, {circuit.num_qubits} qubits, parameters {_names(circuit.parameters)})"


def _names(parameters: Any) -> list[str]:
    return [p.name for p in parameters]


def _only_with_circuit(role: str, **keywords: Any) -> None:
    for name, value in keywords.items():
        if value is not None:
            raise invalid(name, value, f"None: {name}= goes with a Qiskit QuantumCircuit as {role}")


def _check_common(role: str, circuit: Any, n_qubits: Any, weight_shapes: Any) -> None:
    """A circuit has qubits, its own qubit count and no ``weight_shapes`` (its weights are parameters)."""
    if circuit.num_qubits < 1:
        raise invalid(role, _shown(circuit), "a circuit with at least one qubit")
    if n_qubits is not None and n_qubits != circuit.num_qubits:
        raise invalid("n_qubits", n_qubits, f"None or {circuit.num_qubits} (the circuit's qubit count)")
    if weight_shapes is not None:
        accepted = f"None with a Qiskit circuit: its weights are Parameters (one trainable tensor {WEIGHTS!r})"
        raise invalid("weight_shapes", weight_shapes, accepted)


def _parameter_names(argument: str, value: Any, circuit: Any) -> list[str]:
    """The names of a list of the circuit's ``Parameter``s (``None``: none); a ConfigError names the rest."""
    from qiskit.circuit import Parameter

    if value is None:
        return []
    accepted = f"a list of the circuit's Parameters (of {_names(circuit.parameters)}), or None"
    if isinstance(value, Parameter | str) or not hasattr(value, "__iter__"):
        raise invalid(argument, value, accepted)
    parameters = list(value)
    in_circuit = set(circuit.parameters)
    for i, p in enumerate(parameters):
        if not isinstance(p, Parameter):
            raise invalid(f"{argument}[{i}]", p, accepted)
        if p not in in_circuit:
            raise invalid(f"{argument}[{i}]", p, f"a parameter of the circuit: one of {_names(circuit.parameters)}")
        if parameters.index(p) != i:
            raise invalid(f"{argument}[{i}]", p, "each parameter once")
    return [p.name for p in parameters]


def _check_partition(role: str, circuit: Any, inputs: list[str], weights: list[str]) -> None:
    """Every circuit parameter is an input or a weight, none both."""
    both = [name for name in inputs if name in weights]
    if both:
        raise invalid("weight_params", weights, f"parameters that are not in input_params too (both: {both})")
    unbound = [name for name in _names(circuit.parameters) if name not in inputs and name not in weights]
    if unbound:
        raise invalid(
            role, _shown(circuit),
            f"a circuit whose every parameter is in input_params or weight_params ({unbound} are in neither; "
            "assign_parameters binds constants)",
        )  # fmt: skip


def _check_width(argument: str, value: Any, width: int, what: str) -> None:
    if value is not None and value != width:
        raise invalid(argument, value, f"None or {width} ({what})")
