"""hybridai.deploy with one backend per domain: the cut, the hand-over, the report and the refusals."""

from __future__ import annotations

import copy

import pennylane as qml
import pytest
import torch
from torch import nn

import hybridai
from hybridai.core.errors import ConfigError
from hybridai.deployment import Deployment, cut
from hybridai.neuromorphic.segments import domains_of, flatten

N_QUBITS = 3


def circuit(inputs, weights):
    qml.AngleEmbedding(inputs, wires=range(N_QUBITS))
    qml.BasicEntanglerLayers(weights, wires=range(N_QUBITS))
    return [qml.expval(qml.PauliZ(i)) for i in range(N_QUBITS)]


def hybrid_model(reset: str = "zero") -> nn.Sequential:
    """Events -> Linear -> LIF -> spike counts -> Linear/Tanh -> circuit -> Linear: all three domains."""
    with torch.random.fork_rng():
        torch.manual_seed(0)
        return nn.Sequential(
            nn.Linear(20, 16),
            hybridai.LIF(0.9, reset=reset),
            hybridai.SpikeCountDecoder(),
            nn.Linear(16, N_QUBITS),
            nn.Tanh(),
            hybridai.QuantumLayer(circuit, N_QUBITS, {"weights": (2, N_QUBITS)}),
            nn.Linear(N_QUBITS, 4),
        )


def events(samples: int = 24, steps: int = 12) -> torch.Tensor:
    g = torch.Generator().manual_seed(1)
    return (torch.rand(steps, samples, 20, generator=g) < 0.3).float() * 2  # event counts, time-major


def test_the_model_is_cut_by_domain_at_the_decoder_and_around_the_circuit():
    assert [s.label for s in cut(hybrid_model())] == [
        "spiking [0-2]",
        "classical [3-4]",
        "quantum [5]",
        "classical [6]",
    ]


def test_an_encoder_stays_on_the_host_and_layers_before_it_are_classical():
    model = nn.Sequential(
        nn.Linear(8, 6), nn.ReLU(), hybridai.RepeatEncoder(5), nn.Linear(6, 4), hybridai.LIF(0.9), nn.Linear(4, 2)
    )
    assert domains_of(flatten(model)) == ["classical"] * 3 + ["spiking"] * 3  # no decoder: spiking to the end


def test_nested_sequentials_are_flattened_with_their_indices():
    model = nn.Sequential(nn.Sequential(nn.Linear(20, 16), hybridai.LIF(0.9)), hybridai.SpikeCountDecoder())
    assert [i for i, _ in flatten(model)] == ["0.0", "0.1", "1"]
    assert [s.label for s in cut(model)] == ["spiking [0.0-1]"]


def test_deployed_output_equals_the_segments_deployed_by_hand():
    model, x = hybrid_model(), events()
    deployment = hybridai.deploy(model, chip="loihi", quantum="statevector", classical="torch")
    assert isinstance(deployment, Deployment)
    chip = hybridai.deploy(nn.Sequential(*model[:3]), "loihi")  # the one-chip form on the spiking segment
    with torch.no_grad():
        h = model[3:5](chip.run(x).to(torch.float32))
        layer = copy.deepcopy(model[5]).set_backend("statevector")
        want = model[6](layer(h).to(torch.float32))
    got = deployment.run(x)
    torch.testing.assert_close(got, want, rtol=0, atol=1e-6)
    # the float model is untouched: its circuit layer still runs where it was built to
    assert model[5].backend == "statevector" and model[5].mitigation is None


