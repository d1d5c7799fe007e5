"""Video on Loihi 2: a sigma-delta network against the same ReLU network run densely and a rate-coded LIF network.

Synthetic videos (``hybridai.events.render_shape``): a small or large square or disk drifts across a
24x24 frame; the class (4) is its shape and size. A ReLU network (576 -> 64 -> 4) is trained on single
frames and converted, weights unchanged, to a sigma-delta network (``hybridai.spiking.SigmaDelta``): each
layer sends only the change of its activation, when that change reaches a threshold, so a still scene costs
nothing. The sigma-delta network runs on the bit-exact Loihi 2 emulator (``hybridai.deploy(...,
backend="loihi2")``); a rate-coded LIF network (the same sizes, 8 time steps of Bernoulli spikes per frame)
is trained for comparison. The table gives per-frame accuracy (in float and on the chip), messages and
synaptic operations per frame at four drift speeds, against the dense network's multiply-accumulates; the
PNG shows frames, activity against speed and the messages over time. No energy is estimated: there are no
public per-operation figures for Loihi 2.

    python examples/sigma_delta_video.py              # writes ./sigma_delta_video.png (about 30 s on 2 cores)
    python examples/sigma_delta_video.py --out out    # out/sigma_delta_video.png
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np
import torch
from torch import nn

import hybridai
from hybridai import events
from hybridai.core.text_table import format_table
from hybridai.neuromorphic import dense_macs
from hybridai.spiking import LIF, MembraneDecoder, SigmaDelta

SIZE = 24
CLASSES = ("small square", "large square", "small disk", "large disk")
SPEEDS = (1.0, 0.5, 0.25, 0.125, 0.0)  # pixels per frame (0: a still scene)
HIDDEN = 64
RATE_STEPS = 8  # LIF time steps per frame


def make_videos(n: int, frames: int, speeds: tuple[float, float], seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Videos ``[frames, n, SIZE * SIZE]`` in [0, 1] and labels ``[n]``: a shape drifting at a speed drawn from
    ``speeds`` (pixels per frame, low and high) in a random direction."""
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, len(CLASSES), n)
    videos = np.empty((frames, n, SIZE * SIZE))
    for i, label in enumerate(labels):
        shape = "square" if label < 2 else "disk"
        radius = rng.uniform(2.5, 3.5) if label % 2 == 0 else rng.uniform(5.0, 6.5)
        angle = rng.uniform(0, 2 * np.pi)
        speed = rng.uniform(*speeds)
        step = speed * np.array([np.cos(angle), np.sin(angle)])
        centre = rng.uniform(7, SIZE - 7, 2) - step * (frames - 1) / 2
        background, foreground = rng.uniform(0.05, 0.3), rng.uniform(0.6, 1.0)
        for t in range(frames):
            frame = events.render_shape(shape, tuple(centre + t * step), radius, (SIZE, SIZE), background, foreground)
            videos[t, i] = frame.reshape(-1)
    return torch.as_tensor(videos, dtype=torch.float64), torch.as_tensor(labels)


def relu_network() -> nn.Sequential:
    """The float network; the read-out has no bias, so its sigma-delta version computes the same logits."""
    return nn.Sequential(nn.Linear(SIZE * SIZE, HIDDEN), nn.ReLU(), nn.Linear(HIDDEN, len(CLASSES), bias=False))


def sigma_delta_network(relu: nn.Sequential, threshold: float) -> nn.Sequential:
    """``relu`` as a sigma-delta network: the same weights, the hidden bias added once after sigma.

    Pixels on a 2^-6 grid; the hidden state on a 2^-10 grid (the chip floors each step's input to it, so a
    fine grid keeps that drift small); both send a change of ``threshold`` or more."""
    hidden = SigmaDelta(threshold=threshold, scale=2.0**-10, features=HIDDEN, learn_bias=True)
    model = nn.Sequential(
        SigmaDelta(threshold=threshold, scale=2.0**-6, input="value"),
        nn.Linear(SIZE * SIZE, HIDDEN, bias=False),
        hidden,
        nn.Linear(HIDDEN, len(CLASSES), bias=False),
    ).double()
    with torch.no_grad():
        model[1].weight.copy_(relu[0].weight)
        hidden.bias.copy_(relu[0].bias)
        model[3].weight.copy_(relu[2].weight)
    return model


