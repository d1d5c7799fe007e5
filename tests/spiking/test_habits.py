"""snnTorch habits and the time-major seam (issue 17): each friction reproduced, then its fix checked.

snnTorch's argument names work where they mean the same or get a precise error; ``step(x_t, state)``
equals the fused forward; ``batch_first`` equals the time-major path transposed; layouts that can be
told apart are named; ``TimeDistributed`` refuses spiking layers inside it with the right composition.
"""

import pickle

import pytest
import snntorch as snn
import torch
from snntorch import surrogate as snn_surrogate
from torch import nn

from hybridai import CUBA, LIF, MembraneDecoder, RateDecoder, RateEncoder, RepeatEncoder, TimeDistributed
from hybridai.core.errors import ConfigError, HybridAIError, ShapeError
from hybridai.spiking import ATan, FastSigmoid, LatencyEncoder, SpikeCountDecoder
from hybridai.spiking.graph import lower

T, B, N = 16, 3, 5
F64 = torch.float64


def inputs(seed, dtype=F64, shape=(T, B, N)):
    g = torch.Generator().manual_seed(seed)
    return (torch.randn(*shape, generator=g) * 0.8 + 0.4).to(dtype)


def weights(seed, dtype=F64):
    g = torch.Generator().manual_seed(100 + seed)
    return torch.randn(T, B, N, generator=g).to(dtype), torch.randn(T, B, N, generator=g).to(dtype)


def close(got, want, tolerance=1e-12):
    assert got is not None and want is not None
    assert (got - want).abs().max().item() <= tolerance * max(1.0, want.abs().max().item()), (got, want)


# ---------------------------------------------------------------- snnTorch's argument names


@pytest.mark.parametrize("kind", ["LIF", "CUBA"])
@pytest.mark.parametrize("reset", ["subtract", "zero"])
@pytest.mark.parametrize("factory, constant", [(snn_surrogate.atan, 3.0), (snn_surrogate.fast_sigmoid, 10.0)])
def test_snntorch_argument_names_build_the_same_neuron_as_snntorch(kind, reset, factory, constant):
    """``LIF(beta=, spike_grad=, reset_mechanism=)`` raised TypeError; now it is snnTorch's Leaky, gradients too."""
    common = dict(threshold=0.8, spike_grad=factory(constant), reset_mechanism=reset, learn_beta=True)
    beta = torch.tensor(0.85, dtype=F64)
    if kind == "LIF":
        ours, ref = LIF(beta=beta, **common), snn.Leaky(beta=beta.clone(), **common)
    else:
        alpha = torch.tensor(0.6, dtype=F64)
        ours, ref = (
            CUBA(alpha=alpha, beta=beta, **common),
            snn.Synaptic(alpha=alpha.clone(), beta=beta.clone(), **common),
        )
    ours, ref = ours.to(F64), ref.to(F64)
    assert ours.reset == reset and ours.surrogate == (ATan if factory is snn_surrogate.atan else FastSigmoid)(constant)
    x, ref_x = inputs(0).requires_grad_(), inputs(0).requires_grad_()
    spikes = ours(x)
    state = [torch.zeros(B, N, dtype=F64)] * (1 if kind == "LIF" else 2)
    ref_spikes = []
    for x_t in ref_x.unbind(0):
        spike, *state = ref(x_t, *state)
        ref_spikes.append(spike)
    ref_spikes = torch.stack(ref_spikes)
    assert 0 < spikes.sum() < spikes.numel() and torch.equal(spikes, ref_spikes)
    w, _ = weights(0)
    (spikes * w).sum().backward()
    (ref_spikes * w).sum().backward()
    close(x.grad, ref_x.grad)
    close(ours.beta.grad, ref.beta.grad)


def test_spike_grad_takes_hybridai_surrogates_and_none_is_snntorchs_default():
    assert LIF(0.9, spike_grad=FastSigmoid(slope=7)).surrogate == FastSigmoid(slope=7)
    assert LIF(0.9, spike_grad="fast_sigmoid").surrogate == FastSigmoid()
    assert LIF(0.9, spike_grad=None).surrogate == ATan(alpha=2.0)  # snnTorch's default is atan(alpha=2)
    assert LIF(0.9, surrogate=snn_surrogate.atan(alpha=4.0)).surrogate == ATan(alpha=4.0)


