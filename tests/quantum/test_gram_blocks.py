"""Gram matrices in blocks of bounded working memory (``hybridai.quantum.kernels.gram_blocks``): every block size
gives the same matrix as the textbook formula, symmetric matrices are exactly symmetric, the limit sets the blocks."""

from __future__ import annotations

import pytest
import torch

from hybridai import QuantumKernel
from hybridai.core.errors import ConfigError
from hybridai.quantum.kernels import gram_blocks as gram

N = 3


def feature_map(x, w):
    import pennylane as qml

    for i in range(N):
        qml.RY(x[..., i], wires=i)
        qml.RZ(w[i] * x[..., i], wires=i)
    for i in range(N - 1):
        qml.CNOT([i, i + 1])
    for i in range(N):
        qml.RX(x[..., i] * x[..., (i + 1) % N], wires=i)


def data(n: int, seed: int = 0) -> torch.Tensor:
    return torch.rand(n, N, generator=torch.Generator().manual_seed(seed), dtype=torch.float64) * 3


def kernel(**options) -> QuantumKernel:
    k = QuantumKernel(feature_map, N, {"w": N}, **options).double()
    with torch.no_grad():
        k.w.copy_(torch.tensor([0.4, -1.3, 2.2], dtype=torch.float64))
    return k


def textbook(k: QuantumKernel, X: torch.Tensor, Y: torch.Tensor) -> torch.Tensor:
    """|<phi(x)|phi(y)>|^2 as one complex matrix product."""
    return (k.states(X) @ k.states(Y).conj().T).abs().square()


def projected_textbook(k: QuantumKernel, X: torch.Tensor, Y: torch.Tensor) -> torch.Tensor:
    rx, ry = k.bloch_vectors(X).reshape(len(X), -1), k.bloch_vectors(Y).reshape(len(Y), -1)
    return torch.exp(-0.5 * k.gamma * ((rx[:, None] - ry[None]) ** 2).sum(-1))


@pytest.mark.parametrize("block_size", [1, 2, 5, 7, 2048])
def test_every_block_size_equals_the_textbook_formula(block_size):
    X, Y = data(13), data(6, seed=1)
    k = kernel(block_size=block_size)
    with torch.no_grad():
        torch.testing.assert_close(k.matrix(X, Y), textbook(k, X, Y), rtol=0, atol=1e-12)
        K = k.matrix(X)
        torch.testing.assert_close(K, textbook(k, X, X), rtol=0, atol=1e-12)
    assert torch.equal(K, K.T)  # exactly symmetric: the lower blocks are copies


@pytest.mark.parametrize("block_size", [1, 4, 2048])
def test_projected_kernel_in_blocks_equals_the_textbook_formula(block_size):
    X, Y = data(11), data(4, seed=2)
    k = kernel(kind="projected", gamma=0.7, block_size=block_size)
    with torch.no_grad():
        torch.testing.assert_close(k.matrix(X, Y), projected_textbook(k, X, Y), rtol=0, atol=1e-12)
        K = k.matrix(X)
        torch.testing.assert_close(K, projected_textbook(k, X, X), rtol=0, atol=1e-12)
    assert torch.equal(K, K.T)


def test_with_gradients_equals_without_and_gradients_flow():
    X = data(9).requires_grad_()
    k = kernel(block_size=4)
    K = k.matrix(X)
    with torch.no_grad():
        torch.testing.assert_close(K.detach(), k.matrix(X), rtol=0, atol=1e-12)
    K.sum().backward()
    assert X.grad is not None and k.w.grad is not None and torch.isfinite(X.grad).all()
    assert k.w.grad.abs().sum() > 0


def test_the_memory_limit_sets_the_block_rows(capsys):
    X = data(10)
    rows_for = gram.block_rows(10, 8, 10 * 8 * gram.WORK_PER_ENTRY * 3, torch.device("cpu"), cap=2048)
    assert rows_for == 3  # three rows' temporaries fit
    k = kernel(gram_memory=10 * 8 * gram.WORK_PER_ENTRY * 3, progress=True)
    with torch.no_grad():
        K = k.matrix(X)
    assert "4/4" in capsys.readouterr().err  # ceil(10 / 3) blocks
    torch.testing.assert_close(K, textbook(k, X, X).detach(), rtol=0, atol=1e-12)


def test_no_bar_for_one_block_and_a_bar_for_several(capsys):
    with torch.no_grad():
        kernel().matrix(data(5))
        assert capsys.readouterr().err == ""
        kernel(block_size=2).matrix(data(5))
    assert "3/3" in capsys.readouterr().err


def test_a_limit_below_one_row_is_refused_by_name():
    k = kernel(gram_memory=100)
    with pytest.raises(ConfigError, match=r"gram_memory=100 bytes cannot hold one row .* accepted: gram_memory >= 320"):
        k.matrix(data(10))
    for bad in (0, -5, "1GB", True, float("nan")):
        with pytest.raises(ConfigError, match="gram_memory"):
            kernel(gram_memory=bad)


def test_equals_qiskit_machine_learning_on_the_same_circuit():
    kernels = pytest.importorskip("qiskit_machine_learning.kernels")
    from qiskit import QuantumCircuit
    from qiskit.circuit import ParameterVector

    w = [0.4, -1.3, 2.2]
    p = ParameterVector("x", N)
    qc = QuantumCircuit(N)
    for i in range(N):
        qc.ry(p[i], i)
        qc.rz(w[i] * p[i], i)
    for i in range(N - 1):
        qc.cx(i, i + 1)
    for i in range(N):
        qc.rx(p[i] * p[(i + 1) % N], i)
    X = data(12)
    want = torch.as_tensor(kernels.FidelityStatevectorKernel(feature_map=qc).evaluate(X.numpy()))
    with torch.no_grad():
        torch.testing.assert_close(kernel(block_size=5).matrix(X), want, rtol=0, atol=1e-10)


def test_fidelities_are_clipped_into_the_unit_interval_whatever_the_rounding():
    # a state whose norm rounds to 1 + 4e-16, as an AVX-512 reduction gave on an Intel Xeon: its overlap with
    # itself must stay a probability (the shot kernel takes sqrt(k (1 - k)) of it)
    state = torch.tensor([[1 + 2e-16, 0.0], [0.6, 0.8]], dtype=torch.complex128)
    left, right = gram.fidelity_features(state)
    block = gram.fidelity_block(left, right)
    assert block.max() == 1.0 and block.min() >= 0
    assert (block * (1 - block)).sqrt().isfinite().all()
    angle = torch.tensor(0.3, dtype=torch.float64, requires_grad=True)  # inside [0, 1] values and gradients pass
    states = torch.stack([torch.tensor([1.0, 0.0], dtype=torch.float64), torch.stack([angle.cos(), angle.sin()])])
    k = gram.fidelity_block(*gram.fidelity_features(states.to(torch.complex128)))[0, 1]
    k.backward()
    torch.testing.assert_close(k.detach(), torch.cos(torch.tensor(0.3, dtype=torch.float64)) ** 2)
    torch.testing.assert_close(angle.grad, -torch.sin(torch.tensor(0.6, dtype=torch.float64)))
