"""Loihi 2's fixed-point sigma-delta neuron (Lava's PySigmaDeltaModelFixed): hand-computed integer traces,
batched equals per-sample, int32 wraps, and the torch SigmaDelta layer against the chip rule."""

from __future__ import annotations

import math

import pytest
import torch

from hybridai.core.errors import HybridAIError
from hybridai.neuromorphic.loihi2 import (
    ResonateFireConfig,
    SigmaDeltaConfig,
    effective_weights,
    graded_dense,
    run_resonate_and_fire,
    run_sigma_delta,
)
from hybridai.spiking import SigmaDelta


def one(values: list[int]) -> torch.Tensor:
    """One neuron, one sample: ``[T, 1, 1]``."""
    return torch.tensor(values, dtype=torch.int64).reshape(-1, 1, 1)


def trace(run, name: str) -> list[int]:
    return getattr(run, name).reshape(-1).tolist()


def test_relu_threshold_and_carried_residue_by_hand():
    run = run_sigma_delta(SigmaDeltaConfig(vth=3), one([2, 2, -1, 0, -5, 1]))
    assert trace(run, "sigma") == [2, 4, 3, 3, -2, -1]
    assert trace(run, "activation") == [2, 4, 3, 3, 0, 0]  # ReLU
    # t0: delta 2 < 3, kept as residue; t1: 4 - 2 + 2 = 4, sent; t2: 3 - 4 = -1, kept; t3: 3 - 3 - 1 = -1,
    # kept; t4: 0 - 3 - 1 = -4, sent; t5: 0 - 0 + 0 = 0. The messages sum to the final activation.
    assert trace(run, "messages") == [0, 4, 0, 0, -4, 0]


def test_unit_activation_with_bias_by_hand():
    run = run_sigma_delta(SigmaDeltaConfig(vth=3, bias=1, activation="unit"), one([2, 2, -1, 0, -5, 1]))
    assert trace(run, "activation") == [3, 5, 4, 4, -1, 0]  # sigma + 1, negative values kept
    # t0: 3, sent; t1: 5 - 3 = 2, kept; t2: 4 - 5 + 2 = 1, kept; t3: 4 - 4 + 1 = 1, kept;
    # t4: -1 - 4 + 1 = -4, sent; t5: 0 + 1 + 0 = 1, kept
    assert trace(run, "messages") == [3, 0, 0, 0, -4, 0]


def test_cum_error_accumulates_its_own_error_by_hand():
    x = one([1, 1, 1, 1, 0])
    plain = run_sigma_delta(SigmaDeltaConfig(vth=3), x)
    # deltas 1, 1 + 1 = 2, 1 + 2 = 3 (sent), 1, 0 + 1 = 1
    assert trace(plain, "messages") == [0, 0, 3, 0, 0]
    cumulative = run_sigma_delta(SigmaDeltaConfig(vth=3, cum_error=True), x)
    # t0: delta 1, error 1; t1: delta 2 - 1 + 1 = 2, error 3 >= 3: send the delta (2), error 0;
    # t2: delta 1, error 1; t3: delta 2, error 3: send 2; t4: delta 0, error 0
    assert trace(cumulative, "messages") == [0, 2, 0, 2, 0]


def test_state_exp_shifts_the_message_with_floor():
    run = run_sigma_delta(SigmaDeltaConfig(vth=4, state_exp=2), one([5, 0, 6, -3]))
    # sent 5 -> 5 >> 2 = 1; 0; 11 - 5 = 6 -> 1; 8 - 11 = -3 below the threshold
    assert trace(run, "messages") == [1, 0, 1, 0]
    negative = run_sigma_delta(SigmaDeltaConfig(vth=4, state_exp=2, activation="unit"), one([-5]))
    assert trace(negative, "messages") == [-2]  # -5 >> 2 = floor(-1.25)