def test_agreement_is_measured_at_each_cut_against_the_float_model():
    model, x = hybrid_model(), events()
    labels = torch.arange(x.shape[1]) % 4
    report = hybridai.deploy(model, chip="loihi", quantum="statevector").report(x, labels)
    with torch.no_grad():
        float_counts = model[:3](x)
        chip_counts = hybridai.deploy(nn.Sequential(*model[:3]), "loihi").run(x).to(float_counts.dtype)
        float_out = model(x)
    spiking = report.segments[0]
    relative = float((chip_counts.double() - float_counts.double()).norm() / float_counts.double().norm())
    assert spiking.agreement["relative error"] == pytest.approx(relative)
    assert spiking.alone is None  # the first segment sees the float input: alone == end to end
    for later in report.segments[1:]:  # exact backends: each segment alone reproduces the float model
        assert later.alone["relative error"] < 1e-6
    assert report.accuracy["float"] == pytest.approx(float((float_out.argmax(1) == labels).double().mean()))
    assert report.segments[0].cost.chip is not None and report.segments[0].cost.chip.samples == x.shape[1]
    assert report.segments[2].cost.quantum.circuits == x.shape[1]
    assert report.segments[1].cost.macs == x.shape[1] * 16 * N_QUBITS
    text = str(report)
    assert "spiking [0-2]" in text and "quantum [5]" in text and "nJ/sample" in text


def test_all_torch_placement_agrees_exactly_with_the_float_model():
    model, x = hybrid_model(), events()
    report = hybridai.deploy(model, chip="torch", classical="torch").report(x)
    assert all(s.agreement["relative error"] == 0 for s in report.segments)
    torch.testing.assert_close(hybridai.deploy(model, classical="torch").run(x), model(x).detach())


def test_a_noisy_mitigated_quantum_segment_reports_its_circuits_and_shots():
    model, x = hybrid_model(), events(samples=6)
    deployment = hybridai.deploy(
        model,
        chip="loihi",
        quantum="aer:fake_manila",
        shots=500,
        mitigation=hybridai.ZNE(scale_factors=(1, 3, 5)),
        quantum_options={"seed": 3},
    )
    report = deployment.report(x)
    quantum = report.segments[2]
    assert quantum.backend == "aer:fake_manila + ZNE"
    assert quantum.cost.quantum.circuits == 3 * 6  # three folded copies per sample
    assert quantum.cost.quantum.shots == 3 * 6 * 500
    assert 0 < quantum.agreement["relative error"] < 1  # noisy, but not garbage
    torch.testing.assert_close(deployment.run(x), deployment.run(x))  # seeded: the same samples every call


def test_a_segment_the_chip_cannot_run_is_refused_before_anything_runs():
    model = hybrid_model(reset="subtract")  # Loihi resets to zero
    calls = []
    model[5].register_forward_hook(lambda *_: calls.append(1))
    with pytest.raises(ConfigError) as info:
        hybridai.deploy(model, chip="loihi", quantum="aer:fake_manila", calibration=events())
    message = str(info.value)
    assert "spiking [0-2] on 'loihi'" in message and "model[1] (LIF)" in message and "reset" in message
    assert "nothing was run" in message and not calls


def test_every_failing_segment_is_named_in_one_error():
    with pytest.raises(ConfigError) as info:  # the chip refuses the LIF, the circuit refuses the mitigation
        hybridai.deploy(hybrid_model("subtract"), chip="loihi", quantum="aer", mitigation="zne")
    message = str(info.value)
    assert "2 segments" in message and "spiking [0-2]" in message and "quantum [5]" in message


@pytest.mark.parametrize(
    ("kwargs", "named"),
    [
        ({"backend": "loihi", "chip": "loihi"}, "backend="),
        ({"chip": "loihi", "quirks": "lava"}, "options="),
        ({"chip": "statevector"}, "chip="),
        ({"classical": "loihi"}, "classical="),
        ({"chip": "loihi", "shots": 0}, "shots=0"),
        ({"quantum": "statevector", "quantum_options": ["seed"]}, "quantum_options="),
        ({"chip": "loihi", "energy": {"synaptic_op": 1e-12}}, "energy="),
    ],
)
def test_bad_arguments_name_themselves(kwargs, named):
    with pytest.raises(hybridai.HybridAIError) as info:
        hybridai.deploy(hybrid_model(), **kwargs)
    assert named in str(info.value)


def test_a_domain_the_model_does_not_have_is_refused():
    spiking_only = nn.Sequential(nn.Linear(20, 8), hybridai.LIF(0.9, reset="zero"), hybridai.SpikeCountDecoder())
    with pytest.raises(ConfigError, match="quantum=.*has no quantum layers"):
        hybridai.deploy(spiking_only, chip="loihi", quantum="statevector")


