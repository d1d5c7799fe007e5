"""``qml.ctrl`` of a rotation with several controls, on the Qiskit families: equal to ``statevector`` (which applies
its matrix) for a batch of one and of several angles, values and gradients."""

import pennylane as qml
import pytest
import torch

from hybridai import QuantumLayer

pytestmark = pytest.mark.numerics  # values to 1e-10: run again on other CPU code paths (make test)


@pytest.mark.parametrize("rotation", ["RX", "RY", "RZ", "PhaseShift"])
@pytest.mark.parametrize(("controls", "values"), [([0], [1]), ([0, 1], [1, 0]), ([1, 0, 3], [0, 1, 1])])
@pytest.mark.parametrize("batch", [1, 3])
def test_multi_controlled_rotations_equal_statevector(rotation, controls, values, batch):
    def circuit(inputs, weights):
        for w in range(4):
            qml.RY(0.4 + 0.3 * w, wires=w)
        qml.ctrl(getattr(qml, rotation), control=controls, control_values=values)(inputs[..., 0], wires=2)
        qml.ctrl(getattr(qml, rotation), control=controls, control_values=values)(weights[0], wires=2)
        qml.RX(0.2, wires=2)  # the phase of PhaseShift shows in X and Y
        return qml.expval(qml.PauliX(2)), qml.expval(qml.PauliY(2) @ qml.PauliZ(controls[-1]))

    x = torch.linspace(0.3, 2.1, batch, dtype=torch.float64).reshape(batch, 1)
    init = {"weights": lambda t: torch.nn.init.constant_(t, 0.7)}
    outputs, grads = {}, {}
    for backend in ("statevector", "density", "aer"):
        layer = QuantumLayer(circuit, n_qubits=4, n_inputs=1, weight_shapes={"weights": 1}, backend=backend,
                             init=init).double()  # fmt: skip
        inputs = x.clone().requires_grad_()
        out = layer(inputs)
        out.sum().backward()
        outputs[backend], grads[backend] = out.detach(), (inputs.grad, layer.weights.grad)
        weights = layer.weights.detach().numpy()
    for backend in ("density", "aer"):
        assert torch.allclose(outputs[backend], outputs["statevector"], atol=1e-10, rtol=0), backend
        for got, want in zip(grads[backend], grads["statevector"], strict=True):
            assert torch.allclose(got, want, atol=1e-9, rtol=0), backend
    assert outputs["statevector"].abs().max() > 1e-3
    qnode = qml.QNode(circuit, qml.device("default.qubit", wires=4))  # PennyLane in numpy, one angle at a time
    expected = torch.tensor([qnode(x[b].numpy(), weights) for b in range(batch)], dtype=torch.float64)
    assert torch.allclose(outputs["statevector"], expected, atol=1e-10, rtol=0)
