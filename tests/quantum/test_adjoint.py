"""diff_method="adjoint" on the statevector backend equals backprop and lightning.qubit's adjoint (values and
gradients, 1e-10)."""

import numpy as np
import pennylane as qml
import pytest
import torch

import hybridai.quantum.statevector.backend as statevector_backend
from hybridai import QuantumLayer
from hybridai.core.errors import ResourceLimitError

N = 3


def layered(inputs, weights):
    qml.AngleEmbedding(inputs, wires=range(N))
    qml.StronglyEntanglingLayers(weights, wires=range(N))
    qml.CRX(weights[0, 0, 0], wires=[0, 2])
    qml.IsingXX(weights[0, 1, 1], wires=[1, 2])
    qml.PhaseShift(weights[1, 2, 2], wires=1)
    qml.MultiRZ(weights[1, 0, 1], wires=[0, 1, 2])
    return [qml.expval(qml.PauliZ(i)) for i in range(N)] + [
        qml.expval(qml.PauliX(0) @ qml.PauliY(1)),
        qml.var(qml.PauliX(2)),
        qml.probs(wires=[0, 2]),
        qml.expval(qml.Hermitian(torch.tensor([[1.0, 0.5], [0.5, -1.0]], dtype=torch.float64), wires=1)),
    ]


def amplitudes(inputs, weights):
    qml.AmplitudeEmbedding(inputs, wires=range(N), normalize=True, pad_with=0.0)
    qml.BasicEntanglerLayers(weights, wires=range(N))
    qml.Toffoli(wires=[0, 1, 2])
    return [qml.expval(qml.PauliZ(i)) for i in range(N)]


def gradients(qfunc, shapes, x, diff_method, **options):
    layer = QuantumLayer(qfunc, N, shapes, backend="statevector", diff_method=diff_method, **options).double()
    torch.manual_seed(3)
    with torch.no_grad():
        for name in shapes:
            getattr(layer, name).copy_(torch.rand_like(getattr(layer, name)) * 3)
    x = x.detach().clone().requires_grad_()
    out = layer(x)
    loss = (out * torch.linspace(-1, 2, out.shape[-1], dtype=out.dtype)).sum()
    loss.backward()
    return [out.detach(), x.grad, *(getattr(layer, name).grad for name in shapes)]


@pytest.mark.parametrize(
    "qfunc, shapes, width",
    [(layered, {"weights": (2, N, 3)}, N), (amplitudes, {"weights": (2, N)}, 2**N)],
    ids=["rotations-and-observables", "amplitude-embedding"],
)
@pytest.mark.parametrize("batch", [5, None])
def test_adjoint_equals_backprop(qfunc, shapes, width, batch):
    torch.manual_seed(0)
    x = torch.rand(width, dtype=torch.float64) + 0.1 if batch is None else torch.rand(batch, width, dtype=torch.float64)
    want = gradients(qfunc, shapes, x, "backprop")
    got = gradients(qfunc, shapes, x, "adjoint")
    assert got[0].shape == want[0].shape
    for a, b in zip(got, want, strict=True):
        assert (a - b).abs().max() < 1e-10
    assert want[2].abs().max() > 1e-3  # the comparison is of real gradients


def test_adjoint_in_complex64_is_close():
    x = torch.rand(4, N, dtype=torch.float64)
    want = gradients(layered, {"weights": (2, N, 3)}, x, "backprop")
    got = gradients(layered, {"weights": (2, N, 3)}, x, "adjoint", dtype="complex64")
    for a, b in zip(got, want, strict=True):
        assert (a - b).abs().max() < 1e-4


def test_best_picks_adjoint_when_backprop_states_exceed_the_memory_limit(monkeypatch):
    calls = []
    original = statevector_backend.run_adjoint

    def spy(*args, **kwargs):
        calls.append(args[2])
        return original(*args, **kwargs)

    monkeypatch.setattr(statevector_backend, "run_adjoint", spy)
    x = torch.rand(4, N, dtype=torch.float64)
    roomy = gradients(layered, {"weights": (2, N, 3)}, x, "best")
    assert calls == []
    # 4 states of 8 amplitudes (complex128) = 512 bytes per state: adjoint (8 states counted) fits in 8.5,
    # backprop (one per planned step, 5 here, and 4 more) does not
    tight = gradients(layered, {"weights": (2, N, 3)}, x, "best", max_memory=8 * 512 + 256)
    assert calls == [4]
    for a, b in zip(tight, roomy, strict=True):
        assert (a - b).abs().max() < 1e-10
    with pytest.raises(ResourceLimitError, match="max_memory"):
        gradients(layered, {"weights": (2, N, 3)}, x, "adjoint", max_memory=4 * 512)


