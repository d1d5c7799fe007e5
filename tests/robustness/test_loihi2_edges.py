"""Edges of the Loihi 2 emulator where an answer used to be silently wrong, or an error raw (issue 28).

* Lava keeps sigma-delta states in numpy int32, where ``np.abs(-2**31)`` is ``-2**31``: a delta (or, with
  ``cum_error``, an error) of exactly -2^31 fails the ``|x| >= vth`` test and nothing is sent; a message of
  -2^31 does not zero the error. hybridai must follow Lava, residue and error included.
* Registers live in int32 (Lava's ``np.int32`` Vars): a wider integer is refused by name, never passed to torch.
* ``loihi2.compile(device=...)``, ``ResonateFireConfig.from_frequency`` and the ``run_*`` functions refuse
  what they cannot use (a device that is not here, a string for a frequency, a tensor without data) by name.
"""

from __future__ import annotations

from unittest import mock

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from torch import nn

from hybridai.core.errors import ConfigError, HybridAIError, ShapeError
from hybridai.neuromorphic import loihi2
from hybridai.neuromorphic.loihi import CompartmentConfig, run_compartments
from hybridai.neuromorphic.loihi2 import (
    AdaptiveLIFConfig,
    ResonateFireConfig,
    SigmaDeltaConfig,
    run_adaptive_lif,
    run_resonate_and_fire,
    run_sigma_delta,
)
from hybridai.spiking import SigmaDelta

LOW, HIGH = -(2**31), 2**31 - 1  # int32


def one(values: list[int]) -> torch.Tensor:
    """One neuron, one sample: ``[T, 1, 1]``."""
    return torch.tensor(values, dtype=torch.int64).reshape(-1, 1, 1)


def messages(config: SigmaDeltaConfig, values: list[int]) -> list[int]:
    return run_sigma_delta(config, one(values)).messages.reshape(-1).tolist()


# -- item 3: a delta (or error) of exactly -2^31 ---------------------------------------------------------------


@pytest.mark.parametrize("vth", [0, 1, 5])
def test_a_delta_of_minus_2_31_is_not_sent_and_stays_in_the_residue(vth):
    # t0: act = -2^31, delta = -2^31: int32 |delta| is -2^31 < vth, nothing sent, residue -2^31
    # t1: delta = 0 + residue = -2^31 again: nothing sent, residue kept
    # t2: delta = 1 + residue = -2^31 + 1, |delta| = 2^31 - 1 >= vth: sent, residue 0
    # t3: nothing changes: delta 0 (the residue went out with the message)
    config = SigmaDeltaConfig(vth=vth, activation="unit")
    assert messages(config, [LOW, 0, 1, 0]) == [0, 0, LOW + 1, 0]


def test_a_delta_of_minus_2_31_after_a_message_is_kept_until_the_next_change():
    # t0: act 5, sent (vth 0); t1: act = 5 - 2^31, delta = -2^31: nothing sent, residue -2^31
    # t2: sigma wraps to 4: delta = (4 - (5 - 2^31)) + residue = (2^31 - 1) - 2^31 = -1, sent, residue 0
    # t3: act 5, delta 1, sent. The messages sum to the last activation, 5.
    config = SigmaDeltaConfig(vth=0, activation="unit")
    assert messages(config, [5, LOW, HIGH, 1]) == [5, 0, -1, 1]


def test_cum_error_minus_2_31_is_not_sent_and_the_error_is_kept():
    # t0: delta = error = -2^31: |error| is -2^31 < 5, nothing sent, error and residue -2^31
    # t1: delta = 0 + residue = -2^31, error = -2^31 - 2^31 wraps to 0: nothing sent, residue -2^31
    # t2: delta = 1 - 2^31, error = 1 - 2^31, |error| >= 5: the delta is sent, error zeroed
    config = SigmaDeltaConfig(vth=5, activation="unit", cum_error=True)
    assert messages(config, [LOW, 0, 1, 0]) == [0, 0, LOW + 1, 0]


def test_cum_error_a_message_of_minus_2_31_does_not_zero_the_error():
    # t0: delta = error = 3 < 5: kept (residue 3)
    # t1: sigma = 3 + 2^31 - 3 wraps to -2^31, delta = -2^31 - 3 + 3 = -2^31, error = 3 - 2^31, |error| >= 5:
    #     the delta -2^31 is sent; Lava zeroes the error where int32 |message| > 0, and |-2^31| is negative:
    #     the error stays 3 - 2^31
    # t2: delta 0: |error| >= 5 sends the 0; t3: delta 1, error 4 - 2^31: sent although 1 < vth, error zeroed
    # t4: delta 1, error 1 < 5: kept
    config = SigmaDeltaConfig(vth=5, activation="unit", cum_error=True)
    assert messages(config, [3, 2**31 - 3, 0, 1, 1]) == [0, LOW, 0, 1, 0]


