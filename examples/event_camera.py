"""Event-camera gestures on neuromorphic chips: a spiking network on Loihi, a CNN on Akida.

Synthetic event-camera recordings (a square or disk crossing a 32x32 sensor in one of four
directions, ``hybridai.events.moving_shapes``) are binned into time steps. A spiking network
(Linear -> LIF -> Linear -> LIF) is trained in float, fine-tuned fake-quantized so that what is
trained is what the chip computes, and deployed on the bit-exact Loihi 1 emulator (and on nengo).
A small conventional CNN on the summed event frames is trained too and deployed, quantized to
8 bits, on BrainChip's Akida engine (software, no board). The table compares accuracy in float
and on the chip, activity, latency and energy estimates (constants printed with their sources;
no public per-event figures exist for Akida, so its energy is not estimated). Saves a PNG.

    python examples/event_camera.py                   # writes ./event_camera.png (about 30 s on 2 cores)
    python examples/event_camera.py --out out --save  # out/event_camera.png, and out/snn.pt, out/data.pt
                                                      # for hybridai deploy-report out/snn.pt out/data.pt
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
from hybridai.neuromorphic import dense_macs, energy, loihi

SENSOR = (32, 32, 2)
DURATION_US = 40_000
CLASSES = events.DIRECTIONS


def make_data(n: int, steps: int, noise_hz: float, seed: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Event counts per time step ``[T, N, 2048]``, summed frames ``[N, 2, 32, 32]`` in [0, 1], labels."""
    camera = events.EventCamera(shot_noise_hz=noise_hz, refractory_us=1000)
    streams, labels = events.moving_shapes(
        n, sensor_size=SENSOR, duration_us=DURATION_US, n_frames=16, camera=camera, seed=seed
    )
    to_steps = events.ToTimeSteps(SENSOR, num_steps=steps, duration_us=DURATION_US, flatten=True)
    x = torch.stack([to_steps(s) for s in streams], dim=1)
    frames = x.sum(0).reshape(n, 2, 32, 32)
    return x, (frames / 4).clamp(max=1), torch.as_tensor(labels)


def spiking_network() -> nn.Sequential:
    return nn.Sequential(
        nn.Linear(2048, 64),
        hybridai.LIF(0.8, reset="zero"),
        nn.Linear(64, len(CLASSES)),
        hybridai.LIF(0.8, reset="zero", output="membrane"),
        hybridai.MembraneDecoder("max"),
    )


def conventional_cnn() -> nn.Sequential:
    return nn.Sequential(
        nn.Conv2d(2, 8, 3, padding=1),
        nn.ReLU(),
        nn.MaxPool2d(2),
        nn.Conv2d(8, 16, 3, padding=1),
        nn.ReLU(),
        nn.MaxPool2d(2),
        nn.Flatten(),
        nn.Linear(16 * 8 * 8, len(CLASSES)),
    )


def train(model: nn.Module, x: torch.Tensor, y: torch.Tensor, epochs: int, lr: float, batch_dim: int) -> None:
    """Adam on minibatches of 32 (``batch_dim``: 1 for time-major spikes, 0 for frames)."""
    optimiser = torch.optim.Adam(model.parameters(), lr=lr)
    generator = torch.Generator().manual_seed(0)
    for _ in range(epochs):
        for batch in torch.randperm(len(y), generator=generator).split(32):
            optimiser.zero_grad()
            loss = nn.functional.cross_entropy(model(x.index_select(batch_dim, batch)), y[batch])
            loss.backward()
            optimiser.step()


def accuracy(model: nn.Module, x: torch.Tensor, y: torch.Tensor) -> float:
    with torch.no_grad():
        return float((model(x).argmax(1) == y).double().mean())


