"""LIF and CUBA against snnTorch's Leaky and Synaptic (the oracle): spikes exact, gradients to 1e-6."""

import pickle

import pytest
import snntorch as snn
import torch
from snntorch import surrogate as snn_surrogate
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_flatten

import hybridai
from hybridai import CUBA, LIF
from hybridai.core.errors import ConfigError, HybridAIError, ShapeError
from hybridai.spiking import ATan, FastSigmoid

T, B, N = 24, 3, 10


def snn_spike_grad(name, **constants):
    return {"atan": snn_surrogate.atan, "fast_sigmoid": snn_surrogate.fast_sigmoid}[name](**constants)


def random_parameters(seed, per_neuron, dtype):
    g = torch.Generator().manual_seed(seed)
    shape = (N,) if per_neuron else ()
    return {
        "alpha": (torch.rand(shape, generator=g) * 0.9).to(dtype),
        "beta": (0.5 + 0.5 * torch.rand(shape, generator=g)).to(dtype),
        "threshold": (0.5 + torch.rand(shape, generator=g)).to(dtype),
        "x": (torch.randn(T, B, N, generator=g) * 0.8 + 0.3).to(dtype),
        "w_spikes": torch.randn(T, B, N, generator=g).to(dtype),
        "w_mem": torch.randn(T, B, N, generator=g).to(dtype),
    }


def run_snntorch(kind, params, reset, surrogate, learn, dtype, state=None):
    """snnTorch stepping over x.unbind(0): returns spikes, membrane trace, module, x leaf."""
    common = dict(
        threshold=params["threshold"].clone(),
        spike_grad=snn_spike_grad(surrogate),
        learn_beta=learn,
        learn_threshold=learn,
        reset_mechanism=reset,
    )
    if kind == "LIF":
        ref = snn.Leaky(beta=params["beta"].clone(), **common)
    else:
        ref = snn.Synaptic(alpha=params["alpha"].clone(), beta=params["beta"].clone(), learn_alpha=learn, **common)
    ref = ref.to(dtype)
    x = params["x"].clone().requires_grad_()
    mem = torch.zeros(B, N, dtype=dtype) if state is None else state[-1]
    syn = torch.zeros(B, N, dtype=dtype) if state is None else state[0]
    spikes, mems = [], []
    for x_t in x.unbind(0):
        if kind == "LIF":
            s, mem = ref(x_t, mem)
        else:
            s, syn, mem = ref(x_t, syn, mem)
        spikes.append(s)
        mems.append(mem)
    return torch.stack(spikes).to(dtype), torch.stack(mems), ref, x


def make_ours(kind, params, reset, surrogate, learn, **options):
    common = dict(
        threshold=params["threshold"],
        reset=reset,
        surrogate=surrogate,
        learn_beta=learn,
        learn_threshold=learn,
        **options,
    )
    if kind == "LIF":
        return LIF(params["beta"], **common)
    return CUBA(params["alpha"], params["beta"], learn_alpha=learn, **common)


def assert_gradients_close(got, want, tolerance):
    scale = max(1.0, want.abs().max().item())
    assert (got - want).abs().max().item() <= tolerance * scale, (got, want)


@pytest.mark.parametrize("kind", ["LIF", "CUBA"])
@pytest.mark.parametrize("reset", ["subtract", "zero"])
@pytest.mark.parametrize("surrogate", ["atan", "fast_sigmoid"])
@pytest.mark.parametrize("learn, per_neuron, seed", [(True, True, 0), (False, False, 1), (True, False, 2)])
def test_spikes_and_gradients_equal_snntorch(kind, reset, surrogate, learn, per_neuron, seed):
    dtype = torch.float64
    params = random_parameters(seed, per_neuron, dtype)
    ref_spikes, ref_mem, ref, ref_x = run_snntorch(kind, params, reset, surrogate, learn, dtype)
    ours = make_ours(kind, params, reset, surrogate, learn, output="both").to(dtype)
    x = params["x"].clone().requires_grad_()
    spikes, mem = ours(x)
    assert 0 < spikes.sum() < spikes.numel()  # the case exercises spikes and silence
    assert torch.equal(spikes, ref_spikes)
    assert torch.equal(mem, ref_mem)
    ((ref_spikes * params["w_spikes"]).sum() + (ref_mem * params["w_mem"]).sum()).backward()
    ((spikes * params["w_spikes"]).sum() + (mem * params["w_mem"]).sum()).backward()
    assert_gradients_close(x.grad, ref_x.grad, 1e-6)
    names = ("alpha", "beta", "threshold") if kind == "CUBA" else ("beta", "threshold")
    for name in names if learn else ():
        assert getattr(ours, name).grad is not None, name
        assert_gradients_close(getattr(ours, name).grad, getattr(ref, name).grad, 1e-6)
    if not learn:
        assert all(p.grad is None for p in ours.parameters())


