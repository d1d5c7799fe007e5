"""The smallest conforming backend of each contract (examples/plugins/minimal) passes the conformance suite."""

import importlib.util
import pathlib

import pytest
import torch
from torch import nn

import hybridai
from hybridai import backends
from hybridai.core import registry
from hybridai.testing import run_conformance
from hybridai.testing.suite import FAIL, SKIP

MINIMAL = pathlib.Path(__file__).resolve().parents[2] / "examples" / "plugins" / "minimal"
EXAMPLES = {  # family: (file, class)
    "minimal-quantum": ("quantum_executor.py", "MinimalExecutor"),
    "minimal-placement": ("placement.py", "MinimalPlacement"),
    "minimal-chip": ("chip_compiler.py", "MinimalChip"),
}
NOT_CLAIMED = {  # checks of capabilities the minimal backends do not claim
    "minimal-quantum": {"quantum: shots per seed"},
    "minimal-placement": {"classical: noise per seed", "spiking: noise per seed"},
    "minimal-chip": set(),
}


def _load(file: str, name: str) -> type:
    spec = importlib.util.spec_from_file_location(f"minimal_{file[:-3]}", MINIMAL / file)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return getattr(module, name)


@pytest.fixture
def minimal(monkeypatch):
    """The three examples registered with ``hybridai.backends.register`` (forgotten after the test)."""
    monkeypatch.setattr(registry, "_registered", dict(registry._registered))
    return {family: backends.register(family)(_load(*where)) for family, where in EXAMPLES.items()}


@pytest.mark.parametrize("family", list(EXAMPLES))
def test_minimal_backend_passes_every_check(minimal, family):
    report = run_conformance(family)
    assert report.ok and report.counts()[FAIL] == 0, report.table(0)
    skipped = {r.check for r in report.results if r.status == SKIP}
    assert skipped == NOT_CLAIMED[family], report.table(0)
    rows = {r.check: r for r in report.results}
    assert rows["registration"].detail.startswith("registered; ")
    assert any(name.endswith("shared instance") for name in rows)


def test_each_implements_its_contract(minimal):
    rows = {r.name: r for r in backends.available()}
    assert {f: rows[f].contract for f in EXAMPLES} == {
        "minimal-quantum": "quantum executor",
        "minimal-placement": "placement",
        "minimal-chip": "chip compiler",
    }
    assert all(rows[f].available and rows[f].source == "registered" for f in EXAMPLES)


def test_minimal_backends_in_a_model(minimal):
    """The executor runs a QuantumLayer, the placement places a model, the chip deploys a spiking network."""
    from hybridai.quantum import QuantumLayer
    from hybridai.spiking import LIF

    def circuit(inputs, weights):
        import pennylane as qml

        qml.AngleEmbedding(inputs, wires=[0, 1])
        qml.BasicEntanglerLayers(weights, wires=[0, 1])
        return [qml.expval(qml.PauliZ(w)) for w in (0, 1)]

    torch.manual_seed(0)
    x = torch.rand(5, 2, dtype=torch.float64)
    layer = QuantumLayer(circuit, 2, {"weights": (1, 2)}, backend="minimal-quantum").double()
    reference = QuantumLayer(circuit, 2, {"weights": (1, 2)}, backend="statevector").double()
    reference.load_state_dict(layer.state_dict())
    torch.testing.assert_close(layer(x), reference(x), atol=1e-12, rtol=0)
    assert layer.execution_stats["circuits"] == 5 and layer.execution_stats["calls"] == 1

    model = nn.Sequential(nn.Linear(3, 4), LIF(0.9))
    hybridai.place(model, classical="minimal-placement", spiking="minimal-placement")
    assert model[1].backend == "minimal-placement" and model(torch.rand(7, 2, 3)).shape == (7, 2, 4)

    spiking = nn.Sequential(nn.Linear(6, 8), LIF(0.8, reset="zero"), nn.Linear(8, 3), LIF(0.8, reset="zero"))
    spikes = (torch.rand(10, 4, 6) < 0.4).float()
    report = hybridai.deploy(spiking, "minimal-chip").report(spikes)
    assert report.agreement["spike agreement"] > 0.9  # 8-bit weights: nearly every spike as in float
    assert report.run.layers[0].synaptic_ops == int(spikes.sum()) * 8  # each input spike reaches 8 neurons
    # a chip that declares it takes no calibration batch: deploy refuses one before compiling, compile too
    with pytest.raises(hybridai.HybridAIError, match=r"calibration=.*chip 'minimal-chip' quantizes from the model"):
        hybridai.deploy(spiking, "minimal-chip", calibration=spikes)
    with pytest.raises(hybridai.HybridAIError, match=r"calibration='Tensor' is not valid; accepted: None"):
        backends.get("minimal-chip").compile(spiking, calibration=spikes)
