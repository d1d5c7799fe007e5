"""Akida: quantization, integer reference against BrainChip's engine (bit-exact), activity counts, backend."""

from __future__ import annotations

import sys

import pytest
import torch
from torch import nn

import hybridai.neuromorphic.akida.backend  # noqa: F401  (registers the family)
from hybridai.core import registry
from hybridai.core.errors import ConfigError, HybridAIError, MissingExtraError, ShapeError
from hybridai.neuromorphic import akida as ak
from hybridai.neuromorphic.akida import AkidaIntegerNetwork, QuantizedLayer, integer_reference, quantize_input
from hybridai.neuromorphic.macs import dense_macs

pytest.importorskip("akida")


def _mismatches(net: ak.AkidaNetwork, x: torch.Tensor) -> tuple[int, torch.Tensor]:
    codes = quantize_input(net.quantized, x)
    engine = net.forward_codes(codes)
    reference = integer_reference(net.quantized, codes)[-1].outputs
    assert engine.shape == reference.shape
    return int((engine != reference).sum()), engine


def _i(values) -> torch.Tensor:
    return torch.as_tensor(values, dtype=torch.int64)


def _raw_layer(g, kind, cin, cout, in_shape, *, relu, out_bits, in_bits, k=3, stride=1, padding=1, input_shift=0):
    """A layer with random integer variables that exercise every rounding, clipping and shift rule."""
    shape = (cout, cin, k, k) if kind == "conv" else (cout, cin)
    if kind == "conv":
        h = (in_shape[1] + 2 * padding - k) // stride + 1
        out_shape = (cout, h, (in_shape[2] + 2 * padding - k) // stride + 1)
    else:
        out_shape = (cout,)
    rand = lambda lo, hi, n=cout: torch.randint(lo, hi + 1, (n,), generator=g)  # noqa: E731
    return QuantizedLayer(
        name=f"raw {kind}",
        kind=kind,
        weights=torch.randint(-127, 128, shape, generator=g),
        bias=rand(-128, 127),
        bias_shift=rand(0, 6),
        output_scales=rand(1, 255),
        output_shift=torch.cat([rand(-16, -1, cout - 1), _i([1])]),  # both rounding right shifts and a left shift
        max_value=rand(1, 255),
        max_value_shift=rand(0, 8),
        relu=relu,
        input_bits=in_bits,
        output_bits=out_bits,
        in_shape=in_shape,
        out_shape=out_shape,
        input_shift=input_shift,
        stride=stride,
        padding=padding,
    )


@pytest.mark.parametrize("out_bits", [1, 2, 4, 8])
def test_engine_matches_reference_on_raw_integer_variables(out_bits):
    g = torch.Generator().manual_seed(out_bits)
    conv = _raw_layer(g, "conv", 3, 6, (3, 7, 6), relu=True, out_bits=out_bits, in_bits=4, stride=2)
    dense = _raw_layer(g, "dense", 6 * 4 * 3, 9, conv.out_shape, relu=False, out_bits=8, in_bits=out_bits)
    net = AkidaIntegerNetwork(input_shape=(3, 7, 6), input_bits=4, input_scale=1.0, layers=(conv, dense))
    compiled = ak.AkidaNetwork(net)
    codes = torch.randint(0, 16, (40, 3, 7, 6), generator=g)
    traces = integer_reference(net, codes)
    for i, layer in enumerate(net.layers):  # each layer alone, so that every clipping rule is reached
        sub = AkidaIntegerNetwork(layer.in_shape, layer.input_bits, 1.0, (layer,))
        engine = ak.AkidaNetwork(sub).forward_codes(traces[i].inputs)
        assert torch.equal(engine, traces[i].outputs), f"layer {i}"
    assert torch.equal(compiled.forward_codes(codes), traces[-1].outputs)
    relu_out = traces[0].outputs
    assert relu_out.min() == 0 and relu_out.max() == (127 if out_bits == 8 else 2**out_bits - 1)  # clipping reached
    clip = (conv.max_value << conv.max_value_shift).view(1, -1, 1, 1)
    assert (traces[0].accumulators > clip).any()  # the ReLU's max_value bound is reached too
    assert traces[-1].outputs.min() < 0  # signed 8-bit output without ReLU


def test_accumulator_saturates_at_28_bits_and_product_at_32():
    """Values measured on akida 2.19: the engine saturates the sum (28-bit) and acc * output_scales (32-bit)."""
    w = torch.full((3, 8), 127, dtype=torch.int64)
    layer = QuantizedLayer(
        name="sat",
        kind="dense",
        weights=w,
        bias=_i([0, 0, 0]),
        bias_shift=_i([0, 0, 0]),
        output_scales=_i([1, 255, 255]),
        output_shift=_i([-21, -24, -28]),
        max_value=_i([127] * 3),
        max_value_shift=_i([31] * 3),
        relu=False,
        input_bits=8,
        output_bits=8,
        in_shape=(8,),
        out_shape=(3,),
        input_shift=12,
    )
    net = AkidaIntegerNetwork((8,), 8, 1.0, (layer,))
    codes = torch.stack([torch.full((8,), 127), torch.full((8,), 16)]).to(torch.int64)
    ref = integer_reference(net, codes)[-1].outputs
    assert ref.tolist() == [[64, 127, 8], [32, 127, 8]]  # unsaturated the last would be 63
    assert torch.equal(ak.AkidaNetwork(net).forward_codes(codes), ref)


@pytest.fixture(scope="module")
def digits_net():
    """A small MLP trained on scikit-learn's digits (a few hundred Adam steps)."""
    from sklearn.datasets import load_digits

    data = load_digits()
    x = torch.tensor(data.data, dtype=torch.float32) / 16.0
    y = torch.tensor(data.target)
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(64, 32), nn.ReLU(), nn.Linear(32, 10))
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # tiny matrices: on a loaded 2-core box two threads are ~40x slower
    try:
        for _ in range(150):
            opt.zero_grad()
            nn.functional.cross_entropy(model(x[:1200]), y[:1200]).backward()
            opt.step()
    finally:
        torch.set_num_threads(threads)
    return model, x[:1200], x[1200:], y[1200:]


