"""The Loihi 1 compartment and synapse emulator against hand-computed integer traces, rule by rule.

Each trace below was worked out by hand from the rules in shared/reference/loihi.md (nengo-loihi's
emulator and Lava's bit-accurate models); comments show the arithmetic.
"""

import pytest
import torch

from hybridai.core.errors import HybridAIError
from hybridai.neuromorphic import loihi
from hybridai.neuromorphic.loihi import (
    CompartmentConfig,
    Compartments,
    LoihiLayer,
    run_compartments,
    run_network,
    synaptic_input,
)

BIG = 2**17 - 1  # a threshold mantissa no test trace reaches
OPEN = {"vmin_exp": 23, "vmax_exp": 7}  # v in +-(2^23 - 1)


def q_of(*values: int, n: int = 1) -> torch.Tensor:
    """A [T, 1, n] integer input with ``values`` over time (the same for every compartment)."""
    return torch.tensor(values, dtype=torch.int64).reshape(-1, 1, 1).expand(-1, 1, n).contiguous()


def trace(config: CompartmentConfig, q: torch.Tensor, quirks: str = "nengo") -> tuple[list, list, list]:
    out = run_compartments(config, q, quirks)
    return out.u[:, 0, 0].tolist(), out.v[:, 0, 0].tolist(), out.spikes[:, 0, 0].tolist()


@pytest.mark.parametrize("quirks", ["nengo", "lava"])
def test_voltage_decay_rounds_toward_zero(quirks):
    config = CompartmentConfig(du=4095, dv=2048, vth_mant=BIG, **OPEN)  # u = q; v keeps 2048/4096 = 1/2
    assert trace(config, q_of(7, 0, 0, 0), quirks)[1] == [7, 3, 1, 0]  # 3.5 -> 3, 1.5 -> 1, 0.5 -> 0
    assert trace(config, q_of(-7, 0, 0, 0), quirks)[1] == [-7, -3, -1, 0]  # floor would give -4, -2, -1


@pytest.mark.parametrize("quirks", ["nengo", "lava"])
def test_current_decay_has_offset_one(quirks):
    halves = CompartmentConfig(du=2047, dv=4095, vth_mant=BIG, **OPEN)  # (4096 - 1 - 2047) / 4096 = 1/2
    assert trace(halves, q_of(7, 0, 0, 0), quirks)[0] == [7, 3, 1, 0]
    assert trace(halves, q_of(-7, 0, 0, 0), quirks)[0] == [-7, -3, -1, 0]
    slowest = CompartmentConfig(du=0, dv=4095, vth_mant=BIG, **OPEN)  # du = 0 still decays: 4095/4096
    assert trace(slowest, q_of(4096, 0), quirks)[0] == [4096, 4095]
    assert trace(slowest, q_of(-4096, 0), quirks)[0] == [-4096, -4095]


def test_nengo_wraps_q_at_22_bits_and_u_at_24_bits():
    config = CompartmentConfig(du=4095, dv=4095, vth_mant=BIG, **OPEN)
    assert trace(config, q_of(2**21 - 1, 2**21, -(2**21) - 1))[0] == [2**21 - 1, -(2**21), 2**21 - 1]
    # du = 0 keeps 4095/4096 of u; q = 2^21 - 1 each step:
    # u1 = floor(2097151 * 4095 / 4096) + 2097151 = 2096639 + 2097151 = 4193790, u2 = 6289917, u3 = 8385532,
    # u4 = 8383484 + 2097151 = 10480635 > 2^23 - 1 -> 10480635 - 2^24 = -6296581
    accumulating = CompartmentConfig(du=0, dv=4095, vth_mant=BIG, **OPEN)
    u, _, _ = trace(accumulating, q_of(*[2**21 - 1] * 5))
    assert u == [2097151, 4193790, 6289917, 8385532, -6296581]


def test_nengo_adds_bias_to_u_and_wraps_the_sum():
    # bias = 4095 << 7 = 524160 goes into u2 = wrap(u + bias, 23); dv = 0 keeps v whole
    config = CompartmentConfig(du=0, dv=0, vth_mant=BIG, bias_mant=4095, bias_exp=7, **OPEN)
    u, v, s = trace(config, q_of(*[2**21 - 1] * 4))
    assert u == [2097151, 4193790, 6289917, 8385532]
    # u2 = 2621311, 4717950, 6814077, and 8385532 + 524160 = 8909692 wraps to -7867524;
    # v = 2621311, 7339261, 14153338 -> clipped to 2^23 - 1 = 8388607 > vth = 131071 << 6 = 8388544: spike,
    # reset to 0; then 0 - 7867524
    assert v == [2621311, 7339261, 0, -7867524]
    assert s == [False, False, True, False]