def test_states_wrap_at_32_bits_as_numpy_int32_does():
    run = run_sigma_delta(SigmaDeltaConfig(vth=0, activation="unit"), one([2**31 - 1, 1]))
    assert trace(run, "sigma") == [2**31 - 1, -(2**31)]
    # delta -2^31 - (2^31 - 1) = 1 - 2^32 wraps to 1
    assert trace(run, "messages") == [2**31 - 1, 1]


def test_per_neuron_registers_and_batched_equals_per_sample():
    g = torch.Generator().manual_seed(0)
    x = torch.randint(-6, 7, (30, 5, 4), generator=g)
    for cum_error in (False, True):
        config = SigmaDeltaConfig(
            vth=torch.tensor([0, 2, 5, 9]), bias=torch.tensor([-3, 0, 2, 7]), state_exp=1, cum_error=cum_error
        )
        batched = run_sigma_delta(config, x)
        for b in range(5):
            alone = run_sigma_delta(config, x[:, b : b + 1])
            for name in ("sigma", "activation", "messages"):
                assert torch.equal(getattr(batched, name)[:, b : b + 1], getattr(alone, name))
        assert batched.messages.any() and not batched.messages.all()  # some sent, some not


@pytest.mark.parametrize("vth", [1, 3, 7])
def test_the_torch_layer_carrying_its_residue_equals_the_chip_rule(vth):
    """SigmaDelta(cum_error=True) (the layer sends the change against what it already sent) is Lava's default
    fixed-point rule, message for message, on integer inputs with scale 1."""
    x = torch.randint(-5, 6, (40, 3, 6), generator=torch.Generator().manual_seed(vth))
    layer = SigmaDelta(threshold=vth, scale=1.0, bias=2.0, cum_error=True)
    with torch.no_grad():
        messages = layer(x.double())
    chip = run_sigma_delta(SigmaDeltaConfig(vth=vth, bias=2), x)
    assert torch.equal(messages.long(), chip.messages)
    assert chip.messages.ne(0).sum() > 0


def test_bad_registers_and_inputs_name_the_argument():
    for kwargs, name in (
        ({"vth": -1}, "vth"),
        ({"vth": 1.5}, "vth"),
        ({"vth": 1, "activation": "tanh"}, "activation"),
        ({"vth": 1, "state_exp": 40}, "state_exp"),
        ({"vth": 1, "cum_error": 1}, "cum_error"),
        ({"vth": torch.ones(2, 2, dtype=torch.long)}, "vth"),
    ):
        with pytest.raises(HybridAIError, match=name):
            SigmaDeltaConfig(**kwargs)
    with pytest.raises(HybridAIError, match="a_in"):
        run_sigma_delta(SigmaDeltaConfig(vth=1), torch.rand(3, 1, 2))
    with pytest.raises(HybridAIError, match="config.vth"):
        run_sigma_delta(SigmaDeltaConfig(vth=torch.tensor([1, 2, 3])), torch.zeros(3, 1, 2, dtype=torch.long))
    with pytest.raises(HybridAIError, match="config"):
        run_sigma_delta({"vth": 1}, torch.zeros(3, 1, 2, dtype=torch.long))


# ------------------------------------------------------------------ graded Dense (Lava's PyDenseModelBitAcc)


def steps(rows: list[list[int]]) -> torch.Tensor:
    """Messages of one sample: ``[T, 1, N]``."""
    return torch.tensor(rows, dtype=torch.int64).unsqueeze(1)


def test_mixed_weights_lose_their_lowest_bit_and_arrive_one_step_late():
    w = torch.tensor([[3, -2], [1, 4]])
    assert effective_weights(w).tolist() == [[2, -2], [0, 4]]  # mixed: (w >> 1) << 1
    s = steps([[5, 1], [0, -3], [2, 2]])
    # t0: the empty buffer; t1: W s0 = [10 - 2, 0 + 4]; t2: W s1 = [0 + 6, -12]; W s2 never arrives
    assert graded_dense(w, s).squeeze(1).tolist() == [[0, 0], [8, 4], [6, -12]]
    assert graded_dense(w, s, weight_exp=1).squeeze(1).tolist() == [[0, 0], [16, 8], [12, -24]]
    # negative exponent: arithmetic right shift, floor for negatives (-12 >> 2 = -3, 6 >> 2 = 1)
    assert graded_dense(w, s, weight_exp=-2).squeeze(1).tolist() == [[0, 0], [2, 1], [1, -3]]