@pytest.mark.parametrize(
    "build, words",
    [
        (
            lambda: LIF(0.9, spike_grad=snn_surrogate.sigmoid()),
            ["spike_grad=", "sigmoid", "hybridai calls this surrogate="],
        ),
        (lambda: CUBA(spike_grad=lambda u: (u > 0).float()), ["spike_grad=", "hybridai calls this surrogate="]),
        (lambda: LIF(0.9, reset_mechanism="none"), ["reset_mechanism='none'", "hybridai calls this reset="]),
        (lambda: LIF(0.9, reset_mechanism="soft"), ["reset_mechanism='soft'", "'subtract' or 'zero'"]),
        (lambda: LIF(0.9, init_hidden=True), ["init_hidden=True", "[T, B, ...]", "stateful=True", ".step(x_t, state)"]),
        (lambda: CUBA(init_hidden=True), ["init_hidden=True", ".step(x_t, state)"]),
        (lambda: LIF(0.9, output=True), ["output=True", "output='both'"]),
        (lambda: LIF(0.9, reset_delay=False), ["reset_delay=False", "one step after a spike"]),
        (lambda: LIF(0.9, inhibition=True), ["inhibition=True", "inhibition"]),
        (lambda: LIF(0.9, surrogate_disable=True), ["surrogate_disable=True", "torch.no_grad()"]),
        (lambda: LIF(0.9, state_quant=torch.round), ["state_quant=", "quantize"]),
        (lambda: LIF(0.9, graded_spikes_factor=2.0), ["graded_spikes_factor=2.0", "0 or 1"]),
        (lambda: LIF(0.9, learn_graded_spikes_factor=True), ["learn_graded_spikes_factor=True", "0 or 1"]),
        (lambda: LIF(0.9, reset="zero", reset_mechanism="subtract"), ["reset_mechanism='subtract'", "reset='zero'"]),
        (lambda: LIF(0.9, surrogate="fast_sigmoid", spike_grad=snn_surrogate.atan()), ["surrogate='fast_sigmoid'"]),
    ],
)
def test_snntorch_names_hybridai_does_not_reproduce_get_a_config_error_not_a_type_error(build, words):
    with pytest.raises(ConfigError) as info:
        build()
    assert all(w in str(info.value) for w in words), str(info.value)


def test_snntorch_arguments_that_restate_hybridai_behaviour_are_accepted():
    x = inputs(1, torch.float32)
    plain = LIF(0.9)(x)
    restated = LIF(
        beta=0.9,
        init_hidden=False,
        reset_delay=True,
        surrogate_disable=False,
        inhibition=False,
        state_quant=False,
        graded_spikes_factor=1.0,
        learn_graded_spikes_factor=False,
        output=False,  # snnTorch's output=False: spikes only
    )
    assert restated.output == "spikes" and torch.equal(restated(x), plain)


def test_an_unknown_keyword_lists_the_accepted_ones_and_is_still_a_type_error():
    with pytest.raises(HybridAIError) as info:
        LIF(0.9, treshold=1.0)
    message = str(info.value)
    assert isinstance(info.value, TypeError) and isinstance(info.value, ConfigError)
    assert "'treshold'" in message and "Did you mean: 'threshold'" in message
    assert all(name in message for name in ("beta", "batch_first", "spike_grad", "reset_mechanism", "recompute_steps"))


# ---------------------------------------------------------------- step(x_t, state)


def run_steps(layer, x, state=None):
    spikes, mems = [], []
    for x_t in x.unbind(0):
        spike, state = layer.step(x_t, state)
        spikes.append(spike)
        mems.append(state if torch.is_tensor(state) else state[1])
    return torch.stack(spikes), torch.stack(mems), state


