"""hybridai.place replaces what a classical backend wraps, the root module included."""

import pytest
import torch
from torch import nn

import hybridai
from hybridai import backends
from hybridai.backends import Placement, PlacementCapabilities
from hybridai.core import registry


class Wrapped(nn.Module):
    def __init__(self, inner: nn.Module) -> None:
        super().__init__()
        self.inner = inner

    def forward(self, x):
        return 2 * self.inner(x)


class Doubler(Placement):
    domains = ("classical",)

    @property
    def capabilities(self) -> PlacementCapabilities:
        return PlacementCapabilities(differentiable=True, exact=False)

    def place(self, module: nn.Module) -> nn.Module:
        return module if isinstance(module, Wrapped) else Wrapped(module)


@pytest.fixture
def doubler():
    backends.register("doubler")(Doubler)
    yield
    registry._registered.pop("doubler")


def test_place_wraps_leaves_and_the_root(doubler):
    torch.manual_seed(0)
    x = torch.rand(3, 4)
    model = nn.Sequential(nn.Linear(4, 4), nn.Sequential(nn.Linear(4, 2)))
    before = model(x)
    placed = hybridai.place(model, classical="doubler")
    assert placed is model and isinstance(model[0], Wrapped) and isinstance(model[1][0], Wrapped)
    assert torch.allclose(model(x), 2 * model[1][0].inner(2 * model[0].inner(x)))
    assert not torch.allclose(model(x), before)
    root = nn.Linear(4, 2)
    assert isinstance(hybridai.place(root, classical="doubler"), Wrapped)


def test_summary_names_layers_domains_and_backends():
    import pennylane as qml

    def circuit(inputs, w):
        qml.RX(inputs[..., 0] * w[0], wires=0)
        return qml.expval(qml.PauliZ(1))

    model = nn.Sequential(nn.Linear(4, 2), hybridai.QuantumLayer(circuit, 2, {"w": 1}))
    text = hybridai.summary(model, show=False)
    assert "statevector" in text and "2 qubits" in text and "1 classical, 1 quantum" in text
    assert "torch:cpu" in text


def test_a_chip_compiler_is_refused_for_a_layer_with_a_pointer_to_deploy():
    from hybridai.core.errors import UnsupportedOperationError

    model = nn.Sequential(nn.Linear(2, 2))
    with pytest.raises(UnsupportedOperationError, match=r"hybridai.deploy\(model, backend='loihi'\)"):
        hybridai.place(model, classical="loihi")
    assert isinstance(model[0], nn.Linear)  # nothing changed


def test_summary_lists_every_position_of_a_module_used_twice_and_counts_its_parameters_once():
    import hybridai

    shared = nn.Linear(3, 3)
    model = nn.Sequential(shared, nn.Tanh(), shared, nn.Tanh())
    text = str(hybridai.summary(model))
    rows = [line.split() for line in text.splitlines()[2:-2]]
    assert [row[0] for row in rows] == ["0", "1", "2", "3"]  # the second use is a layer too
    assert rows[2][1] == "Linear" and "(layer 0's)" in text.splitlines()[4]
    total = text.splitlines()[-1].split()
    assert total[1] == "4" and total[-1] == f"{sum(p.numel() for p in model.parameters()):,}"  # 12, not 24
