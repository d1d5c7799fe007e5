"""QuantumKernel against PennyLane's own kernels (circuit by circuit) and Qiskit ML's statevector kernel."""

import math

import numpy as np
import pennylane as qml
import pytest
import torch

import hybridai
from hybridai import QuantumKernel, psd_repair, target_alignment
from hybridai.core.errors import ConfigError, HybridAIError, ShapeError
from hybridai.quantum import IQPFeatureMap

N = 3


def zz_map(x, w):
    """A ZZ feature map (Havlicek et al.) with one trainable RY layer."""
    for i in range(N):
        qml.Hadamard(i)
        qml.RZ(2 * x[..., i], wires=i)
    for i in range(N - 1):
        qml.CNOT([i, i + 1])
        qml.RZ(2 * (math.pi - x[..., i]) * (math.pi - x[..., i + 1]), wires=i + 1)
        qml.CNOT([i, i + 1])
    for i in range(N):
        qml.RY(w[i], wires=i)
        qml.RZ(x[..., i] * w[i], wires=i)


def plain_map(x):
    qml.AngleEmbedding(x, wires=range(N), rotation="Y")
    qml.CNOT([0, 1])
    qml.CRZ(x[..., 2], wires=[1, 2])


@pytest.fixture
def kernel():
    torch.manual_seed(3)
    return QuantumKernel(zz_map, N, {"w": N}).double()


def data(n, seed=0, features=N):
    return torch.rand(n, features, dtype=torch.float64, generator=torch.Generator().manual_seed(seed)) * 2


def pennylane_kernel(feature_map, weights):
    """PennyLane's compute-uncompute kernel: one QNode per pair, P(|0...0>)."""

    @qml.qnode(qml.device("default.qubit", wires=N), interface="torch")
    def circuit(a, b):
        feature_map(a, **weights)
        qml.adjoint(feature_map)(b, **weights)
        return qml.probs(wires=range(N))

    return lambda a, b: circuit(a, b)[0]


def test_fidelity_equals_pennylane_circuit_by_circuit(kernel):
    X, Y = data(7), data(5, seed=1)
    pair = pennylane_kernel(zz_map, {"w": kernel.w.detach()})
    square = torch.as_tensor(qml.kernels.square_kernel_matrix(X, pair, assume_normalized_kernel=False))
    rect = torch.as_tensor(qml.kernels.kernel_matrix(X, Y, pair))
    assert kernel.method == "statevector"
    K, KXY = kernel.matrix(X), kernel.matrix(X, Y)
    assert K.dtype == torch.float64 and K.shape == (7, 7) and KXY.shape == (7, 5)
    torch.testing.assert_close(K, square, rtol=0, atol=1e-10)
    torch.testing.assert_close(KXY, rect, rtol=0, atol=1e-10)
    assert not torch.allclose(K, torch.ones_like(K), atol=1e-3)  # a non-trivial kernel


@pytest.mark.parametrize("backend", ["pennylane:lightning.qubit", "statevector"])
def test_other_exact_backends_agree(kernel, backend):
    other = QuantumKernel(zz_map, N, {"w": N}, backend=backend).double()
    other.load_state_dict(kernel.state_dict())
    X, Y = data(6), data(4, seed=2)
    with torch.no_grad():
        torch.testing.assert_close(other.matrix(X, Y), kernel.matrix(X, Y), rtol=0, atol=1e-10)


def test_equals_qiskit_fidelity_statevector_kernel():
    kernels = pytest.importorskip("qiskit_machine_learning.kernels")
    from qiskit import QuantumCircuit
    from qiskit.circuit import ParameterVector

    weights = torch.tensor([0.3, -1.1, 2.0], dtype=torch.float64)
    p = ParameterVector("x", N)
    qc = QuantumCircuit(N)
    for i in range(N):
        qc.h(i)
        qc.rz(2 * p[i], i)
    for i in range(N - 1):
        qc.cx(i, i + 1)
        qc.rz(2 * (math.pi - p[i]) * (math.pi - p[i + 1]), i + 1)
        qc.cx(i, i + 1)
    for i in range(N):
        qc.ry(float(weights[i]), i)
        qc.rz(p[i] * float(weights[i]), i)
    X, Y = data(8), data(5, seed=4)
    want = torch.as_tensor(kernels.FidelityStatevectorKernel(feature_map=qc).evaluate(X.numpy(), Y.numpy()))
    kernel = QuantumKernel(zz_map, N, {"w": N}).double()
    with torch.no_grad():
        kernel.w.copy_(weights)
        torch.testing.assert_close(kernel.matrix(X, Y), want, rtol=0, atol=1e-10)


