"""Every chip in one hybrid model, one deploy path, one report (issue 29).

(a) a sigma-delta segment on loihi2 beside a mitigated noisy circuit, bit-exact to its fake-quantized model on
every message; (b) an Akida CNN front end beside a circuit, equal to BrainChip's engine run directly on the same
quantized network; (c) refusals naming the layer and what the chip takes; (d) the one-chip form is the
one-segment case of the hybrid form: same outputs, same report numbers.
"""

from __future__ import annotations

import numpy as np
import pennylane as qml
import pytest
import torch
from torch import nn

import hybridai
from hybridai.core.errors import ConfigError
from hybridai.deployment import Deployment, DeploymentReport
from hybridai.neuromorphic import akida, loihi2
from hybridai.spiking import LIF, RateDecoder, SigmaDelta, SpikeCountDecoder, TimeDistributed, record_messages

N_QUBITS = 2


def circuit(inputs, weights):
    qml.AngleEmbedding(inputs, wires=range(N_QUBITS))
    qml.BasicEntanglerLayers(weights, wires=range(N_QUBITS))
    return [qml.expval(qml.PauliZ(i)) for i in range(N_QUBITS)]


def quantum_tail(features: int) -> list[nn.Module]:
    """``Linear -> Tanh -> QuantumLayer -> Linear``: what every front end feeds."""
    return [
        nn.Linear(features, N_QUBITS),
        nn.Tanh(),
        hybridai.QuantumLayer(circuit, N_QUBITS, {"weights": (2, N_QUBITS)}),
        nn.Linear(N_QUBITS, 3),
    ]


def sigma_delta_model(readout: bool = True) -> nn.Sequential:
    """The issue's model: SigmaDelta(value) -> TimeDistributed(Linear) -> SigmaDelta -> [read-out] -> RateDecoder ->
    Linear -> Tanh -> QuantumLayer -> Linear, in float64 (the fake-quantized model is exact there)."""
    gen = torch.Generator().manual_seed(0)
    with torch.random.fork_rng():
        torch.manual_seed(0)
        layers = [
            SigmaDelta(threshold=0.05, scale=2**-6, input="value"),
            TimeDistributed(nn.Linear(6, 8, bias=False)),
            SigmaDelta(threshold=0.03, scale=2**-7, features=8, bias=0.05),
            *([nn.Linear(8, 5, bias=False)] if readout else []),
            RateDecoder(),
            *quantum_tail(5 if readout else 8),
        ]
        model = nn.Sequential(*layers).double()
    with torch.no_grad():
        for m in model[:4]:
            linear = m.module if isinstance(m, TimeDistributed) else m
            if isinstance(linear, nn.Linear):
                linear.weight.copy_(torch.randn(linear.weight.shape, generator=gen, dtype=torch.float64) * 0.6)
    return model


def frames(steps: int = 12, batch: int = 5) -> torch.Tensor:
    """Slowly changing frames ``[T, B, 6]`` in [0, 1]: what a sigma-delta network is for."""
    gen = torch.Generator().manual_seed(1)
    base = torch.rand(1, batch, 6, generator=gen, dtype=torch.float64)
    return (base + torch.cumsum(0.05 * torch.randn(steps, batch, 6, generator=gen, dtype=torch.float64), 0)).clamp(0, 1)


# -- (a) loihi2 + a noisy, mitigated circuit ------------------------------------------------------------------


def deploy_on_loihi2(model: nn.Sequential) -> Deployment:
    return hybridai.deploy(
        model,
        chip="loihi2",
        quantum="aer:fake_manila",
        shots=400,
        mitigation=hybridai.ZNE(scale_factors=(1, 3, 5)),
        quantum_options={"seed": 2},
    )


def test_a_sigma_delta_segment_on_loihi2_equals_its_fake_quantized_model_on_every_message():
    model, x = sigma_delta_model(), frames()
    deployment = deploy_on_loihi2(model)
    assert deployment.segments == [
        ("spiking [0-4]", "loihi2"),
        ("classical [5-6]", "torch"),
        ("quantum [7]", "aer:fake_manila + ZNE"),
        ("classical [8]", "torch"),
    ]
    segment = nn.Sequential(*model[:5])
    with record_messages() as record, torch.no_grad():
        expected = loihi2.fake_quantize(segment)(x)
    chip_out, _ = deployment.placed[0].run(x)
    assert torch.equal(chip_out, expected)  # the read-out's rates, bit for bit
    messages = deployment.compiled.messages(x)
    assert len(messages) == len(record.messages) == 2
    for float_messages, layer, integers in zip(record.messages, (model[0], model[2]), messages, strict=True):
        steps = float_messages / layer.scale
        assert torch.equal(steps, steps.round()) and torch.equal(steps.long(), integers)
        assert integers.ne(0).any() and integers.eq(0).any()  # some sent, some not: not a vacuous comparison
    out = deployment.run(x)
    assert out.shape == (5, 3) and torch.equal(out, deployment.run(x))  # seeded shots: the same every run