def build(kind, reset, learn=True, **options):
    g = torch.Generator().manual_seed(3)
    threshold = 0.6 + torch.rand(N, generator=g, dtype=F64)
    beta = 0.5 + 0.5 * torch.rand(N, generator=g, dtype=F64)
    common = dict(threshold=threshold, reset=reset, learn_beta=learn, learn_threshold=learn, **options)
    if kind == "LIF":
        return LIF(beta, **common)
    return CUBA(0.9 * torch.rand(N, generator=g, dtype=F64), beta, learn_alpha=learn, **common)


@pytest.mark.parametrize("kind", ["LIF", "CUBA"])
@pytest.mark.parametrize("reset", ["subtract", "zero"])
@pytest.mark.parametrize("given_state", [False, True])
def test_a_loop_of_steps_equals_the_fused_forward(kind, reset, given_state):
    """A per-step API did not exist; a loop of ``step`` gives ``forward``'s numbers (bitwise) and gradients."""
    fused, stepped = build(kind, reset, output="both"), build(kind, reset)
    g = torch.Generator().manual_seed(4)
    n_states = 1 if kind == "LIF" else 2
    starts = [torch.rand(B, N, generator=g, dtype=F64) * 1.5 for _ in range(n_states)] if given_state else None
    fused_start = [s.clone().requires_grad_() for s in starts] if starts else None
    stepped_start = [s.clone().requires_grad_() for s in starts] if starts else None

    def as_state(parts):
        return None if parts is None else parts[0] if n_states == 1 else tuple(parts)

    x, x_steps = inputs(5).requires_grad_(), inputs(5).requires_grad_()
    spikes, mem = fused(x, as_state(fused_start))
    step_spikes, step_mem, final = run_steps(stepped, x_steps, as_state(stepped_start))
    assert 0 < spikes.sum() < spikes.numel()
    assert torch.equal(step_spikes, spikes) and torch.equal(step_mem, mem)
    w_spikes, w_mem = weights(5)
    ((spikes * w_spikes).sum() + (mem * w_mem).sum()).backward()
    ((step_spikes * w_spikes).sum() + (step_mem * w_mem).sum()).backward()
    close(x_steps.grad, x.grad)
    for name in ("alpha", "beta", "threshold") if kind == "CUBA" else ("beta", "threshold"):
        close(getattr(stepped, name).grad, getattr(fused, name).grad)
    for got, want in zip(stepped_start or (), fused_start or (), strict=True):
        assert want.grad.abs().sum() > 0
        close(got.grad, want.grad)
    if kind == "CUBA":  # the state is (syn, mem), and its current continues the sequence
        assert isinstance(final, tuple) and len(final) == 2 and torch.equal(final[1], mem[-1])


@pytest.mark.parametrize("kind", ["LIF", "CUBA"])
def test_steps_in_float32_are_bit_identical_and_leave_the_carried_state_alone(kind):
    layer = build(kind, "subtract", learn=False, stateful=True).float()
    x = inputs(6, torch.float32)
    spikes, mems, _ = run_steps(layer, x)
    assert layer.state is None  # step neither reads nor writes the carried state
    assert torch.equal(spikes, layer(x)) and layer.state is not None
    layer.reset_state()
    layer.output = "membrane"
    assert torch.equal(mems, layer(x))


def test_snntorch_step_call_on_forward_points_to_step():
    """``spk, mem = lif(cur, mem)`` gave advice to use RepeatEncoder; now it names ``step``."""
    lif = LIF(0.9)
    with pytest.raises(ShapeError) as info:
        lif(torch.rand(B, N), torch.zeros(B, N))
    assert "lif.step(x_t, state)" in str(info.value) and "x.shape=(3, 5)" in str(info.value)
    with pytest.raises(ShapeError, match=r"looks like ONE time step.*step\(x_t, state\)"):
        lif(torch.rand(B, 2, 4, 4), torch.zeros(B, 2, 4, 4))  # a conv-shaped step with its state


