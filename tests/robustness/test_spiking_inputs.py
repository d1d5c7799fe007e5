"""Hostile inputs to the spiking layers (LIF, CUBA) and their surrogates.

Every bad input must give a ``hybridai.HybridAIError`` whose message names the argument, shows the value and
says what is accepted; a threshold <= 0 (given, or learnt down to it) is a configuration error, not a layer
that fires at every step.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hybridai import CUBA, LIF
from hybridai.core.errors import ConfigError, HybridAIError, ShapeError
from hybridai.spiking import ATan, FastSigmoid

NAN, INF = float("nan"), float("inf")
HUGE = 10**400  # beyond float's range: float() of it overflows
X = torch.rand(6, 2, 4, generator=torch.Generator().manual_seed(0)) * 2


def lif(**options):
    return LIF(**options)(X)


def cuba(**options):
    return CUBA(**options)(X)


def learnt(kind, name, value):
    """A layer whose learnt ``name`` was trained to ``value`` (a constructor refuses it), run on X."""
    layer = (LIF if kind == "LIF" else CUBA)(**{f"learn_{name}": True})
    with torch.no_grad():
        getattr(layer, name).fill_(value)
    return layer(X)


def with_state(kind, state):
    return (LIF() if kind == "LIF" else CUBA())(X, state)


# (callable, bad value, error class, argument named, text that shows the value)
CASES = [
    # item 1: thresholds <= 0 fire at every step whatever the input: refused when built ...
    (lambda v: LIF(threshold=v), -1, ConfigError, "threshold", "-1"),
    (lambda v: LIF(threshold=v), 0, ConfigError, "threshold", "0"),
    (lambda v: LIF(threshold=v), -1e-30, ConfigError, "threshold", "-1e-30"),
    (lambda v: LIF(threshold=v, learn_threshold=True), -0.5, ConfigError, "threshold", "-0.5"),
    (lambda v: LIF(threshold=v), torch.tensor([1.0, 0.0, 2.0]), ConfigError, "threshold", "range [0, 2]"),
    (lambda v: CUBA(threshold=v), -1, ConfigError, "threshold", "-1"),
    (lambda v: CUBA(threshold=v), 0.0, ConfigError, "threshold", "0.0"),
    (lambda v: CUBA(threshold=v, learn_threshold=True), torch.tensor(-2.0), ConfigError, "threshold", "-2"),
    # ... and when a learnt threshold was trained down to it
    (lambda v: learnt("LIF", "threshold", v), -0.5, ConfigError, "threshold", "-0.5"),
    (lambda v: learnt("LIF", "threshold", v), 0.0, ConfigError, "threshold", "0.0"),
    (lambda v: learnt("CUBA", "threshold", v), -3.0, ConfigError, "threshold", "-3.0"),
    (lambda v: learnt("LIF", "threshold", v), INF, ConfigError, "threshold", "inf"),
    (lambda v: learnt("LIF", "beta", v), NAN, ConfigError, "beta", "nan"),
    (lambda v: learnt("CUBA", "alpha", v), NAN, ConfigError, "alpha", "nan"),
    # item 1: NaN / inf in beta, alpha, threshold
    (lambda v: LIF(beta=v), NAN, ConfigError, "beta", "nan"),
    (lambda v: LIF(beta=v), INF, ConfigError, "beta", "inf"),
    (lambda v: LIF(beta=v), torch.tensor([0.5, NAN]), ConfigError, "beta", "nan"),
    (lambda v: LIF(threshold=v), NAN, ConfigError, "threshold", "nan"),
    (lambda v: LIF(threshold=v), INF, ConfigError, "threshold", "inf"),
    (lambda v: LIF(threshold=v), torch.tensor([1.0, INF]), ConfigError, "threshold", "inf"),
    (lambda v: CUBA(alpha=v), NAN, ConfigError, "alpha", "nan"),
    (lambda v: CUBA(alpha=v), -INF, ConfigError, "alpha", "-inf"),
    (lambda v: CUBA(beta=v), INF, ConfigError, "beta", "inf"),
    (lambda v: CUBA(threshold=v), NAN, ConfigError, "threshold", "nan"),
    # item 4: numbers beyond float's range, bools, strings, None, complex, empty tensors
    (lambda v: LIF(beta=v), 2**70, ConfigError, "beta", "1180591620717411303424"),
    (lambda v: LIF(threshold=v), 2**70 * -1, ConfigError, "threshold", "-1180591620717411303424"),
    (lambda v: LIF(threshold=v), HUGE, ConfigError, "threshold", "1000000000"),
    (lambda v: CUBA(alpha=v), HUGE, ConfigError, "alpha", "1000000000"),
    (lambda v: LIF(beta=v), True, ConfigError, "beta", "True"),
    (lambda v: LIF(beta=v), np.bool_(True), ConfigError, "beta", "True"),
    (lambda v: LIF(beta=v), "0.9", ConfigError, "beta", "'0.9'"),
    (lambda v: LIF(beta=v), None, ConfigError, "beta", "None"),
    (lambda v: LIF(beta=v), 0.5 + 1j, ConfigError, "beta", "(0.5+1j)"),
    (lambda v: LIF(beta=v), torch.tensor([0.5 + 0j]), ConfigError, "beta", "complex64"),
    (lambda v: LIF(beta=v), torch.tensor([True]), ConfigError, "beta", "torch.bool"),
    (lambda v: LIF(threshold=v), torch.zeros(0), ConfigError, "threshold", "shape (0,)"),
    (lambda v: LIF(beta=v), 1.5, ConfigError, "beta", "1.5"),
    (lambda v: CUBA(alpha=v), -0.1, ConfigError, "alpha", "-0.1"),
    (lambda v: LIF(dt=v), 0, ConfigError, "dt", "0"),
    (lambda v: LIF(dt=v), -1e-3, ConfigError, "dt", "-0.001"),
    (lambda v: LIF(dt=v), NAN, ConfigError, "dt", "nan"),
    (lambda v: LIF(dt=v), HUGE, ConfigError, "dt", "1000000000"),
    (lambda v: LIF(dt=v), True, ConfigError, "dt", "True"),
    (lambda v: LIF(dt=v), "1ms", ConfigError, "dt", "'1ms'"),
    (lambda v: CUBA(dt=v), INF, ConfigError, "dt", "inf"),
    (lambda v: LIF(recompute_steps=v), 0, ConfigError, "recompute_steps", "0"),
    (lambda v: LIF(recompute_steps=v), 2.5, ConfigError, "recompute_steps", "2.5"),
    (lambda v: LIF(recompute_steps=v), True, ConfigError, "recompute_steps", "True"),
    (lambda v: CUBA(recompute_steps=v), "4", ConfigError, "recompute_steps", "'4'"),
    (lambda v: LIF(reset=v), np.array(["zero", "zero"]), ConfigError, "reset", "array"),
    (lambda v: LIF(reset=v), None, ConfigError, "reset", "None"),
    (lambda v: LIF(reset=v), "soft", ConfigError, "reset", "'soft'"),
    (lambda v: LIF(output=v), np.zeros(3), ConfigError, "output", "array"),
    (lambda v: CUBA(output=v), ["spikes"], ConfigError, "output", "['spikes']"),
    (lambda v: LIF(surrogate=v), np.zeros(3), ConfigError, "surrogate", "array"),
    (lambda v: LIF(surrogate=v), None, ConfigError, "surrogate", "None"),
    (lambda v: LIF(backend=v), torch.ones(2), ConfigError, "backend", "tensor"),
    (lambda v: LIF(backend=v), np.zeros(3), ConfigError, "backend", "array"),
    (lambda v: CUBA(backend=v), torch.zeros(0), ConfigError, "backend", "tensor"),
    (lambda v: LIF(backend=v), "", ConfigError, "backend", "''"),
    (lambda v: ATan(alpha=v), HUGE, ConfigError, "alpha", "1000000000"),
    (lambda v: ATan(alpha=v), NAN, ConfigError, "alpha", "nan"),
    (lambda v: ATan(alpha=v), 0, ConfigError, "alpha", "0"),
    (lambda v: ATan(alpha=v), True, ConfigError, "alpha", "True"),
    (lambda v: FastSigmoid(slope=v), -INF, ConfigError, "slope", "-inf"),
    (lambda v: FastSigmoid(slope=v), HUGE, ConfigError, "slope", "1000000000"),
    (lambda v: FastSigmoid(slope=v), "25", ConfigError, "slope", "'25'"),
    # item 4: forward with wrong types, shapes, dtypes, devices and values
    (lambda v: LIF()(v), None, ShapeError, "x", "NoneType"),
    (lambda v: LIF()(v), np.zeros((6, 2, 4)), ShapeError, "x", "ndarray"),
    (lambda v: LIF()(v), [[[0.0]]], ShapeError, "x", "list"),
    (lambda v: LIF()(v), torch.zeros(2, 4), ShapeError, "x.shape", "(2, 4)"),
    (lambda v: LIF()(v), torch.zeros(()), ShapeError, "x.shape", "()"),
    (lambda v: LIF()(v), torch.zeros(0, 2, 4), ShapeError, "x.shape", "(0, 2, 4)"),
    (lambda v: CUBA()(v), torch.zeros(6, 0, 4), ShapeError, "x.shape", "(6, 0, 4)"),
    (lambda v: LIF()(v), torch.zeros(6, 2, 0), ShapeError, "x.shape", "(6, 2, 0)"),
    (lambda v: LIF()(v), torch.zeros(6, 2, 4, dtype=torch.long), ShapeError, "x.dtype", "torch.int64"),
    (lambda v: LIF()(v), torch.zeros(6, 2, 4, dtype=torch.bool), ShapeError, "x.dtype", "torch.bool"),
    (lambda v: CUBA()(v), torch.zeros(6, 2, 4, dtype=torch.complex64), ShapeError, "x.dtype", "complex64"),
    (lambda v: LIF()(v), torch.zeros(6, 2, 4, device="meta"), ShapeError, "x.device", "meta"),
    (lambda v: CUBA()(v), torch.zeros(6, 2, 4, device="meta"), ShapeError, "x.device", "meta"),
    (lambda v: LIF(beta=torch.full((5,), 0.9))(v), X, ShapeError, "beta", "(5,)"),
    (lambda v: LIF(threshold=torch.ones(3))(v), X, ShapeError, "threshold", "(3,)"),
    (lambda v: LIF()(v), torch.full((6, 2, 4), NAN), ConfigError, "x", "NaN"),
    (lambda v: CUBA()(v), torch.full((6, 2, 4), -INF), ConfigError, "x", "inf"),
    (lambda v: LIF()(v), torch.full((6, 2, 4), 3e38), ConfigError, "x", "3e+38"),  # finite x, membrane overflows
    (lambda v: CUBA()(v), torch.full((6, 2, 4), 2e38), ConfigError, "x", "2e+38"),
    (lambda v: with_state("LIF", v), torch.full((2, 4), NAN), ConfigError, "state", "NaN"),
    (lambda v: with_state("CUBA", v), (torch.zeros(2, 4), torch.full((2, 4), INF)), ConfigError, "state", "inf"),
    (lambda v: with_state("LIF", v), torch.zeros(2, 5), ShapeError, "state shape", "(2, 5)"),
    (lambda v: with_state("LIF", v), [torch.zeros(2, 4)], ShapeError, "state", "list"),
    (lambda v: with_state("LIF", v), torch.zeros(2, 4, device="meta"), ShapeError, "state device", "meta"),
    (lambda v: with_state("LIF", v), torch.zeros(2, 4, dtype=torch.complex64), ShapeError, "state dtype", "complex"),
    (lambda v: with_state("CUBA", v), torch.zeros(2, 4), ShapeError, "state", "Tensor"),
    (lambda v: with_state("CUBA", v), (torch.zeros(2, 4),), ShapeError, "state", "tuple"),
]


def _id(case) -> str:
    _, value, _, argument, _ = case
    return f"{argument}={str(value)[:24]}"


@pytest.mark.parametrize("call, value, error, argument, shown", CASES, ids=[_id(c) for c in CASES])
def test_bad_input_gives_a_typed_error_naming_argument_value_and_accepted(call, value, error, argument, shown):
    with pytest.raises(HybridAIError) as caught:
        call(value)
    assert isinstance(caught.value, error), f"{type(caught.value).__name__}: {caught.value}"
    message = str(caught.value)
    assert argument in message and shown in message, message
    assert "accepted" in message, message


def test_a_negative_threshold_once_made_every_neuron_fire_every_step():
    """The wrong answer item 1 was about: with threshold -1 a silent input spiked at every step."""
    silent = torch.zeros(5, 1, 3)
    for kind in (LIF, CUBA):
        with pytest.raises(ConfigError, match=r"threshold=-1.0 is not valid; accepted: values > 0"):
            kind(threshold=-1.0)
        assert kind(threshold=1e-6)(silent).sum() == 0  # the smallest positive threshold: no input, no spike


def test_a_learnt_threshold_is_checked_on_every_call_and_accepted_again_once_positive():
    layer = LIF(0.9, learn_threshold=True)
    reference = layer(X)
    with torch.no_grad():
        layer.threshold.fill_(-0.25)
    with pytest.raises(ConfigError, match=r"threshold=-0.25 is not valid; accepted: finite values > 0"):
        layer(X)
    with torch.no_grad():
        layer.threshold.fill_(1.0)
    assert torch.equal(layer(X), reference)


def test_numpy_scalars_are_numbers_like_python_ones():
    for kind in (LIF, CUBA):
        ours = kind(beta=np.float32(0.75), threshold=np.int64(1), dt=np.float64(1e-3))(X)
        assert torch.equal(ours, kind(beta=0.75, threshold=1, dt=1e-3)(X))


def test_a_membrane_that_overflows_is_not_blamed_on_the_state():
    with pytest.raises(ConfigError) as caught:
        LIF(1.0)(torch.full((4, 1, 2), 2e38))  # 2e38 + 2e38 overflows float32 at the second step
    message = str(caught.value)
    assert message.startswith("x=") and "overflowed" in message and "state" not in message


# -- properties: any value either builds a valid layer or names the argument ----------------------

NUMBERS = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True),
    st.integers(-(2**80), 2**80),
    st.just(HUGE),
    st.booleans(),
    st.text(max_size=3),
    st.none(),
)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(beta=NUMBERS, threshold=NUMBERS, dt=NUMBERS, kind=st.sampled_from(["LIF", "CUBA"]))
def test_constructor_either_builds_a_valid_layer_or_names_the_argument(beta, threshold, dt, kind):
    try:
        layer = (LIF if kind == "LIF" else CUBA)(beta=beta, threshold=threshold, dt=dt)
    except ConfigError as exc:
        message = str(exc)
        assert message.split("=")[0] in ("beta", "threshold", "dt") and "accepted" in message, message
        return
    assert 0 <= float(layer.beta) <= 1 and 0 < float(layer.threshold) < math.inf
    assert 0 < layer.dt < math.inf
    out = layer(X)
    assert set(out.unique().tolist()) <= {0.0, 1.0}


@settings(max_examples=60, deadline=None)
@given(st.lists(st.one_of(st.floats(-4, 4), st.just(NAN), st.just(INF), st.just(-INF)), min_size=4, max_size=4))
def test_forward_either_gives_spikes_or_names_the_bad_time_step(row):
    x = torch.zeros(3, 1, 4)
    x[1, 0] = torch.tensor(row)
    if all(math.isfinite(v) for v in row):
        assert set(LIF(0.5, threshold=0.5)(x).unique().tolist()) <= {0.0, 1.0}
    else:
        with pytest.raises(ConfigError, match="x contains NaN or inf at time step 1; accepted: finite values"):
            LIF(0.5, threshold=0.5)(x)
