"""Train a quantum layer on a noisy backend with and without zero-noise extrapolation.

A 2-qubit regression: the targets come from a noiseless "teacher" circuit; three students
start from the same weights and train with Adam on
  - `statevector` (noiseless, the ideal reference),
  - `density:fake_manila` (FakeManila's noise model on hybridai's density matrices), unmitigated,
  - `density:fake_manila` with `hybridai.ZNE()` (Mitiq folding at scale factors 1, 3, 5, Richardson).
`--route aer` trains the noisy students on `aer:fake_manila` instead (Qiskit Aer: the same noise model,
gates, seeds and shots; slower). The two noisy students are set up identically (`noisy_options`: the
same backend, seed and optimisation level); ZNE transpiles its folded circuits at that same level, with
barriers that keep the folds, so its noisy value at scale factor 1 is exactly the unmitigated student's
value: like for like.

Printed: the error of the circuit's values against the ideal (noiseless) values on the test set,
before (noisy) and after mitigation (ZNE), for the same weights; then per student the final test
loss on its own backend and the test loss of its trained weights evaluated noiselessly.
Saves `DIR/zne_training.png`: the three training curves, and one extrapolation (noisy values
against scale factor, the fit, the zero-noise value and the ideal value).
Measured on 2 busy CPU cores with the default 25 steps (`time python examples/zne_training.py`): 14 s
(`--route aer`: 2 min 42 s, the same numbers to the printed digits).

    python examples/zne_training.py [--steps 25] [--route density|aer] [--out DIR]
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import pennylane as qml
import torch
from tqdm.auto import tqdm

from hybridai import ZNE, QuantumLayer, mitigation

SHAPES = {"weights": (2, 2, 3)}
NOISY_DEVICES = {"density": "density:fake_manila", "aer": "aer:fake_manila"}  # --route: what simulates FakeManila
IDEAL, NOISY, ZNE_STUDENT = "ideal (statevector)", "noisy ({})", "noisy + ZNE (Richardson 1,3,5)"
STYLES = [  # distinct colours, widths, line styles and markers: the ZNE curve, close to the ideal one, stays visible
    {"color": "0.55", "linestyle": "-", "linewidth": 4, "alpha": 0.6, "marker": "o", "markersize": 8,
     "fillstyle": "none"},
    {"color": "tab:red", "linestyle": "--", "marker": "s", "markersize": 4},
    {"color": "tab:blue", "linestyle": ":", "marker": "^", "markersize": 4},
]  # fmt: skip


def noisy_options(route: str) -> dict:
    """Both noisy students' backend options, identically: FakeManila on ``route``'s simulator, seed, optimisation."""
    return {"backend": NOISY_DEVICES[route], "seed": 1, "optimization_level": 1}


def circuit(inputs, weights):
    qml.AngleEmbedding(inputs * torch.pi, wires=range(2))
    qml.StronglyEntanglingLayers(weights, wires=range(2))
    return qml.expval(qml.PauliZ(0))  # one expectation: the layer returns [B]


def student(init: dict, **options) -> QuantumLayer:
    layer = QuantumLayer(circuit, 2, SHAPES, **options).double()
    layer.load_state_dict(init)
    return layer


def train(name: str, layer: QuantumLayer, x: torch.Tensor, y: torch.Tensor, steps: int) -> list[float]:
    optimizer = torch.optim.Adam(layer.parameters(), lr=0.15)
    losses = []
    for _ in tqdm(range(steps), desc=name, unit="step"):
        optimizer.zero_grad()
        loss = ((layer(x) - y) ** 2).mean()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    return losses


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=25, help="Adam steps per student (default 25)")
    parser.add_argument("--route", choices=tuple(NOISY_DEVICES), default="density",
                        help="what simulates FakeManila for the noisy students: density (hybridai's density matrices, "
                        "default) or aer (Qiskit Aer)")  # fmt: skip
    parser.add_argument("--out", type=Path, default=Path("."), help="folder for zne_training.png (created first)")
    args = parser.parse_args(argv)
    options = noisy_options(args.route)
    args.out.mkdir(parents=True, exist_ok=True)  # before the run, not after it
    torch.set_num_threads(1)
    torch.manual_seed(0)
    teacher = QuantumLayer(circuit, 2, SHAPES).double()
    x_train, x_test = torch.rand(12, 2, dtype=torch.float64), torch.rand(24, 2, dtype=torch.float64)
    with torch.no_grad():
        y_train, y_test = teacher(x_train), teacher(x_test)
    init = QuantumLayer(circuit, 2, SHAPES).double().state_dict()
    runs = {
        IDEAL: student(init, backend="statevector"),
        NOISY.format(options["backend"]): student(init, **options),
        ZNE_STUDENT: student(init, **options, mitigation=ZNE()),
    }
    curves, rows = {}, []
    reference = student(init, backend="statevector")  # evaluates any student's weights noiselessly
    for name, layer in runs.items():
        start = time.perf_counter()
        curves[name] = train(name, layer, x_train, y_train, args.steps)
        with torch.no_grad():
            own = ((layer(x_test) - y_test) ** 2).mean().item()
            reference.load_state_dict(layer.state_dict())
            noiseless = ((reference(x_test) - y_test) ** 2).mean().item()
        rows.append((name, own, noiseless, time.perf_counter() - start))

    # The same (ZNE-trained) weights on the three backends: the error against the ideal value
    with_zne = runs[ZNE_STUDENT]
    weights = with_zne.state_dict()
    plain, ideal = student(weights, **options), student(weights, backend="statevector")
    with torch.no_grad():
        exact, noisy, zne = ideal(x_test), plain(x_test), with_zne(x_test)
    before, after = (noisy - exact).abs().mean().item(), (zne - exact).abs().mean().item()

    print(f"{args.steps} Adam steps, 12 training and 24 test points, 2 qubits, targets from a noiseless teacher; "
          f"noisy students on {options['backend']} (seed 1, optimization level 1)")  # fmt: skip
    print(f"error against the ideal value (mean |value - ideal| over the test set, same weights): "
          f"noisy {before:.4f}, with ZNE {after:.4f} ({before / max(after, 1e-12):.1f}x smaller)")  # fmt: skip
    print("| student | test MSE on its own backend | test MSE of its weights, noiseless | train seconds |")
    print("|---|---|---|---|")
    for name, own, noiseless, seconds in rows:
        print(f"| {name} | {own:.5f} | {noiseless:.5f} | {seconds:.1f} |")
    png = args.out / "zne_training.png"
    save_figure(curves, with_zne.last_mitigation, float(exact[0]), options["backend"], png)
    print(f"saved {png}")
    return {"curves": curves, "rows": rows, "error_noisy": before, "error_zne": after, "png": png,
            "backend": options["backend"]}  # fmt: skip


def save_figure(curves: dict[str, list[float]], extrapolation, ideal_value: float, backend: str, png: Path) -> None:
    from matplotlib.figure import Figure

    fig = Figure(figsize=(10, 3.8), layout="tight")
    losses, zne = fig.subplots(1, 2)
    for style, (name, values) in zip(STYLES, curves.items(), strict=True):
        losses.plot(range(1, len(values) + 1), values, label=name, **style)
    losses.set_xlabel("step")
    losses.set_ylabel("training MSE (on the training backend)")
    losses.set_yscale("log")
    losses.legend(fontsize=8)
    mitigation.plot_zne(extrapolation, ax=zne, ideal=ideal_value)  # test point 0 with the trained weights
    zne.set_title(f"one test value on {backend}: folded circuits, fit, zero-noise and ideal values", fontsize=9)
    fig.savefig(png, dpi=120)


if __name__ == "__main__":
    main()