@pytest.mark.parametrize(
    "call, error, words",
    [
        (lambda: LIF(0.9).step(torch.rand(N)), ShapeError, ["x_t.shape=(5,)", "x_t.unsqueeze(0)"]),
        (lambda: LIF(0.9).step([0.5]), ShapeError, ["x_t='list'"]),
        (lambda: LIF(0.9).step(torch.ones(B, N, dtype=torch.long)), ShapeError, ["x_t.dtype=torch.int64"]),
        (lambda: LIF(0.9).step(torch.rand(B, N), torch.zeros(B, N + 1)), ShapeError, ["state shape=(3, 6)"]),
        (lambda: CUBA().step(torch.rand(B, N), torch.zeros(B, N)), ShapeError, ["tuple (syn, mem)"]),
        (lambda: LIF(0.9).step(torch.full((B, N), float("nan"))), ConfigError, ["x_t contains NaN or inf"]),
        (lambda: LIF(torch.full((4,), 0.9)).step(torch.rand(B, N)), ShapeError, ["beta has shape (4,)", "x_t"]),
    ],
)
def test_step_inputs_are_checked(call, error, words):
    with pytest.raises(error) as info:
        call()
    assert all(w in str(info.value) for w in words), str(info.value)


def test_step_under_autocast_computes_in_float32():
    layer = LIF(0.9)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        spike, mem = layer.step(torch.rand(B, N, dtype=torch.bfloat16) * 2)
    assert spike.dtype == torch.float32 and mem.dtype == torch.float32


# ---------------------------------------------------------------- batch_first


@pytest.mark.parametrize("kind", ["LIF", "CUBA"])
@pytest.mark.parametrize("output", ["spikes", "membrane", "both"])
def test_batch_first_is_the_time_major_path_transposed(kind, output):
    time_major, batch_first = build(kind, "zero", output=output), build(kind, "zero", output=output, batch_first=True)
    x = inputs(7).requires_grad_()
    x_bf = inputs(7).transpose(0, 1).contiguous().requires_grad_()
    want, got = time_major(x), batch_first(x_bf)
    want, got = (want, got) if output == "both" else ((want,), (got,))
    for a, b in zip(want, got, strict=True):
        assert b.shape == (B, T, N) and torch.equal(b, a.transpose(0, 1))
    sum(o.sum() for o in want).backward()
    sum(o.sum() for o in got).backward()
    assert torch.equal(x_bf.grad, x.grad.transpose(0, 1))
    assert "batch_first=True" in repr(batch_first) and "batch_first" not in repr(time_major)


def test_batch_first_layers_carry_and_take_a_state_of_shape_b():
    x = inputs(8, torch.float32)
    whole = LIF(0.9)(x)
    layer = LIF(0.9, batch_first=True, stateful=True)
    x_bf = x.transpose(0, 1)
    parts = [layer(x_bf[:, :7]), layer(x_bf[:, 7:])]
    assert torch.equal(torch.cat(parts, dim=1), whole.transpose(0, 1)) and layer.state.shape == (B, N)
    start = torch.rand(B, N)
    assert torch.equal(LIF(0.9, batch_first=True)(x_bf, start), LIF(0.9)(x, start).transpose(0, 1))


def test_batch_first_must_be_a_bool_and_old_pickles_load_time_major():
    with pytest.raises(ConfigError, match=r"batch_first='yes'.*True \(\[B, T, \.\.\.\] in and out\)"):
        LIF(0.9, batch_first="yes")
    layer = LIF(0.9)
    del layer.__dict__["batch_first"]  # as pickled before the argument existed
    restored = pickle.loads(pickle.dumps(layer))
    assert restored.batch_first is False and torch.equal(
        restored(inputs(9, torch.float32)), LIF(0.9)(inputs(9, torch.float32))
    )


@pytest.mark.parametrize("layer", [LIF(0.9, batch_first=True), CUBA(batch_first=True)])
def test_lowering_refuses_batch_first_layers(layer):
    """Deployments run time-major layers: a batch_first layer is refused, not re-read as 32 time steps."""
    model = nn.Sequential(nn.Linear(4, 6), layer)
    with pytest.raises(ConfigError, match=r"model\[1\]\.batch_first=True.*time-major \[T, B, \.\.\.\]"):
        lower(model, target="loihi", accepts=("dense", "lif", "cuba"), supported="Linear, LIF, CUBA")
    layer.batch_first = False
    assert len(lower(model, target="loihi", accepts=("dense", "lif", "cuba"), supported="x")) == 2