@pytest.mark.parametrize("kind", ["LIF", "CUBA"])
@pytest.mark.parametrize("recompute_steps", [None, 5])
def test_membrane_output_with_zero_reset_has_a_zero_threshold_gradient(kind, recompute_steps):
    """The membrane depends on the threshold only through the reset, which carries no gradient."""
    dtype = torch.float64
    params = random_parameters(3, True, dtype)
    ref_spikes, ref_mem, ref, ref_x = run_snntorch(kind, params, "zero", "atan", True, dtype)
    ours = make_ours(kind, params, "zero", "atan", True, output="membrane", recompute_steps=recompute_steps)
    ours = ours.to(dtype)
    x = params["x"].clone().requires_grad_()
    mem = ours(x)
    assert ref_spikes.sum() > 0 and torch.equal(mem, ref_mem)  # resets happen
    (ref_mem * params["w_mem"]).sum().backward()
    (mem * params["w_mem"]).sum().backward()
    assert ref.threshold.grad is None  # snnTorch: the threshold is not in the membrane's graph
    assert torch.equal(ours.threshold.grad, torch.zeros_like(ours.threshold))
    assert_gradients_close(x.grad, ref_x.grad, 1e-6)
    for name in ("alpha", "beta") if kind == "CUBA" else ("beta",):
        assert_gradients_close(getattr(ours, name).grad, getattr(ref, name).grad, 1e-6)


@pytest.mark.parametrize("kind", ["LIF", "CUBA"])
@pytest.mark.parametrize("reset", ["subtract", "zero"])
def test_float32_spikes_bit_identical_to_snntorch(kind, reset):
    params = random_parameters(7, True, torch.float32)
    ref_spikes, ref_mem, ref, ref_x = run_snntorch(kind, params, reset, "atan", True, torch.float32)
    ours = make_ours(kind, params, reset, "atan", True, output="both")
    x = params["x"].clone().requires_grad_()
    spikes, mem = ours(x)
    assert spikes.dtype == torch.float32
    assert torch.equal(spikes, ref_spikes) and torch.equal(mem, ref_mem)
    (ref_spikes * params["w_spikes"]).sum().backward()
    (spikes * params["w_spikes"]).sum().backward()
    assert_gradients_close(x.grad, ref_x.grad, 2e-6)
    assert_gradients_close(ours.beta.grad, ref.beta.grad, 2e-6)


@pytest.mark.parametrize(
    "surrogate, ref_grad",
    [(ATan(alpha=3.5), ("atan", {"alpha": 3.5})), (FastSigmoid(slope=7.0), ("fast_sigmoid", {"slope": 7.0}))],
)
def test_surrogate_constants_follow_snntorch(surrogate, ref_grad):
    params = random_parameters(3, False, torch.float64)
    ref = snn.Leaky(
        beta=params["beta"].clone(),
        threshold=params["threshold"].clone(),
        spike_grad=snn_spike_grad(ref_grad[0], **ref_grad[1]),
    ).double()
    x_ref = params["x"].clone().requires_grad_()
    mem = torch.zeros(B, N, dtype=torch.float64)
    spikes = []
    for x_t in x_ref.unbind(0):
        s, mem = ref(x_t, mem)
        spikes.append(s)
    (torch.stack(spikes).double() * params["w_spikes"]).sum().backward()
    x = params["x"].clone().requires_grad_()
    (
        LIF(params["beta"], threshold=params["threshold"], surrogate=surrogate).double()(x) * params["w_spikes"]
    ).sum().backward()
    assert_gradients_close(x.grad, x_ref.grad, 1e-6)
    default = params["x"].clone().requires_grad_()
    (LIF(params["beta"], threshold=params["threshold"]).double()(default) * params["w_spikes"]).sum().backward()
    assert (default.grad - x.grad).abs().max() > 1e-3  # the constant matters


