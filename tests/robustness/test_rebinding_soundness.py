"""Re-binding (on by default) is sound: whatever a circuit reads, every call equals recording it every call.

Generated circuits branch on the inputs, the weights and outside state through many entry points (value reads
that no watch list catches: ``torch.equal``, ``torch.allclose``, ``torch.is_nonzero``, value-dependent shapes,
``str``, f-strings, ``in``; and ``.item()``, ``bool()``; a global flag, a closure's list, a seeded random branch,
``module.training``, ``torch.is_grad_enabled()``, ``inputs.requires_grad``), and the test flips what they read
between calls. A layer and a kernel built with the default ``rebind`` must give, on EVERY call, the values and
gradients of the same module built with ``rebind=False`` (to 1e-12).
"""

from __future__ import annotations

import random

import pennylane as qml
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from hybridai import QuantumKernel, QuantumLayer

N_QUBITS, CALLS = 3, 6
FLAG = False  # a global flag a circuit may read; set by the test between calls

# value probes: True where the tensor holds a 1.0 (data hold 0, .25, .5, .75, and a 1.0 where the call "hits")
VALUE_PROBES = {
    "torch.equal": lambda t: not torch.equal(t, t.clamp(max=0.9)),
    "torch.allclose": lambda t: torch.allclose(t.max(), torch.ones((), dtype=t.dtype)),
    "torch.is_nonzero": lambda t: torch.is_nonzero((t > 0.9).any()),
    "len(nonzero)": lambda t: len((t > 0.9).nonzero()) > 0,
    "mask.numel": lambda t: t[t > 0.9].numel() > 0,
    "unique.numel": lambda t: torch.unique(t.clamp(min=0.9)).numel() > 1,
    "str": lambda t: "True" in str((t > 0.9).any()),
    "f-string": lambda t: f"{t.max():.2f}" == "1.00",
    "in": lambda t: 1.0 in t,
    "item": lambda t: t.max().item() > 0.9,
    "bool": lambda t: bool(t.max() > 0.9),
}
STATE_PROBES = ("global flag", "closure list", "random", "module.training", "grad mode", "requires_grad")
GATES = {
    "X": lambda w: qml.PauliX(wires=w),
    "H": lambda w: qml.Hadamard(wires=w),
    "S": lambda w: qml.S(wires=w),
    "CNOT": lambda w: qml.CNOT(wires=[w, (w + 1) % N_QUBITS]),
}

branch = st.tuples(
    st.sampled_from(sorted(VALUE_PROBES) + list(STATE_PROBES)),
    st.sampled_from(["inputs", "weights"]),  # what a value probe reads
    st.sampled_from(sorted(GATES)),
    st.sampled_from(sorted(GATES) + [None]),  # the else branch
    st.integers(0, N_QUBITS - 1),
)
# per call: (inputs hit, weights hit, global flag, closure list's last entry, training, grad mode, requires_grad)
schedule = st.lists(st.tuples(*[st.booleans()] * 7), min_size=CALLS, max_size=CALLS)


def circuit_of(branches, state):
    """The circuit body: an embedding, the generated branches, an entangling ansatz, the embedding again."""

    def condition(probe, source, inputs, weights):
        if probe in VALUE_PROBES:
            return VALUE_PROBES[probe](inputs if source == "inputs" else weights)
        return {
            "global flag": lambda: FLAG,
            "closure list": lambda: state["log"][-1],
            "random": lambda: state["rng"].random() < 0.5,
            "module.training": lambda: state["module"].training,
            "grad mode": torch.is_grad_enabled,
            "requires_grad": lambda: inputs.requires_grad,
        }[probe]()

    def body(inputs, weights):
        qml.AngleEmbedding(inputs, wires=range(N_QUBITS))
        for probe, source, gate, other, wire in branches:
            if condition(probe, source, inputs, weights):
                GATES[gate](wire)
            elif other is not None:
                GATES[other](wire)
        qml.BasicEntanglerLayers(weights, wires=range(N_QUBITS))
        qml.AngleEmbedding(inputs, wires=range(N_QUBITS), rotation="Y")  # uploaded again: no gate cancels in a kernel

    return body


