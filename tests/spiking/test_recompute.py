"""Recomputation in backward of LIF and CUBA (``recompute_steps=K``): same numbers, less memory, O(T) backward."""

import pytest
import torch
from torch import nn
from torch.profiler import ProfilerActivity, profile

from hybridai import CUBA, LIF, RepeatEncoder
from hybridai.core.errors import ConfigError

from .test_neurons import backward_work

T, B, N = 23, 3, 6  # 23 is prime: no K below it divides T


def make(kind, reset, output, chunk, dtype=torch.float64):
    g = torch.Generator().manual_seed(3)
    common = dict(
        threshold=0.5 + torch.rand(N, generator=g),
        reset=reset,
        output=output,
        learn_beta=True,
        learn_threshold=True,
        recompute_steps=chunk,
    )
    beta = 0.5 + 0.5 * torch.rand(N, generator=g)
    if kind == "lif":
        return LIF(beta, **common).to(dtype)
    return CUBA(torch.rand(N, generator=g), beta, learn_alpha=True, **common).to(dtype)


def run(layer, x, state, weights):
    """Outputs and the gradients of a weighted loss w.r.t. x, the initial state and every parameter."""
    x = x.clone().requires_grad_()
    state = tuple(s.clone().requires_grad_() for s in state)
    out = layer(x, state=state[0] if len(state) == 1 else state)
    outs = out if isinstance(out, tuple) else (out,)
    loss = sum((o * w).sum() for o, w in zip(outs, weights, strict=False))
    grads = torch.autograd.grad(loss, [x, *state, *layer.parameters()])
    return outs, grads


@pytest.mark.parametrize("kind", ["lif", "cuba"])
@pytest.mark.parametrize("reset", ["subtract", "zero"])
@pytest.mark.parametrize("output", ["spikes", "both"])
@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
def test_outputs_and_gradients_are_bit_identical(kind, reset, output, dtype):
    g = torch.Generator().manual_seed(5)
    x = (torch.randn(T, B, N, generator=g) * 1.5 + 0.4).to(dtype)
    state = tuple(torch.randn(B, N, generator=g).to(dtype) for _ in range(1 if kind == "lif" else 2))
    weights = [torch.randn(T, B, N, generator=g).to(dtype) for _ in range(2)]
    reference_outs, reference_grads = run(make(kind, reset, output, None, dtype), x, state, weights)
    assert reference_outs[0].sum() > 10  # spikes happen, so resets and surrogates are exercised
    for chunk in (1, 4, 7, T, 100):  # K = 4 and 7 leave a shorter last chunk; K >= T is one chunk
        outs, grads = run(make(kind, reset, output, chunk, dtype), x, state, weights)
        assert all(torch.equal(a, b) for a, b in zip(outs, reference_outs, strict=True)), chunk
        assert len(grads) == len(reference_grads) == 1 + len(state) + (3 if kind == "cuba" else 2)
        for got, want in zip(grads, reference_grads, strict=True):
            assert torch.equal(got, want), (chunk, (got - want).abs().max())


def test_carried_state_continues_across_recomputed_calls():
    x = torch.randn(40, 2, 5) + 0.5
    plain, chunked = CUBA(0.6, 0.9, stateful=True), CUBA(0.6, 0.9, stateful=True, recompute_steps=6)
    for part in x.split(17):
        assert torch.equal(plain(part), chunked(part.requires_grad_()))
    assert all(torch.equal(a, b) for a, b in zip(plain.state, chunked.state, strict=True))


def saved_bytes(make_output):
    """Bytes of the distinct storages autograd keeps for backward."""
    storages = {}

    def pack(tensor):
        storages[tensor.untyped_storage().data_ptr()] = tensor.untyped_storage().nbytes()
        return tensor

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda tensor: tensor):
        out = make_output()
    out.sum().backward()
    return sum(storages.values())


def test_saved_tensors_shrink_for_a_long_sequence():
    torch.manual_seed(0)
    steps, width = 1000, 64
    linear, features = nn.Linear(16, width), torch.rand(8, 16)
    trace_bytes = steps * 8 * width * 4  # one float32 [T, B, N] trace

    def repeated(layer):  # static input current: the layer's input is a stride-0 view, tiny in memory
        return saved_bytes(lambda: layer(RepeatEncoder(steps)(linear(features))))

    plain, chunked = repeated(LIF(0.9)), repeated(LIF(0.9, recompute_steps=50))
    assert plain >= trace_bytes  # the membrane trace
    assert chunked < plain / 20  # 20 chunk-boundary states and the input view
    # CUBA with a learnt alpha saves two traces; recomputing, it keeps only its input
    current = torch.rand(steps, 8, width)
    plain = saved_bytes(lambda: CUBA(0.8, 0.9, learn_alpha=True)(current))
    chunked = saved_bytes(lambda: CUBA(0.8, 0.9, learn_alpha=True, recompute_steps=50)(current))
    assert plain >= 2 * trace_bytes and chunked < 1.1 * trace_bytes


def peak_bytes(step):
    """Peak bytes held by torch's CPU allocator during ``step()``, above what was held before."""
    with profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof:
        step()
    changes = sorted((e.time_range.start, e.self_cpu_memory_usage) for e in prof.events() if e.self_cpu_memory_usage)
    held = peak = 0
    for _, change in changes:
        held += change
        peak = max(peak, held)
    return peak


def test_peak_memory_drops_for_linear_then_lif():
    torch.manual_seed(0)
    linear, x = nn.Linear(32, 256), torch.rand(100, 16, 32)
    trace_bytes = 100 * 16 * 256 * 4
    peaks = {}
    for chunk in (None, 10):
        layer = LIF(0.9, recompute_steps=chunk)
        peaks[chunk] = peak_bytes(lambda layer=layer: layer(linear(x)).sum().backward())
    # without: Linear output + spikes + membrane trace; with: Linear output + spikes (+ small buffers)
    assert peaks[None] >= 3 * trace_bytes
    assert peaks[10] <= peaks[None] - 0.6 * trace_bytes


@pytest.mark.parametrize("layer", [LIF(0.9, reset="zero", recompute_steps=4), CUBA(0.5, 0.9, recompute_steps=4)])
def test_recomputed_backward_stays_linear_in_time(layer):
    per_step = [backward_work(layer, steps) for steps in (16, 64)]
    assert per_step[1] <= per_step[0] * 1.05  # constant work per neuron-step (the recomputation included)


@pytest.mark.parametrize("value", [0, -3, 2.5, True, "10"])
def test_bad_recompute_steps_name_the_argument(value):
    for cls in (LIF, CUBA):
        with pytest.raises(ConfigError) as info:
            cls(recompute_steps=value)
        assert f"recompute_steps={value!r}" in str(info.value) and "positive int" in str(info.value)


@pytest.mark.parametrize("cls", [LIF, CUBA])
def test_the_old_checkpoint_steps_name_is_gone(cls):
    with pytest.raises(TypeError, match="checkpoint_steps"):
        cls(checkpoint_steps=4)


def test_inference_and_repr():
    layer = LIF(0.9, recompute_steps=8)
    assert "recompute_steps=8" in repr(layer) and "recompute_steps" not in repr(LIF(0.9))
    x = torch.randn(30, 2, 4) + 0.5
    with torch.no_grad():
        assert torch.equal(layer(x), LIF(0.9)(x))