def lava_int32(a_in: np.ndarray, vth: int, bias: int, cum_error: bool, relu: bool, state_exp: int) -> np.ndarray:
    """Lava's fixed-point sigma-delta rule written out in numpy int32 (``lava/proc/sdn/models.py``): the
    sums wrap and ``np.abs`` keeps -2^31 negative, as in Lava's own numpy arithmetic. ``a_in`` ``[T, N]``."""
    n = a_in.shape[1]
    sigma, act, residue, error = (np.zeros(n, np.int32) for _ in range(4))
    vth32, bias32 = np.int32(vth), np.int32(bias)
    out = []
    with np.errstate(over="ignore"):
        for row in a_in.astype(np.int32):
            sigma = sigma + row
            new = sigma + bias32
            if relu:
                new = np.maximum(new, np.int32(0))
            delta = new - act + residue
            if cum_error:
                error = error + delta
                sent = np.where(np.abs(error) >= vth32, delta, np.int32(0)).astype(np.int32)
                error = np.where(np.abs(sent) > 0, np.int32(0), error).astype(np.int32)
            else:
                sent = np.where(np.abs(delta) >= vth32, delta, np.int32(0)).astype(np.int32)
            residue = delta - sent
            act = new
            out.append(np.right_shift(sent, np.int32(state_exp)))
    return np.stack(out).astype(np.int64)


EDGE = st.sampled_from([LOW, LOW + 1, HIGH, HIGH - 1, 2**30, -(2**30), 0, 1, -1, 3, -3])


@settings(max_examples=150, deadline=None)
@given(
    values=st.lists(st.one_of(EDGE, st.integers(LOW, HIGH)), min_size=8, max_size=8),
    vth=st.sampled_from([0, 1, 5, 2**30, HIGH]),
    bias=st.sampled_from([0, 7, -7, LOW, HIGH]),
    cum_error=st.booleans(),
    relu=st.booleans(),
    state_exp=st.sampled_from([0, 3]),
)
def test_the_rule_equals_lava_in_int32_at_the_edges(values, vth, bias, cum_error, relu, state_exp):
    a_in = np.array(values, dtype=np.int64).reshape(4, 2)
    config = SigmaDeltaConfig(
        vth=vth, bias=bias, cum_error=cum_error, activation="relu" if relu else "unit", state_exp=state_exp
    )
    ours = run_sigma_delta(config, torch.from_numpy(a_in).unsqueeze(1)).messages[:, 0].numpy()
    np.testing.assert_array_equal(ours, lava_int32(a_in, vth, bias, cum_error, relu, state_exp))


# -- item 4: integer registers beyond their width ----------------------------------------------------------------

CASES = [
    (lambda v: SigmaDeltaConfig(vth=v), 2**70, "vth", "1180591620717411303424"),
    (lambda v: SigmaDeltaConfig(vth=v), 2**31, "vth", "2147483648"),
    (lambda v: SigmaDeltaConfig(vth=v), torch.tensor([1, 2**40]), "vth", "1099511627776"),
    (lambda v: SigmaDeltaConfig(vth=1, bias=v), 2**70, "bias", "1180591620717411303424"),
    (lambda v: SigmaDeltaConfig(vth=1, bias=v), -(2**31) - 1, "bias", "-2147483649"),
    (lambda v: SigmaDeltaConfig(vth=1, bias=v), torch.tensor([0, -(2**33)]), "bias", "-8589934592"),
    (lambda v: ResonateFireConfig(100, 10, uth=v), 2**70, "uth", "1180591620717411303424"),
    (lambda v: ResonateFireConfig(100, 10, uth=v), -(2**31) - 1, "uth", "-2147483649"),
    (lambda v: ResonateFireConfig(100, 10, uth=v), 1.5, "uth", "1.5"),
    (lambda v: ResonateFireConfig(v, 10), 2**70, "lct", "1180591620717411303424"),
    (lambda v: ResonateFireConfig.from_frequency(10.0, 0.1, uth=v), 2**70, "uth", "1180591620717411303424"),
    (lambda v: AdaptiveLIFConfig(1, 1, bias_mant=v), 2**70, "bias_mant", "1180591620717411303424"),
    (lambda v: AdaptiveLIFConfig(1, 1, bias_exp=v), -(2**70), "bias_exp", "-1180591620717411303424"),
]