def test_lava_u_wrap_keeps_plus_two_to_the_23():
    config = CompartmentConfig(du=4095, dv=4095, vth_mant=BIG)
    u, _, _ = trace(config, q_of(2**23, 2**23 + 1, -(2**23), -(2**23) + 1, 2**22), "lava")
    # u > 2^23 -> u - 2^24; u <= -2^23 -> u + 2^24; Lava does not wrap q
    assert u == [2**23, -(2**23) + 1, 2**23, -(2**23) + 1, 2**22]


def test_lava_current_beyond_32_bits_decays_exactly():
    # Lava does not wrap q and wraps u once: 2^33 - 2^24 = 8573157376 stays far beyond 32 bits, and its decay
    # (du = 2047 keeps 1/2) is exact: 4286578688 - 2^24 = 4269801472 (the emulator's lanes widen to int64)
    config = CompartmentConfig(du=2047, dv=4095, vth_mant=BIG)
    u, _, _ = trace(config, q_of(2**33, 0, 0), "lava")
    assert u == [8573157376, 4269801472, 2118123520]
    # beyond 2^41 a float64 product rounds: 17701046620168 * 4095 / 4096 = 17696725075582.998 (float64 rounds to
    # ...583); du = 0 keeps 4095/4096, then Lava's wrap takes 2^24 off again
    slowest = CompartmentConfig(du=0, dv=4095, vth_mant=BIG)
    u, _, _ = trace(slowest, q_of(17701046620168 + 2**24, 0), "lava")
    assert u == [17701046620168, 17696725075582 - 2**24]


def test_lava_adds_bias_to_v_and_clips_v_symmetrically():
    config = CompartmentConfig(du=4095, dv=0, vth_mant=BIG, bias_mant=100, bias_exp=0, vmin_exp=0, vmax_exp=0)
    low = -(2**23) + 1
    u, v, s = trace(config, q_of(low, low, 2**23 - 10), "lava")
    assert u == [low, low, 2**23 - 10]
    # v = v + u + bias: -8388607 + 100 = -8388507; -8388507 - 8388607 + 100 -> clipped to -(2^23 - 1);
    # -8388607 + 8388598 + 100 = 91. vmin_exp = 0 (vmin 0 under nengo) is a nengo-loihi register: Lava ignores it
    assert v == [-8388507, low, 91] and s == [False, False, False]
    # 8388598 + 100 -> clipped to 2^23 - 1 = 8388607 > vth = 131071 << 6 = 8388544: a spike (vmax_exp 0 ignored)
    assert trace(config, q_of(2**23 - 10), "lava")[2] == [True]


def test_threshold_is_strict_and_reset_is_to_zero():
    config = CompartmentConfig(du=4095, dv=0, vth_mant=1, **OPEN)  # vth = 1 << 6 = 64; v integrates q
    for quirks in ("nengo", "lava"):
        _, v, s = trace(config, q_of(64, 0, 1, 1000, 5), quirks)
        assert s == [False, False, True, True, False]  # v == 64 does not spike, 65 does
        assert v == [64, 64, 0, 0, 5]  # reset to 0, not by subtraction (1000 - 64 would leave 936)


def test_nengo_refractory_holds_v_at_zero():
    config = CompartmentConfig(du=4095, dv=0, vth_mant=1, refractory=3, **OPEN)
    _, v, s = trace(config, q_of(*[100] * 6))
    # spike at 0 sets the counter to 3, decremented to 2; v held at 0 while the counter is > 0 (steps 1, 2)
    assert s == [True, False, False, True, False, False]
    assert v == [0, 0, 0, 0, 0, 0]
    _, v, s = trace(config, q_of(*[100] * 6), "lava")  # Lava has no refractory period
    assert s == [True] * 6
    one = CompartmentConfig(du=4095, dv=0, vth_mant=1, refractory=1, **OPEN)  # 1: counter back to 0 at once
    assert trace(one, q_of(*[100] * 3))[2] == [True, True, True]


def test_nengo_vmin_vmax_clip():
    floor0 = CompartmentConfig(du=4095, dv=0, vth_mant=BIG, vmin_exp=0, vmax_exp=0)  # vmin 0, vmax 2^9 - 1
    assert trace(floor0, q_of(-100, 300, 300))[1] == [0, 300, 511]
    floor7 = CompartmentConfig(du=4095, dv=0, vth_mant=BIG, vmin_exp=3, vmax_exp=1)  # vmin -7, vmax 2^11 - 1
    assert trace(floor7, q_of(-100, 5000))[1] == [-7, 2047]


def test_bias_exponent():
    config = CompartmentConfig(du=4095, dv=0, vth_mant=2, bias_mant=3, bias_exp=4, **OPEN)  # bias 48, vth 128
    for quirks in ("nengo", "lava"):
        _, v, s = trace(config, q_of(0, 0, 0, 0), quirks)
        assert v == [48, 96, 0, 48] and s == [False, False, True, False]  # 144 > 128 spikes
    negative = CompartmentConfig(du=4095, dv=0, vth_mant=2, bias_mant=-3, bias_exp=1, **OPEN)
    assert trace(negative, q_of(0, 0))[1] == [-6, -12]


