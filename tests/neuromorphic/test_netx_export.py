"""Loihi 2 networks written as lava-dl netx files: registers, refusals and, where Lava is at hand, Lava's messages.

The equality tests run each exported file in Lava 0.10 + lava-dl 0.6 (``lava_netx_run.py`` under the Python named
by ``HYBRIDAI_LAVA_PYTHON``; ``make lava-check`` builds that environment in ``.cache/lava`` and sets it) and
require the sink's messages to equal ``NetxExport.output``. Without it they are skipped, saying why.
"""

import json
import os
import subprocess
import sys
from pathlib import Path

import h5py
import numpy as np
import pytest
import torch
from torch import nn

from hybridai.core.errors import ConfigError, HybridAIError, ShapeError
from hybridai.neuromorphic.loihi2.netx import export_netx
from hybridai.neuromorphic.loihi2.plan import plan
from hybridai.spiking import RateDecoder, SigmaDelta, SpikeCountDecoder, TimeDistributed

LAVA_PYTHON = os.environ.get("HYBRIDAI_LAVA_PYTHON")
RUNNER = Path(__file__).with_name("lava_netx_run.py")
needs_lava = pytest.mark.skipif(
    not LAVA_PYTHON,
    reason="no Python with lava-nc 0.10 and lava-dl 0.6 (HYBRIDAI_LAVA_PYTHON unset): run `make lava-check`",
)


def network(seed: int, scales=(2**-6, 2**-7, 2**-5), thresholds=(0.05, 0.03, 0.08), gain=0.35, readout=True):
    """SigmaDelta input -> Linear 12->24 -> SigmaDelta (learnt bias) -> Linear 24->16 -> SigmaDelta (bias), and
    optionally a read-out Linear 16->3 and a spike-count decoder (host side)."""
    gen = torch.Generator().manual_seed(seed)
    layers = [
        SigmaDelta(threshold=thresholds[0], scale=scales[0], input="value"),
        nn.Linear(12, 24, bias=False),
        SigmaDelta(threshold=thresholds[1], scale=scales[1], features=24, learn_bias=True),
        nn.Linear(24, 16, bias=False),
        SigmaDelta(threshold=thresholds[2], scale=scales[2], features=16, bias=0.05),
    ]
    if readout:
        layers += [nn.Linear(16, 3, bias=False), SpikeCountDecoder()]
    model = nn.Sequential(*layers).double()
    with torch.no_grad():
        for m in model:
            if isinstance(m, nn.Linear):
                m.weight.copy_(torch.randn(m.weight.shape, generator=gen, dtype=torch.float64) * gain)
        model[2].bias.copy_(torch.randn(24, generator=gen, dtype=torch.float64) * 0.1)
    return model


def frames(seed: int, steps: int = 30) -> torch.Tensor:
    gen = torch.Generator().manual_seed(seed)
    drift = torch.cumsum(0.04 * torch.randn(steps, 12, generator=gen, dtype=torch.float64), 0)
    return (torch.rand(1, 12, generator=gen, dtype=torch.float64) + drift).clamp(0, 1)


def conv_network(seed: int = 5) -> nn.Sequential:
    """SigmaDelta input -> Conv2d 2->4 (stride 2, padding 1) -> SigmaDelta (bias) -> Conv2d 4->6 (groups 2) ->
    SigmaDelta -> Flatten -> Linear 96->5 -> SigmaDelta, and a read-out with a decoder on the host."""
    torch.manual_seed(seed)
    return nn.Sequential(
        SigmaDelta(threshold=0.05, scale=2**-6, input="value"),
        TimeDistributed(nn.Conv2d(2, 4, 3, stride=2, padding=1, bias=False)),
        SigmaDelta(threshold=0.03, scale=2**-8, bias=0.02),
        TimeDistributed(nn.Conv2d(4, 6, 3, padding=1, groups=2, bias=False)),
        SigmaDelta(threshold=0.03, scale=2**-8),
        TimeDistributed(nn.Flatten()),
        nn.Linear(6 * 4 * 4, 5, bias=False),
        SigmaDelta(threshold=0.01, scale=2**-8, features=5),
        nn.Linear(5, 3, bias=False),
        RateDecoder(),
    ).double()


def maps(seed: int) -> torch.Tensor:
    return torch.rand(12, 2, 8, 8, dtype=torch.float64, generator=torch.Generator().manual_seed(seed)).cumsum(0) / 5


