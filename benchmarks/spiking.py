"""Question: how fast and how lean is hybridai's fused LIF layer against snnTorch?

Linear 784->1000 + LIF (beta 0.9, threshold 1, reset by subtraction, atan surrogate),
batch 128, T = 100 and 300 time steps, forward + backward of ``spikes.sum()``, one torch
thread, all frameworks in this one process on the same input and the same Linear weights:

* Linear only (the floor: what the spiking layer adds is measured above it)
* hybridai ``LIF`` (all T steps in one fused autograd node)
* snnTorch ``Leaky`` stepped over ``x.unbind(0)`` (its fastest documented use; ``x[t]``
  indexing would make backward O(T^2))
* Norse ``LIF`` and SpikingJelly ``LIFNode`` (multi-step) when installed: they need
  ``pip install --no-deps norse nirtorch spikingjelly loguru`` (their torchvision
  dependency would replace the pinned torch). Norse's LIF has a synaptic current too.

Time: median (and minimum) seconds over ``--repeats`` rounds, the frameworks interleaved
within each round so that load from other processes hits them alike (a peer more than 5x
slower than snnTorch is timed once and its peak is not profiled). Memory: the peak of
the torch CPU allocator during one forward + backward (torch profiler, ``profile_memory``),
and the bytes saved for backward (``saved_tensors_hooks``); both are reported per
neuron-step (T x 128 x 1000) above the Linear-only run. Targets: hybridai's time
above Linear-only at most 0.5x snnTorch's; backward memory at most 10 bytes per
neuron-step; T=300 time at most 3.3x the T=100 time.

    python benchmarks/spiking.py [--steps 100 300] [--batch 128] [--repeats 5] [--threads 1]
"""

from __future__ import annotations

import argparse
import math
import statistics
import time
from collections.abc import Callable

import torch
from torch import nn

from hybridai import LIF

IN_FEATURES, NEURONS = 784, 1000
SLOW = 5.0


def peers(steps: int) -> dict[str, Callable[[torch.Tensor], torch.Tensor]]:
    """Spiking layers by label: each maps the Linear output [T, B, N] to spikes [T, B, N]."""
    layers: dict[str, Callable[[torch.Tensor], torch.Tensor]] = {"Linear only": lambda current: current}
    ours = LIF(0.9, threshold=1.0, reset="subtract", surrogate="atan")
    layers["hybridai LIF"] = ours

    import snntorch as snn

    leaky = snn.Leaky(beta=0.9, threshold=1.0, reset_mechanism="subtract")

    def snntorch_leaky(current: torch.Tensor) -> torch.Tensor:
        mem, spikes = leaky.reset_mem(), []
        for current_t in current.unbind(0):
            spike, mem = leaky(current_t, mem)
            spikes.append(spike)
        return torch.stack(spikes)

    layers["snnTorch Leaky"] = snntorch_leaky
    try:
        import norse.torch as norse

        norse_lif = norse.LIF()
        layers["Norse LIF"] = lambda current: norse_lif(current)[0]
    except ImportError:
        pass
    try:
        from spikingjelly.activation_based import functional, neuron, surrogate

        node = neuron.LIFNode(
            tau=10.0,
            decay_input=False,
            v_reset=None,
            detach_reset=True,
            step_mode="m",
            surrogate_function=surrogate.ATan(),
        )

        def spikingjelly_lif(current: torch.Tensor) -> torch.Tensor:
            functional.reset_net(node)
            return node(current)

        layers["SpikingJelly LIFNode"] = spikingjelly_lif
    except ImportError:
        pass
    return layers


def step(linear: nn.Linear, layer: Callable, x: torch.Tensor) -> None:
    layer(linear(x)).sum().backward()
    linear.weight.grad = linear.bias.grad = None


def peak_bytes(linear: nn.Linear, layer: Callable, x: torch.Tensor) -> int:
    """Peak bytes held by torch's CPU allocator during one step, above what was held before."""
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof:
        step(linear, layer, x)
    changes = sorted((e.time_range.start, e.self_cpu_memory_usage) for e in prof.events() if e.self_cpu_memory_usage)
    held = peak = 0
    for _, change in changes:
        held += change
        peak = max(peak, held)
    return peak


def saved_bytes(linear: nn.Linear, layer: Callable, x: torch.Tensor) -> int:
    """Bytes of the distinct storages autograd keeps for backward during one step."""
    storages: dict[int, int] = {}

    def pack(tensor: torch.Tensor) -> torch.Tensor:
        storage = tensor.untyped_storage()
        storages[storage.data_ptr()] = storage.nbytes()
        return tensor

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda tensor: tensor):
        out = layer(linear(x))
    out.sum().backward()
    linear.weight.grad = linear.bias.grad = None
    return sum(storages.values())


