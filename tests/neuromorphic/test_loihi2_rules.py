"""Loihi 2's fixed-point sigma-delta neuron (Lava's PySigmaDeltaModelFixed): hand-computed integer traces,
batched equals per-sample, int32 wraps, and the torch SigmaDelta layer against the chip rule; likewise graded
Dense, resonate-and-fire (RFZero) and adaptive-threshold LIF (ATRLIF) neurons."""

from __future__ import annotations

import math

import pytest
import torch

from hybridai.core.errors import HybridAIError
from hybridai.neuromorphic.loihi2 import (
    AdaptiveLIFConfig,
    ResonateFireConfig,
    SigmaDeltaConfig,
    effective_weights,
    graded_dense,
    run_adaptive_lif,
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


# ------------------------------------------------------------------ adaptive-threshold LIF (Lava's ATRLIF)

QUIET = 2**17  # theta_0 << 6 = 2^23 is above the largest voltage (2^23 - 1): no spikes


def test_current_decay_with_the_offset_of_one_by_hand():
    impulse = one([128, 0, 0, 0, 0, 0, 0, 0])
    halving = run_adaptive_lif(AdaptiveLIFConfig(theta_0=QUIET, theta_step=0, delta_i=2047), impulse)
    # a_in << 6 = 8192; the current keeps 4096 - 2047 - 1 = 2048 / 4096 per step (Lava's delta_i 0.5 - 2^-12)
    assert trace(halving, "i") == [8192, 4096, 2048, 1024, 512, 256, 128, 64]
    assert trace(halving, "v") == [8192, 12288, 14336, 15360, 15872, 16128, 16256, 16320]  # no voltage decay
    assert not halving.spikes.any() and trace(halving, "theta") == [QUIET << 6] * 8
    leaky = run_adaptive_lif(AdaptiveLIFConfig(theta_0=QUIET, theta_step=0, delta_v=2048), impulse)
    # delta_i = 0 still keeps 4095 / 4096: 8192 -> 8190 -> trunc(8188.0005) = 8188 -> 8186
    assert trace(leaky, "i")[:4] == [8192, 8190, 8188, 8186]
    # v = trunc(v / 2) + i: 4096 + 8190 = 12286; 6143 + 8188 = 14331; trunc(7165.5) + 8186 = 15351
    # (Lava's own test_bitacc_pm_impulse_delta_v expects exactly these)
    assert trace(leaky, "v") == [8192, 12286, 14331, 15351, 15859, 16111, 16235, 16295]


def test_bias_from_mantissa_and_exponent_and_voltage_decay_toward_zero_by_hand():
    config = AdaptiveLIFConfig(
        theta_0=QUIET, theta_step=0, delta_v=1024, bias_mant=torch.tensor([3, -5]), bias_exp=torch.tensor([2, -1])
    )
    run = run_adaptive_lif(config, torch.zeros(4, 1, 2, dtype=torch.long))
    # bias 3 << 2 = 12 and -5 >> 1 = floor(-2.5) = -3; v keeps 3072 / 4096, truncated toward zero:
    # 12, trunc(9) + 12 = 21, trunc(15.75) + 12 = 27, trunc(20.25) + 12 = 32
    assert run.v[:, 0, 0].tolist() == [12, 21, 27, 32]
    # -3, trunc(-2.25) - 3 = -5, trunc(-3.75) - 3 = -6, trunc(-4.5) - 3 = -7
    assert run.v[:, 0, 1].tolist() == [-3, -5, -6, -7]
    assert not run.i.any()


def test_threshold_steps_up_after_a_spike_and_decays_back_to_theta_0_by_hand():
    # no memory in i or v (v = i = a_in << 6), r gone the next step, theta - theta_0 halves each step
    config = AdaptiveLIFConfig(theta_0=1, theta_step=2, delta_i=4095, delta_v=4096, delta_theta=2048, delta_r=4096)
    run = run_adaptive_lif(config, one([1, 0, 0, 1, 2, 0, 0, 0, 0, 0, 0, 0, 0]))
    assert trace(run, "v") == [64, 0, 0, 64, 128, 0, 0, 0, 0, 0, 0, 0, 0]
    # t0: 64 - 0 >= theta 64: spike, r = 0 + 2 x 64 = 128, theta = 64 + (2 << 6) = 192; t1: 64 + (192 - 64) / 2
    # = 128; t2: 96; t3: 80 and v = 64 stays below it; t4: 72 <= 128: spike, r = 2 x 72, theta = 72 + 128 = 200;
    # then 64 + trunc(136 / 2) = 132, 98, 81, trunc(8.5) + 64 = 72, 68, 66, 65 and back to 64
    assert trace(run, "spikes") == [1, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0]
    assert trace(run, "theta") == [192, 128, 96, 80, 200, 132, 98, 81, 72, 68, 66, 65, 64]
    assert trace(run, "r") == [128, 0, 0, 0, 144, 0, 0, 0, 0, 0, 0, 0, 0]
    fresh = run_adaptive_lif(config, one([0, 0, 0, 1]))  # the same input at t3 fires a neuron at theta_0
    assert trace(fresh, "spikes") == [0, 0, 0, 1]


def test_refractory_state_subtracts_from_v_which_is_never_reset_by_hand():
    ramp = torch.zeros(12, 1, 1, dtype=torch.long)
    held = run_adaptive_lif(AdaptiveLIFConfig(theta_0=2, theta_step=0, bias_mant=1, bias_exp=5), ramp)
    # bias 1 << 5 = 32 per step, v = 32 (t + 1), theta = 2 << 6 = 128: t3: 128 - 0 fires, r = 2 x 128 = 256;
    # r does not decay, so the next spike needs v - 256 >= 128: v = 384 at t11
    assert trace(held, "v") == [32 * (t + 1) for t in range(12)]
    assert trace(held, "spikes") == [0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 1]
    assert trace(held, "r") == [0, 0, 0] + [256] * 8 + [512]
    config = AdaptiveLIFConfig(theta_0=2, theta_step=0, delta_r=2048, bias_mant=1, bias_exp=5)
    fading = run_adaptive_lif(config, ramp[:10])
    # r halves before each comparison: t4: 160 - 128 = 32 < 128; t5: 192 - 64 = 128 fires, r = 64 + 256 = 320;
    # t6: 224 - 160 = 64; t7: 256 - 80 = 176 fires, r = 336; t8: 288 - 168 = 120; t9: 320 - 84 = 236 fires
    assert trace(fading, "spikes") == [0, 0, 0, 1, 0, 1, 0, 1, 0, 1]
    assert trace(fading, "r") == [0, 0, 0, 256, 128, 320, 160, 336, 168, 340]


def test_current_folds_at_24_bits_and_voltage_clips_as_lava_does():
    config = AdaptiveLIFConfig(theta_0=QUIET, theta_step=0)
    run = run_adaptive_lif(config, one([2**17, 2**17]))
    # t0: i = 2^17 << 6 = 2^23 survives (only values above 2^23 fold), v clips to 2^23 - 1;
    # t1: trunc(2^23 x 4095 / 4096) + 2^23 = 16775168 > 2^23 folds to 16775168 - 2^24 = -2048
    assert trace(run, "i") == [2**23, -2048]
    assert trace(run, "v") == [2**23 - 1, 2**23 - 1 - 2048]
    low = run_adaptive_lif(config, one([-(2**17)]))
    assert trace(low, "i") == [2**23]  # -2^23 is at or below -2^23: + 2^24


def test_adaptive_bias_shift_and_input_wrap_at_32_bits_as_numpy_int32_does():
    config = AdaptiveLIFConfig(theta_0=0, theta_step=0, bias_mant=torch.tensor([4095, 0]), bias_exp=20)
    run = run_adaptive_lif(config, torch.tensor([[[0, 2**25 + 1]], [[0, 0]]]))
    # 4095 << 20 = 4293918720 wraps to -1048576 (Lava shifts an int32); v keeps it: -1048576, -2097152
    assert run.v[:, 0, 0].tolist() == [-1048576, -2097152]
    # (2^25 + 1) << 6 = 2^31 + 64 wraps to -2^31 + 64, then folds: + 2^24; v clips to -(2^23 - 1)
    assert run.i[0, 0, 1].item() == -(2**31) + 64 + 2**24
    assert run.v[0, 0, 1].item() == -(2**23 - 1)
    assert not run.spikes.any()  # v - r = v < theta = 0


def test_adaptive_lif_batched_equals_per_sample():
    g = torch.Generator().manual_seed(3)
    config = AdaptiveLIFConfig(
        theta_0=20,
        theta_step=6,
        delta_i=500,
        delta_v=300,
        delta_theta=200,
        delta_r=800,
        bias_mant=torch.tensor([0, 5, -3, 12, 1]),
        bias_exp=torch.tensor([0, 3, 2, 1, -1]),
    )
    a_in = torch.randint(-8, 20, (50, 3, 5), generator=g)
    batched = run_adaptive_lif(config, a_in)
    for b in range(3):
        alone = run_adaptive_lif(config, a_in[:, b : b + 1])
        assert all(torch.equal(x[:, b : b + 1], y) for x, y in zip(batched, alone, strict=True))
    assert batched.spikes.any() and not batched.spikes.all()
    assert bool((batched.theta > 20 << 6).any())  # some thresholds were raised


def test_bad_adaptive_arguments_name_themselves():
    for kwargs, name in (
        ({"delta_i": 4096}, "delta_i"),
        ({"delta_v": -1}, "delta_v"),
        ({"delta_r": 4097}, "delta_r"),
        ({"theta_0": 1.5}, "theta_0"),
        ({"theta_step": 2**25}, "theta_step"),
        ({"bias_mant": 2**15}, "bias_mant"),
        ({"bias_exp": torch.tensor([0, 32])}, "bias_exp"),
        ({"bias_exp": torch.zeros(2, 2, dtype=torch.long)}, "bias_exp"),
        ({"delta_theta": True}, "delta_theta"),
    ):
        with pytest.raises(HybridAIError, match=name):
            AdaptiveLIFConfig(**{"theta_0": 1, "theta_step": 1, **kwargs})
    config = AdaptiveLIFConfig(theta_0=1, theta_step=1)
    with pytest.raises(HybridAIError, match="a_in"):
        run_adaptive_lif(config, torch.rand(3, 1, 2))
    with pytest.raises(HybridAIError, match="a_in"):
        run_adaptive_lif(config, torch.zeros(3, 2, dtype=torch.long))
    with pytest.raises(HybridAIError, match="config.bias_mant"):
        run_adaptive_lif(AdaptiveLIFConfig(1, 1, bias_mant=torch.tensor([1, 2, 3])), torch.zeros(3, 1, 2).long())
    with pytest.raises(HybridAIError, match="config"):
        run_adaptive_lif({"theta_0": 1}, torch.zeros(3, 1, 2, dtype=torch.long))