@pytest.mark.parametrize("call, value, argument, shown", CASES, ids=[f"{c[2]}={c[1]}" for c in CASES])
def test_an_integer_beyond_its_register_is_refused_by_name(call, value, argument, shown):
    with pytest.raises(ConfigError) as caught:
        call(value)
    message = str(caught.value)
    assert message.startswith(f"{argument}=") and shown in message and "accepted: " in message, message


def test_the_widest_int32_registers_are_accepted_and_run():
    config = SigmaDeltaConfig(vth=HIGH, bias=torch.tensor([LOW, HIGH]), activation="unit")
    run = run_sigma_delta(config, torch.zeros(2, 1, 2, dtype=torch.long))
    assert run.activation[0, 0].tolist() == [LOW, HIGH]
    assert ResonateFireConfig(100, 10, uth=LOW).uth == LOW and ResonateFireConfig(100, 10, uth=HIGH).uth == HIGH
    for message in ("vth", "int32"):  # the message says why: the register's width
        with pytest.raises(ConfigError, match=message):
            SigmaDeltaConfig(vth=2**31)


# -- item 5: devices, frequencies and tensors without data -----------------------------------------------------


def network() -> nn.Sequential:
    model = nn.Sequential(SigmaDelta(threshold=0.05, input="value"), nn.Linear(4, 3, bias=False))
    model.append(SigmaDelta(threshold=0.05, features=3))
    return model


def test_compile_on_cuda_without_cuda_names_the_device():
    with mock.patch.object(torch.cuda, "is_available", return_value=False):
        with pytest.raises(HybridAIError) as caught:
            loihi2.compile(network(), device="cuda")
    message = str(caught.value)
    assert "device='cuda'" in message and "'cpu'" in message, message


@pytest.mark.parametrize(
    "device, shown", [("cuda:99", "device='cuda:99'"), ("tpu", "device='tpu'"), ("meta", "meta"), (3, "device=3")]
)
def test_compile_names_a_device_it_cannot_use(device, shown):
    with pytest.raises(HybridAIError) as caught:
        loihi2.compile(network(), device=device)
    message = str(caught.value)
    assert shown in message and ("accepted" in message or "CUDA device(s)" in message), message


def test_compile_on_the_cpu_still_runs():
    x = torch.rand(5, 2, 4, generator=torch.Generator().manual_seed(0))
    for device in ("cpu", torch.device("cpu")):
        assert loihi2.compile(network(), device=device).run(x).outputs.shape == (5, 2, 3)


@pytest.mark.parametrize(
    "freqs, decay_tau, argument",
    [
        ("a", 0.1, "freqs"),
        (None, 0.1, "freqs"),
        ([1.0, "b"], 0.1, "freqs"),
        (True, 0.1, "freqs"),
        (1j, 0.1, "freqs"),
        (10.0, "a", "decay_tau"),
        (10.0, None, "decay_tau"),
        ([1.0, 2.0, 3.0], [0.1, 0.2], "decay_tau"),
    ],
)
def test_from_frequency_names_what_is_not_a_frequency(freqs, decay_tau, argument):
    with pytest.raises(ConfigError) as caught:
        ResonateFireConfig.from_frequency(freqs, decay_tau)
    message = str(caught.value)
    assert message.startswith(f"{argument}=") and "accepted: " in message, message


META = torch.zeros(3, 1, 2, dtype=torch.long, device="meta")


@pytest.mark.parametrize(
    "call, argument",
    [
        (lambda x: run_sigma_delta(SigmaDeltaConfig(vth=1), x), "a_in"),
        (lambda x: run_resonate_and_fire(ResonateFireConfig(100, 10), x), "u_in"),
        (lambda x: run_adaptive_lif(AdaptiveLIFConfig(1, 1), x), "a_in"),
        (lambda x: run_compartments(CompartmentConfig(), x), "q"),
        (lambda x: SigmaDeltaConfig(vth=x[0, 0]), "vth"),
    ],
)
def test_a_tensor_without_data_is_refused_naming_the_devices_accepted(call, argument):
    with pytest.raises(ShapeError) as caught:
        call(META)
    message = str(caught.value)
    assert message.startswith(f"{argument}.device=") and "meta" in message, message
    assert "accepted: " in message and "cpu" in message.lower() and "cuda" in message.lower(), message
