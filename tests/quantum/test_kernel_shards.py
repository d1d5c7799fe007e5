"""Sharded kernel matrices in one process: the shares add up to kernel(X), the kernel methods on them equal the
single-matrix ones, and bad arguments are refused by name (tests/training/test_distributed.py runs 2 ranks)."""

import numpy as np
import pennylane as qml
import pytest
import torch

import hybridai
from hybridai.core.errors import ConfigError, ShapeError
from hybridai.quantum.kernels.sharded import ShardedKernelRidge, gram_shards, sharded_alignment


def feature_map(x, weights):
    qml.IQPEmbedding(x, wires=range(3))
    qml.StronglyEntanglingLayers(weights, wires=range(3))


def kernel(kind: str) -> hybridai.QuantumKernel:
    extra = {"gamma": 0.7} if kind == "projected" else {}
    with torch.random.fork_rng():
        torch.manual_seed(0)
        return hybridai.QuantumKernel(feature_map, 3, {"weights": (1, 3, 3)}, kind=kind, **extra)


def data(n: int, seed: int) -> torch.Tensor:
    return torch.rand(n, 3, dtype=torch.float64, generator=torch.Generator().manual_seed(seed))


@pytest.mark.parametrize("kind", ["fidelity", "projected"])
def test_the_shares_add_up_to_the_kernel_matrix_and_multiply_as_it_does(kind):
    k, X, Y = kernel(kind), data(23, 0), data(9, 1)
    v = torch.randn(23, 2, dtype=torch.float64, generator=torch.Generator().manual_seed(2))
    with torch.no_grad():
        K, KY = k(X), k(X, Y)
    shards = gram_shards(k, X)
    torch.testing.assert_close(shards.gather(), K, atol=1e-12, rtol=0)
    torch.testing.assert_close(gram_shards(k, X, Y).gather(), KY, atol=1e-12, rtol=0)
    torch.testing.assert_close(shards.matvec(v), K @ v, atol=1e-12, rtol=0)
    torch.testing.assert_close(shards.squared_norm(), K.square().sum(), atol=1e-10, rtol=0)
    # one process owns both chunks: 23 rows as 11 + 12, each with its entries on and right of the diagonal
    assert shards.nbytes == (11 * 23 + 12 * 12) * 8


@pytest.mark.parametrize("kind", ["fidelity", "projected"])
def test_alignment_and_ridge_equal_the_whole_matrix_methods(kind):
    k, X, Y = kernel(kind), data(30, 3), data(7, 4)
    y = torch.sin(3 * X.sum(1))
    with torch.no_grad():
        K = k(X)
    for centered in (False, True):
        expected = hybridai.target_alignment(K, y, centered=centered)
        torch.testing.assert_close(sharded_alignment(gram_shards(k, X), y, centered=centered), expected)
    ridge = ShardedKernelRidge(k, alpha=0.05).fit(X, torch.stack([y, -y], 1))
    reference = hybridai.QuantumKernelRidge(k, alpha=0.05).fit(X.numpy(), np.stack([y, -y], 1))
    np.testing.assert_allclose(ridge.dual_coef_.numpy(), reference.dual_coef_, atol=1e-8, rtol=0)
    np.testing.assert_allclose(ridge.predict(Y).numpy(), reference.predict(Y.numpy()), atol=1e-8, rtol=0)
    assert 0 < ridge.iterations_ < 60


def test_bad_arguments_are_refused_by_name():
    k, X = kernel("fidelity"), data(12, 5)
    with pytest.raises(ConfigError, match="alpha=0 is not valid"):
        ShardedKernelRidge(k, alpha=0)
    with pytest.raises(ConfigError, match="tol=1 is not valid"):
        ShardedKernelRidge(k, tol=1)
    with pytest.raises(ConfigError, match="max_iter=0 is not valid"):
        ShardedKernelRidge(k, max_iter=0)
    with pytest.raises(ConfigError, match="did not reach tol=1e-12 in max_iter=2 iterations"):
        ShardedKernelRidge(k, alpha=1e-3, max_iter=2).fit(X, torch.sin(X.sum(1)))
    assert ShardedKernelRidge(k, alpha=1e-3).fit(X, torch.sin(X.sum(1))).iterations_ > 2  # the route: max_iter
    with pytest.raises(ShapeError, match="y.shape='str'"):
        ShardedKernelRidge(k).fit(X, "labels")
    with pytest.raises(ConfigError, match="predict before fit"):
        ShardedKernelRidge(k).predict(X)
    with pytest.raises(ShapeError, match="gram="):
        sharded_alignment(gram_shards(k, X, data(3, 6)), torch.ones(12))
    with pytest.raises(ShapeError, match=r"y.shape=\(5,\)"):
        sharded_alignment(gram_shards(k, X), torch.ones(5))
    with pytest.raises(ConfigError, match="kernel="):
        gram_shards(object(), X)
    with torch.random.fork_rng():
        torch.manual_seed(0)  # the weights of kernel("fidelity")
        uncompute = hybridai.QuantumKernel(feature_map, 3, {"weights": (1, 3, 3)}, method="compute-uncompute")
    with pytest.raises(ConfigError, match="kernel.method='compute-uncompute'"):
        gram_shards(uncompute, X)
    with torch.no_grad():  # the route the refusal names: kernel(X, Y), equal to the statevector kernel
        torch.testing.assert_close(uncompute(X[:4]), k(X[:4]), atol=1e-10, rtol=0)