@pytest.mark.parametrize("bits", [8, 4])
def test_trained_dense_net_is_bit_exact_and_tracks_float(digits_net, bits):
    model, train, test, labels = digits_net
    net = ak.compile(model, calibration=train[:256], input_bits=bits, activation_bits=bits)
    wrong, _ = _mismatches(net, test)
    assert wrong == 0
    run = net.run(test)
    with torch.no_grad():
        ref = model(test)
    agreement = (run.outputs.argmax(1) == ref.argmax(1)).float().mean().item()
    accuracy = (run.outputs.argmax(1) == labels).float().mean().item()
    float_accuracy = (ref.argmax(1) == labels).float().mean().item()
    assert run.outputs.shape == ref.shape and run.outputs.dtype == torch.float32
    assert agreement >= (0.97 if bits == 8 else 0.9), agreement
    assert accuracy >= float_accuracy - 0.05 and float_accuracy > 0.85
    assert net.last_mismatches == 0


def _conv_net(stride=1, padding=1, k=3):
    torch.manual_seed(1)
    return nn.Sequential(
        nn.Conv2d(2, 5, k, padding=padding, stride=stride),
        nn.ReLU(),
        nn.Conv2d(5, 6, 3, stride=2, padding=1),
        nn.ReLU(),
        nn.Flatten(),
        nn.LazyLinear(8),
        nn.ReLU(),
        nn.Linear(8, 4),
    )