def test_the_report_names_loihi2_and_the_mitigated_device_with_the_cost_of_each():
    model, x = sigma_delta_model(), frames()
    report = deploy_on_loihi2(model).report(x, torch.tensor([0, 1, 2, 0, 1]))
    assert isinstance(report, DeploymentReport) and report.samples == 5
    chip, quantum = report.segments[0], report.segments[2]
    assert chip.backend == "loihi2" and quantum.backend == "aer:fake_manila + ZNE"
    run = chip.cost.chip
    assert [a.name for a in run.layers] == ["0: SigmaDelta", "2: SigmaDelta", "3: Linear"]
    assert report.spikes == sum(a.spikes for a in run.layers) > 0 and report.synaptic_ops > 0
    assert run.latency_steps == 2 and run.time_steps == x.shape[0] + 2
    assert quantum.cost.quantum.circuits == 3 * 5 and quantum.cost.quantum.shots == 3 * 5 * 400
    assert report.segments[1].cost.macs == 5 * 5 * N_QUBITS and report.segments[3].cost.macs == 5 * N_QUBITS * 3
    assert set(report.accuracy) == {"float", "deployed"}
    text = str(report)
    shown = ["loihi2", "aer:fake_manila + ZNE", "syn. ops saved vs dense", "no public per-event figures for 'loihi2'",
             "15 circuits, 6,000 shots", "MACs per sample in torch", "accuracy, deployed"]  # fmt: skip
    assert all(part in text for part in shown), text


def test_the_issue_s_model_without_a_read_out_deploys_on_loihi2():
    model, x = sigma_delta_model(readout=False), frames()
    deployment = deploy_on_loihi2(model)
    with torch.no_grad():
        expected = loihi2.fake_quantize(nn.Sequential(*model[:4]))(x)
    assert torch.equal(deployment.placed[0].run(x)[0], expected)


def test_a_calibration_batch_is_refused_where_nothing_would_use_it():
    """loihi2 quantizes from the model alone, and without a chip nothing calibrates: calibration= is refused by
    name (the route, deploying without it, is the deployments above)."""
    model, x = sigma_delta_model(), frames()
    front = nn.Sequential(*sigma_delta_model()[:4], SpikeCountDecoder())
    loihi2_refusal = (
        r"calibration='a Tensor of shape \(12, 5, 6\)' is not valid; accepted: None: chip 'loihi2' quantizes"
    )
    with pytest.raises(ConfigError, match=loihi2_refusal):
        hybridai.deploy(model, chip="loihi2", quantum="statevector", calibration=x)
    with pytest.raises(ConfigError, match=loihi2_refusal):
        hybridai.deploy(front, "loihi2", calibration=x)
    with pytest.raises(
        ConfigError, match=r"calibration=.*accepted: None on loihi2 \(it quantizes from the model alone"
    ):
        loihi2.compile(front, calibration=x)
    with pytest.raises(ConfigError, match=r"calibration=.*accepted: None: no segment runs on a chip"):
        hybridai.deploy(model, chip="torch", quantum="statevector", calibration=x)
    with pytest.raises(ConfigError, match=r"calibration=.*accepted: None: no segment runs on a chip"):
        hybridai.deploy(nn.Sequential(*quantum_tail(4)), quantum="statevector", calibration=torch.zeros(2, 4))
    # the route the refusals give, None, with the same models: they deploy and run
    with torch.no_grad():
        expected = model(x)
    on_chip = hybridai.deploy(model, chip="loihi2", quantum="statevector").run(x)
    assert on_chip.shape == expected.shape and torch.isfinite(on_chip).all()
    assert torch.equal(hybridai.deploy(front, "loihi2").run(x), loihi2.compile(front).run(x).outputs)
    torch.testing.assert_close(hybridai.deploy(model, chip="torch", quantum="statevector").run(x), expected)
    tail = nn.Sequential(*quantum_tail(4))
    with torch.no_grad():
        torch.testing.assert_close(
            hybridai.deploy(tail, quantum="statevector").run(torch.ones(2, 4)), tail(torch.ones(2, 4))
        )