@pytest.mark.parametrize("kind", ["LIF", "CUBA"])
@pytest.mark.parametrize("reset", ["subtract", "zero"])
def test_given_initial_state_matches_snntorch_including_its_gradient(kind, reset):
    dtype = torch.float64
    params = random_parameters(4, True, dtype)
    g = torch.Generator().manual_seed(11)
    initial = [(torch.rand(B, N, generator=g, dtype=dtype) * 1.5).requires_grad_() for _ in range(2)]
    ref_initial = [s.detach().clone().requires_grad_() for s in initial]
    ref_spikes, ref_mem, _, ref_x = run_snntorch(kind, params, reset, "atan", False, dtype, state=ref_initial)
    ours = make_ours(kind, params, reset, "atan", False, output="both").to(dtype)
    x = params["x"].clone().requires_grad_()
    spikes, mem = ours(x, initial[1] if kind == "LIF" else tuple(initial))
    assert torch.equal(spikes, ref_spikes) and torch.equal(mem, ref_mem)
    ((ref_spikes * params["w_spikes"]).sum() + (ref_mem * params["w_mem"]).sum()).backward()
    ((spikes * params["w_spikes"]).sum() + (mem * params["w_mem"]).sum()).backward()
    assert_gradients_close(x.grad, ref_x.grad, 1e-6)
    for got, want in zip(
        initial if kind == "CUBA" else initial[1:], ref_initial if kind == "CUBA" else ref_initial[1:], strict=True
    ):
        assert want.grad is not None and want.grad.abs().sum() > 0
        assert_gradients_close(got.grad, want.grad, 1e-6)


@pytest.mark.parametrize("kind", ["LIF", "CUBA"])
def test_state_carried_between_calls_continues_the_sequence(kind):
    params = random_parameters(5, False, torch.float32)
    whole = make_ours(kind, params, "subtract", "atan", False)(params["x"])
    layer = make_ours(kind, params, "subtract", "atan", False, stateful=True)
    first, second = layer(params["x"][:10]), layer(params["x"][10:])
    assert torch.equal(torch.cat([first, second]), whole)
    assert not any(s.requires_grad for s in (layer.state if kind == "CUBA" else (layer.state,)))
    layer.reset_state()
    assert torch.equal(layer(params["x"][10:]), make_ours(kind, params, "subtract", "atan", False)(params["x"][10:]))
    with pytest.raises(ShapeError, match="carried state"):
        layer(params["x"][:, :2])


def test_membrane_output_modes():
    params = random_parameters(6, False, torch.float32)
    spikes, mem = LIF(params["beta"], output="both")(params["x"])
    assert torch.equal(LIF(params["beta"])(params["x"]), spikes)
    assert torch.equal(LIF(params["beta"], output="membrane")(params["x"]), mem)
    assert torch.equal(spikes, (mem > 1.0).float())


class CountWork(TorchDispatchMode):
    """Counts aten calls and the elements they produce (work, not wall time)."""

    def __init__(self):
        super().__init__()
        self.elements = 0

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        self.elements += sum(t.numel() for t in tree_flatten(out)[0] if torch.is_tensor(t))
        return out


def backward_work(make_output, steps):
    x = torch.randn(steps, 4, 8, requires_grad=True)
    loss = make_output(x).sum()
    with CountWork() as counter:
        loss.backward()
    return counter.elements / (steps * 4 * 8)


def indexed_loop(x):
    mem, out = torch.zeros_like(x[0]), []
    for t in range(x.shape[0]):
        mem = 0.9 * mem + x[t]
        out.append(torch.sigmoid(mem))
    return torch.stack(out)


@pytest.mark.parametrize("layer", [LIF(0.9), LIF(0.9, reset="zero", learn_beta=True), CUBA(0.5, 0.9, learn_alpha=True)])
def test_backward_touches_each_time_step_once(layer):
    per_step = [backward_work(layer, steps) for steps in (16, 64)]
    assert per_step[1] <= per_step[0] * 1.05  # constant work per neuron-step: O(T)
    assert per_step[1] < 40  # a few dozen elementwise passes per neuron-step at most
    # the counter does see O(T^2): indexing x[t] in an autograd loop grows per-step work with T
    naive = [backward_work(indexed_loop, steps) for steps in (16, 64)]
    assert naive[1] > 3 * naive[0]


def test_all_steps_are_one_autograd_node():
    x = torch.randn(50, 2, 4, requires_grad=True)
    out = LIF(0.9)(x)
    assert type(out.grad_fn).__name__ == "LIFFunctionBackward"
    inputs = [f for f, _ in out.grad_fn.next_functions if f is not None]
    assert [type(f).__name__ for f in inputs] == ["AccumulateGrad"]  # straight to x: no per-step graph


