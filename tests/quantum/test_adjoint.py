"""diff_method="adjoint" on the statevector backend equals backprop (values and gradients, 1e-10)."""

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