def lif_network() -> nn.Sequential:
    return nn.Sequential(
        nn.Linear(SIZE * SIZE, HIDDEN),
        LIF(0.9, reset="zero"),
        nn.Linear(HIDDEN, len(CLASSES)),
        LIF(0.9, reset="zero", output="membrane"),
        MembraneDecoder("max"),
    ).double()


def rate_code(frames: torch.Tensor, seed: int) -> torch.Tensor:
    """``[N, F]`` intensities -> Bernoulli spikes ``[RATE_STEPS, N, F]``."""
    generator = torch.Generator().manual_seed(seed)
    return (torch.rand(RATE_STEPS, *frames.shape, generator=generator, dtype=frames.dtype) < frames).to(frames.dtype)


def train(model: nn.Module, inputs: torch.Tensor, labels: torch.Tensor, epochs: int, batch_dim: int) -> None:
    """Adam on minibatches of 64 samples along ``batch_dim``."""
    optimiser = torch.optim.Adam(model.parameters(), lr=2e-3)
    generator = torch.Generator().manual_seed(0)
    for _ in range(epochs):
        for batch in torch.randperm(len(labels), generator=generator).split(64):
            optimiser.zero_grad()
            loss = nn.functional.cross_entropy(model(inputs.index_select(batch_dim, batch)), labels[batch])
            loss.backward()
            optimiser.step()


def per_frame_accuracy(logits: torch.Tensor, labels: torch.Tensor) -> float:
    """Accuracy over every frame of every video: ``logits`` ``[T, B, C]``."""
    return float((logits.argmax(-1) == labels).double().mean())


