"""One lowering (``hybridai.spiking.graph.lower``) behind Loihi, nengo, Akida and NIR export: the same walk,
the same neuron count, the same error for a layer a target cannot take."""

import pytest
import torch
from torch import nn

from hybridai import CUBA, LIF, MembraneDecoder, SpikeCountDecoder, TimeDistributed
from hybridai.core.errors import ConfigError
from hybridai.neuromorphic import akida, loihi
from hybridai.neuromorphic.nengo.plan import plan as nengo_plan
from hybridai.spiking.graph import lower


def _spikes(steps: int = 20, batch: int = 3, width: int = 6, seed: int = 0) -> torch.Tensor:
    return (torch.rand(steps, batch, width, generator=torch.Generator().manual_seed(seed)) < 0.4).float()


def _to_nir(model):
    from hybridai.spiking.nir import to_nir

    pytest.importorskip("nir")
    return to_nir(model)


COMPILERS = {
    "loihi": loihi.compile,
    "nengo": nengo_plan,
    "akida": lambda model: akida.quantize(model, torch.rand(4, 6)),
    "NIR export": _to_nir,
}


@pytest.mark.parametrize("target", list(COMPILERS))
def test_every_target_refuses_an_unsupported_layer_with_one_message(target):
    model = nn.Sequential(nn.Linear(6, 4), nn.Tanh())
    with pytest.raises(ConfigError, match=rf"^model\[1\]='Tanh' is not valid; accepted: {target} takes "):
        COMPILERS[target](model)
    nested = nn.Sequential(nn.Linear(6, 4), nn.Sequential(nn.Identity(), nn.Sigmoid()))
    with pytest.raises(ConfigError, match=r"^model\[1\]\[1\]='Sigmoid' is not valid"):
        COMPILERS[target](nested)


@pytest.mark.parametrize("target", ["loihi", "nengo", "NIR export"])
def test_every_spiking_target_checks_widths_the_same_way(target):
    model = nn.Sequential(nn.Linear(6, 4), LIF(0.9, reset="zero"), nn.Linear(5, 2), LIF(0.9, reset="zero"))
    with pytest.raises(ConfigError, match=r"model\[2\].in_features=5 is not valid; accepted: 4"):
        COMPILERS[target](model)
    wrong_size = nn.Sequential(nn.Linear(6, 4), LIF(torch.full((3,), 0.9), reset="zero"))
    with pytest.raises(ConfigError, match=r"model\[1\].beta.shape=\(3,\).*a scalar or 4 per-neuron values"):
        COMPILERS[target](wrong_size)


def test_graph_walks_nested_sequentials_time_distributed_and_skips_no_ops():
    model = nn.Sequential(
        TimeDistributed(nn.Linear(6, 5)),
        nn.Dropout(0.5),
        nn.Sequential(LIF(0.9, reset="zero"), nn.Identity()),
        nn.Linear(5, 3),
        LIF(0.8, reset="zero", output="membrane"),
        MembraneDecoder("max"),
    )
    graph = lower(model, target="t", accepts=("dense", "lif", "decoder"), supported="x")
    assert [node.label for node in graph] == ["0: Linear", "2.0: LIF", "3: Linear", "4: LIF", "5: MembraneDecoder"]
    assert [node.kind for node in graph] == ["dense", "lif", "dense", "lif", "decoder"]
    assert [node.width for node in graph] == [5, 5, 3, 3, 3] and graph.n_inputs == 6
    assert graph.layers[0].time_distributed and not graph.layers[2].time_distributed
    assert graph.decoder is graph.layers[-1] and graph.layers[1].where == "model[2][0]"


def test_the_walk_gives_each_target_the_same_network():
    torch.manual_seed(0)
    plain = nn.Sequential(
        nn.Linear(6, 8), LIF(0.9, reset="zero"), nn.Linear(8, 3), LIF(0.8, reset="zero"), SpikeCountDecoder()
    )
    wrapped = nn.Sequential(
        TimeDistributed(plain[0]), nn.Dropout(0.3), nn.Sequential(plain[1], plain[2]), nn.Identity(), *plain[3:]
    )
    x = _spikes(width=6)
    with torch.no_grad():
        expected = plain(x)
    assert expected.sum() > 0
    for model in (plain, wrapped):
        assert torch.equal(loihi.compile(model).run(x).outputs, loihi.compile(plain).run(x).outputs)
    plans, decoder = nengo_plan(wrapped)
    assert [p.name for p in plans] == ["2.0: LIF", "4: LIF"] and isinstance(decoder, SpikeCountDecoder)
    assert [p.n for p in plans] == [8, 3] and plans[0].n_in == 6


def test_one_neuron_count_rule():
    # the width before the layer, else the size it learnt on a forward call, else its per-neuron parameters
    assert lower(LIF(0.9), target="t", accepts=("lif",), supported="x", n_inputs=4).layers[0].width == 4
    per_neuron = lower(CUBA(torch.full((7,), 0.5), 0.9), target="t", accepts=("cuba",), supported="x")
    assert per_neuron.layers[0].width == 7 and per_neuron.n_inputs == 7
    learnt = LIF(0.9)
    learnt(torch.zeros(2, 1, 9))
    assert lower(learnt, target="t", accepts=("lif",), supported="x").layers[0].width == 9
    with pytest.raises(ConfigError, match=r"n_inputs=None.*model\[0\] \(LIF; its size is unknown\)"):
        lower(nn.Sequential(LIF(0.9)), target="t", accepts=("lif",), supported="x")
    with pytest.raises(ConfigError, match=r"n_inputs=0.*positive"):
        lower(LIF(0.9), target="t", accepts=("lif",), supported="x", n_inputs=0)


def test_decoders_only_last_after_a_spiking_layer():
    accepts = ("dense", "lif", "decoder")
    spiking = r"after a spiking layer \(a kind in \('cuba', 'lif', 'sigma_delta'\)\) or a sigma-delta"
    with pytest.raises(ConfigError, match=r"model\[1\]='SpikeCountDecoder'.*" + spiking):
        lower(nn.Sequential(nn.Linear(2, 2), SpikeCountDecoder()), target="t", accepts=accepts, supported="x")
    after = nn.Sequential(nn.Linear(2, 2), LIF(0.9), SpikeCountDecoder(), nn.Linear(2, 2))
    with pytest.raises(ConfigError, match=r"model\[3\]='Linear'.*nothing after the decoder model\[2\]"):
        lower(after, target="t", accepts=accepts, supported="x")
    with pytest.raises(ConfigError, match=r"model='an empty Sequential'"):
        lower(nn.Sequential(nn.Identity()), target="t", accepts=accepts, supported="x")
    with pytest.raises(ConfigError, match=r"model='Tanh' is not valid; accepted: t takes x"):
        lower(nn.Tanh(), target="t", accepts=accepts, supported="x")


def test_akida_takes_frames_not_time_distributed_layers():
    model = nn.Sequential(TimeDistributed(nn.Linear(6, 4)), nn.ReLU(), nn.Linear(4, 2))
    with pytest.raises(ConfigError, match=r"model\[0\]='TimeDistributed\(Linear\)'.*frames"):
        akida.check_model(model)
    # skipped no-ops do not break a Linear-ReLU block
    ok = nn.Sequential(nn.Linear(6, 4), nn.Dropout(0.1), nn.ReLU(), nn.Identity(), nn.Linear(4, 2))
    akida.check_model(ok)
