import io
import subprocess
import sys

import pennylane as qml
import pytest
import torch
from torch import nn

import hybridai
from hybridai import QuantumLayer
from hybridai.core.errors import BackendNotFoundError, ConfigError, ShapeError

N = 3
PL = "pennylane:default.qubit"
SHAPES = {"weights": (2, N, 3)}


def expval_circuit(inputs, weights):
    qml.AngleEmbedding(inputs, wires=range(N))
    qml.StronglyEntanglingLayers(weights, wires=range(N))
    return [qml.expval(qml.PauliZ(i)) for i in range(N)]


def mixed_circuit(inputs, weights, bias):
    qml.AngleEmbedding(inputs, wires=range(N), rotation="Y")
    qml.BasicEntanglerLayers(weights, wires=range(N))
    qml.RZ(bias[0], wires=0)
    qml.CRX(inputs[..., 1] * bias[1], wires=[0, 2])
    return (
        qml.expval(qml.PauliX(0) @ qml.PauliY(2)),
        qml.var(qml.PauliZ(1)),
        qml.probs(wires=[0, 1]),
        qml.expval(qml.Hermitian(torch.tensor([[1.0, 0.5], [0.5, -2.0]], dtype=torch.float64), wires=2)),
    )


MIXED_SHAPES = {"weights": (2, N), "bias": 2}


def oracle(circuit, x, weights, device="default.qubit"):
    """A bare PennyLane QNode, one sample at a time: the reference."""
    qnode = qml.QNode(circuit, qml.device(device, wires=N), interface="torch", diff_method="backprop")
    rows = []
    for sample in x:
        out = qnode(sample, **weights)
        out = out if isinstance(out, tuple | list) else (out,)
        rows.append(torch.cat([torch.as_tensor(o).reshape(-1) for o in out]))
    return torch.stack(rows)


def grads_of(fn, tensors):
    out = fn()
    (out * torch.linspace(0.5, 1.5, out.shape[-1], dtype=out.dtype)).sum().backward()
    grads = [t.grad.clone() for t in tensors]
    for t in tensors:
        t.grad = None
    return out.detach(), grads


@pytest.mark.parametrize(
    "circuit, shapes, backend",
    [
        (expval_circuit, SHAPES, "pennylane:default.qubit"),
        (mixed_circuit, MIXED_SHAPES, "pennylane:default.qubit"),
        (expval_circuit, SHAPES, "pennylane:lightning.qubit"),
        (mixed_circuit, MIXED_SHAPES, "pennylane:lightning.qubit"),
        (expval_circuit, SHAPES, "pennylane:default.mixed"),
        (expval_circuit, SHAPES, "statevector"),
        (mixed_circuit, MIXED_SHAPES, "statevector"),
    ],
)
def test_outputs_and_gradients_equal_bare_qnode(circuit, shapes, backend):
    torch.manual_seed(1)
    layer = QuantumLayer(circuit, N, shapes, backend=backend).double()
    x = torch.rand(5, N, dtype=torch.float64, requires_grad=True)
    weights = {n: getattr(layer, n) for n in shapes}
    got, got_grads = grads_of(lambda: layer(x), [x, *weights.values()])
    ref_weights = {n: w.detach().clone().requires_grad_() for n, w in weights.items()}
    x_ref = x.detach().clone().requires_grad_()
    want, want_grads = grads_of(lambda: oracle(circuit, x_ref, ref_weights), [x_ref, *ref_weights.values()])
    assert got.dtype == torch.float64 and got.shape == want.shape
    torch.testing.assert_close(got, want, rtol=0, atol=1e-10)
    for g, w in zip(got_grads, want_grads, strict=True):
        torch.testing.assert_close(g, w, rtol=0, atol=1e-10)


