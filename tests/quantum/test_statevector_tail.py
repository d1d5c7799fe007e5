"""The statevector plan's shortcuts for the last steps and the product state: a trailing permutation taken into
the Z-vectors of diagonal measurements, and the row-wise Kronecker product with its own backward."""

import pennylane as qml
import pytest
import torch

from hybridai.quantum.statevector.plan import Plan
from hybridai.quantum.statevector.primitives import outer_rows
from tests.quantum.test_statevector import check


def _ending(name: str, n: int) -> None:
    if name == "cnot_ring":
        for i in range(n):
            qml.CNOT(wires=[i, (i + 1) % n])
    elif name == "phases":  # constant gates with phases: a permutation with phases, or phases alone
        qml.CZ(wires=[0, 1])
        qml.S(wires=2)
        qml.PauliY(wires=1)
    elif name == "swap_toffoli":
        qml.SWAP(wires=[0, n - 1])
        qml.Toffoli(wires=[1, 2, 0])
    elif name == "diagonal_last":  # a diagonal gate with a parameter in the chain: no shortcut
        qml.CNOT(wires=[0, 1])
        qml.CRZ(0.7, wires=[1, 2])


@pytest.mark.parametrize("ending", ["cnot_ring", "phases", "swap_toffoli", "diagonal_last"])
@pytest.mark.parametrize("batch", [1, 5])
def test_a_trailing_permutation_goes_into_the_z_vectors(ending, batch):
    n = 5  # not fused into one unitary (4 qubits are, whatever the batch): the last steps run on their own

    def circuit(inputs, weights):
        qml.AngleEmbedding(inputs, wires=range(n))
        qml.StronglyEntanglingLayers(weights, wires=range(n))
        _ending(ending, n)
        return [
            qml.expval(qml.PauliZ(0)),
            qml.expval(qml.PauliZ(1) @ qml.PauliZ(3)),
            qml.expval(0.5 * qml.PauliZ(2) - 1.5 * qml.PauliZ(0) @ qml.PauliZ(1)),
        ]

    used = []
    original = Plan.run_to_tail

    def spy(self, steps, b):
        used.append(self.tail)
        return original(self, steps, b)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(Plan, "run_to_tail", spy)
        check(circuit, n, {"weights": (2, n, 3)}, batch=batch)
    assert bool(used) == (ending != "diagonal_last")


@pytest.mark.parametrize("measure", ["pauli_x", "probs", "var"])
def test_measurements_that_need_the_state_take_the_whole_plan(measure):
    n = 3

    def circuit(inputs, weights):
        qml.AngleEmbedding(inputs, wires=range(n))
        qml.StronglyEntanglingLayers(weights, wires=range(n))
        qml.CNOT(wires=[0, 2])
        if measure == "pauli_x":
            return [qml.expval(qml.PauliZ(0)), qml.expval(qml.PauliX(1))]
        if measure == "probs":
            return qml.probs(wires=[0, 2])
        return [qml.var(qml.PauliZ(1))]

    called = []
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(Plan, "run_to_tail", lambda *a: called.append(a))
        check(circuit, n, {"weights": (2, n, 3)}, batch=4)
    assert not called


@pytest.mark.parametrize(("rows_a", "rows_b"), [(3, 3), (1, 3), (3, 1), (1, 1)])
def test_outer_rows_matches_autograd_and_differentiates_twice(rows_a, rows_b):
    torch.manual_seed(0)
    a = torch.randn(rows_a, 4, dtype=torch.complex128, requires_grad=True)
    b = torch.randn(rows_b, 2, dtype=torch.complex128, requires_grad=True)
    want = (a.unsqueeze(-1) * b.unsqueeze(-2)).flatten(1)
    torch.testing.assert_close(outer_rows(a, b), want, rtol=0, atol=0)
    assert torch.autograd.gradcheck(outer_rows, (a, b))
    assert torch.autograd.gradgradcheck(outer_rows, (a, b))


def test_outer_rows_takes_a_gradient_laid_out_by_columns():
    """A gradient ``[2^n, B]``-transposed (as a permutation into the rotating layers sends it back) gives the same
    result as a contiguous one."""
    torch.manual_seed(1)
    a = torch.randn(5, 8, dtype=torch.complex128, requires_grad=True)
    b = torch.randn(5, 4, dtype=torch.complex128, requires_grad=True)
    grad = torch.randn(32, 5, dtype=torch.complex128)
    got = torch.autograd.grad(outer_rows(a, b), (a, b), grad.T)
    want = torch.autograd.grad(outer_rows(a, b), (a, b), grad.T.contiguous())
    for g, w in zip(got, want, strict=True):
        torch.testing.assert_close(g, w, rtol=0, atol=1e-14)


@pytest.mark.parametrize("n", [9, 12])
def test_registers_of_three_product_groups_match_default_qubit(n):
    def circuit(inputs, weights):
        qml.AngleEmbedding(inputs, wires=range(n))
        qml.StronglyEntanglingLayers(weights, wires=range(n))
        return [qml.expval(qml.PauliZ(i)) for i in range(n)]

    check(circuit, n, {"weights": (3, n, 3)}, batch=3)