def layer_of(branches, seed, **options):
    state = {"log": [False], "rng": random.Random(seed)}
    body = circuit_of(branches, state)

    def qfunc(inputs, weights):
        body(inputs, weights)
        return [qml.expval(qml.PauliZ(i)) for i in range(N_QUBITS)]

    layer = QuantumLayer(qfunc, N_QUBITS, {"weights": (2, N_QUBITS)}, **options).double()
    state["module"] = layer
    return layer, state


def kernel_of(branches, seed, **options):
    state = {"log": [False], "rng": random.Random(seed)}
    body = circuit_of(branches, state)

    def feature_map(x, weights):
        body(x, weights)

    kernel = QuantumKernel(feature_map, N_QUBITS, {"weights": (2, N_QUBITS)}, **options).double()
    state["module"] = kernel
    return kernel, state


def data(generator, shape, hit):
    """Entries in {0, .25, .5, .75}, one of them 1.0 where ``hit``."""
    values = torch.randint(0, 4, shape, generator=generator).to(torch.float64) / 4
    if hit:
        values.view(-1)[torch.randint(0, values.numel(), (1,), generator=generator)] = 1.0
    return values


def close(found, expected, what, call):
    assert (found is None) == (expected is None), f"{what} on call {call}"
    if found is not None:
        torch.testing.assert_close(found, expected, rtol=0, atol=1e-12, msg=lambda m: f"{what} on call {call}: {m}")


def compare(build, call_module, branches, plan, seed):
    """Every call of the default module against the same module with ``rebind=False``."""
    global FLAG
    (fast, fast_state), (slow, slow_state) = build(branches, seed), build(branches, seed, rebind=False)
    slow.load_state_dict(fast.state_dict())
    generator = torch.Generator().manual_seed(seed)
    for call, (inputs_hit, weights_hit, flag, last, training, grad, requires_grad) in enumerate(plan):
        x = data(generator, (4, N_QUBITS), inputs_hit)
        weights = data(generator, (2, N_QUBITS), weights_hit)
        coefficients = torch.rand(4, 4, generator=generator, dtype=torch.float64)  # [4, 3] or [4, 4] used
        FLAG = flag
        results = []
        for module, state in ((fast, fast_state), (slow, slow_state)):
            with torch.no_grad():
                module.weights.copy_(weights)
            module.weights.grad = None
            module.train(training)
            state["log"].append(last)
            given = x.clone().requires_grad_(requires_grad)
            with torch.set_grad_enabled(grad):
                out = call_module(module, given)
            if out.requires_grad:
                (out * coefficients[: out.shape[0], : out.shape[1]]).sum().backward()
            results.append((out.detach(), given.grad, module.weights.grad))
        for name, found, expected in zip(("values", "input gradients", "weight gradients"), *results, strict=True):
            close(found, expected, name, call)


SETTINGS = settings(max_examples=40, deadline=None, derandomize=True, database=None)


@pytest.mark.filterwarnings("ignore::UserWarning")
@SETTINGS
@given(branches=st.lists(branch, min_size=1, max_size=3), plan=schedule, seed=st.integers(0, 2**16))
def test_layer_calls_equal_recording_every_call(branches, plan, seed):
    compare(layer_of, lambda layer, x: layer(x), branches, plan, seed)


@pytest.mark.filterwarnings("ignore::UserWarning")
@SETTINGS
@given(branches=st.lists(branch, min_size=1, max_size=3), plan=schedule, seed=st.integers(0, 2**16))
def test_kernel_calls_equal_recording_every_call(branches, plan, seed):
    compare(kernel_of, lambda kernel, x: kernel.matrix(x), branches, plan, seed)


@pytest.mark.filterwarnings("ignore::UserWarning")
@pytest.mark.parametrize("probe", sorted(VALUE_PROBES) + list(STATE_PROBES))
@pytest.mark.parametrize("kind", ["layer", "kernel"])
def test_every_entry_point_read_again_after_two_calls(probe, kind):
    """Each entry point on its own, what it reads unchanged for two calls and then flipped, call after call."""
    off, on = (False,) * 7, (True,) * 7
    build, call_module = (layer_of, lambda m, x: m(x)) if kind == "layer" else (kernel_of, lambda m, x: m.matrix(x))
    for source in ("inputs", "weights") if probe in VALUE_PROBES else ("inputs",):
        compare(build, call_module, [(probe, source, "H", "CNOT", 1)], [off, off, on, off, on, on], seed=7)