def test_the_one_chip_form_keeps_working():
    spiking_only = nn.Sequential(nn.Linear(20, 8), hybridai.LIF(0.9, reset="zero"), hybridai.SpikeCountDecoder())
    deployment = hybridai.deploy(spiking_only, "loihi")
    assert isinstance(deployment, Deployment) and deployment.segments == [("spiking [0-2]", "loihi")]
    assert deployment.run(events()).shape == (24, 8)


FACTORY = """
import pennylane as qml
from torch import nn
import hybridai

def circuit(inputs, weights):
    qml.AngleEmbedding(inputs, wires=range(3))
    qml.BasicEntanglerLayers(weights, wires=range(3))
    return [qml.expval(qml.PauliZ(i)) for i in range(3)]

def make():
    return nn.Sequential(nn.Linear(20, 16), hybridai.LIF(0.9, reset="zero"), hybridai.SpikeCountDecoder(),
                         nn.Linear(16, 3), nn.Tanh(), hybridai.QuantumLayer(circuit, 3, {"weights": (2, 3)}),
                         nn.Linear(3, 4))
"""


def test_cli_deploy_report_takes_one_backend_per_domain(tmp_path, capsys):
    import numpy as np

    from hybridai.cli import main

    (tmp_path / "factory.py").write_text(FACTORY)
    torch.save(hybrid_model().state_dict(), tmp_path / "weights.pt")
    x = events()
    np.savez(tmp_path / "data.npz", x=x.numpy(), labels=(np.arange(x.shape[1]) % 4))
    argv = ["deploy-report", f"{tmp_path / 'factory.py'}:make", str(tmp_path / "data.npz")]
    argv += [
        "--weights",
        str(tmp_path / "weights.pt"),
        "--chip",
        "loihi",
        "--quantum",
        "aer:fake_manila",
        "--shots",
        "100",
    ]
    assert main([*argv, "--zne", "--quantum-option", "seed=2"]) == 0
    out = capsys.readouterr().out
    assert "spiking [0-2]" in out and "aer:fake_manila + ZNE" in out and "accuracy, float model" in out
    assert main([*argv, "--backend", "loihi"]) == 2
    assert "--backend='loihi' is not valid" in capsys.readouterr().err


def test_one_deployment_run_from_four_threads_equals_serial_runs_and_counts_each_run():
    from concurrent.futures import ThreadPoolExecutor

    model = hybrid_model()
    deployment = hybridai.deploy(model, chip="loihi", quantum="statevector")
    inputs = [events(samples=4 + i) for i in range(4)]
    serial = [deployment.run(x) for x in inputs]
    with ThreadPoolExecutor(4) as pool:
        reports = list(pool.map(deployment.report, inputs))
        threaded = list(pool.map(deployment.run, inputs))
    for want, got, report, x in zip(serial, threaded, reports, inputs, strict=True):
        torch.testing.assert_close(got, want, rtol=0, atol=0)
        assert report.segments[2].cost.quantum.circuits == x.shape[1]


def test_a_batch_first_input_revealed_by_the_labels_is_refused_not_read_as_time_steps():
    """[B, T, F] has the rank of [T, B, F]; the labels' length tells them apart, for one chip and for a hybrid."""
    x, labels = events(samples=24, steps=12), torch.arange(24) % 4
    spiking_only = nn.Sequential(nn.Linear(20, 8), hybridai.LIF(0.9, reset="zero"), hybridai.SpikeCountDecoder())
    deployments = [
        hybridai.deploy(spiking_only, "loihi"),
        hybridai.deploy(hybrid_model(), chip="loihi", quantum="statevector", classical="torch"),
    ]
    for deployment in deployments:
        with pytest.raises(hybridai.ShapeError, match=r"x\.shape=\(24, 12, 20\).*batch-first.*x\.transpose\(0, 1\)"):
            deployment.report(x.transpose(0, 1), labels)
    for deployment in deployments:  # time-major: taken as it is
        report = deployment.report(x, labels)
        assert set(report.accuracy) == {"float", "deployed"}
        assert report.agreement["accuracy, float model"] == report.accuracy["float"]