@pytest.mark.parametrize(
    ("k", "stride", "padding", "size"),
    [(3, 1, 1, (8, 8)), (5, 1, 2, (9, 7)), (3, 1, 0, (8, 8)), (3, 2, 1, (8, 7)), (3, 2, 1, (7, 8)), (1, 2, 0, (8, 8))],
)
def test_conv_net_is_bit_exact(k, stride, padding, size):
    model = _conv_net(stride, padding, k)
    calib = torch.randn(64, 2, *size)
    model(calib)  # materialise the LazyLinear
    net = ak.compile(model, calibration=calib)
    x = torch.randn(50, 2, *size)
    wrong, engine = _mismatches(net, x)
    assert wrong == 0
    assert (engine != 0).float().mean() > 0.5  # not a trivially zero network
    run = net.run(x)
    with torch.no_grad():
        ref = model(x)
    assert (run.outputs.argmax(1) == ref.argmax(1)).float().mean() >= 0.9
    assert net.describe()[0]["akida_output_shape"][::-1][0] == 5


@pytest.mark.parametrize("order", ["same, relu then pool", "valid, pool then relu"])
def test_max_pooling_conv_is_bit_exact(order):
    torch.manual_seed(2)
    if order.startswith("same"):
        size, head = (8, 8), [nn.Conv2d(2, 4, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2)]
    else:
        size, head = (9, 9), [nn.Conv2d(2, 4, 3), nn.MaxPool2d(3, stride=2), nn.ReLU()]
    model = nn.Sequential(*head, nn.Flatten(), nn.LazyLinear(6))
    calib = torch.randn(64, 2, *size)
    model(calib)
    net = ak.compile(model, calibration=calib)
    x = torch.randn(50, 2, *size)
    wrong, _ = _mismatches(net, x)
    assert wrong == 0
    run = net.run(x)
    with torch.no_grad():
        ref = model(x)
    assert (run.outputs.argmax(1) == ref.argmax(1)).float().mean() >= 0.9
    pooled = (4, 4, 4) if order.startswith("same") else (4, 3, 3)
    assert net.quantized.layers[0].out_shape == pooled and net.describe()[0]["max_pool"] is not None
    assert run.layers[0].neurons == 4 * (size[0] - (0 if order.startswith("same") else 2)) ** 2  # before pooling
    assert run.layers[0].spikes <= 50 * 4 * pooled[1] * pooled[2]


def test_conv_kernel_is_not_mirrored():
    """A one-hot kernel at a corner shifts the image; the engine must shift it the way torch does."""
    conv = nn.Conv2d(1, 1, 3, padding=1, bias=False)
    with torch.no_grad():
        conv.weight.zero_()
        conv.weight[0, 0, 0, 2] = 1.0  # reads the pixel above and to the right
    model = nn.Sequential(conv, nn.ReLU())
    x = torch.rand(4, 1, 6, 6)
    net = ak.compile(model, calibration=x, input_bits=8, activation_bits=8)
    with torch.no_grad():
        expected = model(x)
    out = net.run(x).outputs
    assert out.shape == (4, 1, 6, 6)
    assert (out - expected).abs().max() < 0.02
    assert (expected[:, :, 1:, :-1] - x[:, :, :-1, 1:]).abs().max() == 0  # the oracle really is a shift


def test_activity_counts():
    model = _conv_net()
    calib = torch.randn(32, 2, 6, 6)
    model(calib)
    net = ak.compile(model, calibration=calib, activation_bits=4)
    x = torch.randn(6, 2, 6, 6)
    run = net.run(x)
    traces = integer_reference(net.quantized, quantize_input(net.quantized, x))
    assert run.samples == 6 and run.time_steps == 1 and run.latency_steps == 0
    assert [a.name for a in run.layers] == ["0: Conv2d", "2: Conv2d", "5: Linear", "7: Linear"]
    # conv fan-out counted by brute force: every (output position, kernel tap) that reads a non-zero input
    x0 = traces[0].inputs
    padded = nn.functional.pad(x0, (1, 1, 1, 1))
    brute = sum(int((padded[:, :, i : i + 3, j : j + 3] != 0).sum()) for i in range(6) for j in range(6)) * 5
    assert run.layers[0].synaptic_ops == brute
    assert run.layers[0].neurons == 5 * 6 * 6 and run.layers[0].neuron_updates == 6 * 180
    for act, trace in zip(run.layers, traces, strict=True):
        assert act.spikes == int((trace.outputs != 0).sum())
        assert act.active_updates == int((trace.accumulators != 0).sum()) <= act.neuron_updates
    assert run.layers[2].synaptic_ops == int((traces[2].inputs != 0).sum()) * 8
    assert 0 < run.layers[1].spikes < run.layers[1].neuron_updates  # 4-bit ReLU codes are sparse, not empty
    # zero inputs cost nothing: an all-zero image leaves the first layer without synaptic events
    assert net.run(torch.zeros(2, 2, 6, 6)).layers[0].synaptic_ops == 0