def lava_outputs(exports, folder: Path) -> list[np.ndarray]:
    """The sink's messages of each export's file run in Lava on the export's input (one Lava process for all)."""
    jobs = []
    for i, export in enumerate(exports):
        np.save(folder / f"input{i}.npy", export.input.numpy())
        jobs.append(
            {"net": str(export.path), "input": str(folder / f"input{i}.npy"), "output": str(folder / f"{i}.npy")}
        )
    (folder / "jobs.json").write_text(json.dumps(jobs))
    done = subprocess.run([LAVA_PYTHON, str(RUNNER), str(folder / "jobs.json")], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-3000:]
    return [np.load(job["output"]) for job in jobs]


# ----------------------------------------------------------------- what the file holds


def test_the_file_holds_hybridais_registers(tmp_path):
    model = network(0)
    export = export_netx(model, tmp_path / "net.h5", example=frames(1))
    stages = plan(model).stages
    with h5py.File(tmp_path / "net.h5") as f:
        assert sorted(f["layer"]) == ["0", "1"]  # the two hidden layers; input layer and read-out on the host
        for index, stage in zip(("0", "1"), stages[1:3], strict=True):
            entry = f["layer"][index]
            assert entry["type"][0] == b"dense" and entry["neuron/type"][0] == b"SDNN"
            assert int(entry["neuron/vThMant"][()]) == stage.config.vth  # threshold steps of the grid
            bias = torch.as_tensor(stage.config.bias).expand(stage.weights.shape[0])
            written = entry["bias"][()] if "bias" in entry else np.zeros(stage.weights.shape[0])
            np.testing.assert_array_equal(written, bias.numpy())
            assert entry["weight"].shape == tuple(stage.weights.shape)
        # the first Dense holds hybridai's 8-bit mantissas exactly (its inputs carry the exponent)
        np.testing.assert_array_equal(f["layer/0/weight"][()], stages[1].weights.numpy())
    assert export.input.shape == (30, 12) and export.output.shape == (30, 16)
    assert export.input.dtype == torch.int64 and bool((export.output != 0).any())
    shift = stages[1].weight_exp + 12
    messages = torch.as_tensor(export.input)
    assert bool((messages % 2**shift == 0).all())  # the input layer's messages times 2^(e + 12)


def test_the_host_applies_the_read_out_and_decoder_to_the_output(tmp_path):
    model = network(0)
    export = export_netx(model, tmp_path / "net.h5", example=frames(1))
    stages = plan(model).stages
    weight = stages[3].weights.double() * stages[3].grid / stages[2].grid  # the read-out hybridai's chip holds
    expected = (export.output.double() * export.host.grid @ weight.T).sum(0)  # SpikeCountDecoder: sum over time
    torch.testing.assert_close(export.host.decode(export.output), expected, rtol=1e-12, atol=1e-12)


def test_what_netx_cannot_express_is_refused_by_name_and_nothing_is_written(tmp_path):
    target = tmp_path / "net.h5"

    def refused(model, match, error=ConfigError, example=None):
        with pytest.raises(error, match=match):
            export_netx(model, target, example=frames(1) if example is None else example)
        assert list(tmp_path.iterdir()) == []  # no file, no temporary left behind

    # weights beyond netx's 8 bits at 6 fraction bits: refused; the suggested finer scale before fits
    def strong(scales):
        model = network(0, scales=scales)
        with torch.no_grad():
            model[3].weight.mul_(60)
        return model

    refused(strong((2**-6, 2**-7, 2**-5)), r"4: SigmaDelta weights=.*up to \d+ in netx's units.*up to 254")
    export_netx(strong((2**-6, 2**-7, 2**-1)), target, example=frames(1))  # the suggested coarser scale: written
    target.unlink()
    zero = network(0)
    with torch.no_grad():
        zero[3].weight.zero_()
    refused(zero, r"4: SigmaDelta weights='all zero'.*at least one non-zero weight")
    conv = conv_network()
    with torch.no_grad():
        conv[1].module.weight.mul_(40)  # sums of 40x the weights: beyond Lava's 24-bit Conv
    refused(conv, r"2: SigmaDelta's convolution sums could reach .* below 2\^23", example=maps(6) * 100)
    refused(nn.Sequential(SigmaDelta(input="value"), nn.Linear(3, 2, bias=False), RateDecoder()).double(),
            r"an input layer and a read-out")  # fmt: skip
    refused(network(0), r"example=\(30, 1, 12\).*\[T, F\]", ShapeError, frames(1).unsqueeze(1))
    refused(network(0), r"2: SigmaDelta's messages reach \d+ for this example.*below 32768", example=frames(1) * 20)
    refused(conv_network(), r"2: SigmaDelta's convolution sums .*smaller inputs", example=maps(6) * 30)
    for model, example in ((network(0), frames(1) * 5), (conv_network(), maps(6) * 10)):  # the smaller inputs: written
        export_netx(model, target, example=example)
        target.unlink()
    refused(network(0), r"2: SigmaDelta's state could reach .* below 2\^31", example=frames(1) * 2000)
    with pytest.raises(HybridAIError, match=r"path=.*existing folder"):
        export_netx(network(0), tmp_path / "missing" / "net.h5", example=frames(1))