def main(argv: list[str] | None = None) -> dict[str, object]:
    """Train, convert, deploy and compare; returns the numbers (and prints the table)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--videos", type=int, default=600, help="training videos (default 600; 200 test videos)")
    parser.add_argument("--frames", type=int, default=16, help="frames per video (default 16)")
    parser.add_argument("--epochs", type=int, default=12, help="training epochs (default 12)")
    parser.add_argument("--threshold", type=float, default=0.05, help="sigma-delta threshold (default 0.05)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, default=Path("."), help="folder for sigma_delta_video.png (created first)")
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        return _run(args)
    finally:
        torch.set_num_threads(threads)


def _run(args: argparse.Namespace) -> dict[str, object]:
    start = time.perf_counter()
    train_x, train_y = make_videos(args.videos, args.frames, (SPEEDS[-1], SPEEDS[0]), args.seed)
    frames = train_x.reshape(-1, SIZE * SIZE)
    frame_labels = train_y.repeat(args.frames)

    with torch.random.fork_rng():
        torch.manual_seed(args.seed)
        relu = relu_network().double()
        lif = lif_network()
    train(relu, frames, frame_labels, args.epochs, batch_dim=0)
    spikes = rate_code(frames, args.seed)
    train(lif, spikes, frame_labels, args.epochs, batch_dim=1)
    sigma_delta = sigma_delta_network(relu, args.threshold)
    chip = hybridai.deploy(sigma_delta, backend="loihi2")

    dense_per_frame = dense_macs(relu, (1, SIZE * SIZE))
    rows, curves, tests, per_frame = [], {"sigma-delta": [], "LIF (rate)": []}, {}, {}
    for k, speed in enumerate(SPEEDS):
        test_x, test_y = make_videos(200, args.frames, (speed, speed), args.seed + 100 + k)
        tests[speed] = (test_x, test_y)
        n_frames = test_x.shape[0] * test_x.shape[1]
        with torch.no_grad():
            dense_acc = per_frame_accuracy(relu(test_x), test_y)
            float_acc = per_frame_accuracy(sigma_delta(test_x).cumsum(0), test_y)
            test_spikes = rate_code(test_x.reshape(-1, SIZE * SIZE), args.seed + 1)
            hidden_spikes = lif[:2](test_spikes)  # the hidden layer once: its spikes count and feed the rest
            lif_acc = float((lif[2:](hidden_spikes).argmax(1) == test_y.repeat(args.frames)).double().mean())
        run = chip.compiled.run(test_x)
        chip_acc = per_frame_accuracy(run.outputs.cumsum(0), test_y)
        sent, synops = activity(chip, test_x)
        per_frame[speed] = sent
        lif_synops = (float(test_spikes.sum()) * HIDDEN + float(hidden_spikes.sum()) * len(CLASSES)) / n_frames
        curves["sigma-delta"].append(float(synops[1:].mean()))
        curves["LIF (rate)"].append(lif_synops)
        first = (float(sent[0]), float(synops[0]))
        messages, synops = float(sent[1:].mean()), float(synops[1:].mean())
        rows.append((speed, dense_acc, float_acc, chip_acc, lif_acc, messages, synops, lif_synops, first))

    table = format_table(
        [
            "drift px/frame",
            "ReLU dense acc.",
            "sigma-delta float acc.",
            "sigma-delta Loihi 2 acc.",
            "LIF rate acc.",
            "sigma-delta msgs/frame (frame 0)",
            "sigma-delta synops/frame (frame 0)",
            "LIF synops/frame",
            "dense MACs/frame",
            "sigma-delta synops saved",
        ],
        [
            [
                f"{speed:g}",
                f"{dense:.3f}",
                f"{flt:.3f}",
                f"{on_chip:.3f}",
                f"{lif_acc:.3f}",
                f"{msgs:,.0f} ({first[0]:,.0f})",
                f"{synops:,.0f} ({first[1]:,.0f})",
                f"{lif_ops:,.0f}",
                f"{dense_per_frame:,}",
                f"{1 - synops / dense_per_frame:.1%}",
            ]
            for speed, dense, flt, on_chip, lif_acc, msgs, synops, lif_ops, first in rows
        ],
    )
    report = chip.report(tests[SPEEDS[-2]][0])
    print(
        f"{args.videos} training videos x {args.frames} frames ({SIZE}x{SIZE}), 200 test videos per speed; "
        f"threshold {args.threshold}; {time.perf_counter() - start:.0f} s"
    )
    print(table)
    print("per-frame accuracy: every frame of every test video. Messages and synops (synaptic events delivered to")
    print("the hidden layer and the read-out) per frame after the first, the first frame's in brackets (all new);")
    print("the dense network: one multiply-accumulate per weight per frame; saved: against it, after the first frame.")
    print(f"\nthe deployment report at {SPEEDS[-2]:g} px/frame (all frames, the first included):")
    print(report)
    png = args.out / "sigma_delta_video.png"
    _plot(png, tests[SPEEDS[2]][0], curves, dense_per_frame, per_frame)
    print(f"saved {png}")
    return {"rows": rows, "table": table, "report": report, "dense_macs": dense_per_frame, "png": png}


def activity(chip: hybridai.Deployment, videos: torch.Tensor) -> tuple[np.ndarray, np.ndarray]:
    """Per frame ``[T]``, mean over the videos: messages sent (both layers) and synaptic operations (each message
    delivered to every target: the hidden layer's 64 neurons, the read-out's 4)."""
    pixels, hidden = (m.ne(0).sum((1, 2)).double().numpy() / videos.shape[1] for m in chip.compiled.messages(videos))
    return pixels + hidden, pixels * HIDDEN + hidden * len(CLASSES)


def _plot(path: Path, videos: torch.Tensor, curves: dict, dense: int, by_frame: dict) -> None:
    from matplotlib.figure import Figure  # no pyplot: the process's backend is left alone

    figure = Figure(figsize=(13, 3.6))
    axes = figure.subplots(1, 3)
    last = videos.shape[0] - 1
    shown = (0, last // 3, 2 * last // 3, last)
    strip = np.concatenate([videos[t, 0].reshape(SIZE, SIZE).numpy() for t in shown], axis=1)
    axes[0].imshow(strip, cmap="gray", vmin=0, vmax=1)
    axes[0].set_title(f"a test video at {SPEEDS[2]:g} px/frame, frames {', '.join(map(str, shown))}")
    axes[0].axis("off")
    for name, values in curves.items():
        axes[1].plot(SPEEDS, values, "o-", label=name)
    axes[1].axhline(dense, color="k", linestyle="--", label="ReLU dense (MACs)")
    axes[1].set_yscale("symlog", linthresh=10)
    axes[1].set_xlabel("drift (pixels per frame)")
    axes[1].set_ylabel("synaptic operations per frame")
    axes[1].set_title("after the first frame")
    axes[1].legend()
    for speed, values in by_frame.items():
        axes[2].plot(np.arange(len(values)), values, ".-", label=f"{speed:g} px/frame")
    axes[2].set_yscale("symlog", linthresh=10)
    axes[2].set_xlabel("frame")
    axes[2].set_ylabel("messages per frame (Loihi 2)")
    axes[2].legend()
    figure.tight_layout()
    figure.savefig(path, dpi=110)


if __name__ == "__main__":
    main()
