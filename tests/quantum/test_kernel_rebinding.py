"""Re-binding in QuantumKernel: by default the feature map is recorded on every call (only what its structure
decides is reused); with ``rebind="unsafe"`` it is recorded only until two recordings per structure key agree, then
re-bound with new inputs and parameters. On these feature maps matrices and gradients equal recording every call
(``rebind=False``) in both modes."""

from __future__ import annotations

import copy

import pennylane as qml
import pytest
import torch

from hybridai.core.errors import HybridAIError
from hybridai.quantum.kernels.quantum_kernel import IQPFeatureMap, QuantumKernel


def counted(feature_map):
    calls = []

    def counting(x, **params):
        calls.append(tuple(x.shape))
        return feature_map(x, **params)

    return counting, calls


def trainable_map(x, w):
    qml.AngleEmbedding(x, wires=range(3))
    qml.RZ(0.3, wires=0)  # takes no argument: the template keeps it and copies it into every tape
    qml.BasicEntanglerLayers(w, wires=range(3))
    qml.AngleEmbedding(x, wires=range(3), rotation="Y")  # x uploaded twice


def width_map(x, w):
    qml.AngleEmbedding(x, wires=range(x.shape[-1]))  # structure from the input width
    qml.BasicEntanglerLayers(w, wires=range(3))


def branching_map(x, w):
    if x[..., 0].sum() > 0:  # reads a value: another circuit for other values
        qml.Hadamard(1)
    qml.AngleEmbedding(x, wires=range(3))
    qml.BasicEntanglerLayers(w, wires=range(3))


MODES = [True, "unsafe"]


def pair(feature_map, shapes=None, mode=True, **options):
    """The same kernel twice (same parameters): re-binding in ``mode`` (feature map calls counted), and off."""
    shapes = {"w": (2, 3)} if shapes is None else shapes
    counting, calls = counted(feature_map)
    torch.manual_seed(0)
    fast = QuantumKernel(counting, 3, shapes, rebind=mode, **options).double()
    slow = QuantumKernel(feature_map, 3, shapes, rebind=False, **options).double()
    slow.load_state_dict(fast.state_dict())
    return fast, slow, calls


def samples(gen, n=5, width=3, low=-1.0):
    return low + (1.0 - low) * torch.rand(n, width, dtype=torch.float64, generator=gen)


@pytest.mark.parametrize("mode", MODES)
def test_alignment_training_rebound_equals_recording_every_call(mode):
    fast, slow, calls = pair(trainable_map, mode=mode)
    optimisers = [torch.optim.SGD(k.parameters(), lr=0.2) for k in (fast, slow)]
    gen = torch.Generator().manual_seed(1)
    y = torch.tensor([1.0, -1.0, 1.0, 1.0, -1.0], dtype=torch.float64)
    for _ in range(6):
        X = samples(gen)
        assert torch.equal(fast.matrix(X), slow.matrix(X))
        for kernel, opt in zip((fast, slow), optimisers, strict=True):
            opt.zero_grad()
            (-kernel.alignment(X, y)).backward()
            opt.step()
        assert fast.w.grad.abs().sum() > 0
        assert torch.equal(fast.w.grad, slow.w.grad)
    assert torch.equal(fast.w, slow.w)
    # 12 calls of one shape; unsafe: recorded twice (compared), re-bound ten times
    assert calls == [(5, 3)] * (2 if mode == "unsafe" else 12)


@pytest.mark.parametrize("mode", MODES)
def test_input_gradients_and_cross_matrix_equal(mode):
    fast, slow, calls = pair(trainable_map, mode=mode)
    gen = torch.Generator().manual_seed(2)
    for _ in range(4):
        X, Y = samples(gen, 4), samples(gen, 3)
        grads = []
        for kernel in (fast, slow):
            x = X.clone().requires_grad_()
            K = kernel.matrix(x, Y)
            (K * torch.arange(12.0, dtype=torch.float64).reshape(4, 3)).sum().backward()
            grads.append((K, x.grad))
        assert torch.equal(grads[0][0], grads[1][0]) and torch.equal(grads[0][1], grads[1][1])
    assert calls == [(7, 3)] * (2 if mode == "unsafe" else 4)  # X and Y go through one [7, 3] batch