# ---------------------------------------------------------------- layouts that can be told apart


def test_a_batch_first_tensor_with_a_state_is_named_not_read_as_time_steps():
    """``[B, T, N]`` with a state ``[B, N]``: the state's batch size tells the layouts apart."""
    x_bf = inputs(10, torch.float32).transpose(0, 1)  # [B, T, N] = (3, 16, 5)
    with pytest.raises(ShapeError, match=r"looks batch-first \[B, T, \.\.\.\].*batch_first=True or pass x\.transpose"):
        LIF(0.9)(x_bf, torch.zeros(B, N))
    with pytest.raises(ShapeError, match=r"looks time-major \[T, B, \.\.\.\].*pass x\.transpose\(0, 1\)"):
        LIF(0.9, batch_first=True)(inputs(10, torch.float32), torch.zeros(B, N))
    carried = CUBA(stateful=True)
    carried(inputs(10, torch.float32))  # carries (syn, mem) of shape [B, N]
    with pytest.raises(ShapeError, match=r"carried state.*looks batch-first"):
        carried(x_bf)


def test_a_time_last_tensor_is_named_where_per_neuron_parameters_tell():
    layer = LIF(torch.full((N,), 0.9))
    with pytest.raises(
        ShapeError, match=r"beta has shape \(5,\).*reads x as \[T, B, neurons\.\.\.\].*movedim\(-1, 0\)"
    ):
        layer(inputs(11, torch.float32).permute(1, 2, 0))  # [B, N, T]


def test_the_layout_rule_is_documented_on_the_layers():
    for cls in (LIF, CUBA):
        assert "batch_first" in cls.__doc__ and ".step(x_t, state)" in cls.__doc__
    assert "[T, B, ...]" in LIF.__doc__ and "NOT detected" in LIF.__doc__


# ---------------------------------------------------------------- TimeDistributed and the adapters


def test_time_distributed_refuses_a_spiking_layer_inside_with_the_right_composition():
    """It failed at forward with advice to use RepeatEncoder; now it says why and how, when built."""
    with pytest.raises(ConfigError) as info:
        TimeDistributed(nn.Sequential(nn.Linear(8, 4), LIF(0.9)))
    message = str(info.value)
    assert "module[1]='LIF'" in message and "zero membrane at every step" in message
    assert "nn.Sequential(TimeDistributed(module[0]), module[1])" in message and "RepeatEncoder" not in message
    # the composition it names computes what was meant
    linear = nn.Linear(8, 4)
    x = torch.rand(T, B, 8) * 2
    composed = nn.Sequential(TimeDistributed(linear), LIF(0.9))(x)
    assert torch.allclose(composed, nn.Sequential(linear, LIF(0.9))(x)) and composed.shape == (T, B, 4)


@pytest.mark.parametrize(
    "module, words",
    [
        (LIF(0.9), ["module='LIF'", "zero membrane"]),
        (
            nn.Sequential(nn.Flatten(), nn.Sequential(CUBA())),
            ["module[1][0]='CUBA'", "TimeDistributed(nn.Linear(8, 4))"],
        ),
        (RateDecoder(), ["module='RateDecoder'", "changes the layout itself"]),
        (nn.Sequential(nn.Linear(4, 4), RepeatEncoder(5)), ["module[1]='RepeatEncoder'", "changes the layout"]),
    ],
)
def test_time_distributed_refuses_every_spiking_module_inside(module, words):
    with pytest.raises(ConfigError) as info:
        TimeDistributed(module)
    assert all(w in str(info.value) for w in words), str(info.value)


def test_adapters_say_which_way_they_convert():
    for decoder in (SpikeCountDecoder, RateDecoder, MembraneDecoder):
        assert "adapter from the spiking, time-major domain to ``[B, F]``" in decoder.__doc__
    for encoder in (RateEncoder, RepeatEncoder):
        assert "adapter from ``[B, F]`` layers" in encoder.__doc__
    assert "[T, B, ...]" in LatencyEncoder.__doc__
    assert "never inside it" in TimeDistributed.__doc__ or "must not contain a spiking layer" in TimeDistributed.__doc__
