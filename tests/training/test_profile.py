"""hybridai.profile: time per layer, domain and backend of a hybrid model."""

import pennylane as qml
import pytest
import torch
from torch import nn

import hybridai
from hybridai.core.errors import ConfigError, HybridAIError


def circuit(inputs, weights):
    qml.AngleEmbedding(inputs, wires=range(2))
    qml.BasicEntanglerLayers(weights, wires=range(2))
    return [qml.expval(qml.PauliZ(i)) for i in range(2)]


class Hybrid(nn.Module):
    """Linear -> QuantumLayer (called twice) -> RepeatEncoder -> Linear -> LIF -> RateDecoder; one unused Linear."""

    def __init__(self):
        super().__init__()
        self.embed = nn.Linear(4, 2)
        self.quantum = hybridai.QuantumLayer(circuit, 2, {"weights": (1, 2)})
        self.encode = hybridai.RepeatEncoder(8)
        self.current = nn.Linear(2, 6)
        self.lif = hybridai.LIF(0.9, learn_beta=True)
        self.decode = hybridai.RateDecoder()
        self.unused = nn.Linear(3, 3)

    def forward(self, x):
        h = self.embed(x)
        h = self.quantum(h) + self.quantum(0.5 * h)
        return self.decode(self.lif(self.current(self.encode(h))))


@pytest.fixture(scope="module")
def model():
    torch.manual_seed(0)
    return Hybrid()


def test_table_lists_every_layer_with_its_domain_backend_and_calls(model):
    report = hybridai.profile(model, torch.randn(5, 4))
    rows = {row["layer"]: row for row in report.rows}
    assert list(rows) == ["embed", "quantum", "encode", "current", "lif", "decode", "unused"]
    domains = ["classical", "quantum", "spiking", "classical", "spiking", "spiking", "classical"]
    assert [rows[n]["domain"] for n in rows] == domains
    assert rows["quantum"]["backend"] == "statevector" and rows["lif"]["backend"] == "torch"
    assert rows["embed"]["backend"] == "torch:cpu"
    assert rows["quantum"]["calls"] == 2 and rows["embed"]["calls"] == 1 and rows["unused"]["calls"] == 0
    assert rows["unused"]["total_ms"] == 0 and all(rows[n]["total_ms"] > 0 for n in rows if n != "unused")
    assert set(report.by_domain) == {"classical", "quantum", "spiking"}
    assert report.by_domain["quantum"] == pytest.approx(rows["quantum"]["total_ms"])
    assert sum(r["total_ms"] for r in report.rows) + report.outside_ms == pytest.approx(report.total_ms)
    assert sum(report.by_backend.values()) == pytest.approx(sum(report.by_domain.values()))
    text = str(report)
    words = ["layer", "domain", "backend", "calls", "total ms", "share", "statevector", "torch:cpu", "(outside"]
    assert all(word in text for word in words)
    quantum_line = next(line for line in text.splitlines() if line.startswith("quantum "))
    assert quantum_line.split()[:4] == ["quantum", "quantum", "statevector", "2"]
    summary = report.summary_table().splitlines()
    assert summary[0].split() == ["domain", "backend", "total", "ms", "share"]
    pairs = {("quantum", "statevector"), ("spiking", "torch"), ("classical", "torch:cpu")}
    assert {tuple(line.split()[:2]) for line in summary[2:]} == pairs


def test_backward_charges_each_layer_and_leaves_gradients_alone(model):
    model.embed.weight.grad = torch.full_like(model.embed.weight, 7.0)
    report = hybridai.profile(model, (torch.randn(5, 4),), backward=True, warmup=0)
    rows = {row["layer"]: row for row in report.rows}
    for name in ("embed", "quantum", "current", "lif"):
        assert rows[name]["backward_ms"] > 0, name
        assert rows[name]["total_ms"] == pytest.approx(rows[name]["forward_ms"] + rows[name]["backward_ms"])
    assert "backward ms" in str(report) and "forward + backward" in str(report)
    assert torch.equal(model.embed.weight.grad, torch.full_like(model.embed.weight, 7.0))
    assert model.quantum.weights.grad is None and model.lif.beta.grad is None
    assert not any(m._forward_hooks or m._forward_pre_hooks for m in model.modules())  # hooks removed


def test_inputs_as_keywords_a_custom_loss_and_a_bare_layer():
    layer = hybridai.LIF(0.9, learn_beta=True, output="both")
    calls = []

    def loss(out):
        calls.append(type(out).__name__)
        return out[1].sum()

    report = hybridai.profile(layer, {"x": torch.rand(6, 2, 3)}, backward=True, loss=loss)
    assert calls == ["tuple", "tuple"]  # the warm-up run and the profiled run
    assert [(r["layer"], r["domain"], r["calls"]) for r in report.rows] == [("LIF", "spiking", 1)]
    assert report.rows[0]["backward_ms"] > 0


@pytest.mark.parametrize(
    "kwargs, words",
    [
        (dict(model="not a model", inputs=torch.zeros(1)), ["model='str'", "torch.nn.Module"]),
        (dict(inputs="text"), ["inputs='str'", "a torch.Tensor, a tuple"]),
        (dict(inputs=torch.zeros(2, 4), backward="yes"), ["backward='yes'", "True or False"]),
        (dict(inputs=torch.zeros(2, 4), warmup=-1), ["warmup=-1", "non-negative int"]),
        (dict(inputs=torch.zeros(2, 4), backward=True, loss=3), ["loss=3", "callable"]),
    ],
)
def test_bad_arguments_name_what_is_accepted(model, kwargs, words):
    kwargs = {"model": model, **kwargs}
    with pytest.raises(HybridAIError) as info:
        hybridai.profile(kwargs.pop("model"), kwargs.pop("inputs"), **kwargs)
    assert all(w in str(info.value) for w in words), str(info.value)


def test_backward_without_anything_to_differentiate_is_a_clear_error():
    frozen = nn.Linear(3, 2).requires_grad_(False)
    with pytest.raises(ConfigError, match="backward=True needs a scalar loss that requires grad"):
        hybridai.profile(frozen, torch.zeros(4, 3), backward=True)
    assert not frozen._forward_hooks and not frozen._forward_pre_hooks