@pytest.mark.parametrize(
    ("chip", "takes"),
    [("loihi", True), ("nengo", True), ("akida", True), ("loihi2", False), ("torch", False), (None, False),
     ("no-such-chip", True)],
)  # fmt: skip
def test_takes_calibration_says_which_chips_deploy_gives_a_calibration_batch(chip, takes):
    from hybridai.deployment.build import takes_calibration

    assert takes_calibration(chip) is takes  # an unknown name: True, for deploy to refuse the name itself
    with pytest.raises(ConfigError, match=r"options='int' is not valid; accepted: a dict"):
        takes_calibration(chip, 3)


def test_the_sigma_delta_model_in_torch_is_the_float_model():
    model, x = sigma_delta_model(), frames()
    deployment = hybridai.deploy(model, chip="torch", classical="torch")
    assert deployment.segments[0] == ("spiking [0-4]", "torch")
    report = deployment.report(x)
    assert all(s.agreement["relative error"] == 0 for s in report.segments)
    assert report.segments[0].cost.macs is None  # time-major work in torch: not counted as MACs of [T, ...]


# -- (b) an Akida CNN front end + a circuit -------------------------------------------------------------------


def akida_model() -> nn.Sequential:
    with torch.random.fork_rng():
        torch.manual_seed(3)
        front = [nn.Conv2d(2, 4, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(), nn.Linear(4 * 4 * 4, 8)]
        return nn.Sequential(*front, *quantum_tail(8))


def images(batch: int = 12) -> torch.Tensor:
    return torch.rand(batch, 2, 8, 8, generator=torch.Generator().manual_seed(4))


def test_an_akida_front_end_equals_brainchips_engine_on_the_same_quantized_network():
    model, calibration, x = akida_model(), images(32), images(12)
    deployment = hybridai.deploy(model, chip="akida", quantum="statevector", calibration=calibration)
    assert deployment.segments == [
        ("activations [0-4]", "akida"),
        ("classical [5-6]", "torch"),
        ("quantum [7]", "statevector"),
        ("classical [8]", "torch"),
    ]
    # the oracle: BrainChip's engine, built directly from the front end quantized with the same calibration
    net = akida.quantize(nn.Sequential(*model[:5]), calibration)
    engine = akida.build_model(net)
    codes = akida.quantize_input(net, x).permute(0, 2, 3, 1).numpy().astype(np.int8)
    raw = torch.from_numpy(np.asarray(engine.forward(np.ascontiguousarray(codes)), dtype=np.int64))
    expected = raw.reshape(x.shape[0], -1).to(torch.float32) * net.output_scale
    chip_out, cost = deployment.placed[0].run(x)
    assert torch.equal(chip_out, expected) and expected.abs().sum() > 0
    assert cost.chip.time_steps == 1 and cost.chip.samples == 12 and cost.chip.layers[0].name == "0: Conv2d"
    with torch.no_grad():  # the rest runs exactly (statevector): the float model's tail on the chip's features
        want = model[5:](chip_out)
    torch.testing.assert_close(deployment.run(x), want, rtol=0, atol=1e-6)
    report = deployment.report(x, torch.arange(12) % 3)
    assert report.segments[0].backend == "akida" and report.samples == 12  # frames [B, ...]: B is dimension 0
    assert report.segments[2].cost.quantum.circuits == 12 and report.segments[0].agreement["relative error"] < 0.1


# -- (c) refusals ---------------------------------------------------------------------------------------------


def test_a_sigma_delta_model_on_loihi_is_refused_naming_the_layer_and_what_loihi_takes():
    with pytest.raises(ConfigError) as caught:
        hybridai.deploy(sigma_delta_model(), chip="loihi", quantum="statevector")
    message = str(caught.value)
    assert message.startswith("model[0]='SigmaDelta' is not valid; accepted: a layer loihi compiles"), message
    assert "loihi takes an nn.Sequential of [nn.Linear, hybridai.LIF" in message and "'loihi2'" in message


def lif_model() -> nn.Sequential:
    with torch.random.fork_rng():
        torch.manual_seed(5)
        return nn.Sequential(nn.Linear(6, 8), LIF(0.9, reset="zero"), SpikeCountDecoder(), *quantum_tail(8))


def test_a_lif_model_on_akida_is_refused_naming_the_layer_and_the_chips_that_take_it():
    for form in ({"chip": "akida", "quantum": "statevector"}, {"backend": "akida"}):
        model = lif_model() if "chip" in form else nn.Sequential(*lif_model()[:3])
        with pytest.raises(ConfigError) as caught:
            hybridai.deploy(model, calibration=torch.rand(4, 6), **form)
        message = str(caught.value)
        assert message.startswith("model[1]='LIF' is not valid; accepted: a layer akida compiles"), message
        assert "akida takes nn.Linear, nn.Conv2d" in message and "lif layers run on 'loihi', 'nengo'" in message


def test_the_one_chip_form_refuses_layers_outside_the_chip_segment_by_name():
    model = nn.Sequential(*lif_model()[:3], nn.Linear(8, 3), nn.Tanh())
    with pytest.raises(ConfigError) as caught:
        hybridai.deploy(model, "loihi")
    message = str(caught.value)
    assert message.startswith("backend='loihi' is not valid for this model: model[3] (Linear), model[4] (Tanh) are "
                              "outside the chip's segment spiking [0-2]; accepted: a model 'loihi' takes whole: an "
                              "nn.Sequential of [nn.Linear, hybridai.LIF"), message  # fmt: skip
    assert "hybridai.deploy(model, chip='loihi', classical='torch')" in message
    with pytest.raises(ConfigError, match=r"model\[5\] \(Linear\), model\[6\] \(Tanh\) are outside .* \[0-4\]"):
        hybridai.deploy(nn.Sequential(*akida_model()[:7]), "akida", calibration=images())


# -- (d) one chip: the one-segment case of the hybrid form ----------------------------------------------------


def snn() -> nn.Sequential:
    with torch.random.fork_rng():
        torch.manual_seed(6)
        return nn.Sequential(nn.Linear(6, 10), LIF(0.85, reset="zero"), nn.Linear(10, 3), LIF(0.85, reset="zero"),
                             SpikeCountDecoder())  # fmt: skip


def spikes() -> torch.Tensor:
    return (torch.rand(15, 5, 6, generator=torch.Generator().manual_seed(7)) < 0.4).float()


CASES = {  # chip: (model, input, calibration)
    "loihi": (snn, spikes, None),
    "nengo": (snn, spikes, None),
    "loihi2": (lambda: nn.Sequential(*sigma_delta_model()[:4], SpikeCountDecoder()), frames, None),
    "akida": (lambda: nn.Sequential(*akida_model()[:5]), lambda: images(6), images),
}  # the loihi2 and akida models are their front ends of (a) and (b)


@pytest.mark.parametrize("chip", list(CASES))
def test_the_one_chip_form_and_the_hybrid_form_give_the_same_outputs_and_report(chip):
    build, inputs, calibration = CASES[chip]
    model, x = build(), inputs()
    cal = calibration() if calibration else None
    one = hybridai.deploy(model, chip, calibration=cal)
    hybrid = hybridai.deploy(model, chip=chip, calibration=cal)
    runs = "activations" if chip == "akida" else "spiking"  # Akida's ReLU front end sends activations, not spikes
    assert one.segments == hybrid.segments == [(f"{runs} [0-{len(model) - 1}]", chip)]
    assert one.backend.name == hybrid.backend.name == chip
    assert torch.equal(one.run(x), hybrid.run(x))
    labels = torch.arange(x.shape[0 if chip == "akida" else 1]) % 3
    a, b = one.report(x, labels), hybrid.report(x, labels)
    assert a.agreement == b.agreement and a.accuracy == b.accuracy and a.samples == b.samples
    assert a.segments[0].agreement == b.segments[0].agreement
    assert a.run.layers == b.run.layers and a.run.layers  # every layer's events, as ints
    assert (a.run.samples, a.run.time_steps, a.run.latency_steps) == (b.run.samples, b.run.time_steps,
                                                                     b.run.latency_steps)  # fmt: skip
    assert (a.energy is None) == (chip != "loihi")  # Loihi 1's published figures only
    if a.energy is not None:
        assert a.energy.per_sample == b.energy.per_sample > 0


EVENT_WORDS = {"loihi": "spikes", "nengo": "spikes", "loihi2": "graded messages", "akida": "non-zero activations"}


@pytest.mark.parametrize("chip", list(CASES))
def test_the_report_counts_each_chip_s_events_in_its_own_word(chip):
    build, inputs, calibration = CASES[chip]
    model, x = build(), inputs()
    report = hybridai.deploy(model, chip, calibration=calibration() if calibration else None).report(x)
    word = EVENT_WORDS[chip]
    assert hybridai.backends.get(chip).capabilities.event_word == word
    segment = report.segments[0]
    events = sum(layer.spikes for layer in segment.cost.chip.layers)
    assert segment.cost.event_word == word and f"{events:,} {word}, " in segment.cost.describe()
    text = str(report)
    assert f"{word}/step" in text
    if word != "spikes":
        assert "spikes" not in text  # no chip's events called spikes but its own
