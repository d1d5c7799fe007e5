"""hybridai.core.foreign: how a package above core teaches place/summary about other frameworks' layers and backend
values, without core importing it (issue 27). A made-up framework's spiking layer stands in for any such layer."""

from __future__ import annotations

import pytest
from torch import nn

import hybridai
from hybridai.core import foreign
from hybridai.core.errors import ConfigError
from hybridai.core.foreign import ForeignLayer
from hybridai.core.module import domain_of


class Leaky(nn.Module):
    """Another framework's spiking layer; ``exotic=True`` makes one that cannot be adopted."""

    def __init__(self, beta: float, exotic: bool = False) -> None:
        super().__init__()
        self.beta = beta
        self.exotic = exotic

    def forward(self, x):
        return x


def adopt(module: Leaky, backend):
    if module.exotic:
        raise ConfigError("Leaky(exotic=True) cannot be adopted; accepted: a plain Leaky")
    return hybridai.LIF(module.beta)


def read(module: nn.Module) -> ForeignLayer | None:
    if not isinstance(module, Leaky):
        return None
    return ForeignLayer("spiking", "other:framework", "?", lambda backend: adopt(module, backend))


@pytest.fixture
def reader():
    foreign.register_layer_reader(read)
    foreign.register_layer_reader(read)  # registered once however often
    yield
    foreign._layer_readers.remove(read)
    assert read not in foreign._layer_readers


def test_a_registered_reader_makes_its_layers_known_to_summary_and_place(reader):
    model = nn.Sequential(nn.Linear(3, 2), nn.Sequential(Leaky(0.8)))
    assert domain_of(model[1][0]) == "spiking" and domain_of(model[0]) == "classical"
    row = next(line for line in hybridai.summary(model).splitlines() if "Leaky" in line)
    assert row.split()[:4] == ["1.0", "Leaky", "spiking", "other:framework"]
    assert hybridai.place(model, spiking="torch") is model
    assert isinstance(model[1][0], hybridai.LIF) and model[1][0].beta == pytest.approx(0.8)


def test_a_layer_its_reader_cannot_adopt_is_named_and_nothing_changes(reader):
    plain, exotic = Leaky(0.9), Leaky(0.5, exotic=True)
    model = nn.Sequential(plain, nn.Linear(2, 2), exotic)
    weight = model[1].weight
    with pytest.raises(ConfigError, match=r"^layer '2': Leaky\(exotic=True\) cannot be adopted"):
        hybridai.place(model, spiking="torch", classical="torch")
    assert model[0] is plain and model[2] is exotic and model[1].weight is weight


def test_without_a_reader_a_module_is_classical_and_a_value_passes_unchanged():
    layer = Leaky(0.9)
    assert domain_of(layer) == "classical" and foreign.read_layer(layer) is None
    value = object()
    assert foreign.read_backend("spiking", value) == (value, {})  # the registry names what it cannot take
    assert foreign.read_backend("quantum", "aer") == ("aer", {})


def test_the_quantum_package_registered_its_backend_reader():
    import pennylane as qml

    def circuit(inputs):
        qml.AngleEmbedding(inputs, wires=range(3))
        return qml.expval(qml.PauliZ(2))

    device = qml.device("default.qubit", wires=2)
    name, options = foreign.read_backend("quantum", device)
    assert name == "pennylane:default.qubit" and list(options) == ["rng"]  # the device's random generator, copied
    assert options["rng"].bit_generator.state == device._rng.bit_generator.state
    with pytest.raises(ConfigError, match=r"^quantum= a default\.qubit device with wires \[0, 1\] lacks wires \[2\]"):
        foreign.read_backend("quantum", device, hybridai.QuantumLayer(circuit, 3))
