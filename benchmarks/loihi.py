"""Question: how fast is hybridai's batched Loihi emulator against a straightforward per-sample numpy loop?

One chip layer: 100 inputs -> 1,000 Loihi 1 CUBA-LIF compartments (du 3000, dv 400, per-compartment
thresholds and biases, nengo-loihi rules: 22-bit q wrap, 24-bit u wrap, voltage clip, refractory
delay 2), even 8-bit weight mantissas with weight exponent 1, one step of synaptic delay, random
binary input spikes (p = 0.2), T = 200 steps, batch 64.

* hybridai: ``loihi.run_network`` (torch, all 64 samples at once, spikes and activity counts only; int32 lanes,
  synaptic sums as int8 products where torch's CPU kernels use AVX-512, float32 GEMMs elsewhere)
* numpy: the same integer rules written out plainly, one sample at a time, each step a mat-vec and
  elementwise int64 arithmetic over the 1,000 compartments (what one writes without batching)

Both must produce identical spikes (checked, and printed). Reported: sample-steps per second
(T x batch / seconds, median of ``--repeats`` calls, two fewer for numpy, interleaved with ours so that both
meet the same load, after one warm-up call each), the ratio (target >= 20x)
and the torch thread count.

Then a Loihi 2 sigma-delta network on one aligned clock (layer l at step t receives layer l-1's messages of
step t; no Dense one-step buffer): an input group of 100 ReLU sigma-delta neurons (vth 2, bias 0) fed sparse
graded host input (integers in [-8, 8], about 20 % non-zero), a graded Dense 100 -> 1,000 (mixed 8-bit
weights, weight_exp -5) into 1,000 ReLU sigma-delta neurons (vth 16, per-neuron biases), and a graded Dense
1,000 -> 1,000 (weight_exp -9) into 1,000 more (vth 16), same T and batch:

* hybridai: ``loihi2.run_graded_network`` (torch, all samples at once)
* numpy: Lava's fixed-point rules in int32, one sample at a time, the three layers stepped together

Every layer's messages must be identical (checked, and printed), with the same report and target.

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


def timed_side_by_side(ours, peer, repeats: int) -> tuple[float, object, float, object]:
    """Median wall times of ``ours`` (``repeats`` calls) and ``peer`` (``max(1, repeats - 2)`` calls), the calls
    interleaved (one of ours, then one of the peer's, round after round) so that both meet the same load on a
    shared machine, after one untimed warm-up call each (allocator, caches). Returns (ours s, ours' result,
    peer s, peer's result)."""
    ours(), peer()
    ours_times, peer_times, ours_result, peer_result = [], [], None, None
    for round_ in range(repeats):
        start = time.perf_counter()
        ours_result = ours()
        ours_times.append(time.perf_counter() - start)
        if round_ < max(1, repeats - 2):
            start = time.perf_counter()
            peer_result = peer()
            peer_times.append(time.perf_counter() - start)
    return statistics.median(ours_times), ours_result, statistics.median(peer_times), peer_result


SD_INPUT_VTH, SD_VTH, SD_WEIGHT_EXP, SD_WEIGHT_EXP_2 = 2, 16, -5, -9


def sigma_delta_network(seed: int = 2) -> tuple[torch.Tensor, torch.Tensor]:
    """A graded Dense layer (mixed 8-bit weights, weight_exp -5) into 1,000 ReLU sigma-delta neurons."""
    g = torch.Generator().manual_seed(seed)
    return torch.randint(-128, 128, (NEURONS, INPUTS), generator=g), torch.randint(-20, 21, (NEURONS,), generator=g)


def sigma_delta_second(seed: int = 3) -> tuple[torch.Tensor, torch.Tensor]:
    """The second graded Dense layer (1,000 -> 1,000, mixed 8-bit weights) and its neurons' biases."""
    g = torch.Generator().manual_seed(seed)
    return torch.randint(-128, 128, (NEURONS, NEURONS), generator=g), torch.randint(-20, 21, (NEURONS,), generator=g)


def sigma_delta_numpy(
    a_in: np.ndarray, dense: list[tuple[np.ndarray, np.ndarray, int]], input_vth: int = SD_INPUT_VTH
) -> list[np.ndarray]:
    """Lava's fixed-point sigma-delta rules for the network on one aligned clock (graded Dense without its
    one-step buffer), one sample at a time, in numpy int32 as Lava's CPU models hold them. ``dense``: per layer
    after the input group, (weights, bias, weight_exp). Returns every layer's messages [T, B, N]."""
    steps, batch, features = a_in.shape
    # mixed signs: clipped to 8 bits and the lowest bit dropped (Lava's truncation)
    synapses = [(((np.clip(w, -256, 255) >> 1) << 1).astype(np.int32), -exp) for w, _, exp in dense]
    biases = [np.zeros(features, dtype=np.int32)] + [b.astype(np.int32) for _, b, _ in dense]
    vths = [input_vth] + [SD_VTH] * len(dense)
    sizes = [len(b) for b in biases]
    out = [np.zeros((steps, batch, n), dtype=np.int32) for n in sizes]
    for b in range(batch):
        states = [tuple(np.zeros(n, dtype=np.int32) for _ in range(3)) for n in sizes]  # sigma, act, residue
        for t in range(steps):
            x = a_in[t, b].astype(np.int32)
            for layer, (sigma, act, residue) in enumerate(states):
                if layer:
                    w, shift = synapses[layer - 1]
                    x = np.right_shift(w @ x, shift)  # floor, as Lava's int32 shift
                sigma = sigma + x
                new_act = np.maximum(sigma + biases[layer], 0)
                delta = new_act - act + residue
                sent = np.where(np.abs(delta) >= vths[layer], delta, 0).astype(np.int32)
                states[layer] = (sigma, new_act, delta - sent)
                out[layer][t, b] = x = sent
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

    ours_s, ours, numpy_s, reference = timed_side_by_side(
        ours_run, lambda: numpy_per_sample(counts.numpy(), registers), args.repeats
    )
    same = bool(np.array_equal(ours.numpy(), reference))
    sample_steps = args.steps * args.batch
    print(
        f"{INPUTS} inputs -> {NEURONS} compartments, T = {args.steps}, batch {args.batch}, "
        f"torch threads {torch.get_num_threads()}, emulator on {args.device}, {int(ours.sum()):,} spikes"
    )
    print(f"CPU: {cpu_model()} (torch CPU capability {torch.backends.cpu.get_cpu_capability()})")
    print("| emulator | median s | sample-steps / s |")
    print("|---|---|---|")
    print(f"| hybridai loihi.run_network (torch, batched) | {ours_s:.3f} | {sample_steps / ours_s:,.0f} |")
    print(f"| numpy, one sample at a time | {numpy_s:.3f} | {sample_steps / numpy_s:,.0f} |")
    ratio = numpy_s / ours_s
    print(f"\nidentical spikes: {same}")
    print(f"speed-up {ratio:.1f}x (target >= 20x): {'met' if ratio >= 20 else 'NOT met'}")

    weights, bias = sigma_delta_network()
    weights_2, bias_2 = sigma_delta_second()
    graded = torch.randint(-8, 9, (args.steps, args.batch, INPUTS), generator=g)
    graded = graded * (torch.rand(graded.shape, generator=g) < 0.2)  # sparse graded input messages
    graded_layers = [
        loihi2.GradedLayer("input", loihi2.SigmaDeltaConfig(vth=SD_INPUT_VTH, bias=0)),
        loihi2.GradedLayer(
            "hidden",
            loihi2.SigmaDeltaConfig(vth=SD_VTH, bias=bias.to(device)),
            loihi2.effective_weights(weights).to(device),
            SD_WEIGHT_EXP,
        ),
        loihi2.GradedLayer(
            "output",
            loihi2.SigmaDeltaConfig(vth=SD_VTH, bias=bias_2.to(device)),
            loihi2.effective_weights(weights_2).to(device),
            SD_WEIGHT_EXP_2,
        ),
    ]
    on_device_graded = graded.to(device)

    def sigma_delta_run() -> list[torch.Tensor]:
        messages = loihi2.run_graded_network(graded_layers, on_device_graded).messages
        if device.type == "cuda":
            torch.cuda.synchronize()
        return [m.cpu() for m in messages]

    dense = [(weights.numpy(), bias.numpy(), SD_WEIGHT_EXP), (weights_2.numpy(), bias_2.numpy(), SD_WEIGHT_EXP_2)]
    sd_s, sd, sd_numpy_s, sd_reference = timed_side_by_side(
        sigma_delta_run, lambda: sigma_delta_numpy(graded.numpy(), dense), args.repeats
    )
    sd_same = all(np.array_equal(m.long().numpy(), r) for m, r in zip(sd, sd_reference, strict=True))
    print(
        f"\nLoihi 2 sigma-delta network, aligned clock: {INPUTS} input sigma-delta neurons (vth {SD_INPUT_VTH}) "
        f"-> graded Dense (weight_exp {SD_WEIGHT_EXP}) -> {NEURONS} ReLU sigma-delta neurons (vth {SD_VTH}) "
        f"-> graded Dense (weight_exp {SD_WEIGHT_EXP_2}) -> {NEURONS} (vth {SD_VTH}), "
        f"T = {args.steps}, batch {args.batch}, input {int((graded != 0).sum()):,} non-zero values"
    )
    for layer, m in zip(graded_layers, sd, strict=True):
        sent = int((m != 0).sum())
        print(f"- {layer.name} ({m.shape[2]:,} neurons): {sent:,} messages ({sent / m.numel():.1%} of the slots)")
    print("| emulator | median s | sample-steps / s |")
    print("|---|---|---|")
    print(f"| hybridai loihi2.run_graded_network (torch, batched) | {sd_s:.3f} | {sample_steps / sd_s:,.0f} |")
    print(f"| numpy int32, one sample at a time | {sd_numpy_s:.3f} | {sample_steps / sd_numpy_s:,.0f} |")
    sd_ratio = sd_numpy_s / sd_s
    print(f"\nidentical messages (every layer): {sd_same}")
    print(f"speed-up {sd_ratio:.1f}x (target >= 20x): {'met' if sd_ratio >= 20 else 'NOT met'}")
    if not (same and sd_same):
        raise SystemExit("the emulators disagree")


if __name__ == "__main__":
    main()