def test_batch_equals_per_sample_and_unbatched_input():
    torch.manual_seed(2)
    layer = QuantumLayer(mixed_circuit, N, MIXED_SHAPES).double()
    x = torch.rand(4, N, dtype=torch.float64)
    batch = layer(x)
    assert batch.shape == (4, 1 + 1 + 4 + 1)
    for i in range(4):
        single = layer(x[i])
        assert single.shape == (7,)
        torch.testing.assert_close(single, batch[i], rtol=0, atol=1e-12)
    assert layer.n_inputs == N and layer.n_outputs == 7


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_dtype_follows_input(dtype):
    layer = QuantumLayer(expval_circuit, N, SHAPES, backend="pennylane:lightning.qubit")
    out = layer(torch.rand(2, N, dtype=dtype))
    assert out.dtype == dtype


def test_lightning_keeps_float64_precision():
    """lightning hands results to torch in the default dtype; the layer must not lose float64."""
    torch.manual_seed(3)
    layer = QuantumLayer(expval_circuit, N, SHAPES, backend="pennylane:lightning.qubit").double()
    ref = QuantumLayer(expval_circuit, N, SHAPES).double()
    ref.load_state_dict(layer.state_dict())
    x = torch.rand(3, N, dtype=torch.float64)
    assert (layer(x) - ref(x)).abs().max() < 1e-13
    assert torch.get_default_dtype() == torch.float32


def test_pennylane_keeps_float64_without_touching_the_process_default_dtype(monkeypatch):
    """The default dtype is process-wide: changing it during a call would change other threads' tensors."""
    changes = []
    monkeypatch.setattr(torch, "set_default_dtype", changes.append)
    torch.manual_seed(3)
    x = torch.rand(3, N, dtype=torch.float64, requires_grad=True)
    ref = QuantumLayer(mixed_circuit, N, MIXED_SHAPES).double()  # RZ: PennyLane's diagonal path on default.mixed
    want, want_grads = grads_of(lambda: ref(x), [x, ref.weights])
    for backend in ("pennylane:lightning.qubit", "pennylane:default.mixed"):
        layer = QuantumLayer(mixed_circuit, N, MIXED_SHAPES, backend=backend).double()
        layer.load_state_dict(ref.state_dict())
        got, got_grads = grads_of(lambda layer=layer: layer(x), [x, layer.weights])
        torch.testing.assert_close(got, want, rtol=0, atol=1e-12)
        for g, w in zip(got_grads, want_grads, strict=True):
            torch.testing.assert_close(g, w, rtol=0, atol=1e-10)
    assert changes == [] and torch.get_default_dtype() == torch.float32


def test_shots_are_seeded_and_close_to_exact():
    torch.manual_seed(4)
    x = torch.rand(3, N, dtype=torch.float64)

    def sampled(seed):
        layer = QuantumLayer(expval_circuit, N, SHAPES, backend=PL, shots=20000, seed=seed).double()
        layer.load_state_dict(exact.state_dict())
        return layer(x)

    exact = QuantumLayer(expval_circuit, N, SHAPES).double()
    a, b, c = sampled(7), sampled(7), sampled(8)
    assert torch.equal(a, b)
    assert not torch.equal(a, c)
    assert (a - exact(x)).abs().max() < 0.05  # 20000 shots: standard error below 0.007


def test_shot_gradients_use_parameter_shift():
    torch.manual_seed(5)
    layer = QuantumLayer(expval_circuit, N, SHAPES, backend=PL, shots=50000, seed=1).double()
    exact = QuantumLayer(expval_circuit, N, SHAPES).double()
    exact.load_state_dict(layer.state_dict())
    x = torch.rand(2, N, dtype=torch.float64, requires_grad=True)
    layer(x).sum().backward()
    g_shots = layer.weights.grad.clone()
    exact(x).sum().backward()
    assert (g_shots - exact.weights.grad).abs().max() < 0.1
    assert x.grad is not None and x.grad.abs().sum() > 0


def test_explicit_diff_methods_agree():
    torch.manual_seed(6)
    x = torch.rand(3, N, dtype=torch.float64, requires_grad=True)
    grads = []
    for method in ("backprop", "adjoint", "parameter-shift"):
        torch.manual_seed(6)
        layer = QuantumLayer(expval_circuit, N, SHAPES, backend=PL, diff_method=method).double()
        layer(x).sum().backward()
        grads.append((layer.weights.grad.clone(), x.grad.clone()))
        x.grad = None
    for g in grads[1:]:
        torch.testing.assert_close(g[0], grads[0][0], rtol=0, atol=1e-10)
        torch.testing.assert_close(g[1], grads[0][1], rtol=0, atol=1e-10)