def main(argv: list[str] | None = None) -> dict[str, object]:
    """Run the whole comparison; returns the reports by platform (and prints the tables)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=480, help="recordings, 2/3 train, 1/3 test (default 480)")
    parser.add_argument("--steps", type=int, default=16, help="time steps per recording (default 16)")
    parser.add_argument("--epochs", type=int, default=15, help="float training epochs (default 15)")
    parser.add_argument("--noise", type=float, default=60.0, help="shot-noise events per pixel per second (60)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, default=Path("."), help="folder for event_camera.png (created first)")
    parser.add_argument("--save", action="store_true", help="also write snn.pt and data.pt there (deploy-report)")
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)  # before the run, not after it
    png = args.out / "event_camera.png"
    torch.set_num_threads(1)
    torch.manual_seed(args.seed)
    start = time.perf_counter()

    x, frames, y = make_data(args.samples, args.steps, args.noise, args.seed)
    split = 2 * args.samples // 3
    train_x, test_x, train_y, test_y = x[:, :split], x[:, split:], y[:split], y[split:]
    print(
        f"data: {args.samples} recordings, {x.shape[0]} steps x {x.shape[2]} inputs, {x.mean():.3f} events/input/step"
    )

    snn = spiking_network()
    train(snn, train_x, train_y, args.epochs, 2e-3, batch_dim=1)
    float_before = accuracy(snn, test_x, test_y)
    chip_model = loihi.fake_quantize(snn, calibration=train_x)  # the chip's integer dynamics, trainable
    before_tuning = accuracy(chip_model, test_x, test_y)
    train(chip_model, train_x, train_y, 3, 5e-4, batch_dim=1)
    tuned = accuracy(chip_model, test_x, test_y)
    print(f"spiking: float {float_before:.3f}; fake-quantized {before_tuning:.3f} -> tuned {tuned:.3f}")

    on_loihi = hybridai.deploy(snn, "loihi", calibration=train_x)
    loihi_report = on_loihi.report(test_x, test_y)
    nengo_report = hybridai.deploy(snn, "nengo").report(test_x, test_y)

    cnn = conventional_cnn()
    train(cnn, frames[:split], train_y, args.epochs, 3e-3, batch_dim=0)
    akida_report = hybridai.deploy(cnn, "akida", calibration=frames[:split]).report(frames[split:], test_y)

    cnn_macs = dense_macs(cnn, (2, 32, 32))
    snn_macs = dense_macs(snn, (1, 2048)) * args.steps
    print(loihi_report)
    rows = [
        _row("spiking net", "Loihi 1 (emulated)", loihi_report),
        _row("spiking net", "nengo simulator", nengo_report),
        _row("CNN on frames", "Akida (software engine)", akida_report),
        _mac_row("spiking net", "dense on CPU/GPU", "", snn_macs, ""),
        _mac_row("CNN on frames", "CPU/GPU", f"{accuracy(cnn, frames[split:], test_y):.3f}", cnn_macs, "1 frame"),
    ]
    headers = [
        "model",
        "runs on",
        "acc. float",
        "acc. chip",
        "spikes/sample",
        "syn. ops/sample",
        "latency",
        "nJ/sample",
    ]
    print()
    print(format_table(headers, rows))
    print(f"\nMAC energy: {energy.FP32_MAC.joules * 1e12:g} pJ per fp32 MAC ({energy.FP32_MAC.source})")
    print("Akida: no public per-event energy figures; pass measured ones with hybridai.deploy(..., energy={...})")

    trace = on_loihi.compiled.trace(test_x[:, :1])[0]["spikes"][:, 0]  # hidden spikes of one test recording
    _figure(png, x, y, trace, [loihi_report, nengo_report, akida_report], rows)
    if args.save:
        torch.save(snn, args.out / "snn.pt")
        torch.save((test_x, test_y), args.out / "data.pt")
        print(f"saved: hybridai deploy-report {args.out / 'snn.pt'} {args.out / 'data.pt'} --backend loihi")
    print(f"wrote {png} ({time.perf_counter() - start:.0f} s)")
    return {"loihi": loihi_report, "nengo": nengo_report, "akida": akida_report, "cnn_macs": cnn_macs}


def _row(model: str, chip: str, report) -> list[str]:
    run, agreement = report.run, report.agreement
    energy_text = f"{report.energy.per_sample * 1e9:.1f}" if report.energy else "n/a"
    latency = f"{run.latency_steps} steps" if run.time_steps > 1 else "1 frame"
    return [
        model,
        chip,
        f"{agreement['accuracy, float model']:.3f}",
        f"{agreement['accuracy, deployed']:.3f}",
        f"{report.spikes / run.samples:,.0f}",
        f"{report.synaptic_ops / run.samples:,.0f}",
        latency,
        energy_text,
    ]


def _mac_row(model: str, where: str, acc: str, macs: int, latency: str) -> list[str]:
    return [model, where, acc, "", "", f"{macs:,} MACs", latency, f"{energy.mac_energy(macs) * 1e9:.1f}"]


def _figure(path: Path, x: torch.Tensor, y: torch.Tensor, raster: torch.Tensor, reports: list, rows: list) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(2, 4, figsize=(14, 6.5))
    for k, ax in enumerate(axes[0]):
        i = int((y == k).nonzero()[0])
        frame = x[:, i].sum(0).reshape(2, 32, 32)
        ax.imshow((frame[0] - frame[1]).numpy(), cmap="coolwarm")
        ax.set_title(f"events: {CLASSES[k]}")
        ax.axis("off")
    steps, neurons = np.nonzero(raster.numpy())
    axes[1, 0].scatter(steps, neurons, s=4, marker="|")
    axes[1, 0].set(title="hidden spikes on Loihi", xlabel="time step", ylabel="neuron")
    names = ["Loihi", "nengo", "Akida"]
    width = 0.38
    for j, key in enumerate(["accuracy, float model", "accuracy, deployed"]):
        values = [r.agreement[key] for r in reports]
        axes[1, 1].bar(np.arange(3) + (j - 0.5) * width, values, width, label=key.split(", ")[1])
    axes[1, 1].set(xticks=range(3), xticklabels=names, ylim=(0, 1), title="test accuracy")
    axes[1, 1].legend(loc="lower right")
    labels = [f"{r[0].split()[0]}\n{r[1].split()[0]}" for r in rows if r[-1] not in ("", "n/a")]
    values = [float(r[-1]) for r in rows if r[-1] not in ("", "n/a")]
    axes[1, 2].bar(range(len(values)), values)
    axes[1, 2].set(xticks=range(len(values)), xticklabels=labels, yscale="log", title="energy estimate, nJ/sample")
    axes[1, 3].axis("off")
    sources = "Loihi: Davies et al. 2018 (pre-silicon)\nMACs: Horowitz 2014 (fp32, 45 nm,\narithmetic only)"
    axes[1, 3].text(0, 0.5, sources + "\nAkida: no public figures", fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


if __name__ == "__main__":
    main()