def test_symmetric_unit_diagonal_psd(kernel):
    K = kernel.matrix(data(12)).detach()
    torch.testing.assert_close(K, K.T, rtol=0, atol=0)
    torch.testing.assert_close(K.diagonal(), torch.ones(12, dtype=torch.float64), rtol=0, atol=1e-12)
    assert torch.linalg.eigvalsh(K).min() > -1e-12
    assert K.min() >= 0 and K.max() <= 1 + 1e-12


def test_compute_uncompute_exact_equals_statevector(kernel):
    cu = QuantumKernel(zz_map, N, {"w": N}, method="compute-uncompute").double()
    cu.load_state_dict(kernel.state_dict())
    X, Y = data(6), data(3, seed=5)
    torch.testing.assert_close(cu.matrix(X), kernel.matrix(X), rtol=0, atol=1e-10)
    torch.testing.assert_close(cu.matrix(X, Y), kernel.matrix(X, Y), rtol=0, atol=1e-10)


def test_shots_measure_distinct_pairs_once_in_one_call(kernel):
    shots = QuantumKernel(zz_map, N, {"w": N}, shots=4000, seed=11).double()
    shots.load_state_dict(kernel.state_dict())
    assert shots.method == "compute-uncompute"
    calls = []
    execute = shots.resolved_backend.execute

    def recording(tapes, config):  # the real backend, with its calls recorded
        calls.append([t.batch_size for t in tapes])
        return execute(tapes, config)

    shots.resolved_backend.execute = recording
    X = data(9)
    with torch.no_grad():
        K = shots.matrix(X)
        exact = kernel.matrix(X)
    assert calls == [[9 * 8 // 2]]
    torch.testing.assert_close(K.diagonal(), torch.ones(9, dtype=torch.float64), rtol=0, atol=0)
    torch.testing.assert_close(K, K.T, rtol=0, atol=0)
    assert exact.min() >= 0 and exact.max() <= 1  # fidelities are clipped into [0, 1] on every CPU
    sigma = (exact * (1 - exact) / 4000).sqrt().max()
    assert (K - exact).abs().max() < 5 * sigma + 1e-3
    assert not torch.equal(K, exact)  # sampled, not exact
    again = QuantumKernel(zz_map, N, {"w": N}, shots=4000, seed=11).double()
    again.load_state_dict(kernel.state_dict())
    with torch.no_grad():
        torch.testing.assert_close(again.matrix(X), K, rtol=0, atol=0)  # same seed, same numbers


def test_shots_are_differentiable_by_parameter_shift(kernel):
    shots = QuantumKernel(zz_map, N, {"w": N}, backend="pennylane:default.qubit", shots=20000, seed=2).double()
    shots.load_state_dict(kernel.state_dict())
    X = data(3).requires_grad_()
    shots.matrix(X).sum().backward()
    X_ref = X.detach().clone().requires_grad_()
    kernel.matrix(X_ref).sum().backward()
    assert (X.grad - X_ref.grad).abs().max() < 0.1 * X_ref.grad.abs().max() + 0.05


def test_projected_kernel_equals_pennylane_reduced_density_matrices(kernel):
    projected = QuantumKernel(zz_map, N, {"w": N}, kind="projected", gamma=0.7).double()
    projected.load_state_dict(kernel.state_dict())
    X, Y = data(5), data(4, seed=6)
    dev = qml.device("default.qubit", wires=N)

    @qml.qnode(dev, interface="torch")
    def rdms(x):
        zz_map(x, kernel.w.detach())
        return [qml.density_matrix(wires=q) for q in range(N)]

    rx, ry = [torch.stack(rdms(x)) for x in X], [torch.stack(rdms(y)) for y in Y]
    want = torch.tensor(
        [[math.exp(-0.7 * float(((a - b).abs() ** 2).sum())) for b in ry] for a in rx], dtype=torch.float64
    )
    torch.testing.assert_close(projected.matrix(X, Y), want, rtol=0, atol=1e-10)
    K = projected.matrix(X).detach()
    torch.testing.assert_close(K.diagonal(), torch.ones(5, dtype=torch.float64), rtol=0, atol=1e-12)
    assert torch.linalg.eigvalsh(K).min() > -1e-12
    sampled = QuantumKernel(zz_map, N, {"w": N}, kind="projected", gamma=0.7, shots=20000, seed=1).double()
    sampled.load_state_dict(kernel.state_dict())
    with torch.no_grad():
        assert (sampled.matrix(X, Y) - want).abs().max() < 0.05


def test_gradients_match_finite_differences(kernel):
    X = data(4).requires_grad_()
    Y = data(3, seed=1).requires_grad_()
    w = kernel.w

    def square(x, weights):
        return kernel.matrix(x)

    def rectangular(x, y):
        return kernel.matrix(x, y)

    assert torch.autograd.gradcheck(square, (X, w))
    assert torch.autograd.gradcheck(rectangular, (X, Y))
    projected = QuantumKernel(zz_map, N, {"w": N}, kind="projected").double()
    assert torch.autograd.gradcheck(lambda x, weights: projected.matrix(x, Y.detach()), (X, projected.w))


def test_blocked_with_progress_equals_one_block(kernel, capsys):
    X, Y = data(10), data(7, seed=3)
    small = QuantumKernel(zz_map, N, {"w": N}, block_size=3, progress=True).double()
    small.load_state_dict(kernel.state_dict())
    torch.testing.assert_close(small.matrix(X), kernel.matrix(X), rtol=0, atol=1e-14)
    torch.testing.assert_close(small.matrix(X, Y), kernel.matrix(X, Y), rtol=0, atol=1e-14)
    assert "kernel 10 x 10" in capsys.readouterr().err  # the tqdm bar
    cu = QuantumKernel(zz_map, N, {"w": N}, block_size=4, method="compute-uncompute").double()
    cu.load_state_dict(kernel.state_dict())
    torch.testing.assert_close(cu.matrix(X), kernel.matrix(X), rtol=0, atol=1e-10)


def test_float32_and_integer_inputs():
    kernel = QuantumKernel(plain_map, N)
    K32 = kernel.matrix(data(4).float())
    assert K32.dtype == torch.float32
    torch.testing.assert_close(K32.double(), kernel.matrix(data(4)), rtol=0, atol=1e-5)
    assert kernel.matrix(torch.tensor([[0, 1, 2], [1, 1, 1]])).dtype == torch.get_default_dtype()
    K = kernel.matrix(np.zeros((2, 3)))
    torch.testing.assert_close(K, torch.ones(2, 2, dtype=torch.float64), rtol=0, atol=1e-12)


def test_target_alignment_equals_pennylane_and_trains(kernel):
    X = data(8)
    y = torch.tensor([1, -1, 1, -1, 1, 1, -1, -1], dtype=torch.float64)
    pair = pennylane_kernel(zz_map, {"w": kernel.w.detach()})
    want = qml.kernels.target_alignment(X, y, pair, rescale_class_labels=False)
    torch.testing.assert_close(kernel.alignment(X, y), torch.as_tensor(want, dtype=torch.float64), rtol=0, atol=1e-10)
    centred = target_alignment(kernel.matrix(X), y, centered=True)
    H = torch.eye(8, dtype=torch.float64) - 1 / 8
    Kc, Tc = H @ kernel.matrix(X) @ H, H @ torch.outer(y, y) @ H
    torch.testing.assert_close(centred, (Kc * Tc).sum() / (Kc.norm() * Tc.norm()), rtol=0, atol=1e-12)
    optimiser = torch.optim.Adam(kernel.parameters(), lr=0.1)
    before = kernel.alignment(X, y).item()
    for _ in range(15):
        optimiser.zero_grad()
        (-kernel.alignment(X, y)).backward()
        optimiser.step()
    assert kernel.alignment(X, y).item() > before + 0.01


def test_psd_repair_equals_pennylane_threshold_matrix():
    rng = np.random.default_rng(0)
    A = rng.normal(size=(6, 6))
    K = torch.as_tensor(A @ A.T / 6 - 0.3 * np.eye(6))  # some negative eigenvalues, as with shot noise
    assert torch.linalg.eigvalsh(K).min() < -0.1
    repaired = psd_repair(K)
    torch.testing.assert_close(repaired, torch.as_tensor(qml.kernels.threshold_matrix(K.numpy())), rtol=0, atol=1e-12)
    assert torch.linalg.eigvalsh(repaired).min() > -1e-12
    exact = QuantumKernel(plain_map, N).matrix(data(5)).detach()
    torch.testing.assert_close(psd_repair(exact), exact, rtol=0, atol=1e-12)


def test_summary_and_place_know_the_kernel(kernel):
    text = hybridai.summary(kernel, show=False)
    assert "QuantumKernel" in text and "quantum" in text and "3 qubits" in text
    hybridai.place(kernel, quantum="pennylane:lightning.qubit")
    assert kernel.backend == "pennylane:lightning.qubit"


def test_default_feature_map_reuploads_beyond_its_qubits():
    kernel = QuantumKernel(IQPFeatureMap(2), 2)
    X = data(4, features=5)
    K = kernel.matrix(X)
    assert K.shape == (4, 4)
    X_changed = X.clone()
    X_changed[0, 4] += 0.5  # the last feature is uploaded too
    assert (kernel.matrix(X_changed) - K)[0, 1:].abs().min() > 1e-3


# ------------------------------------------------------------------ errors


@pytest.mark.parametrize(
    "X, Y, match",
    [
        (torch.rand(4, 3), torch.rand(2, 2), r"Y.shape=\(2, 2\).*\[M, 3\]"),
        (torch.tensor([[0.1, float("nan"), 0.3]]), None, r"X=.*nan at \[0, 1\].*finite values"),
        (torch.rand(2, 3), torch.tensor([[0.0, 0.0, float("inf")]]), r"Y=.*inf at \[0, 2\]"),
        (torch.zeros(0, 3), None, r"X.shape=\(0, 3\).*at least one sample"),
        (torch.zeros(2, 0), None, r"X.shape=\(2, 0\).*at least one sample and one feature"),
        (torch.rand(3), None, r"X.shape=\(3,\).*\[N, F\]"),
        (torch.rand(2, 3, dtype=torch.complex64), None, r"X.dtype=.*real"),
        ("abc", None, r"X=.*\[N, F\]"),
    ],
)
def test_bad_inputs_name_argument_value_and_accepted(X, Y, match):
    kernel = QuantumKernel(plain_map, N)
    with pytest.raises(HybridAIError, match=match):
        kernel.matrix(X, Y)


def test_width_checks():
    kernel = QuantumKernel(plain_map, N, n_features=3)
    with pytest.raises(ShapeError, match=r"X.shape=\(2, 4\).*\[N, 3\] \(n_features=3\)"):
        kernel.matrix(torch.rand(2, 4))
    with pytest.raises(ShapeError, match=r"feature_map could not build a circuit from x of shape \(2, 2\)"):
        QuantumKernel(plain_map, N).matrix(torch.rand(2, 2))


@pytest.mark.parametrize(
    "kwargs, error, match",
    [
        ({"mitigation": "zne"}, ConfigError, r"mitigation='zne'.*None or hybridai.ZNE"),
        (
            {"backend": "statevector", "dtype": "complex64", "mitigation_level": 2},
            ConfigError,
            r"does not accept the option\(s\) \[('dtype', )?'mitigation_level'\]",  # the one it does not take
        ),
        ({"kind": "quantum"}, ConfigError, r"kind='quantum'.*'fidelity', 'projected'"),
        ({"method": "exact"}, ConfigError, r"method='exact'"),
        ({"shots": 100, "method": "statevector"}, ConfigError, r"method='statevector'.*shots=100"),
        ({"gamma": -1.0}, ConfigError, r"gamma=-1.0.*positive"),
        ({"shots": 0}, ConfigError, r"shots=0.*positive int"),
        ({"weight_shapes": {"v": 3}}, ConfigError, r"key 'v'.*accepted keys: \[\]"),
        ({"backend": "nope"}, HybridAIError, r"nope"),
        ({"diff_method": "magic"}, ConfigError, r"diff_method='magic'"),
    ],
)
def test_bad_configuration(kwargs, error, match):
    with pytest.raises(error, match=match):
        QuantumKernel(plain_map, N, **kwargs)


def test_wires_outside_and_missing_weights():
    def wide(x):
        qml.RX(x[..., 0], wires=5)

    with pytest.raises(ConfigError, match=r"wires \[5\].*0..2"):
        QuantumKernel(wide, N).matrix(torch.rand(2, 1))
    with pytest.raises(ConfigError, match=r"lacks the feature_map argument\(s\) \['w'\]"):
        QuantumKernel(zz_map, N)


def test_undifferentiable_backend_says_what_to_do():
    kernel = QuantumKernel(plain_map, N, backend="pennylane:lightning.qubit")
    X = data(3).requires_grad_()
    with pytest.raises(ConfigError, match=r"lightning.qubit.*cannot differentiate.*accepted: a backend with backprop"):
        kernel.matrix(X)
    with torch.no_grad():
        assert kernel.matrix(X).shape == (3, 3)


def test_alignment_and_repair_errors():
    with pytest.raises(ShapeError, match=r"y.shape=\(3,\).*\[4\]"):
        target_alignment(torch.eye(4), torch.ones(3))
    with pytest.raises(ShapeError, match=r"K=\(2, 3\).*square"):
        psd_repair(torch.ones(2, 3))
    with pytest.raises(ConfigError, match="undefined"):
        target_alignment(torch.zeros(3, 3), torch.ones(3))


# ------------------------------------------------------------------ Qiskit Aer (shot-based and noisy)


def test_aer_exact_falls_back_to_compute_uncompute_in_one_call(kernel):
    pytest.importorskip("qiskit_aer")
    aer = QuantumKernel(zz_map, N, {"w": N}, backend="aer").double()
    aer.load_state_dict(kernel.state_dict())
    X = data(5)
    with torch.no_grad():
        K = aer.matrix(X)
        torch.testing.assert_close(K, kernel.matrix(X), rtol=0, atol=1e-10)
    assert aer.method == "compute-uncompute"  # Aer's estimator cannot return qml.state()
    stats = aer.execution_stats
    assert stats["calls"] == 1 and stats["circuits"] == 5 * 4 // 2 and stats["shots"] == 0
    assert aer.last_execution.stats.seconds > 0


def test_aer_shots_and_noise_then_psd_repair(kernel):
    pytest.importorskip("qiskit_aer")
    X = data(6)
    with torch.no_grad():
        exact = kernel.matrix(X)
        sampled = []
        for _ in range(2):
            aer = QuantumKernel(zz_map, N, {"w": N}, backend="aer", shots=2000, seed=5).double()
            aer.load_state_dict(kernel.state_dict())
            sampled.append(aer.matrix(X))
        noisy = QuantumKernel(zz_map, N, {"w": N}, backend="aer", depolarizing=(0.02, 0.05), shots=2000, seed=5)
        noisy.load_state_dict(kernel.state_dict())
        K_noisy = noisy.matrix(X).double()
    torch.testing.assert_close(sampled[0], sampled[1], rtol=0, atol=0)  # seeded
    assert 0 < (sampled[0] - exact).abs().max() < 0.06
    assert noisy.method == "compute-uncompute"
    off = ~torch.eye(6, dtype=torch.bool)
    assert (K_noisy - exact)[off].abs().max() > 0.01  # the noise shows
    repaired = psd_repair(K_noisy)
    assert torch.linalg.eigvalsh(repaired).min() > -1e-12
    assert (repaired - K_noisy).abs().max() <= max(0.0, -float(torch.linalg.eigvalsh(K_noisy).min())) + 1e-12