def make_model():
    return nn.Sequential(nn.Linear(4, N), nn.Tanh(), QuantumLayer(expval_circuit, N, SHAPES), nn.Linear(N, 2))


def test_state_dict_round_trip_without_duplicate_keys():
    torch.manual_seed(7)
    model = make_model()
    keys = list(model.state_dict())
    assert keys == ["0.weight", "0.bias", "2.weights", "3.weight", "3.bias"]
    other = make_model()
    other.load_state_dict(model.state_dict())
    x = torch.rand(5, 4)
    torch.testing.assert_close(other(x), model(x), rtol=0, atol=0)


def test_torch_save_whole_model_round_trip():
    torch.manual_seed(8)
    model = make_model()
    x = torch.rand(5, 4)
    model(x)  # resolves and caches the backend before saving
    buffer = io.BytesIO()
    torch.save(model, buffer)
    buffer.seek(0)
    loaded = torch.load(buffer, weights_only=False)
    assert loaded[2].backend == "statevector"
    torch.testing.assert_close(loaded(x), model(x), rtol=0, atol=0)


def test_torch_save_keeps_the_options_of_a_backend_object():
    shared = hybridai.backends.get("pennylane:default.qubit", shots=200, seed=5)
    layer = QuantumLayer(expval_circuit, N, SHAPES, backend=shared).double()
    assert layer.backend_options == {"shots": 200, "seed": 5}
    x = torch.rand(2, N, dtype=torch.float64)
    with torch.no_grad():
        before = layer(x)
    buffer = io.BytesIO()
    torch.save(layer, buffer)
    buffer.seek(0)
    loaded = torch.load(buffer, weights_only=False)
    assert loaded.resolved_backend is not shared and loaded.resolved_backend.options == shared.options
    with torch.no_grad():
        torch.testing.assert_close(loaded(x), before, rtol=0, atol=0)  # same shots, same seed: same samples


def test_trains_inside_sequential():
    torch.manual_seed(9)
    model = make_model()
    x = torch.rand(32, 4)
    y = (x[:, 0] > x[:, 1]).long()
    optimizer = torch.optim.Adam(model.parameters(), lr=0.05)
    losses = []
    for _ in range(30):
        optimizer.zero_grad()
        loss = nn.functional.cross_entropy(model(x), y)
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    assert losses[-1] < 0.8 * losses[0]
    assert model[2].weights.grad is not None and model[2].weights.grad.abs().sum() > 0


# --- errors -------------------------------------------------------------------------------


def test_wrong_input_width_learnt_from_first_batch():
    layer = QuantumLayer(expval_circuit, N, SHAPES)
    layer(torch.rand(2, N))
    with pytest.raises(ShapeError, match=r"inputs.shape=\(2, 2\).*\[B, 3\]"):
        layer(torch.rand(2, 2))


def test_wrong_input_width_declared():
    layer = QuantumLayer(expval_circuit, N, SHAPES, n_inputs=2)
    with pytest.raises(ShapeError, match=r"\[B, 2\]"):
        layer(torch.rand(2, N))


def test_too_many_features_for_the_circuit():
    layer = QuantumLayer(expval_circuit, N, SHAPES)
    with pytest.raises(ShapeError, match=r"inputs of shape \(2, 5\)"):
        layer(torch.rand(2, 5))
    assert layer.n_inputs is None  # nothing learnt from a failed call


@pytest.mark.parametrize(
    "bad", [torch.rand(2, 3, 3), torch.rand(0, 3), torch.zeros(2, 3, dtype=torch.complex64), [1.0]]
)
def test_bad_inputs(bad):
    with pytest.raises(ShapeError, match="inputs"):
        QuantumLayer(expval_circuit, N, SHAPES)(bad)


