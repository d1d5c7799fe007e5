"""``LearnableNoise``: channels after every gate with per-qubit rates as parameters, read errors as a confusion of
the read bits, gradients of the rates equal default.mixed's, refusals by name."""

import pennylane as qml
import pytest
import torch

from hybridai import LearnableNoise, QuantumLayer
from hybridai.core.errors import ConfigError

pytestmark = pytest.mark.numerics


def gates(inputs):
    qml.AngleEmbedding(inputs, wires=range(3), rotation="Y")
    qml.CNOT(wires=[0, 1])
    qml.Toffoli(wires=[0, 1, 2])
    qml.RZ(inputs[..., 0], wires=2)
    qml.RX(0.4, wires=2)


def circuit(inputs):
    gates(inputs)
    return [qml.expval(qml.PauliZ(0)), qml.expval(qml.PauliZ(1) @ qml.PauliZ(2)), qml.probs(wires=[2])]


def test_channels_follow_every_gate_of_decomposed_templates_on_each_of_its_wires():
    noise = LearnableNoise(3, kinds=("depolarizing", "phase_damping"), readout=True)
    tape = qml.tape.make_qscript(noise(circuit))(torch.zeros(3, dtype=torch.float64))
    ops = tape.operations
    gates = [op for op in ops if not isinstance(op, qml.operation.Channel)]
    assert "AngleEmbedding" not in [g.name for g in gates] and "Toffoli" not in [g.name for g in gates]
    assert len(ops) == len(gates) + 2 * sum(len(g.wires) for g in gates) + 3
    for i, op in enumerate(ops[: len(ops) - 3]):  # the last three: a read error on each measured wire
        if isinstance(op, qml.operation.Channel):
            continue
        following = ops[i + 1 : i + 1 + 2 * len(op.wires)]
        assert [c.name for c in following] == ["DepolarizingChannel", "PhaseDamping"] * len(op.wires)
        assert [c.wires[0] for c in following] == [w for w in op.wires for _ in range(2)]
    assert [op.name for op in ops[-3:]] == ["ResetError"] * 3
    assert sorted(op.wires[0] for op in ops[-3:]) == [0, 1, 2]


def test_read_errors_are_the_confusion_of_each_read_bit():
    """P(1|0) = a, P(0|1) = b per qubit: <Z> -> (1 - a - b) <Z> + b - a, and products of Z for independent bits."""
    noise = LearnableNoise(3, kinds=(), readout=True)
    with torch.no_grad():
        noise.logits["readout"].copy_(torch.tensor([[-3.0, -2.0, -1.0], [-2.5, -1.5, -4.0]], dtype=torch.float64))
    a, b = noise.rates()["readout"].detach()
    x = torch.tensor([[0.3, 1.2, 2.0], [2.5, 0.1, 0.9]], dtype=torch.float64)
    clean = QuantumLayer(circuit, n_qubits=3, n_inputs=3, backend="density")(x).detach()
    read = QuantumLayer(noise(circuit), n_qubits=3, n_inputs=3, backend="density")(x).detach()
    assert torch.allclose(read[:, 0], (1 - a[0] - b[0]) * clean[:, 0] + b[0] - a[0], atol=1e-12)
    # <Z1 Z2> from the joint outcome distribution needs the probabilities of wires 1 and 2 together: compare against
    # the exact confusion applied to them
    joint = QuantumLayer(lambda inputs: circuit_joint(inputs), n_qubits=3, n_inputs=3, backend="density")(x).detach()
    confusion = [torch.tensor([[1 - a[q], b[q]], [a[q], 1 - b[q]]]) for q in (1, 2)]
    read_joint = torch.einsum("ij,kl,bjl->bik", *confusion, joint.reshape(-1, 2, 2)).reshape(-1, 4)
    zz = read_joint @ torch.tensor([1.0, -1.0, -1.0, 1.0], dtype=torch.float64)
    assert torch.allclose(read[:, 1], zz, atol=1e-12)
    p2 = clean[:, 2:4]
    assert torch.allclose(read[:, 2], (1 - a[2]) * p2[:, 0] + b[2] * p2[:, 1], atol=1e-12)


def circuit_joint(inputs):
    gates(inputs)
    return qml.probs(wires=[1, 2])


def test_gradients_of_the_rates_equal_default_mixed():
    x = torch.tensor([[0.3, 1.2, 2.0], [2.5, 0.1, 0.9], [1.0, 1.0, 1.0]], dtype=torch.float64)
    gradients = []
    for backend in ("density", "pennylane:default.mixed"):
        noise = LearnableNoise(3, initial=0.05)
        out = QuantumLayer(noise(circuit), n_qubits=3, n_inputs=3, backend=backend)(x)
        (out * torch.linspace(-1, 1, out.shape[-1], dtype=torch.float64)).sum().backward()
        gradients.append({k: v.grad.clone() for k, v in noise.logits.items()})
    for kind, grad in gradients[0].items():
        assert grad.abs().max() > 1e-6, kind  # every kind of rate moves the values
        assert torch.allclose(grad, gradients[1][kind], atol=1e-10, rtol=0), kind


def test_refusals_name_the_argument_and_what_is_accepted():
    with pytest.raises(ConfigError, match="kinds"):
        LearnableNoise(2, kinds=("bitflip",))
    with pytest.raises(ConfigError, match="initial"):
        LearnableNoise(2, initial=0.7)

    def measures_x(inputs):
        qml.RY(inputs[..., 0], wires=0)
        return qml.expval(qml.PauliX(0))

    with pytest.raises(ConfigError, match="readout=False"):
        qml.tape.make_qscript(LearnableNoise(1)(measures_x))(torch.zeros(1))
    tape = qml.tape.make_qscript(LearnableNoise(1, readout=False)(measures_x))(torch.zeros(1))
    assert [op.name for op in tape.operations] == ["RY", "DepolarizingChannel", "AmplitudeDamping", "PhaseDamping"]

    def wide(inputs):
        qml.RY(inputs[..., 0], wires=3)
        return qml.expval(qml.PauliZ(3))

    with pytest.raises(ConfigError, match="wire 3"):
        qml.tape.make_qscript(LearnableNoise(2)(wide))(torch.zeros(1))


def test_a_qnode_or_a_non_function_is_refused_and_the_qnodes_function_runs():
    qnode = qml.QNode(circuit, qml.device("default.mixed", wires=3))
    with pytest.raises(ConfigError, match=r"qfunc=.*qnode.func"):
        LearnableNoise(3)(qnode)
    with pytest.raises(ConfigError, match="qfunc=3"):
        LearnableNoise(3)(3)
    layer = QuantumLayer(LearnableNoise(3)(qnode.func), n_qubits=3, n_inputs=3, backend="density")
    assert layer(torch.zeros(1, 3, dtype=torch.float64)).shape == (1, 4)
