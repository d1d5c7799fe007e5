"""Under torch.autocast, classical layers run in bf16 but quantum and spiking layers keep their precision."""

import pennylane as qml
import pytest
import torch
from torch import nn

from hybridai import CUBA, LIF, QuantumKernel, QuantumLayer, RateDecoder, RepeatEncoder
from hybridai.core.precision import autocast_devices, keeps_precision

N = 2


def circuit(inputs, weights):
    qml.AngleEmbedding(inputs, wires=range(N))
    qml.BasicEntanglerLayers(weights, wires=range(N))
    return [qml.expval(qml.PauliZ(i)) for i in range(N)]


def feature_map(x, weights):
    qml.AngleEmbedding(x, wires=range(N))
    qml.BasicEntanglerLayers(weights, wires=range(N))


def bf16():
    return torch.autocast("cpu", dtype=torch.bfloat16)


def record_outputs(model):
    """Each child's output by index (filled in by forward hooks)."""
    seen = {}
    for index, child in enumerate(model):
        child.register_forward_hook(lambda module, args, out, index=index: seen.__setitem__(index, out))
    return seen


def check_grads(model):
    for name, param in model.named_parameters():
        assert param.grad is not None, name
        assert param.grad.dtype == param.dtype, (name, param.grad.dtype)
        assert torch.isfinite(param.grad).all() and param.grad.abs().sum() > 0, name


def test_quantum_layer_runs_in_float64_between_bf16_linears():
    torch.manual_seed(0)
    quantum = QuantumLayer(circuit, N, {"weights": (2, N)})
    model = nn.Sequential(nn.Linear(4, N), quantum, nn.Linear(N, 3))
    seen = record_outputs(model)
    x = torch.randn(5, 4)
    incoming = []
    with bf16():
        out = model(x)
        seen[0].register_hook(lambda grad: incoming.append(grad.dtype))
    assert seen[0].dtype == torch.bfloat16 and out.dtype == torch.bfloat16
    # float32 out (autocast never casts float64, so the next Linear would fail on it) ...
    assert seen[1].dtype == torch.float32
    # ... holding the values of the layer run in float64 on the (upcast) bf16 features
    assert torch.equal(seen[1], quantum(seen[0].detach().double()).float())
    out.float().square().sum().backward()
    assert incoming == [torch.bfloat16]  # gradients flow back in the dtype that came in
    check_grads(model)
    assert quantum.weights.dtype == torch.float32


def test_quantum_layer_on_complex64_statevector_works_in_float32():
    quantum = QuantumLayer(circuit, N, {"weights": (1, N)}, backend="statevector", dtype="complex64")
    x = torch.randn(3, N)
    assert quantum.working_dtype() == torch.float32
    with bf16():
        out = quantum(x.bfloat16())
        wide = quantum(x.double())
    assert out.dtype == torch.float32 and wide.dtype == torch.float64
    assert torch.equal(out, quantum(x.bfloat16().float()))


def test_outside_autocast_nothing_changes():
    quantum = QuantumLayer(circuit, N, {"weights": (1, N)})
    assert quantum(torch.randn(3, N)).dtype == torch.float32  # the input's dtype, as documented
    assert LIF(0.9)(torch.rand(4, 2, 3, dtype=torch.bfloat16)).dtype == torch.bfloat16
    assert autocast_devices(torch.zeros(1)) == []
    with bf16():
        assert autocast_devices(torch.zeros(1)) == ["cpu"]


def test_quantum_kernel_matrix_is_computed_in_float64():
    kernel = QuantumKernel(feature_map, N, {"weights": (1, N)})
    X = torch.randn(4, N, requires_grad=True)
    with bf16():
        features = nn.functional.linear(X, torch.eye(N))  # a classical op: bf16 under autocast
        K = kernel(features)
    assert features.dtype == torch.bfloat16 and K.dtype == torch.float32
    assert kernel.working_dtype() == torch.float64
    assert torch.equal(K, kernel.matrix(features.detach().double()).float())
    K.sum().backward()
    assert X.grad.dtype == torch.float32 and kernel.weights.grad.dtype == torch.float32


@pytest.mark.parametrize(
    "make_layer",
    [
        lambda: LIF(0.9, learn_beta=True, learn_threshold=True),
        lambda: CUBA(0.7, 0.9, learn_alpha=True, learn_beta=True),
    ],
)
def test_spiking_layer_stays_float32_between_encoder_linear_and_decoder(make_layer):
    torch.manual_seed(1)
    spiking = make_layer()
    model = nn.Sequential(RepeatEncoder(20), nn.Linear(6, 8), spiking, RateDecoder(), nn.Linear(8, 2))
    seen = record_outputs(model)
    x = torch.rand(4, 6) * 3
    with bf16():
        out = model(x)
    assert seen[1].dtype == torch.bfloat16 and out.dtype == torch.bfloat16
    assert seen[2].dtype == torch.float32 and seen[3].dtype == torch.float32
    assert seen[2].sum() > 0  # the layer did spike
    assert torch.equal(seen[2], spiking(seen[1].detach().float()))
    out.float().square().sum().backward()
    check_grads(model)


def test_spiking_layer_keeps_float64_and_casts_a_given_state():
    layer = LIF(0.9, output="membrane")
    x = torch.randn(5, 2, 3, dtype=torch.float64)
    with bf16():
        assert layer(x).dtype == torch.float64
        mem = layer(x.bfloat16(), state=torch.zeros(2, 3, dtype=torch.bfloat16))
    assert mem.dtype == torch.float32
    assert torch.equal(mem, layer(x.bfloat16().float()))


def test_decorator_passes_non_tensors_and_uses_the_first_floating_argument():
    class Probe(nn.Module):
        @keeps_precision(lambda self, incoming: torch.promote_types(incoming, torch.float32))
        def forward(self, steps, pair, scale=None):
            return torch.is_autocast_enabled("cpu"), steps, [t.dtype for t in pair], scale.dtype

    pair = (torch.ones(1, dtype=torch.bfloat16), torch.ones(1, dtype=torch.int64))
    with bf16():
        enabled, steps, dtypes, scale = Probe()(3, pair, scale=torch.ones(1, dtype=torch.float16))
    assert (enabled, steps, dtypes, scale) == (False, 3, [torch.float32, torch.int64], torch.float32)