def test_describe_and_macs():
    model = _conv_net()
    calib = torch.randn(16, 2, 8, 8)
    model(calib)
    net = ak.compile(model, calibration=calib, input_bits=8, activation_bits=4)
    rows = net.describe()
    assert [r["kind"] for r in rows] == ["Conv2D", "Conv2D", "Dense1D", "Dense1D"]
    assert rows[0]["output_shape"] == (5, 8, 8) and rows[0]["akida_output_shape"] == (8, 8, 5)
    assert rows[1]["stride"] == 2 and rows[1]["input_bits"] == 4 and rows[-1]["output_bits"] == 8
    assert all(r["weight_bits"] == 8 and len(r["output_scales"]) == r["output_shape"][0] for r in rows)
    macs = 2 * 5 * 9 * 64 + 5 * 6 * 9 * 16 + 96 * 8 + 8 * 4
    assert dense_macs(model, (2, 8, 8)) == macs == net.macs_per_sample
    assert dense_macs(nn.Sequential(nn.Linear(64, 32), nn.ReLU(), nn.Linear(32, 10)), (64,)) == 64 * 32 + 320
    with pytest.raises(ShapeError, match="input_shape"):
        dense_macs(model, (3, 8, 8))


@pytest.mark.parametrize(
    ("model", "match"),
    [
        (nn.Sequential(nn.Linear(4, 4), nn.Tanh()), r"model\[1\]='Tanh'.*akida takes nn.Linear"),
        (nn.Sequential(nn.Conv2d(1, 2, 3), nn.ReLU(), nn.MaxPool2d(2, ceil_mode=True)), r"layer 2: MaxPool2d .*ceil"),
        (nn.Sequential(nn.Linear(4, 4), nn.ReLU(), nn.MaxPool2d(2)), r"layer 2: MaxPool2d does not follow a Conv2d"),
        (nn.Sequential(nn.Conv2d(1, 2, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2)), r"layer 2: MaxPool2d pools a 5x5"),
        (nn.Sequential(nn.Conv2d(1, 2, 3), nn.AvgPool2d(2)), r"model\[1\]='AvgPool2d'.*akida takes nn.Linear"),
        (nn.Sequential(nn.Conv2d(1, 2, 3, padding=2), nn.ReLU()), r"layer 0: Conv2d has padding=\(2, 2\)"),
        (nn.Sequential(nn.Conv2d(1, 2, 4, padding=2), nn.ReLU()), r"layer 0: Conv2d has padding"),
        (nn.Sequential(nn.Conv2d(1, 2, 5, stride=2), nn.ReLU()), r"layer 0: Conv2d has stride=\(2, 2\) with kernel 5"),
        (nn.Sequential(nn.Conv2d(1, 2, 3, groups=1, dilation=2)), r"layer 0: Conv2d .*dilation=\(2, 2\)"),
        (nn.Sequential(nn.Linear(4, 4), nn.Linear(4, 2)), r"layer 0: Linear is not followed by nn.ReLU"),
        (nn.Sequential(nn.ReLU(), nn.Linear(4, 2)), r"layer 0: ReLU does not follow"),
        (nn.Sequential(nn.Conv2d(1, 2, 3), nn.ReLU(), nn.Linear(2, 2)), r"layer 2: Linear follows a Conv2d without"),
        (nn.Linear(4, 2), r"model='Linear'"),
    ],
)
def test_unsupported_models_are_refused_by_name(model, match):
    calib = torch.rand(4, 1, 5, 5) if any(isinstance(m, nn.Conv2d) for m in model.modules()) else torch.rand(4, 4)
    with pytest.raises(ConfigError, match=match):
        ak.compile(model, calibration=calib)


