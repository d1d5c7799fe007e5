"""Indexing the batch axis inside a circuit (``qml.RY(inputs[i], wires=i)``, a per-sample habit) is refused by
name while recording: before, it raised a raw torch error when B differed from the qubit count and gave silently
wrong values when they were equal. Feature indexing (``inputs[..., i]``, ``inputs[:, i]``) is untouched."""

from __future__ import annotations

import pennylane as qml
import pytest
import torch

from hybridai import QuantumKernel, QuantumLayer
from hybridai.core.errors import ShapeError

N = 3


def rows_as_features(inputs, w):
    for i in range(N):
        qml.RY(inputs[i], wires=i)  # the habit: sample i, not feature i
    qml.RX(w[0], wires=0)
    return [qml.expval(qml.PauliZ(i)) for i in range(N)]


def features(inputs, w):
    for i in range(N):
        qml.RY(inputs[..., i], wires=i)
        qml.RZ(inputs[:, i] * w[0], wires=i)
    return [qml.expval(qml.PauliZ(i)) for i in range(N)]


@pytest.mark.parametrize("batch", [N, 8, 1])  # equal to the qubit count (silently wrong before), larger, one row
def test_indexing_the_batch_axis_is_refused_by_name(batch):
    layer = QuantumLayer(rows_as_features, N, {"w": 1})
    with pytest.raises(ShapeError, match=rf"qfunc indexed inputs\[0\].*\[{batch}, {N}\].*inputs\[\.\.\., i\]"):
        layer(torch.rand(batch, N))


@pytest.mark.parametrize(
    ("index", "shown"), [(lambda x: x[1, 0], r"x\[1, 0\]"), (lambda x: x[torch.tensor(2)], r"x\[2\]")]
)
def test_kernel_feature_maps_are_watched_too(index, shown):
    def feature_map(x):
        qml.RY(index(x), wires=0)

    with pytest.raises(ShapeError, match=rf"feature_map indexed {shown}, which selects samples"):
        QuantumKernel(feature_map, 1).matrix(torch.rand(3, 2))


def test_iterating_over_the_batch_is_refused():
    def feature_map(x):
        for i, row in enumerate(x):
            qml.RY(row[0], wires=i)

    with pytest.raises(ShapeError, match="feature_map iterated over x"):
        QuantumKernel(feature_map, 3).matrix(torch.rand(3, 2))


def test_feature_indexing_is_untouched_and_equals_a_per_sample_qnode():
    layer = QuantumLayer(features, N, {"w": 1}).double()
    x = torch.rand(N, N, dtype=torch.float64)  # B == F == n_qubits: where the habit went unseen
    qnode = qml.QNode(features, qml.device("default.qubit", wires=N), interface="torch")
    want = torch.stack([torch.stack(qnode(row.unsqueeze(0), layer.w)).reshape(-1) for row in x])
    torch.testing.assert_close(layer(x), want, rtol=0, atol=1e-12)
    torch.testing.assert_close(layer(x[0]), want[0], rtol=0, atol=1e-12)  # one row [F]: recorded as [1, F]