def test_weight_shapes_wrong_for_template():
    layer = QuantumLayer(expval_circuit, N, {"weights": (2, N, 2)})
    with pytest.raises(ShapeError, match="weight_shapes"):
        layer(torch.rand(2, N))


@pytest.mark.parametrize(
    "shapes, match",
    [
        ({"weights": (2, N, 3), "extra": 2}, "'extra'"),
        ({}, "lacks"),
        ({"weights": (2, -1, 3)}, r"weight_shapes\['weights'\]"),
        ([(2, N, 3)], "weight_shapes="),
    ],
)
def test_bad_weight_shapes(shapes, match):
    with pytest.raises(ConfigError, match=match):
        QuantumLayer(expval_circuit, N, shapes)


def test_weight_name_clashing_with_module_attribute():
    def circuit(inputs, training):
        return qml.expval(qml.PauliZ(0))

    with pytest.raises(ConfigError, match="training"):
        QuantumLayer(circuit, 1, {"training": 1})


def test_unknown_backend_and_wrong_domain():
    with pytest.raises(BackendNotFoundError, match="lightning.qubit"):
        QuantumLayer(expval_circuit, N, SHAPES, backend="pennylane:lightning.qbit")
    with pytest.raises(ConfigError, match="backend='torch'"):
        QuantumLayer(expval_circuit, N, SHAPES, backend="torch")


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"n_qubits": 0}, "n_qubits=0"),
        ({"shots": -5}, "shots=-5"),
        ({"diff_method": "magic"}, "diff_method='magic'"),
        ({"init": 3}, "init=3"),
        ({"qfunc": "not callable"}, "qfunc="),
    ],
)
def test_bad_arguments(kwargs, match):
    args = {"qfunc": expval_circuit, "n_qubits": N, "weight_shapes": SHAPES, **kwargs}
    with pytest.raises(ConfigError, match=match):
        QuantumLayer(**args)


def test_unsupported_measurement_and_wires():
    def state_circuit(inputs, weights):
        qml.AngleEmbedding(inputs, wires=range(N))
        return qml.state()

    with pytest.raises(ConfigError, match="qml.expval"):
        QuantumLayer(state_circuit, N, SHAPES)(torch.rand(2, N))

    def wide_circuit(inputs, weights):
        qml.AngleEmbedding(inputs, wires=range(N + 1))
        return qml.expval(qml.PauliZ(0))

    with pytest.raises(ConfigError, match=r"wires \[3\]"):
        QuantumLayer(wide_circuit, N, SHAPES)(torch.rand(2, N + 1))


def test_custom_init():
    layer = QuantumLayer(expval_circuit, N, SHAPES, init=torch.nn.init.zeros_)
    assert torch.count_nonzero(layer.weights) == 0
    default = QuantumLayer(expval_circuit, N, SHAPES)
    assert 0 <= default.weights.min() and default.weights.max() < 2 * torch.pi


def test_import_is_lazy():
    code = (
        "import sys, hybridai; heavy = [m for m in ('qiskit', 'mitiq', 'nengo', 'akida', 'pennylane') "
        "if m in sys.modules]; print(heavy)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_place_and_summary():
    model = make_model()
    text = hybridai.summary(model, show=False)
    assert "statevector" in text and "3 qubits" in text and "3 classical, 1 quantum" in text
    total = sum(p.numel() for p in model.parameters())
    assert f"{total:,}" in text.splitlines()[-1]
    hybridai.place(model, quantum="pennylane:lightning.qubit", classical="torch:cpu")
    assert model[2].backend == "pennylane:lightning.qubit"
    assert "pennylane:lightning.qubit" in hybridai.summary(model, show=False)
    with pytest.raises(BackendNotFoundError):
        hybridai.place(model, quantum="statevector", classical="nope")
    assert model[2].backend == "pennylane:lightning.qubit"  # validated before any change
    with pytest.raises(ConfigError, match="is a placement, not a quantum executor"):
        hybridai.place(model, quantum="torch")
