"""A layer class declares its kind: graph's registries are read from the classes, and no copy of them is kept.

A new neuron is one class (a ``SpikingNeuron`` subclass with its own ``kind``): ``kind_of``, ``NEURONS``,
``SPIKING``, ``KINDS`` and ``lower`` recognise it with no other file edited. The shared keyword options
(``NeuronOptions``) give LIF and CUBA the signature they always had.
"""

import ast
import gc
import inspect
from pathlib import Path

import pytest
import torch
from torch import nn

import hybridai
from hybridai.core.errors import ConfigError
from hybridai.spiking import CUBA, LIF, RateDecoder, RateEncoder, SigmaDelta, TimeDistributed
from hybridai.spiking.fused import LIFFunction
from hybridai.spiking.graph import KINDS, NEURONS, SPIKING, is_spiking, kind_of, lower
from hybridai.spiking.neuron_options import NeuronOptions
from hybridai.spiking.neurons import SpikingNeuron

NEW_KIND = "integrate_and_fire_test"


def _integrate_and_fire() -> type[SpikingNeuron]:
    """A neuron model of the test's own: LIF without leak (beta = 1), declared as a kind of its own."""

    class IntegrateAndFire(SpikingNeuron):
        kind = NEW_KIND
        PARAMETERS = ("threshold",)

        def _integrate(self, x, parameters, initial, recompute_steps, keep_trace):
            (threshold,) = parameters
            one = torch.ones((), dtype=x.dtype)
            zero = self.reset == "zero"
            spikes, mem, last = LIFFunction.apply(
                x, one, threshold, initial[0], zero, self.surrogate, recompute_steps, keep_trace
            )
            return spikes, mem, last, None

    return IntegrateAndFire


def test_hybridai_layers_declare_their_kinds():
    assert [kind_of(m) for m in (LIF(), CUBA(), SigmaDelta(), RateDecoder(), TimeDistributed(nn.Linear(2, 2)))] == [
        "lif",
        "cuba",
        "sigma_delta",
        "decoder",
        "dense",
    ]
    assert kind_of(RateEncoder(4)) is None and kind_of(nn.Tanh()) is None
    assert set(NEURONS) == {"lif", "cuba"}
    assert set(SPIKING) == {"lif", "cuba", "sigma_delta"}
    assert set(KINDS) == {"dense", "conv", "relu", "pool", "flatten", "lif", "cuba", "sigma_delta", "decoder"}
    assert (LIF.has_membrane, LIF.stateful_over_time, SigmaDelta.has_membrane, SigmaDelta.stateful_over_time) == (
        True,
        True,
        False,
        True,
    )
    assert not RateDecoder.stateful_over_time


def test_a_new_neuron_class_is_recognised_by_graph_once_defined():
    assert NEW_KIND not in KINDS
    neuron_class = _integrate_and_fire()
    neuron = neuron_class(threshold=1.5, reset="zero")
    assert kind_of(neuron) == NEW_KIND and is_spiking(neuron)
    assert NEW_KIND in NEURONS and NEW_KIND in SPIKING and NEW_KIND in KINDS
    assert kind_of(LIF()) == "lif"  # its neighbours keep their kinds

    graph = lower(nn.Sequential(nn.Linear(3, 4), neuron), target="t", accepts=("dense", NEW_KIND), supported="x")
    assert [(node.kind, node.width) for node in graph] == [("dense", 4), (NEW_KIND, 4)]
    with pytest.raises(ConfigError, match=r"model\[1\]\.batch_first=True"):
        lower(nn.Sequential(nn.Linear(3, 4), neuron_class(batch_first=True)), target="t", accepts=KINDS, supported="x")

    x = torch.rand(6, 2, 4) * 2  # it runs: LIF without leak, spike for spike
    assert torch.equal(neuron(x), LIF(1.0, threshold=1.5, reset="zero")(x))
    assert "threshold" in inspect.signature(neuron_class).parameters  # the shared options are its keywords
    with pytest.raises(TypeError, match=r"IntegrateAndFire\(\) got unknown keyword argument\(s\) 'beta'"):
        neuron_class(beta=0.9)

    del neuron_class, neuron, graph
    gc.collect()
    assert NEW_KIND not in KINDS  # a class that is gone leaves the registries


def test_lif_and_cuba_keep_their_signatures():
    shared = (
        "threshold: 'float | torch.Tensor' = 1.0, reset: 'str' = 'subtract', surrogate: 'str | Surrogate' = 'atan', "
        "{learn}learn_threshold: 'bool' = False, output: 'str' = 'spikes', stateful: 'bool' = False, "
        "batch_first: 'bool' = False, dt: 'float' = 0.001, backend: 'str | None' = None, "
        "recompute_steps: 'int | None' = None, **snntorch_options: 'Any'"
    )
    lif = "(beta: 'float | torch.Tensor' = 0.9, *, " + shared.format(learn="learn_beta: 'bool' = False, ") + ")"
    cuba = (
        "(alpha: 'float | torch.Tensor' = 0.8, beta: 'float | torch.Tensor' = 0.9, *, "
        + shared.format(learn="learn_alpha: 'bool' = False, learn_beta: 'bool' = False, ")
        + ")"
    )
    assert str(inspect.signature(LIF)) == lif + " -> 'None'"
    assert str(inspect.signature(CUBA)) == cuba + " -> 'None'"


def test_neuron_options_are_checked_once_for_every_neuron():
    options = NeuronOptions.of(CUBA, {"threshold": 2, "reset_mechanism": "zero", "dt": 2e-3})
    assert (options.reset, options.dt, options.output, float(options.threshold)) == ("zero", 2e-3, "spikes", 2.0)
    for cls in (LIF, CUBA):
        with pytest.raises(ConfigError, match=r"output='all' is not valid; accepted: one of \('spikes'"):
            cls(output="all")
        with pytest.raises(ConfigError, match=r"recompute_steps=0"):
            cls(recompute_steps=0)
        with pytest.raises(TypeError, match=rf"{cls.__name__}\(\) got unknown keyword .*'threshhold'.*learn_beta"):
            cls(threshhold=1.0)
    with pytest.raises(ConfigError, match="threshold=-1"):
        NeuronOptions.of(LIF, {"threshold": -1})


def _kind_literals(tree: ast.AST, kinds: set[str]) -> list[int]:
    """Lines of tuple/list/set literals or comparisons that name one of ``kinds`` as a string."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Tuple | ast.List | ast.Set):
            items = node.elts
        elif isinstance(node, ast.Compare):
            items = [node.left, *node.comparators]
        else:
            continue
        if any(isinstance(item, ast.Constant) and item.value in kinds for item in items):
            found.append(node.lineno)
    return found


def test_no_copy_of_the_neuron_kinds_is_kept_in_the_source():
    """Chip plans, NIR and deployment ask the classes (``kind``) or graph's registries, never a literal list."""
    kinds = set(NEURONS)
    assert kinds >= {"lif", "cuba"}
    root = Path(hybridai.__file__).parent
    found = {
        str(path.relative_to(root)): lines
        for path in sorted(root.rglob("*.py"))
        if (lines := _kind_literals(ast.parse(path.read_text()), kinds))
    }
    assert found == {}
    planted = ast.parse('ACCEPTS = ("dense", "lif", "cuba")\nok = kind == "cuba"\nkind = "lif"\n')
    assert _kind_literals(planted, kinds) == [1, 2]  # the check finds what it looks for