def test_truncation_to_fewer_weight_bits_per_sign_mode():
    excitatory = torch.tensor([[3, 1], [255, 7]])
    assert effective_weights(excitatory, num_weight_bits=6).tolist() == [[0, 0], [252, 4]]  # 2 bits cleared
    out = graded_dense(excitatory, steps([[1, 2], [0, 0]]), num_weight_bits=6)
    assert out.squeeze(1).tolist() == [[0, 0], [0, 252 + 8]]
    inhibitory = torch.tensor([[-3, -5]])
    assert effective_weights(inhibitory, num_weight_bits=7).tolist() == [[-2, -4]]  # on magnitudes: 3 -> 2, 5 -> 4
    mixed = torch.tensor([[-3, 5]])
    assert effective_weights(mixed, num_weight_bits=7).tolist() == [[-4, 4]]  # 2 bits: floor(-3 / 4) * 4 = -4
    # a sign mode given by hand decides the clip: mixed weights under "excitatory" lose their negative part
    assert effective_weights(mixed, sign_mode="excitatory").tolist() == [[0, 5]]


def test_weights_beyond_eight_bits_are_clipped():
    assert effective_weights(torch.tensor([[300, 2]])).tolist() == [[255, 2]]
    assert effective_weights(torch.tensor([[-300, 2]])).tolist() == [[-256, 2]]
    assert effective_weights(torch.tensor([[-300, -2]])).tolist() == [[-255, -2]]


def test_graded_dense_batched_equals_per_sample_and_feeds_sigma_delta():
    g = torch.Generator().manual_seed(1)
    w = torch.randint(-128, 128, (6, 5), generator=g)
    s = torch.randint(-20, 21, (12, 4, 5), generator=g)
    batched = graded_dense(w, s, weight_exp=-3)
    for b in range(4):
        assert torch.equal(batched[:, b : b + 1], graded_dense(w, s[:, b : b + 1], weight_exp=-3))
    reference = torch.zeros_like(batched)
    reference[1:] = torch.floor((s[:-1].double() @ effective_weights(w).double().T) / 8).long()
    assert torch.equal(batched, reference)
    run = run_sigma_delta(SigmaDeltaConfig(vth=4), batched)  # a second layer on the delivered input
    assert run.messages.shape == (12, 4, 6) and run.messages.ne(0).any()


def test_bad_dense_arguments_name_themselves():
    w, s = torch.ones(2, 3, dtype=torch.long), torch.zeros(4, 1, 3, dtype=torch.long)
    with pytest.raises(HybridAIError, match="messages.shape"):
        graded_dense(w, torch.zeros(4, 1, 2, dtype=torch.long))
    with pytest.raises(HybridAIError, match="num_weight_bits"):
        graded_dense(w, s, num_weight_bits=9)
    with pytest.raises(HybridAIError, match="weight_exp"):
        graded_dense(w, s, weight_exp=40)
    with pytest.raises(HybridAIError, match="sign_mode"):
        graded_dense(w, s, sign_mode="both")
    with pytest.raises(HybridAIError, match="weights"):
        graded_dense(torch.rand(2, 3), s)


# ------------------------------------------------------------------ resonate-and-fire (Lava's RFZero)