def test_per_compartment_registers_and_batched_equals_per_sample():
    g = torch.Generator().manual_seed(0)
    n = 16
    config = CompartmentConfig(
        du=torch.randint(0, 4096, (n,), generator=g),
        dv=torch.randint(0, 4096, (n,), generator=g),
        vth_mant=torch.randint(0, 200, (n,), generator=g),
        bias_mant=torch.randint(-50, 50, (n,), generator=g),
        bias_exp=torch.randint(0, 8, (n,), generator=g),
        refractory=torch.randint(1, 4, (n,), generator=g),
        vmin_exp=torch.randint(0, 24, (n,), generator=g),
        vmax_exp=torch.randint(0, 8, (n,), generator=g),
    )
    q = torch.randint(-20000, 20000, (40, 5, n), generator=g)
    for quirks in ("nengo", "lava"):
        batched = run_compartments(config, q, quirks)
        assert batched.spikes.any() and not batched.spikes.all()
        for b in range(5):
            one = run_compartments(config, q[:, b : b + 1], quirks)
            assert torch.equal(one.u[:, 0], batched.u[:, b])
            assert torch.equal(one.v[:, 0], batched.v[:, b])
            assert torch.equal(one.spikes[:, 0], batched.spikes[:, b])
        column = run_compartments(CompartmentConfig(**{k: getattr(config, k)[3] for k in loihi.RANGES}), q[..., 3:4])
        assert torch.equal(column.spikes[..., 0], run_compartments(config, q).spikes[..., 3])


def test_synapse_weight_exponent_and_quirks():
    counts = torch.tensor([[[1, 1, 2]]])  # [T=1, B=1, F=3]
    w = torch.tensor([[2, -4, 6]])
    for quirks in ("nengo", "lava"):
        assert synaptic_input(counts, w, 0, quirks).item() == (2 - 4 + 12) * 64 == 640
        assert synaptic_input(counts, w, 2, quirks).item() == 640 * 4
    # negative exponent: nengo-loihi shifts each 7-bit weight right (w/2 = [1, -2, 3] >> 1 = [0, -1, 1]) then << 6
    assert synaptic_input(counts, w, -2, "nengo").item() == (0 - 64 + 2 * 64)
    # Lava shifts the summed input: (2 - 4 + 12) >> 2 = 2, then << 6
    assert synaptic_input(counts, w, -2, "lava").item() == 128


def test_weight_ranges_and_even_rule():
    mixed = torch.tensor([[3, -3, 5, -256, 255]])
    assert loihi.check_weights(mixed, 0, "lava").tolist() == [[2, -4, 4, -256, 254]]  # (w >> 1) << 1
    assert loihi.check_weights(torch.tensor([[3, 255]]), 0, "lava").tolist() == [[3, 255]]  # excitatory: all bits
    assert loihi.check_weights(torch.tensor([[-3, -255]]), 0, "lava").tolist() == [[-3, -255]]
    with pytest.raises(HybridAIError, match=r"-256.*inhibitory"):
        loihi.check_weights(torch.tensor([[-256, -2]]), 0, "lava")
    with pytest.raises(HybridAIError, match=r"256.*\[-256, 255\]"):
        loihi.check_weights(torch.tensor([[256, -2]]), 0, "lava")
    assert loihi.check_weights(torch.tensor([[254, -254, 0]]), 0, "nengo").tolist() == [[254, -254, 0]]
    with pytest.raises(HybridAIError, match=r"odd value 3.*even"):
        loihi.check_weights(torch.tensor([[3, -2]]), 0, "nengo")
    with pytest.raises(HybridAIError, match=r"-256.*\[-254, 254\]"):
        loihi.check_weights(torch.tensor([[-256]]), 0, "nengo")
    with pytest.raises(HybridAIError, match=r"weight_exp=8.*\[-8, 7\]"):
        loihi.check_weights(torch.tensor([[2]]), 8, "nengo")


@pytest.mark.parametrize("quirks", ["nengo", "lava"])
def test_network_delivers_spikes_one_step_late(quirks):
    relay = LoihiLayer(torch.tensor([[2]]), 0, CompartmentConfig(du=4095, dv=4095, vth_mant=1, **OPEN))
    counts = torch.tensor([1, 0, 0, 0]).reshape(4, 1, 1)
    first, second = run_network([relay, relay], counts, quirks)
    assert first.v_pre[:, 0, 0].tolist() == [0, 128, 0, 0]  # sent at 0, delivered at 1: 2 << 6 (then reset)
    assert first.spikes[:, 0, 0].tolist() == [False, True, False, False]
    assert second.spikes[:, 0, 0].tolist() == [False, False, True, False]
    assert first.synaptic_ops == 1 and second.synaptic_ops == 1