@pytest.mark.parametrize("mode", MODES)
def test_structure_from_input_shape_recorded_per_shape(mode):
    fast, slow, calls = pair(width_map, mode=mode, n_features=None)
    gen = torch.Generator().manual_seed(3)
    for _ in range(4):
        for width in (2, 3):
            X = samples(gen, width=width)
            assert torch.equal(fast.matrix(X), slow.matrix(X))
    per_shape = 2 if mode == "unsafe" else 4
    assert sorted(calls) == [(5, 2)] * per_shape + [(5, 3)] * per_shape


@pytest.mark.parametrize(
    "feature_map",
    [branching_map, IQPFeatureMap(3)],  # a branch on a value; parameters sliced from x (computed)
    ids=["value-branch", "computed-parameters"],
)
@pytest.mark.parametrize("mode", MODES)
def test_feature_map_that_cannot_be_rebound_is_recorded_every_call(feature_map, mode):
    shapes = {"w": (2, 3)} if feature_map is branching_map else {}
    fast, slow, calls = pair(feature_map, shapes, mode=mode)
    gen = torch.Generator().manual_seed(4)
    for _ in range(5):
        X = samples(gen)
        assert torch.equal(fast.matrix(X), slow.matrix(X))
    assert len(calls) == 5


@pytest.mark.parametrize("mode", MODES)
def test_compute_uncompute_equal_with_and_without_rebind(mode):
    fast, slow, calls = pair(trainable_map, mode=mode, method="compute-uncompute")
    gen = torch.Generator().manual_seed(5)
    for _ in range(3):
        X, Y = samples(gen, 4), samples(gen, 2)
        for args in ((X,), (X, Y)):
            Ks = [k.matrix(*args) for k in (fast, slow)]
            assert torch.equal(Ks[0], Ks[1])
            grads = torch.autograd.grad(Ks[0].sum(), fast.w), torch.autograd.grad(Ks[1].sum(), slow.w)
            assert torch.equal(grads[0][0], grads[1][0])
    # pairs [6, 3] of the square matrix and [8, 3] of X against Y, both sides of each pair recorded: unsafe, two
    # recordings each, then re-bound; default, every one of the 12
    assert sorted(set(calls)) == [(6, 3), (8, 3)] and len(calls) == (4 if mode == "unsafe" else 12)


@pytest.mark.parametrize("mode", MODES)
def test_operations_are_new_objects_every_call(mode):
    kernel = QuantumKernel(trainable_map, 3, {"w": (2, 3)}, rebind=mode).double()
    X = samples(torch.Generator().manual_seed(6))
    calls = [kernel.operations(X) for _ in range(4)]  # unsafe: recorded, recorded, re-bound, re-bound
    ids = [id(op) for ops in calls for op in ops]
    assert len(ids) == len(set(ids)) == 4 * 4
    calls[0][1].data = (1.0,)  # changing a recorded or a re-bound operation changes no later one
    calls[2][0].data = (torch.zeros_like(X),)
    later = kernel.operations(X)
    assert later[1].data == (0.3,) and later[0].data[0] is X


def test_rebind_must_be_a_bool():
    with pytest.raises(HybridAIError, match="rebind"):
        QuantumKernel(trainable_map, 3, {"w": (2, 3)}, rebind="yes")


@pytest.mark.parametrize("mode", MODES)
def test_deepcopy_starts_without_templates(mode):
    kernel, _, calls = pair(trainable_map, mode=mode)
    X = samples(torch.Generator().manual_seed(7))
    for _ in range(3):
        expected = kernel.matrix(X)
    assert len(calls) == (2 if mode == "unsafe" else 3)
    assert kernel._rebinding._seen
    twin = copy.deepcopy(kernel)
    assert not twin._rebinding._seen  # a cache: not copied
    for _ in range(3):
        assert torch.equal(twin.matrix(X), expected)
    # unsafe: the copy recorded twice of its own; the original still re-binds
    assert len(calls) == (4 if mode == "unsafe" else 6)
    assert torch.equal(kernel.matrix(X), expected) and len(calls) == (4 if mode == "unsafe" else 7)