@pytest.mark.parametrize(
    "make_input, error, words",
    [
        (lambda: torch.randn(3, 4), ShapeError, ["x.shape=(3, 4)", "[T, B, features...]"]),
        (lambda: torch.randn(0, 2, 3), ShapeError, ["x.shape=(0, 2, 3)", "T >= 1"]),
        (lambda: torch.randn(4, 0, 3), ShapeError, ["x.shape=(4, 0, 3)", "at least one sample"]),
        (lambda: torch.ones(4, 2, 3, dtype=torch.int64), ShapeError, ["x.dtype=torch.int64", "floating"]),
        (lambda: [[1.0]], ShapeError, ["x='list'", "torch.Tensor"]),
    ],
)
def test_bad_inputs_give_clear_errors(make_input, error, words):
    with pytest.raises(error) as info:
        LIF(0.9)(make_input())
    assert all(w in str(info.value) for w in words), str(info.value)


@pytest.mark.parametrize("kind", ["LIF", "CUBA"])
@pytest.mark.parametrize("reset", ["subtract", "zero"])
@pytest.mark.parametrize("bad", [float("nan"), float("inf"), float("-inf")])
def test_non_finite_input_names_the_time_step(kind, reset, bad):
    x = torch.rand(12, 2, 3)
    x[7, 1, 2] = bad
    layer = LIF(0.9, reset=reset) if kind == "LIF" else CUBA(0.5, 0.9, reset=reset)
    with pytest.raises(ConfigError, match="x contains NaN or inf at time step 7; accepted: finite values"):
        layer(x)


@pytest.mark.parametrize(
    "build, words",
    [
        (lambda: LIF(1.5), ["beta=1.5", "[0.0, 1.0]"]),
        (lambda: LIF(float("nan")), ["beta=nan", "finite"]),
        (lambda: LIF(0.9, threshold="high"), ["threshold='high'", "a number or a tensor"]),
        (lambda: LIF(0.9, reset="soft"), ["reset='soft'", "'subtract', 'zero'"]),
        (lambda: LIF(0.9, surrogate="relu"), ["surrogate='relu'", "atan", "fast_sigmoid"]),
        (lambda: LIF(0.9, output="rates"), ["output='rates'", "'spikes', 'membrane', 'both'"]),
        (lambda: LIF(0.9, dt=0), ["dt=0", "positive"]),
        (lambda: CUBA(-0.1, 0.9), ["alpha=-0.1", "[0.0, 1.0]"]),
        (lambda: ATan(alpha=-1), ["alpha=-1", "positive"]),
        (lambda: LIF(0.9, backend="pennylane"), ["pennylane"]),
    ],
)
def test_bad_arguments_give_clear_errors(build, words):
    with pytest.raises(HybridAIError) as info:
        build()
    assert all(w in str(info.value) for w in words), str(info.value)


def test_parameter_and_state_shapes_are_checked():
    with pytest.raises(
        ShapeError, match=r"beta has shape \(5,\).*accepted: a beta that broadcasts to the neuron shape \(3,\)"
    ):
        LIF(torch.full((5,), 0.9))(torch.rand(4, 2, 3))
    with pytest.raises(ShapeError, match=r"state shape=\(2, 4\).*\(2, 3\)"):
        LIF(0.9)(torch.rand(4, 2, 3), torch.zeros(2, 4))
    with pytest.raises(ShapeError, match=r"tuple \(syn, mem\)"):
        CUBA(0.5, 0.9)(torch.rand(4, 2, 3), torch.zeros(2, 3))


def test_multidimensional_neurons_and_per_channel_parameters():
    x = torch.rand(6, 2, 3, 4, 4) * 2
    beta = torch.tensor([0.5, 0.7, 0.9]).reshape(3, 1, 1)
    out = LIF(beta)(x)
    flat = torch.cat([LIF(float(b))(x[:, :, c]).unsqueeze(2) for c, b in enumerate(beta.flatten())], dim=2)
    assert out.shape == x.shape and torch.equal(out, flat)


def test_layer_is_a_spiking_hybrid_module_and_pickles():
    layer = CUBA(0.5, 0.8, learn_beta=True, reset="zero", surrogate="fast_sigmoid")
    assert layer.domain == "spiking" and layer.backend == "torch"
    x = torch.rand(5, 2, 6) * 2
    restored = pickle.loads(pickle.dumps(layer))
    assert torch.equal(restored(x), layer(x)) and restored.surrogate == layer.surrogate
    assert "6 neurons" in hybridai.summary(torch.nn.Sequential(torch.nn.Linear(6, 6), layer), show=False)
    assert "reset='zero'" in repr(layer) and "beta=0.8 (learnt)" in repr(layer)