def test_register_and_input_errors_name_what_is_wrong():
    for name, value in [("du", 4096), ("dv", -1), ("vth_mant", 2**17), ("bias_mant", 4096), ("bias_exp", 8)]:
        with pytest.raises(HybridAIError, match=rf"{name}={value}.*accepted"):
            CompartmentConfig(**{name: value})
    with pytest.raises(HybridAIError, match=r"refractory.*\[0, 63\]"):
        CompartmentConfig(refractory=torch.tensor([1, 64]))
    with pytest.raises(HybridAIError, match=r"vmin_exp.*float|vmin_exp=1.5"):
        CompartmentConfig(vmin_exp=1.5)
    with pytest.raises(HybridAIError, match=r"q.dtype.*integer"):
        run_compartments(CompartmentConfig(), torch.zeros(3, 1, 2))
    with pytest.raises(HybridAIError, match=r"q.shape.*3 dimensions"):
        run_compartments(CompartmentConfig(), torch.zeros(3, 2, dtype=torch.int64))
    with pytest.raises(HybridAIError, match=r"du.shape.*\(2,\)"):
        run_compartments(CompartmentConfig(du=torch.tensor([1, 2, 3])), torch.zeros(3, 1, 2, dtype=torch.int64))
    with pytest.raises(HybridAIError, match=r"quirks='loihi2'.*nengo"):
        run_compartments(CompartmentConfig(), torch.zeros(3, 1, 2, dtype=torch.int64), quirks="loihi2")


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_cuda_matches_cpu():
    g = torch.Generator().manual_seed(1)
    config = CompartmentConfig(du=100, dv=300, vth_mant=50, bias_mant=7, bias_exp=3, refractory=2, **OPEN)
    q = torch.randint(-5000, 9000, (30, 4, 8), generator=g)
    cpu = run_compartments(config, q)
    gpu = run_compartments(config, q.cuda())
    assert gpu.spikes.is_cuda and torch.equal(gpu.spikes.cpu(), cpu.spikes) and torch.equal(gpu.v.cpu(), cpu.v)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_cuda_network_counts_activity_like_cpu():
    # per-compartment biases, some zero: activity of the unbiased compartments is gathered step by step
    g = torch.Generator().manual_seed(2)
    config = CompartmentConfig(du=100, dv=300, vth_mant=50, bias_mant=torch.tensor([0, 7, 0, -5]), bias_exp=3, **OPEN)
    layer = LoihiLayer(2 * torch.randint(-60, 60, (4, 6), generator=g), 0, config)
    counts = torch.randint(0, 2, (30, 3, 6), generator=g)
    (cpu,) = run_network([layer], counts)
    (gpu,) = run_network([layer], counts.cuda())
    assert torch.equal(gpu.spikes.cpu(), cpu.spikes) and gpu.active == cpu.active


@pytest.mark.parametrize("quirks", ["nengo", "lava"])
def test_synaptic_products_are_the_compartments_on_synaptic_input(quirks):
    # the network's per-step products equal synaptic_input's one product over all steps, then the compartments:
    # one input feature, counts above 1, negative exponents, weights down to -126 (a weight of -128 and binary
    # spikes is where oneDNN's int8 product goes wrong on AVX-512 CPUs without VNNI: not used)
    g = torch.Generator().manual_seed(3)
    config = CompartmentConfig(du=300, dv=200, vth_mant=20, bias_mant=torch.tensor([0, 5, -9, 0]), bias_exp=2, **OPEN)
    spiked = 0
    for features, weight_exp, most in [(1, 0, 3), (1, -5, 1), (7, 2, 1), (7, -8, 2), (40, 3, 1)]:
        low = -126 if quirks == "nengo" else -100
        weights = 2 * torch.randint(low // 2, 64, (4, features), generator=g)
        layers = [
            LoihiLayer(weights, weight_exp, config),
            LoihiLayer(2 * torch.ones(4, 4, dtype=torch.long), 1, config),
        ]
        counts = torch.randint(0, most + 1, (25, 3, features), generator=g)
        fast = run_network(layers, counts, quirks)
        q = synaptic_input(counts, weights, weight_exp, quirks)
        delayed = torch.cat([torch.zeros_like(q[:1]), q[:-1]])
        spiked += int(fast[0].spikes.sum())
        # the first layer is the compartments on its synaptic input one step late (its bias from step 1)
        first = Compartments(config, 4, "cpu", quirks).simulate(delayed, bias_from=1, record=("v",))
        assert torch.equal(first["spikes"], fast[0].spikes) and torch.equal(first["v"], fast[0].v)
    assert spiked
