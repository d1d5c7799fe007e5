"""LIF networks written as lava-dl netx files (CUBA neurons): registers, refusals and Lava's spikes.

The Lava comparison runs where ``HYBRIDAI_LAVA_PYTHON`` names a Python with lava-nc 0.10 and lava-dl 0.6
(``make lava-check``), as in ``test_netx_export.py``.
"""

import h5py
import numpy as np
import pytest
import torch
from torch import nn

from hybridai.core.errors import ConfigError, ShapeError
from hybridai.neuromorphic.loihi.netx import export_netx
from hybridai.neuromorphic.loihi.plan import parse, plan_pair
from hybridai.spiking import CUBA, LIF, RateDecoder, SpikeCountDecoder
from tests.neuromorphic.test_netx_export import lava_outputs, needs_lava


def network(seed: int, beta: float = 0.9, threshold: float = 1.0, gain: float = 0.8) -> nn.Sequential:
    """Linear 10->20 -> LIF -> Linear 20->6 -> LIF (reset to zero, biased) -> spike counts."""
    gen = torch.Generator().manual_seed(seed)
    model = nn.Sequential(
        nn.Linear(10, 20),
        LIF(beta, threshold=threshold, reset="zero"),
        nn.Linear(20, 6),
        LIF(beta, threshold=threshold, reset="zero"),
        SpikeCountDecoder(),
    ).double()
    with torch.no_grad():
        for m in model:
            if isinstance(m, nn.Linear):
                m.weight.copy_(torch.randn(m.weight.shape, generator=gen, dtype=torch.float64) * gain)
                m.bias.copy_(torch.rand(m.bias.shape, generator=gen, dtype=torch.float64) * 0.2)
    return model


def spikes(seed: int, steps: int = 40, rate: float = 0.3) -> torch.Tensor:
    return (torch.rand(steps, 10, generator=torch.Generator().manual_seed(seed)) < rate).double()


def test_the_file_holds_the_lava_lif_registers(tmp_path):
    model = network(0)
    export = export_netx(model, tmp_path / "lif.h5", example=spikes(1))
    pairs, _ = parse(model, "nengo")
    with h5py.File(tmp_path / "lif.h5") as f:
        for index, pair in enumerate(pairs):
            planned = plan_pair(pair)
            entry = f["layer"][str(index)]
            assert entry["type"][0] == b"dense" and entry["neuron/type"][0] == b"CUBA"
            np.testing.assert_array_equal(entry["weight"][()], planned.weights.numpy())  # hybridai's mantissas
            assert int(entry["neuron/iDecay"][()]) == 4096  # LIF: no current memory (netx's du = 4095)
            assert int(entry["neuron/vDecay"][()]) == round(4096 * (1 - 0.9))
            assert int(entry["neuron/vThMant"][()]) == round(1.0 * planned.k)  # threshold at weight exponent 0
            np.testing.assert_array_equal(entry["bias"][()], torch.round(pair.linear.bias.detach() * planned.k))
    assert export.input.shape == (40, 10) and export.output.shape == (40, 6)
    assert set(export.output.unique().tolist()) <= {0, 1} and int(export.output.sum()) > 0
    torch.testing.assert_close(export.host.decode(export.output), export.output.double().sum(0))


def test_what_netx_cannot_express_for_lif_is_refused_by_name(tmp_path):
    target = tmp_path / "lif.h5"

    def refused(model, match, error=ConfigError, example=None):
        with pytest.raises(error, match=match):
            export_netx(model, target, example=spikes(1) if example is None else example)
        assert list(tmp_path.iterdir()) == []

    cuba = nn.Sequential(nn.Linear(10, 4, bias=False), CUBA(alpha=0.8, beta=0.9, reset="zero")).double()
    refused(cuba, r"model\[1\] \(CUBA\)='CUBA'.*LIF: .*refractory")
    membrane = nn.Sequential(nn.Linear(10, 4), LIF(0.9, reset="zero", output="membrane")).double()
    refused(membrane, r"output='membrane'.*'spikes'")
    per_neuron = nn.Sequential(nn.Linear(10, 4), LIF(torch.tensor([0.9, 0.8, 0.9, 0.9]), reset="zero")).double()
    refused(per_neuron, r"beta=.*across the neurons.*one value for the layer")
    biased = network(0)
    with torch.no_grad():
        biased[0].bias.fill_(50.0)
    refused(biased, r"model\[0\] \(nn.Linear\) bias=.*up to 4095")
    refused(network(0), r"example=.*non-integer.*whole numbers", ShapeError, example=spikes(1) - 0.5)
    refused(network(0), r"example=.*non-negative", ShapeError, example=spikes(1) - 1)
    refused(network(0), r"example=\(40, 1, 10\).*\[T, F\]", ShapeError, example=spikes(1).unsqueeze(1))
    refused(nn.Sequential(nn.Linear(10, 4), LIF(0.9)).double(), r"reset='subtract'.*'zero'")
    export_netx(nn.Sequential(nn.Linear(10, 4), LIF(0.9, reset="zero"), RateDecoder()).double(), target,
                example=spikes(1))  # fmt: skip
    assert target.exists()


@needs_lava
def test_lava_sends_the_exported_spikes_for_lif_networks(tmp_path):
    cases = [
        {"seed": 0},
        {"seed": 1, "beta": 0.5, "threshold": 0.7},
        {"seed": 2, "beta": 0.97, "threshold": 2.0},
        {"seed": 3, "beta": 0.0, "threshold": 0.4},
        {"seed": 4, "beta": 1.0, "threshold": 3.0, "gain": 1.2},
    ]
    exports = []
    for i, case in enumerate(cases):
        example = spikes(10 + i, steps=60, rate=0.2 + 0.1 * i) * (1 + i % 2)  # counts 0-1 or 0-2
        exports.append(export_netx(network(**case), tmp_path / f"lif{i}.h5", example=example))
    for export, received in zip(exports, lava_outputs(exports, tmp_path), strict=True):
        assert int(export.output.sum()) > 0
        np.testing.assert_array_equal(received, export.output.numpy())