def test_registers_from_frequency_as_lava_truncates_them():
    quarter = ResonateFireConfig.from_frequency(250.0, 1e9)  # 2 pi 250 Hz x 1 ms = a quarter turn, no decay
    assert (quarter.lct, quarter.lst) == (0, 32767)  # cos ~ 6e-17 and sin x (1 - 1e-12) x 2^15, truncated
    group = ResonateFireConfig.from_frequency([0.0, 125.0], [0.01, 0.01])
    decay = math.exp(-0.1)
    assert group.lct.tolist() == [int(decay * 2**15), int(decay * math.cos(math.pi / 4) * 2**15)]
    assert group.lst.tolist() == [0, int(decay * math.sin(math.pi / 4) * 2**15)]


def test_quarter_turn_rotation_fires_at_the_zero_crossing_by_hand():
    config = ResonateFireConfig(lct=0, lst=32767, uth=1)
    run = run_resonate_and_fire(config, one([100, 0, 0, 0, 0, 0]))
    # u' = floor(u lct / 2^15) - floor(v lst / 2^15) + u_in, v' = floor(v lct / 2^15) + floor(u lst / 2^15):
    # t1: v' = floor(100 x 32767 / 32768) = 99; t2: u' = -floor(98.997) = -98; t3: v' = floor(-97.997) = -98;
    # t4: u' = -floor(-97.997) = 98 while v goes from -98 to 0: the phase crosses zero with u' = 98 > 1
    assert trace(run, "u") == [100, 0, -98, 0, 98, 0]
    assert trace(run, "v") == [0, 99, 0, -98, 0, 97]
    assert trace(run, "spikes") == [0, 0, 0, 0, 98, 0]
    quiet = run_resonate_and_fire(ResonateFireConfig(lct=0, lst=32767, uth=98), one([100, 0, 0, 0, 0, 0]))
    assert not quiet.spikes.any()  # 98 is not above a threshold of 98


def test_decaying_rotation_by_hand_and_v_input():
    config = ResonateFireConfig(lct=2**14, lst=2**14)  # (1 + i) / 2 per step
    run = run_resonate_and_fire(config, one([8, 0, 0]), one([0, 0, 4]))
    # t1: u' = 4 - 0 = 4, v' = 0 + 4 = 4; t2: u' = 2 - 2 = 0, v' = 2 + 2 + 4 (v_in) = 8
    assert trace(run, "u") == [8, 4, 0]
    assert trace(run, "v") == [0, 4, 8]


def test_products_wrap_at_32_bits_as_numpy_int32_does():
    run = run_resonate_and_fire(ResonateFireConfig(lct=2**15, lst=0), one([2**17, 0]))
    # u x lct = 2^17 x 2^15 = 2^32 wraps to 0 in int32 (Lava's registers), so u' = 0
    assert trace(run, "u") == [2**17, 0]


def test_resonate_batched_equals_per_sample():
    g = torch.Generator().manual_seed(2)
    config = ResonateFireConfig.from_frequency([5.0, 40.0, 90.0], [0.05, 0.2, 0.02], uth=3)
    u_in = torch.randint(-50, 51, (60, 4, 3), generator=g)
    v_in = torch.randint(-50, 51, (60, 4, 3), generator=g)
    batched = run_resonate_and_fire(config, u_in, v_in)
    for b in range(4):
        alone = run_resonate_and_fire(config, u_in[:, b : b + 1], v_in[:, b : b + 1])
        assert all(torch.equal(x[:, b : b + 1], y) for x, y in zip(batched, alone, strict=True))
    assert batched.spikes.ne(0).any()


def test_bad_resonate_arguments_name_themselves():
    with pytest.raises(HybridAIError, match="lct"):
        ResonateFireConfig(lct=40000, lst=0)
    with pytest.raises(HybridAIError, match="uth"):
        ResonateFireConfig(lct=0, lst=0, uth=0.5)
    with pytest.raises(HybridAIError, match="decay_tau"):
        ResonateFireConfig.from_frequency(10.0, 0.0)
    with pytest.raises(HybridAIError, match="v_in.shape"):
        run_resonate_and_fire(ResonateFireConfig(0, 0), one([1, 2]), one([1]))
