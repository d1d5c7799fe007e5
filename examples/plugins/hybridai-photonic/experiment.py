"""Accuracy vs bits: the digits demo model with its Linear layers on the simulated photonic chip.

The hybrid model of ``hybridai demo`` (Linear 64->6, a 6-qubit circuit on ``statevector``,
Linear 6->10) is trained once on torch; then both Linear layers are placed on the ``photonic``
backend with phases, DAC and ADC at 4, 6 and 8 bits (default loss and detector noise), and the
test accuracy is measured over several detector-noise seeds (table printed, plot saved as
experiment.png next to this script). Columns: all converters at b bits;
phases only at b bits (DAC/ADC exact, no noise); and after a short hardware-aware fine-tuning on
the chip (gradients pass the quantisers straight through).

Run from the repository root: ``.venv/bin/python examples/plugins/hybridai-photonic/experiment.py``
(about a minute on 2 cores). Works without installing the plugin: it registers it in-process
when the entry point is missing.
"""

from __future__ import annotations

import argparse
import copy
import statistics
import time

import hybridai
import torch
from hybridai import backends
from hybridai.core.text_table import format_table
from hybridai.demo import accuracy, digits_split, hybrid_model, train

from hybridai_photonic import PhotonicBackend, energy_report


def ensure_registered() -> str:
    if "photonic" in backends.families():
        return "entry point"
    backends.register("photonic")(PhotonicBackend)
    return "registered in-process (pip install examples/plugins/hybridai-photonic to use the entry point)"


def on_chip(model: torch.nn.Module, seed: int, **options) -> torch.nn.Module:
    return hybridai.place(copy.deepcopy(model), classical="photonic", seed=seed, **options)


def accuracies(model, x, y, seeds, **options) -> list[float]:
    return [accuracy(on_chip(model, s, **options), x, y) for s in seeds]


def fine_tune(model, x, y, epochs: int, seed: int, label: str, lr: float = 1e-3) -> None:
    """Adam at a small learning rate through the chip (quantisers pass gradients straight through)."""
    from tqdm.auto import tqdm

    generator = torch.Generator().manual_seed(seed)
    optimizer = torch.optim.Adam(model.parameters(), lr=lr)
    steps = -(-len(x) // 32)
    for _ in tqdm(range(epochs), desc=label, leave=False):
        order = torch.randperm(len(x), generator=generator)
        for i in range(steps):
            idx = order[i * 32 : (i + 1) * 32]
            optimizer.zero_grad()
            torch.nn.functional.cross_entropy(model(x[idx]), y[idx]).backward()
            optimizer.step()


def cell(values: list[float]) -> str:
    if len(values) == 1:
        return f"{values[0]:.3f}"
    return f"{statistics.mean(values):.3f} +- {statistics.stdev(values):.3f}"


def plot(results: dict, reference: float, args: argparse.Namespace) -> None:
    """Accuracy vs bits as experiment.png next to this script."""
    import pathlib

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    bits = sorted(results)
    fig, ax = plt.subplots(figsize=(5, 3.5))
    for k, label in enumerate(["all at b bits", "phases only", f"+{args.finetune_epochs} epochs on chip"]):
        means = [statistics.mean(results[b][k]) for b in bits]
        ax.plot(bits, means, marker="o", label=label)
    ax.axhline(reference, color="grey", linestyle="--", label="torch (float32)")
    ax.axhline(0.1, color="lightgrey", linestyle=":", label="chance")
    ax.set(xlabel="bits", ylabel="test accuracy", xticks=bits, ylim=(0, 1), title="digits demo model on the chip")
    ax.legend(fontsize=8)
    fig.tight_layout()
    path = pathlib.Path(args.plot) if args.plot else pathlib.Path(__file__).with_name("experiment.png")
    fig.savefig(path, dpi=120)
    print(f"\nsaved {path}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--bits", type=int, nargs="+", default=[4, 6, 8])
    parser.add_argument("--epochs", type=int, default=25, help="training epochs on torch (default 25)")
    parser.add_argument("--finetune-epochs", type=int, default=3, help="fine-tuning epochs on the chip (default 3)")
    parser.add_argument("--noise-seeds", type=int, default=5, help="detector-noise seeds per setting (default 5)")
    parser.add_argument("--qubits", type=int, default=6)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--plot", default=None, help="plot file (default: experiment.png here)")
    args = parser.parse_args()
    torch.set_num_threads(1)
    start = time.perf_counter()
    how = ensure_registered()
    x_tr, y_tr, x_te, y_te = digits_split(args.seed)
    torch.manual_seed(args.seed)
    model = hybrid_model(args.qubits)
    train(model, x_tr, y_tr, args.epochs, 32, args.seed, "training on torch")
    seeds = list(range(args.noise_seeds))
    print(f"photonic backend: {how}")
    print(f"digits: {len(x_tr)} train / {len(x_te)} test; hybrid model trained {args.epochs} epochs on torch")
    print(f"test accuracy over {len(seeds)} detector-noise seeds (mean +- sd)\n")
    rows = [["torch (float32)", "-", f"{accuracy(model, x_te, y_te):.3f}", "", "", ""]]
    ideal = accuracies(model, x_te, y_te, seeds[:1], **{"phase_bits": None, "input_bits": None, "adc_bits": None,
                                                        "detector_noise": 0.0})  # fmt: skip
    rows.append(["photonic:ideal", "exact", cell(ideal), "", "", ""])
    example, results = None, {}
    for bits in args.bits:
        full = {"phase_bits": bits, "input_bits": bits, "adc_bits": bits}
        deployed = accuracies(model, x_te, y_te, seeds, **full)
        phases = accuracies(model, x_te, y_te, seeds[:1], phase_bits=bits, input_bits=None, adc_bits=None,
                            detector_noise=0.0)  # fmt: skip
        tuned = on_chip(model, 0, **full)
        if args.finetune_epochs:
            fine_tune(tuned, x_tr, y_tr, args.finetune_epochs, args.seed, f"fine-tuning at {bits} bits")
        finetuned = accuracies(tuned, x_te, y_te, seeds, **full)
        _, joules = energy_report(on_chip(model, 0, **full))
        rows.append(["photonic", str(bits), cell(deployed), cell(phases), cell(finetuned), f"{joules * 1e12:.1f}"])
        results[bits] = (deployed, phases, finetuned)
        example = example or on_chip(model, 0, **full)
    headers = ["Linear layers on", "bits", "all at b bits", "phases only", f"+{args.finetune_epochs} epochs on chip",
               "energy / inference (pJ)"]  # fmt: skip
    print(format_table(headers, rows))
    plot(results, float(rows[0][2]), args)
    print("\nall at b bits: phases, DAC and ADC at b bits, 0.1 dB per MZI column, detector noise 1e-3 of full scale")
    print("phases only: MZI phases at b bits, exact converters, no noise (one run: deterministic)")
    print("energy: illustrative constants (hybridai_photonic.PhotonicEnergy defaults), both Linear layers\n")
    print(hybridai.summary(example))
    print(f"\n{time.perf_counter() - start:.0f} s, seed {args.seed}, torch threads {torch.get_num_threads()}")


if __name__ == "__main__":
    main()