def test_adjoint_without_gradients_runs_plainly():
    layer = QuantumLayer(layered, N, {"weights": (2, N, 3)}, backend="statevector", diff_method="adjoint").double()
    reference = QuantumLayer(layered, N, {"weights": (2, N, 3)}, backend="statevector").double()
    reference.load_state_dict(layer.state_dict())
    x = torch.rand(3, N, dtype=torch.float64)
    with torch.no_grad():
        assert (layer(x) - reference(x)).abs().max() < 1e-12


# -- the sweep's blocks (product start, permutation runs, rotation layers, single steps) at more qubits ------

M = 7


def blocks(inputs, weights):
    """Every kind of block: a product start with constant and diagonal one-wire gates, CNOT rings and monomials
    with phases, rotation layers mixing kinds (batched re-uploading, RZ, H, S), a one-wire run on few wires
    (single steps), dense and diagonal gates on several wires."""
    qml.PauliX(wires=1)
    qml.AngleEmbedding(inputs, wires=range(M), rotation="Y")
    qml.RZ(weights[0, 0, 0], wires=2)
    qml.S(wires=3)
    qml.StronglyEntanglingLayers(weights, wires=range(M))
    qml.CZ(wires=[0, 5])
    qml.CY(wires=[4, 1])
    qml.S(wires=6)
    qml.AngleEmbedding(inputs, wires=range(M), rotation="X")  # re-uploading: a batched rotation layer
    for w in range(M):
        qml.RZ(weights[1, w, 0] * 0.7, wires=w)
    qml.Hadamard(wires=0)
    qml.PhaseShift(weights[1, 2, 1], wires=4)
    qml.Toffoli(wires=[0, 1, 2])
    qml.RY(weights[0, 3, 2], wires=3)  # a one-wire run on a single wire: single steps
    qml.T(wires=3)
    qml.CRX(weights[1, 4, 2], wires=[2, 6])
    qml.IsingZZ(weights[0, 5, 1], wires=[1, 4])
    qml.CNOT(wires=[3, 5])
    return [qml.expval(qml.PauliZ(i)) for i in range(M)] + [qml.expval(qml.PauliX(2) @ qml.PauliY(5)),
                                                         qml.probs(wires=[1, 6])]  # fmt: skip


def block_gradients(diff_method, x, **options):
    layer = QuantumLayer(blocks, M, {"weights": (2, M, 3)}, diff_method=diff_method, **options).double()
    with torch.no_grad():
        layer.weights.copy_(torch.rand(2, M, 3, generator=torch.Generator().manual_seed(5), dtype=torch.float64) * 3)
    x = x.detach().clone().requires_grad_()
    out = layer(x)
    (out * torch.linspace(-1, 2, out.shape[-1], dtype=out.dtype)).sum().backward()
    return [out.detach(), x.grad, layer.weights.grad]


@pytest.mark.parametrize("batch", [6, None])
def test_every_kind_of_block_equals_backprop(batch):
    shape = (M,) if batch is None else (batch, M)
    x = torch.rand(shape, generator=torch.Generator().manual_seed(2), dtype=torch.float64) * 3
    want = block_gradients("backprop", x)
    got = block_gradients("adjoint", x)
    for a, b in zip(got, want, strict=True):
        assert a.shape == b.shape
        torch.testing.assert_close(a, b, rtol=0, atol=1e-10)
    assert want[2].abs().max() > 1e-3
    low = block_gradients("adjoint", x, dtype="complex64")
    for a, b in zip(low, want, strict=True):
        torch.testing.assert_close(a.double(), b, rtol=0, atol=1e-4)


