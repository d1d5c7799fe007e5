"""A ``qml.qnn.TorchLayer`` in a model (issue 27): the summary counts it as quantum, ``place(quantum=...)`` adopts it
as a ``QuantumLayer`` with its circuit, weights and shapes, or refuses by name what it cannot adopt exactly."""

from __future__ import annotations

import copy
import pickle

import pennylane as qml
import pytest
import torch
from torch import nn

import hybridai
from hybridai import QuantumLayer
from hybridai.core.errors import ConfigError, ShapeError
from hybridai.quantum.torchlayer import AdoptedTorchLayer, adopt_torchlayer

SHAPES = {"weights": (2, 2, 3)}


def returning(measure):
    """A circuit on two wires whose measurements are ``measure()``."""

    def circuit(inputs, weights):
        qml.AngleEmbedding(inputs, wires=range(2))
        qml.StronglyEntanglingLayers(weights, wires=range(2))
        return measure()

    return circuit


RETURNS = {
    "expval alone": lambda: qml.expval(qml.PauliZ(0)),
    "list of two": lambda: [qml.expval(qml.PauliZ(0)), qml.expval(qml.PauliX(1))],
    "tuple of two": lambda: (qml.expval(qml.PauliZ(0)), qml.var(qml.PauliY(1))),
    "tuple of two probs": lambda: (qml.probs(wires=[0]), qml.probs(wires=[1])),
    "probs and expval": lambda: [qml.probs(wires=[0, 1]), qml.expval(qml.PauliZ(1))],
    "tuple of one": lambda: (qml.expval(qml.PauliZ(0)),),
}
circuit = returning(RETURNS["list of two"])


def torchlayer(function=circuit, shapes=SHAPES, device=None, seed=0, **qnode):
    torch.manual_seed(seed)
    device = device or qml.device("default.qubit", wires=2)
    return qml.qnn.TorchLayer(qml.QNode(function, device, **qnode), shapes)


def outputs_and_gradients(module, x):
    x = x.clone().requires_grad_(True)
    out = module(x)
    weights = [p for p in module.parameters()]
    grads = torch.autograd.grad(out.sum(), [x, *weights])
    return out.detach(), [g.detach() for g in grads]


@pytest.mark.parametrize("returns", RETURNS.values(), ids=RETURNS.keys())
@pytest.mark.parametrize("shape", [(3, 2), (2,), (2, 3, 2)], ids=["[B, F]", "[F]", "[A, B, F]"])
def test_the_adopted_layer_gives_the_torchlayers_outputs_and_gradients(returns, shape):
    original = torchlayer(returning(returns)).double()
    x = torch.rand(*shape, dtype=torch.float64, generator=torch.Generator().manual_seed(1))
    want, want_grads = outputs_and_gradients(original, x)
    adopted = adopt_torchlayer(original, "statevector")
    assert isinstance(adopted, QuantumLayer) and adopted.backend == "statevector"
    got, got_grads = outputs_and_gradients(adopted, x)
    assert got.shape == want.shape and got.dtype == torch.float64
    torch.testing.assert_close(got, want, rtol=0, atol=1e-10)
    for g, w in zip(got_grads, want_grads, strict=True):
        torch.testing.assert_close(g, w, rtol=0, atol=1e-10)


def test_a_scalar_weight_and_the_qnodes_diff_method_and_shots_are_kept():
    def scalar(inputs, w):
        qml.RX(inputs[..., 0] * w, wires=0)
        return qml.expval(qml.PauliZ(0))

    original = torchlayer(scalar, {"w": 1}, diff_method="parameter-shift")
    assert original.w.shape == ()
    adopted = adopt_torchlayer(original, "statevector")
    assert adopted.weight_shapes == {"w": ()} and adopted.diff_method == "parameter-shift"
    x = torch.rand(4, 1, dtype=torch.float64)
    torch.testing.assert_close(adopted(x), original(x).to(torch.float64), rtol=0, atol=1e-6)
    sampled = qml.qnn.TorchLayer(qml.set_shots(qml.QNode(scalar, qml.device("default.qubit", wires=1)), 50), {"w": 1})
    assert adopt_torchlayer(sampled, "statevector").shots == 50
    own = adopt_torchlayer(sampled, None)  # None: its own device, with its shots
    assert own.backend == "pennylane:default.qubit" and own.backend_options["shots"] == 50


# -- place and summary ---------------------------------------------------------------------------------------


def test_summary_shows_a_torchlayer_as_quantum_on_its_device():
    model = nn.Sequential(nn.Linear(3, 2), torchlayer(device=qml.device("lightning.qubit", wires=2)))
    row = next(line for line in hybridai.summary(model).splitlines() if "TorchLayer" in line)
    assert row.split()[:5] == ["1", "TorchLayer", "quantum", "pennylane:lightning.qubit", "12"], row
    assert row.endswith("2 qubits") and "1 classical, 1 quantum" in hybridai.summary(model)


def test_place_swaps_torchlayers_at_any_depth_keeping_their_parameters_for_the_optimizer():
    first, second, third = torchlayer(seed=1), torchlayer(seed=2), torchlayer(seed=3)
    model = nn.Sequential(
        nn.Linear(3, 2), nn.ModuleList([first]), nn.ModuleDict({"q": second}), nn.Sequential(nn.Sequential(third))
    )
    parameters = [first.weights, second.weights, third.weights]
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)  # built before placing
    x = torch.rand(5, 3)
    before = model[3](model[2]["q"](model[1][0](model[0](x))))
    assert hybridai.place(model, quantum="statevector") is model
    adopted = [model[1][0], model[2]["q"], model[3][0][0]]
    assert all(isinstance(m, AdoptedTorchLayer) and m.backend == "statevector" for m in adopted)
    assert [m.weights for m in adopted] == parameters and all(
        a.weights is p for a, p in zip(adopted, parameters, strict=True)
    )
    after = model[3](model[2]["q"](model[1][0](model[0](x))))
    torch.testing.assert_close(after, before, rtol=0, atol=1e-5)
    kept = parameters[0].detach().clone()
    after.sum().backward()
    optimizer.step()  # the optimizer built before place() trains the adopted layers
    assert not torch.equal(parameters[0].detach(), kept)
    text = hybridai.summary(model)
    assert text.count("AdoptedTorchLayer") == 3 and "1 classical, 3 quantum" in text and " TorchLayer " not in text