def bench(steps: int, batch: int, repeats: int) -> dict[str, dict[str, float]]:
    torch.manual_seed(0)
    linear = nn.Linear(IN_FEATURES, NEURONS)
    x = torch.rand(steps, batch, IN_FEATURES)
    layers = peers(steps)
    with torch.no_grad():  # the same work: hybridai's spikes equal snnTorch's
        current = linear(x)
        assert torch.equal(layers["hybridai LIF"](current), layers["snnTorch Leaky"](current))
    times: dict[str, list[float]] = {label: [] for label in layers}
    warm_up = {}
    for label, layer in layers.items():
        start = time.perf_counter()
        step(linear, layer, x)
        warm_up[label] = time.perf_counter() - start
    # a peer more than SLOW times slower than snnTorch is timed once and not profiled (it would take minutes)
    slow = {label for label, seconds in warm_up.items() if seconds > SLOW * warm_up["snnTorch Leaky"]}
    for round_index in range(repeats):
        for label, layer in layers.items():
            if label in slow and round_index > 0:
                continue
            start = time.perf_counter()
            step(linear, layer, x)
            times[label].append(time.perf_counter() - start)
    neuron_steps = steps * batch * NEURONS
    results = {}
    for label, layer in layers.items():
        results[label] = {
            "median": statistics.median(times[label]),
            "min": min(times[label]),
            "runs": len(times[label]),
            "peak": float("nan") if label in slow else peak_bytes(linear, layer, x),
            "saved": saved_bytes(linear, layer, x),
        }
    floor = results["Linear only"]
    for row in results.values():
        row["above"] = row["median"] - floor["median"]
        row["peak_per_step"] = (row["peak"] - floor["peak"]) / neuron_steps
        row["saved_per_step"] = (row["saved"] - floor["saved"]) / neuron_steps
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--steps", type=int, nargs="+", default=[100, 300])
    parser.add_argument("--batch", type=int, default=128)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    print(f"Linear {IN_FEATURES}->{NEURONS} + LIF, batch {args.batch}, forward + backward, "
          f"torch {torch.__version__}, {torch.get_num_threads()} thread(s), {args.repeats} rounds")  # fmt: skip
    all_results = {}
    for steps in args.steps:
        results = all_results[steps] = bench(steps, args.batch, args.repeats)
        snn_above = results["snnTorch Leaky"]["above"]
        print(f"\nT = {steps}")
        print("| framework | median s (min) | above Linear s | vs snnTorch (above Linear) | peak MiB | "
              "peak B/neuron-step | saved B/neuron-step |")  # fmt: skip
        print("|---|---|---|---|---|---|---|")
        for label, row in results.items():
            spiking = label != "Linear only"
            ratio = f"{row['above'] / snn_above:.2f}x" if spiking and snn_above > 0 else ""
            runs = "" if row["runs"] == args.repeats else f", {row['runs']} run"
            peak = "-" if math.isnan(row["peak"]) else f"{row['peak'] / 2**20:.0f}"
            if not spiking:
                print(f"| {label} | {row['median']:.3f} ({row['min']:.3f}) | | | {peak} | | |")
                continue
            peak_per_step = "-" if math.isnan(row["peak_per_step"]) else f"{row['peak_per_step']:.1f}"
            print(
                f"| {label} | {row['median']:.3f} ({row['min']:.3f}{runs}) | {row['above']:.3f} | {ratio} | "
                f"{peak} | {peak_per_step} | {row['saved_per_step']:.1f} |"
            )
    print("\nTargets:")
    for steps, results in all_results.items():
        ours, theirs = results["hybridai LIF"], results["snnTorch Leaky"]
        ratio = ours["above"] / theirs["above"] if theirs["above"] > 0 else float("inf")
        print(f"  T={steps}: hybridai above Linear / snnTorch above Linear = {ratio:.2f} (target <= 0.5): "
              f"{'met' if ratio <= 0.5 else 'MISSED'}")  # fmt: skip
        memory = max(ours["peak_per_step"], ours["saved_per_step"])
        print(f"  T={steps}: backward memory {ours['peak_per_step']:.1f} B (peak) / {ours['saved_per_step']:.1f} B "
              f"(saved) per neuron-step (target <= 10): {'met' if memory <= 10 else 'MISSED'}")  # fmt: skip
    if 100 in all_results and 300 in all_results:
        for statistic in ("median", "min"):
            growth = all_results[300]["hybridai LIF"][statistic] / all_results[100]["hybridai LIF"][statistic]
            linear = all_results[300]["Linear only"][statistic] / all_results[100]["Linear only"][statistic]
            print(f"  hybridai time T=300 / T=100 ({statistic}s) = {growth:.2f} (target <= 3.3): "
                  f"{'met' if growth <= 3.3 else 'MISSED'}; Linear only: {linear:.2f}")  # fmt: skip


if __name__ == "__main__":
    main()