def test_bad_arguments_name_the_value():
    model = nn.Sequential(nn.Linear(4, 3), nn.ReLU(), nn.Linear(3, 2))
    with pytest.raises(ConfigError, match=r"input_bits=4 .*minimum is -1"):
        ak.compile(model, calibration=torch.full((2, 4), -1.0), input_bits=4)
    with pytest.raises(ConfigError, match=r"activation_bits=3 .*one of \(1, 2, 4, 8\)"):
        ak.compile(model, calibration=torch.rand(2, 4), activation_bits=3)
    with pytest.raises(ConfigError, match=r"output_bits=4 .*no ReLU"):
        ak.compile(model, calibration=torch.rand(2, 4), output_bits=4)
    with pytest.raises(ShapeError, match=r"calibration has shape \(4,\)"):
        ak.compile(model, calibration=torch.rand(4))
    with pytest.raises(ShapeError, match=r"x has shape \(2, 5\); accepted: a float tensor \[B, 4\]"):
        ak.compile(model, calibration=torch.rand(2, 4)).run(torch.rand(2, 5))


def test_run_warns_when_engine_and_reference_disagree():
    """The activity counts come from the reference, so a disagreement must not pass silently."""
    model = nn.Sequential(nn.Linear(4, 3), nn.ReLU(), nn.Linear(3, 2))
    net = ak.compile(model, calibration=torch.rand(8, 4))
    assert net.run(torch.rand(8, 4)).outputs.shape == (8, 2) and net.last_mismatches == 0
    net.quantized.layers[-1].bias.add_(100)  # the reference changes; the akida.Model keeps its variables
    with pytest.warns(RuntimeWarning, match="differ in"):
        net.run(torch.rand(8, 4))
    assert net.last_mismatches > 0


def test_missing_akida_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "akida", None)  # makes `import akida` raise ImportError
    with pytest.raises(MissingExtraError, match=r"pip install -e '\.\[akida\]' in a clone of hybridai"):
        ak.compile(nn.Sequential(nn.Linear(2, 2)), calibration=torch.rand(2, 2))
    status = registry.backend_class("akida").is_available()
    assert not status.available and "hybridai[akida]" in status.reason


def test_backend_registry_capabilities_and_compile(digits_net):
    model, train, test, _ = digits_net
    backend = registry.get("akida", input_bits=4, activation_bits=4)
    caps = backend.capabilities
    assert caps.bit_exact is True and caps.hardware == () and "software" in backend.describe()
    assert backend.options["input_bits"] == 4
    with pytest.raises(HybridAIError, match=r"calibration=None .*\[N, F\]"):
        backend.compile(model)
    with pytest.raises(ConfigError, match=r"model\[0\]='Tanh'"):  # the model is checked before the calibration
        backend.compile(nn.Sequential(nn.Tanh()))
    from hybridai.testing import run_conformance

    report = run_conformance("akida")
    assert report.ok and report.counts()["pass"] >= 6, report.failures
    run = backend.compile(model, calibration=train[:128]).run(test[:20])
    assert run.outputs.shape == (20, 10) and len(run.layers) == 2
    with pytest.raises(ConfigError, match=r"backend='akida:chip0'"):
        registry.get("akida:chip0")
    with pytest.raises(ConfigError, match=r"input_bits=5"):
        registry.get("akida", input_bits=5)
    with pytest.raises(ConfigError, match=r"weight_bits=4"):
        registry.get("akida", weight_bits=4)