def test_a_given_initial_state_and_a_circuit_without_product_start():
    def prepared(inputs, weights):
        qml.AmplitudeEmbedding(inputs, wires=range(4), normalize=True)
        qml.StronglyEntanglingLayers(weights, wires=range(4))
        qml.CNOT(wires=[0, 3])
        return [qml.expval(qml.PauliZ(i)) for i in range(4)]

    def entangled_first(inputs, weights):
        qml.CNOT(wires=[0, 1])
        qml.AngleEmbedding(inputs, wires=range(4))
        qml.BasicEntanglerLayers(weights[..., 0], wires=range(4))
        return [qml.expval(qml.PauliZ(i)) for i in range(4)]

    for qfunc, width in ((prepared, 16), (entangled_first, 4)):
        x = torch.rand(3, width, generator=torch.Generator().manual_seed(1), dtype=torch.float64) + 0.1
        results = []
        for method in ("backprop", "adjoint"):
            layer = QuantumLayer(qfunc, 4, {"weights": (2, 4, 3)}, diff_method=method).double()
            with torch.no_grad():
                layer.weights.copy_(torch.linspace(0.1, 2.0, 24, dtype=torch.float64).view(2, 4, 3))
            xi = x.clone().requires_grad_()
            out = layer(xi)
            (out * torch.arange(1, 5, dtype=out.dtype)).sum().backward()
            results.append([out.detach(), xi.grad, layer.weights.grad])
        for a, b in zip(*results, strict=True):
            torch.testing.assert_close(a, b, rtol=0, atol=1e-10)


def test_adjoint_equals_lightning_adjoint_at_ten_qubits():
    """The benchmark's circuit (AngleEmbedding, StronglyEntanglingLayers, <Z> on every qubit) at 10 qubits and a
    batch of 4: values and the gradients of inputs and weights equal lightning.qubit's adjoint to 1e-10 (through
    PennyLane's autograd interface: its torch interface returns lightning's values as float32)."""
    import pennylane.numpy as pnp

    n = 10

    def circuit(inputs, weights):
        qml.AngleEmbedding(inputs, wires=range(n))
        qml.StronglyEntanglingLayers(weights, wires=range(n))
        return [qml.expval(qml.PauliZ(i)) for i in range(n)]

    generator = torch.Generator().manual_seed(4)
    x = torch.rand(4, n, generator=generator, dtype=torch.float64) * 3
    weights = torch.rand(2, n, 3, generator=generator, dtype=torch.float64) * 3
    scale = torch.linspace(-1, 1, n, dtype=torch.float64)
    layer = QuantumLayer(circuit, n, {"weights": (2, n, 3)}, diff_method="adjoint").double()
    with torch.no_grad():
        layer.weights.copy_(weights)
    xs = x.clone().requires_grad_()
    out = layer(xs)
    (out * scale).sum().backward()

    qnode = qml.QNode(circuit, qml.device("lightning.qubit", wires=n), interface="autograd", diff_method="adjoint")
    values = pnp.stack(qnode(pnp.array(x.numpy(), requires_grad=False), pnp.array(weights.numpy())), -1)
    cost = lambda a, b: pnp.sum(pnp.stack(qnode(a, b), -1) * scale.numpy())  # noqa: E731
    gx, gw = qml.grad(cost)(pnp.array(x.numpy(), requires_grad=True), pnp.array(weights.numpy(), requires_grad=True))
    torch.testing.assert_close(out.detach(), torch.as_tensor(np.asarray(values)), rtol=0, atol=1e-10)
    torch.testing.assert_close(xs.grad, torch.as_tensor(np.asarray(gx)), rtol=0, atol=1e-10)
    torch.testing.assert_close(layer.weights.grad, torch.as_tensor(np.asarray(gw)), rtol=0, atol=1e-10)
    assert np.abs(gw).max() > 1e-3


def test_inputs_gradient_alone_equals_backprop():
    """Frozen weights: no block after the product start differentiates, the sweep takes back ``lam`` alone."""
    x = torch.rand(5, M, generator=torch.Generator().manual_seed(6), dtype=torch.float64) * 3
    grads = []
    for method in ("backprop", "adjoint"):
        layer = QuantumLayer(blocks, M, {"weights": (2, M, 3)}, diff_method=method).double()
        with torch.no_grad():
            layer.weights.copy_(torch.linspace(0.2, 2.5, 2 * M * 3, dtype=torch.float64).view(2, M, 3))
        layer.weights.requires_grad_(False)
        xi = x.clone().requires_grad_()
        (layer(xi) * torch.arange(M + 5, dtype=torch.float64)).sum().backward()
        grads.append(xi.grad)
    torch.testing.assert_close(grads[1], grads[0], rtol=0, atol=1e-10)
