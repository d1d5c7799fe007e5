"""The elementwise and gather gate kernels equal the matrix-product application to 1e-12."""

import numpy as np
import pytest
import torch

from hybridai.quantum.statevector.elementwise import apply_permutation, apply_single, single_gradient
from hybridai.quantum.statevector.gates import constant_gate
from hybridai.quantum.statevector.primitives import apply_matrix

N, B = 5, 3


def random_state(seed):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(B, 2**N, dtype=torch.complex128, generator=g)


@pytest.mark.parametrize("wire", range(N))
@pytest.mark.parametrize("batched", [False, True])
def test_apply_single_equals_apply_matrix(wire, batched):
    psi = random_state(wire)
    m = torch.randn(*((B,) if batched else ()), 2, 2, dtype=torch.complex128)
    assert (apply_single(psi, N, wire, m) - apply_matrix(psi, N, (wire,), m)).abs().max() < 1e-12


@pytest.mark.parametrize("batched", [False, True])
def test_single_gradient_equals_autograd(batched):
    psi, lam = random_state(1), random_state(2)
    m = torch.randn(*((B,) if batched else ()), 2, 2, dtype=torch.complex128, requires_grad=True)
    (want,) = torch.autograd.grad(apply_matrix(psi, N, (2,), m), m, lam)
    assert (single_gradient(psi, lam, N, 2, m.shape) - want).abs().max() < 1e-12


@pytest.mark.parametrize("name, wires", [("CNOT", (3, 1)), ("CZ", (0, 4)), ("S", (2,)), ("Toffoli", (4, 0, 2))])
@pytest.mark.parametrize("inverse", [False, True])
def test_apply_permutation_equals_the_dense_gate(name, wires, inverse):
    import pennylane as qml

    op = getattr(qml, name)(wires=list(range(len(wires))))
    kind, const = constant_gate(op)
    assert kind == "mono"
    dense = torch.as_tensor(np.asarray(op.matrix()), dtype=torch.complex128)
    psi = random_state(3)
    want = apply_matrix(psi, N, wires, dense.conj().T if inverse else dense)
    assert (apply_permutation(psi, N, wires, const, inverse) - want).abs().max() < 1e-12
