"""NIR export and import: round trips keep dt, reset mode, thresholds and the outputs."""

import numpy as np
import pytest
import torch
from torch import nn

from hybridai import CUBA, LIF, LatencyEncoder
from hybridai.core.errors import ConfigError, HybridAIError
from hybridai.spiking import FastSigmoid
from hybridai.spiking.nir import from_nir, to_nir

nir = pytest.importorskip("nir")


def model_under_test():
    torch.manual_seed(3)
    return nn.Sequential(
        nn.Linear(6, 8),
        LIF(torch.rand(8) * 0.5 + 0.5, threshold=torch.rand(8) + 0.5, reset="subtract", dt=1e-4),
        nn.Linear(8, 5, bias=False),
        CUBA(0.6, 0.85, threshold=0.7, reset="zero", surrogate=FastSigmoid(slope=10.0), dt=1e-4),
    )


def test_export_keeps_dt_reset_and_thresholds_explicitly():
    model = model_under_test()
    graph = to_nir(model)
    assert [type(graph.nodes[k]).__name__ for k in ("input", "0", "1", "2", "3", "output")] == [
        "Input",
        "Affine",
        "LIF",
        "Linear",
        "CubaLIF",
        "Output",
    ]
    lif, cuba = graph.nodes["1"], graph.nodes["3"]
    assert lif.metadata["dt"] == 1e-4 and lif.metadata["reset"] == "subtract"
    assert cuba.metadata["reset"] == "zero" and cuba.metadata["surrogate_slope"] == 10.0
    np.testing.assert_array_equal(lif.v_threshold, model[1].threshold.double().numpy())
    np.testing.assert_array_equal(cuba.v_threshold, np.full(5, np.float32(0.7)))
    beta = model[1].beta.double().numpy()
    np.testing.assert_allclose(lif.tau, 1e-4 / (1 - beta), rtol=1e-12)  # forward-Euler time constant
    np.testing.assert_allclose(lif.r * 1e-4 / lif.tau, 1.0)  # unit input gain
    np.testing.assert_allclose(cuba.tau_syn, 1e-4 / (1 - float(np.float32(0.6))), rtol=1e-12)
    np.testing.assert_allclose(cuba.w_in * 1e-4 / cuba.tau_syn, 1.0)
    assert graph.edges == [("input", "0"), ("0", "1"), ("1", "2"), ("2", "3"), ("3", "output")]


def test_round_trip_through_a_file_gives_identical_spikes(tmp_path):
    model = model_under_test()
    nir.write(tmp_path / "model.nir", to_nir(model))
    restored = from_nir(tmp_path / "model.nir")
    x = torch.rand(40, 4, 6) * 1.5
    assert torch.equal(restored(x), model(x)) and model(x).sum() > 0
    lif, cuba = restored[1], restored[3]
    assert lif.reset == "subtract" and lif.dt == 1e-4 and torch.equal(lif.threshold, model[1].threshold)
    assert torch.equal(lif.beta, model[1].beta)
    assert cuba.reset == "zero" and cuba.surrogate == FastSigmoid(slope=10.0)
    assert cuba.alpha.item() == pytest.approx(0.6) and cuba.beta.item() == pytest.approx(0.85)


def test_graph_without_hybridai_metadata_uses_nir_semantics():
    tau = np.full(3, 1e-3 / (1 - 0.8))
    node = nir.LIF(tau=tau, r=tau / 1e-3, v_leak=np.zeros(3), v_threshold=np.full(3, 0.5))
    graph = nir.NIRGraph(
        nodes={"input": nir.Input(np.array([3])), "block.lif": node, "output": nir.Output(np.array([3]))},
        edges=[("input", "block.lif"), ("block.lif", "output")],
    )
    with pytest.raises(ConfigError, match="dt=None.*'block.lif'"):
        from_nir(graph)
    model = from_nir(graph, dt=1e-3)
    layer = model.block_lif
    assert layer.reset == "zero" and layer.beta.item() == pytest.approx(0.8) and layer.threshold.item() == 0.5


def test_export_errors_name_the_problem():
    with pytest.raises(HybridAIError, match=r"model\[1\]='LatencyEncoder'.*NIR export takes nn.Linear, hybridai.LIF"):
        to_nir(nn.Sequential(nn.Linear(3, 3), LatencyEncoder(4)))
    with pytest.raises(ConfigError, match="n_inputs=None"):
        to_nir(LIF(0.9))
    (graph_layer,) = from_nir(to_nir(LIF(0.9), n_inputs=4), dt=None)
    assert graph_layer.beta.item() == pytest.approx(0.9)
    leaky = nir.LIF(tau=np.ones(2), r=np.ones(2) * 5, v_leak=np.zeros(2), v_threshold=np.ones(2))
    graph = nir.NIRGraph(
        nodes={"input": nir.Input(np.array([2])), "n": leaky, "output": nir.Output(np.array([2]))},
        edges=[("input", "n"), ("n", "output")],
    )
    with pytest.raises(ConfigError, match="input gain"):
        from_nir(graph, dt=1e-3)