# ----------------------------------------------------------------- Lava's messages


@needs_lava
def test_lava_sends_the_exported_messages_for_random_networks(tmp_path):
    cases = [
        {"seed": 0},
        {"seed": 1, "readout": False},
        {"seed": 2, "thresholds": (0.02, 0.01, 0.02)},
        {"seed": 3, "scales": (2**-5, 2**-8, 2**-6), "thresholds": (0.1, 0.05, 0.04)},
        {"seed": 4, "thresholds": (0.05, 0.2, 0.3), "gain": 0.2},
    ]
    exports = []
    for i, case in enumerate(cases):
        exports.append(export_netx(network(**case), tmp_path / f"net{i}.h5", example=frames(10 + i, steps=40)))
    for export, received in zip(exports, lava_outputs(exports, tmp_path), strict=True):
        assert bool((export.output != 0).any())
        np.testing.assert_array_equal(received, export.output.numpy())


def test_a_convolutional_network_is_written_as_netx_conv_and_flatten_layers(tmp_path):
    model = conv_network()
    export = export_netx(model, tmp_path / "conv.h5", example=maps(6))
    stages = plan(model).stages
    with h5py.File(tmp_path / "conv.h5") as f:
        kinds = [f["layer"][str(i)]["type"][0] for i in range(len(f["layer"]))]
        assert kinds == [b"conv", b"conv", b"flatten", b"dense"]
        first, second = f["layer/0"], f["layer/1"]
        np.testing.assert_array_equal(first["weight"][()], stages[1].weights.numpy())  # torch's [C', C, kh, kw]
        assert list(first["shape"][()]) == [4, 4, 4] and list(second["shape"][()]) == [6, 4, 4]  # [C, H, W]
        assert list(first["stride"][()]) == [2, 2] and list(first["padding"][()]) == [1, 1]
        assert int(second["groups"][()]) == 2 and list(second["dilation"][()]) == [1, 1]
        np.testing.assert_array_equal(first["bias"][()], np.full(4, int(stages[1].config.bias)))  # one per channel
    assert export.input.shape == (12, 2, 8, 8) and export.output.shape == (12, 5)


@needs_lava
def test_lava_sends_the_exported_messages_of_convolutional_networks(tmp_path):
    exports = [export_netx(conv_network(seed), tmp_path / f"conv{seed}.h5", example=maps(seed)) for seed in (5, 9)]
    last = conv_network(7)[:5]  # ending in maps: the sink receives [T, C, H, W]
    exports.append(export_netx(last, tmp_path / "maps.h5", example=maps(7)))
    for export, received in zip(exports, lava_outputs(exports, tmp_path), strict=True):
        assert bool((export.output != 0).any())
        np.testing.assert_array_equal(received, export.output.numpy())
    assert exports[-1].output.shape == (12, 6, 4, 4)


@needs_lava
@pytest.mark.slow
def test_lava_sends_the_exported_messages_of_the_demos_trained_front_end(tmp_path):
    from hybridai.demo.event_models import build_model
    from hybridai.demo.hybrid import event_data, train_all

    models = {"sigma-delta": build_model("sigma-delta", "hybrid", 2, 4, seed=0)}
    x, y = event_data(48, 20, seed=0)
    train_all(models, x, y[:40], split=40, epochs=2, seed=0, batch_size=16)
    front = models["sigma-delta"].fake_quantized  # the chip segment, trained
    exports = [export_netx(front, tmp_path / f"front{i}.h5", example=x[:, 40 + i]) for i in range(3)]
    for export, received in zip(exports, lava_outputs(exports, tmp_path), strict=True):
        assert bool((export.output != 0).any())
        np.testing.assert_array_equal(received, export.output.numpy())
    assert sys.version_info >= (3, 11)  # this side runs hybridai; Lava ran in its own Python


def test_the_chip_segment_of_a_deployment_exports_as_the_front_end_alone(tmp_path):
    import hybridai

    front = network(0)
    model = nn.Sequential(*front, nn.Linear(3, 2)).double()  # a classical head after the chip's decoder
    deployment = hybridai.deploy(model, chip="loihi2")
    assert [backend for _, backend in deployment.segments][0] == "loihi2"
    segment = export_netx(deployment.chip.reference, tmp_path / "segment.h5", example=frames(1))
    alone = export_netx(front, tmp_path / "front.h5", example=frames(1))
    assert torch.equal(segment.input, alone.input) and torch.equal(segment.output, alone.output)
    assert (tmp_path / "segment.h5").read_bytes() == (tmp_path / "front.h5").read_bytes()