def test_place_adopts_a_root_torchlayer_and_one_shared_twice_once():
    root = torchlayer()
    placed = hybridai.place(root, quantum="statevector")
    assert isinstance(placed, AdoptedTorchLayer) and placed.weights is root.weights
    shared = torchlayer()
    model = nn.Sequential(shared, nn.Linear(2, 2), shared)
    hybridai.place(model, quantum="statevector")
    assert isinstance(model[0], AdoptedTorchLayer) and model[0] is model[2]


def test_place_without_quantum_leaves_a_torchlayer_as_it_is():
    original = torchlayer()
    model = nn.Sequential(nn.Linear(3, 2), original)
    hybridai.place(model, classical="torch")
    assert model[1] is original


def tuple_of_two(inputs, weights):
    qml.AngleEmbedding(inputs, wires=range(2))
    qml.StronglyEntanglingLayers(weights, wires=range(2))
    return qml.expval(qml.PauliZ(0)), qml.expval(qml.PauliZ(1))


def test_an_adopted_layer_survives_pickling_and_deepcopy_with_its_output_shape():
    adopted = adopt_torchlayer(torchlayer(tuple_of_two).double(), "statevector")
    x = torch.rand(3, 2, dtype=torch.float64)
    want = adopted(x)
    assert want.shape == (2, 3, 1)
    for clone in (pickle.loads(pickle.dumps(adopted)), copy.deepcopy(adopted)):
        torch.testing.assert_close(clone(x), want, rtol=0, atol=1e-12)


def test_a_tuple_of_measurements_of_different_widths_is_refused_as_torchlayer_refuses_it():
    adopted = adopt_torchlayer(torchlayer(returning(lambda: (qml.probs(wires=[0]), qml.expval(qml.PauliZ(1))))), None)
    with pytest.raises(ShapeError, match=r"widths \[2, 1\], which qml\.qnn\.TorchLayer cannot stack either"):
        adopted(torch.rand(3, 2))


# -- refusals: by name, before anything changes ----------------------------------------------------------------


def inputs_last(weights, inputs):
    qml.AngleEmbedding(inputs, wires=range(2))
    qml.BasicEntanglerLayers(weights, wires=range(2))
    return qml.expval(qml.PauliZ(0))


class Subclass(qml.qnn.TorchLayer):
    def forward(self, inputs):
        return 2 * super().forward(inputs)


def with_hook():
    layer = torchlayer()
    layer.register_forward_hook(lambda module, args, out: out * 2)
    return layer


def with_extra_parameter():
    layer = torchlayer()
    layer.scale = nn.Parameter(torch.ones(1))
    return layer


def shot_vector():
    qnode = qml.set_shots(qml.QNode(circuit, qml.device("default.qubit", wires=2)), shots=[10, 20])
    return qml.qnn.TorchLayer(qnode, SHAPES)


REFUSED = {
    "input_arg not first": (
        lambda: torchlayer(inputs_last, {"weights": (1, 2)}),
        r"its input argument 'inputs' is not the first argument of its quantum function; accepted: .*"
        r"def circuit\(inputs, weights\)",
    ),
    "subclass": (
        lambda: Subclass(qml.QNode(circuit, qml.device("default.qubit", wires=2)), SHAPES),
        r"it is a Subclass, whose forward may differ",
    ),
    "device without wires": (
        lambda: torchlayer(device=qml.device("default.qubit")),
        r"its default\.qubit device has wires None; accepted: a device with wires 0\.\.n-1",
    ),
    "device with named wires": (
        lambda: torchlayer(device=qml.device("default.qubit", wires=["a", "b"])),
        r"its default\.qubit device has wires \['a', 'b'\]",
    ),
    "hook": (with_hook, r"it has forward_hooks, which would be lost"),
    "extra parameter": (with_extra_parameter, r"it holds parameters \['scale', 'weights'\].*besides its QNode's"),
    "shot vector": (shot_vector, r"its QNode has a shot vector"),
}


@pytest.mark.parametrize("build, message", REFUSED.values(), ids=REFUSED.keys())
def test_what_cannot_be_adopted_exactly_is_refused_by_name_and_nothing_changes(build, message):
    good, bad = torchlayer(), build()
    model = nn.Sequential(good, nn.Sequential(bad))
    with pytest.raises(
        ConfigError, match=r"^layer '1\.0': qml\.qnn\.TorchLayer of '.*' cannot be adopted .*" + message
    ):
        hybridai.place(model, quantum="statevector")
    assert model[0] is good and model[1][0] is bad  # the adoptable one was not swapped either


def test_a_torchlayer_wider_than_the_backend_is_refused_naming_it():
    wide = torchlayer(device=qml.device("default.qubit", wires=6))
    with pytest.raises(
        ConfigError, match=r"^layer '0': .* cannot be adopted as a QuantumLayer: n_qubits=6 .*at most 5"
    ):
        hybridai.place(nn.Sequential(wide), quantum="aer:fake_manila")
