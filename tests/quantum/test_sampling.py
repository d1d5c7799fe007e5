"""Exact sampling on the statevector backend: seeded shots, statistics within 5 standard errors of the
exact values, parameter-shift gradients (exact: equal to backprop; with shots: within 5 standard errors)."""

import math

import pennylane as qml
import pytest
import torch

from hybridai import QuantumLayer
from hybridai.core.errors import ConfigError
from hybridai.quantum.execution.sampling import BINOMIAL_MAX_OUTCOMES, counts

N = 3
SHOTS = 20000


def circuit(inputs, weights):
    qml.AngleEmbedding(inputs, wires=range(N))
    qml.StronglyEntanglingLayers(weights, wires=range(N))
    qml.IsingXX(weights[0, 0, 0], wires=[0, 2])
    return [qml.expval(qml.PauliZ(i)) for i in range(N)] + [qml.expval(qml.PauliZ(0) @ qml.PauliZ(1))]


def layer_pair(shots=SHOTS, seed=7, **options):
    exact = QuantumLayer(circuit, N, {"weights": (2, N, 3)}, backend="statevector").double()
    sampled = QuantumLayer(circuit, N, {"weights": (2, N, 3)}, backend="statevector", shots=shots, seed=seed, **options)
    sampled = sampled.double()
    sampled.load_state_dict(exact.state_dict())
    return exact, sampled


@pytest.mark.parametrize("d", [2, 8, BINOMIAL_MAX_OUTCOMES + 8])
def test_counts_have_the_multinomial_mean_and_are_seeded(d):
    probs = torch.softmax(torch.randn(6, d, dtype=torch.float64, generator=torch.Generator().manual_seed(d)), -1)
    a = counts(probs, SHOTS, torch.Generator().manual_seed(1))
    b = counts(probs, SHOTS, torch.Generator().manual_seed(1))
    c = counts(probs, SHOTS, torch.Generator().manual_seed(2))
    assert torch.equal(a, b) and not torch.equal(a, c)
    assert torch.equal(a.sum(-1), torch.full((6,), float(SHOTS), dtype=a.dtype))
    assert (a >= 0).all()
    se = (SHOTS * probs * (1 - probs)).clamp(min=0).sqrt()  # clamped: rounding may leave [0, 1]
    assert ((a - SHOTS * probs).abs() <= 5 * se + 1e-9).all()


def test_sampled_values_are_within_five_standard_errors_and_seeded():
    torch.manual_seed(0)
    x = torch.rand(8, N, dtype=torch.float64)
    exact, sampled = layer_pair()
    with torch.no_grad():
        want, got, again = exact(x), sampled(x), sampled(x)
    assert torch.equal(got, again)  # seeded: the same draws every call
    se = ((1 - want**2).clamp(min=0) / SHOTS).sqrt()  # |<Z>| may round to 1 + 1e-16
    assert ((got - want).abs() <= 5 * se + 1e-12).all()
    _, other = layer_pair(seed=8)
    with torch.no_grad():
        assert not torch.equal(other(x), got)


def test_sampled_probabilities_and_variances_are_within_five_standard_errors():
    def mixed(inputs, weights):
        qml.AngleEmbedding(inputs, wires=range(N))
        qml.StronglyEntanglingLayers(weights, wires=range(N))
        return [qml.probs(wires=[0, 2]), qml.var(qml.PauliX(1)), qml.expval(qml.PauliY(0))]

    torch.manual_seed(1)
    x = torch.rand(5, N, dtype=torch.float64)
    exact = QuantumLayer(mixed, N, {"weights": (2, N, 3)}, backend="statevector").double()
    sampled = QuantumLayer(mixed, N, {"weights": (2, N, 3)}, backend="statevector", shots=SHOTS, seed=3).double()
    sampled.load_state_dict(exact.state_dict())
    with torch.no_grad():
        want, got = exact(x), sampled(x)
    p, ev = want[:, :4], want[:, 5]
    assert ((got[:, :4] - p).abs() <= 5 * (p * (1 - p) / SHOTS).clamp(min=0).sqrt() + 1e-12).all()
    assert ((got[:, 5] - ev).abs() <= 5 * ((1 - ev**2) / SHOTS).clamp(min=0).sqrt() + 1e-12).all()
    assert ((got[:, 4] - want[:, 4]).abs() <= 0.05).all()  # a variance: 5 SE are below 0.05 at 20000 shots


def gradients(layer, x, column=0):
    x = x.detach().clone().requires_grad_()
    layer.zero_grad()
    out = layer(x)
    out[:, column].sum().backward()
    return out.detach(), x.grad, layer.weights.grad.clone()


def test_exact_parameter_shift_equals_backprop():
    torch.manual_seed(2)
    x = torch.rand(4, N, dtype=torch.float64)
    backprop = QuantumLayer(circuit, N, {"weights": (2, N, 3)}, backend="statevector").double()
    shift = QuantumLayer(circuit, N, {"weights": (2, N, 3)}, backend="statevector", diff_method="parameter-shift")
    shift = shift.double()
    shift.load_state_dict(backprop.state_dict())
    for a, b in zip(gradients(shift, x, 3), gradients(backprop, x, 3), strict=True):
        assert (a - b).abs().max() < 1e-10


def test_sampled_parameter_shift_gradients_are_within_five_standard_errors_and_seeded():
    torch.manual_seed(3)
    batch = 4
    x = torch.rand(batch, N, dtype=torch.float64)
    exact, sampled = layer_pair()
    _, want_x, want_w = gradients(exact, x)
    _, got_x, got_w = gradients(sampled, x)
    # an input's gradient is one shift difference (E+ - E-)/2 of <Z> (each variance <= 1 per shot); a weight's sums
    # the batch's differences for each gate it enters (at most 2: weights[0, 0, 0] in a Rot and in IsingXX)
    assert (got_x - want_x).abs().max() <= 5 * math.sqrt(2 / (4 * SHOTS))
    bound = 5 * math.sqrt(batch * 2 * 2 / (4 * SHOTS))
    assert (got_w - want_w).abs().max() <= bound
    assert want_w.abs().max() > 10 * bound  # the comparison can fail: the gradients are well above the noise
    assert torch.equal(gradients(sampled, x)[2], got_w)  # seeded
    shifted = 1 + 2 * (N + 2 * N * 3 + 1)  # unshifted, then +-pi/2 for each RX input, Rot angle and the IsingXX
    assert sampled.execution_stats["circuits"] == batch * shifted
    assert sampled.execution_stats["shots"] == SHOTS * batch * shifted


def test_shots_with_an_autograd_method_are_refused():
    _, sampled = layer_pair(diff_method="adjoint")
    with pytest.raises(ConfigError, match=r"shots=20000 with diff_method='adjoint'.*parameter-shift"):
        sampled(torch.rand(2, N, dtype=torch.float64))


def test_parameter_shift_refuses_state_measurements():
    from hybridai import backends
    from hybridai.core.errors import UnsupportedOperationError
    from hybridai.core.execution import ExecutionConfig

    angle = torch.tensor(0.3, dtype=torch.float64, requires_grad=True)
    tape = qml.tape.QuantumScript([qml.RX(angle, wires=0)], [qml.state()])
    config = ExecutionConfig(wires=(0,), diff_method="parameter-shift")
    with pytest.raises(UnsupportedOperationError, match=r"parameter-shift gradients of \['StateMP'\]"):
        backends.get("statevector").execute([tape], config)
