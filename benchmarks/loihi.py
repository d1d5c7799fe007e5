"""Question: how fast is hybridai's batched Loihi emulator against a straightforward per-sample numpy loop?

One chip layer: 100 inputs -> 1,000 Loihi 1 CUBA-LIF compartments (du 3000, dv 400, per-compartment
thresholds and biases, nengo-loihi rules: 22-bit q wrap, 24-bit u wrap, voltage clip, refractory
delay 2), even 8-bit weight mantissas with weight exponent 1, one step of synaptic delay, random
binary input spikes (p = 0.2), T = 200 steps, batch 64.

* hybridai: ``loihi.run_network`` (torch, all 64 samples at once, spikes and activity counts only)
* numpy: the same integer rules written out plainly, one sample at a time, each step a mat-vec and
  elementwise int64 arithmetic over the 1,000 compartments (what one writes without batching)

Both must produce identical spikes (checked, and printed). Reported: sample-steps per second
(T x batch / seconds, median of ``--repeats`` after one warm-up call each), the ratio (target >= 20x)
and the torch thread count.

    python benchmarks/loihi.py [--steps 200] [--batch 64] [--repeats 5] [--threads 1] [--device cpu]
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np
import torch
from machine import cpu_model

from hybridai.neuromorphic import loihi, loihi2

INPUTS, NEURONS = 100, 1000


def network(seed: int = 0) -> tuple[list[loihi.LoihiLayer], dict[str, np.ndarray]]:
    g = torch.Generator().manual_seed(seed)
    weights = 2 * torch.randint(-127, 128, (NEURONS, INPUTS), generator=g)
    config = loihi.CompartmentConfig(
        du=3000,
        dv=400,
        vth_mant=torch.randint(200, 400, (NEURONS,), generator=g),
        bias_mant=torch.randint(-200, 200, (NEURONS,), generator=g),
        bias_exp=3,
        refractory=2,
        vmin_exp=23,
        vmax_exp=7,
    )
    layer = loihi.LoihiLayer(weights, 1, config, "bench")
    registers = {k: v.numpy() for k, v in config.registers("cpu").items()}
    registers["weights"] = weights.numpy()
    return [layer], registers


def numpy_per_sample(counts: np.ndarray, r: dict[str, np.ndarray], weight_exp: int = 1) -> np.ndarray:
    """The nengo-loihi integer rules for one layer, one sample at a time (spikes [T, B, N] bool)."""
    steps, batch, _ = counts.shape
    per_spike = r["weights"].astype(np.int64) << (6 + weight_exp)
    keep_u, keep_v = 4095 - r["du"], 4096 - r["dv"]
    vth, bias = r["vth_mant"] << 6, r["bias_mant"] << r["bias_exp"]
    vmin, vmax = -(1 << r["vmin_exp"]) + 1, (1 << (9 + 2 * r["vmax_exp"])) - 1
    out = np.zeros((steps, batch, NEURONS), dtype=bool)

    def wrap(x: np.ndarray, bits: int) -> np.ndarray:
        return ((x + (1 << bits)) & ((1 << (bits + 1)) - 1)) - (1 << bits)

    def times(x: np.ndarray, factor: np.ndarray) -> np.ndarray:
        return np.sign(x) * ((np.abs(x) * factor) >> 12)

    for b in range(batch):
        u = np.zeros(NEURONS, dtype=np.int64)
        v = np.zeros(NEURONS, dtype=np.int64)
        counter = np.zeros(NEURONS, dtype=np.int64)
        previous = np.zeros(INPUTS, dtype=np.int64)  # one step of synaptic delay
        for t in range(steps):
            q = wrap(per_spike @ previous, 21)
            u = wrap(times(u, keep_u) + q, 23)
            u2 = wrap(u + bias, 23) if t >= 1 else u  # the layer's bias acts from step 1 (run_network)
            v = np.clip(times(v, keep_v) + u2, vmin, vmax)
            v[counter > 0] = 0
            spiked = v > vth
            v[spiked] = 0
            counter[spiked] = r["refractory"]
            counter = np.maximum(counter - 1, 0)
            out[t, b] = spiked
            previous = counts[t, b]
    return out


def timed(fn, repeats: int) -> tuple[float, object]:
    """Median wall time of ``repeats`` calls after one untimed warm-up call (allocator, caches)."""
    fn()
    times, result = [], None
    for _ in range(repeats):
        start = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times), result


SD_VTH, SD_WEIGHT_EXP = 16, -2


def sigma_delta_network(seed: int = 2) -> tuple[torch.Tensor, torch.Tensor]:
    """A graded Dense layer (mixed 8-bit weights, weight_exp -2) into 1,000 ReLU sigma-delta neurons."""
    g = torch.Generator().manual_seed(seed)
    return torch.randint(-128, 128, (NEURONS, INPUTS), generator=g), torch.randint(-20, 21, (NEURONS,), generator=g)


def sigma_delta_numpy(messages: np.ndarray, weights: np.ndarray, bias: np.ndarray) -> np.ndarray:
    """Lava's rules (graded Dense with its one-step buffer, fixed-point sigma-delta) one sample at a time, in
    numpy int32 as Lava's CPU models hold them."""
    steps, batch, _ = messages.shape
    w = ((np.clip(weights, -256, 255) >> 1) << 1).astype(np.int32)  # mixed signs: the lowest bit dropped
    out = np.zeros((steps, batch, NEURONS), dtype=np.int32)
    for b in range(batch):
        buffer = np.zeros(NEURONS, dtype=np.int32)
        sigma, act, residue = (np.zeros(NEURONS, dtype=np.int32) for _ in range(3))
        for t in range(steps):
            a_in, buffer = buffer, np.right_shift(w @ messages[t, b].astype(np.int32), -SD_WEIGHT_EXP)
            sigma = sigma + a_in
            new_act = np.maximum(sigma + bias.astype(np.int32), 0)
            delta = new_act - act + residue
            sent = np.where(np.abs(delta) >= SD_VTH, delta, 0).astype(np.int32)
            residue, act = delta - sent, new_act
            out[t, b] = sent
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--device", default="cpu", help="torch device of the emulator (the numpy loop is on the CPU)")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    layers, registers = network()
    g = torch.Generator().manual_seed(1)
    counts = (torch.rand(args.steps, args.batch, INPUTS, generator=g) < 0.2).long()

    device = torch.device(args.device)
    on_device = counts.to(device)

    def ours_run() -> torch.Tensor:
        spikes = loihi.run_network(layers, on_device, "nengo", record=())[0].spikes
        if device.type == "cuda":
            torch.cuda.synchronize()
        return spikes.cpu()

    ours_s, ours = timed(ours_run, args.repeats)
    numpy_s, reference = timed(lambda: numpy_per_sample(counts.numpy(), registers), max(1, args.repeats - 2))
    same = bool(np.array_equal(ours.numpy(), reference))
    sample_steps = args.steps * args.batch
    print(
        f"{INPUTS} inputs -> {NEURONS} compartments, T = {args.steps}, batch {args.batch}, "
        f"torch threads {torch.get_num_threads()}, emulator on {args.device}, {int(ours.sum()):,} spikes"
    )
    print(f"CPU: {cpu_model()}")
    print("| emulator | median s | sample-steps / s |")
    print("|---|---|---|")
    print(f"| hybridai loihi.run_network (torch, batched) | {ours_s:.3f} | {sample_steps / ours_s:,.0f} |")
    print(f"| numpy, one sample at a time | {numpy_s:.3f} | {sample_steps / numpy_s:,.0f} |")
    ratio = numpy_s / ours_s
    print(f"\nidentical spikes: {same}")
    print(f"speed-up {ratio:.1f}x (target >= 20x): {'met' if ratio >= 20 else 'NOT met'}")

    weights, bias = sigma_delta_network()
    graded = torch.randint(-8, 9, (args.steps, args.batch, INPUTS), generator=g)
    graded = graded * (torch.rand(graded.shape, generator=g) < 0.2)  # sparse graded input messages
    config = loihi2.SigmaDeltaConfig(vth=SD_VTH, bias=bias)
    on_device_graded = graded.to(device)

    def sigma_delta_run() -> torch.Tensor:
        synaptic = loihi2.graded_dense(weights, on_device_graded, weight_exp=SD_WEIGHT_EXP)
        messages = loihi2.run_sigma_delta(config, synaptic).messages
        if device.type == "cuda":
            torch.cuda.synchronize()
        return messages.cpu()

    sd_s, sd = timed(sigma_delta_run, args.repeats)
    sd_numpy_s, sd_reference = timed(
        lambda: sigma_delta_numpy(graded.numpy(), weights.numpy(), bias.numpy()), max(1, args.repeats - 2)
    )
    sd_same = bool(np.array_equal(sd.numpy(), sd_reference))
    sent = int((sd != 0).sum())
    print(
        f"\nLoihi 2 sigma-delta: graded Dense {INPUTS} -> {NEURONS} (weight_exp {SD_WEIGHT_EXP}) into ReLU "
        f"sigma-delta neurons (vth {SD_VTH}), T = {args.steps}, batch {args.batch}: {sent:,} messages "
        f"({sent / sd.numel():.1%} of the slots)"
    )
    print("| emulator | median s | sample-steps / s |")
    print("|---|---|---|")
    print(
        f"| hybridai loihi2.graded_dense + run_sigma_delta (torch, batched) | {sd_s:.3f} | {sample_steps / sd_s:,.0f} |"
    )
    print(f"| numpy int32, one sample at a time | {sd_numpy_s:.3f} | {sample_steps / sd_numpy_s:,.0f} |")
    sd_ratio = sd_numpy_s / sd_s
    print(f"\nidentical messages: {sd_same}")
    print(f"speed-up {sd_ratio:.1f}x (target >= 20x): {'met' if sd_ratio >= 20 else 'NOT met'}")
    if not (same and sd_same):
        raise SystemExit("the emulators disagree")


if __name__ == "__main__":
    main()
