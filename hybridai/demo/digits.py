"""``hybridai demo --task digits``: a hybrid classical -> quantum -> classical classifier on digits.

scikit-learn's 8x8 digits ship with the package (no download). The hybrid model
compresses 64 pixels to one angle per qubit, runs a trainable quantum circuit and reads
the class from a linear head; a purely classical model of the same shape (a small dense
layer in place of the circuit) is trained on the same data with the same seed.
"""

from __future__ import annotations

import math
import time

import torch
from torch import nn

from hybridai.core.errors import bounded_int, positive_int
from hybridai.core.module import summary
from hybridai.quantum import QuantumLayer

N_LAYERS = 3


def entangling_classifier(inputs, weights):
    """Angle embedding of tanh features in [-pi, pi], strongly entangling layers, <Z> per qubit."""
    import pennylane as qml

    wires = range(weights.shape[1])
    qml.AngleEmbedding(inputs * math.pi, wires=wires)
    qml.StronglyEntanglingLayers(weights, wires=wires)
    return [qml.expval(qml.PauliZ(w)) for w in wires]


def hybrid_model(n_qubits: int, n_classes: int = 10) -> nn.Sequential:
    quantum = QuantumLayer(entangling_classifier, n_qubits, {"weights": (N_LAYERS, n_qubits, 3)})
    return nn.Sequential(nn.Linear(64, n_qubits), nn.Tanh(), quantum, nn.Linear(n_qubits, n_classes))


def classical_model(n_qubits: int, n_classes: int = 10) -> nn.Sequential:
    return nn.Sequential(
        nn.Linear(64, n_qubits), nn.Tanh(), nn.Linear(n_qubits, n_qubits), nn.Tanh(), nn.Linear(n_qubits, n_classes)
    )


def digits_split(seed: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """Digits scaled to [0, 1], split 80/20 stratified by class."""
    from sklearn.datasets import load_digits
    from sklearn.model_selection import train_test_split

    x, y = load_digits(return_X_y=True)
    x_tr, x_te, y_tr, y_te = train_test_split(x / 16.0, y, test_size=0.2, random_state=seed, stratify=y)
    as_x = lambda a: torch.tensor(a, dtype=torch.float32)  # noqa: E731
    as_y = lambda a: torch.tensor(a, dtype=torch.long)  # noqa: E731
    return as_x(x_tr), as_y(y_tr), as_x(x_te), as_y(y_te)


def train(model, x, y, epochs: int, batch_size: int, seed: int, label: str) -> float:
    """``model`` trained by ``hybridai.training.fit``: Adam + cross-entropy on minibatches shuffled with ``seed``;
    returns seconds per epoch."""
    from hybridai.training import TensorBatches, fit

    optimizer = torch.optim.Adam(model.parameters(), lr=0.01)
    start = time.perf_counter()
    fit(model, TensorBatches(x, y, batch_size, seed=seed), None, nn.CrossEntropyLoss(), optimizer, epochs, desc=label)
    return (time.perf_counter() - start) / epochs


@torch.no_grad()
def accuracy(model, x, y) -> float:
    return (model(x).argmax(dim=1) == y).double().mean().item()


def run_demo(n_qubits: int = 6, epochs: int = 25, batch_size: int = 32, seed: int = 0) -> dict[str, float]:
    """Train both models, print the summary and the comparison; return the numbers."""
    bounded_int("qubits", n_qubits, 4, 8)
    positive_int("epochs", epochs)
    positive_int("batch_size", batch_size)
    bounded_int("seed", seed, 0, 2**32 - 1)  # scikit-learn's random_state range
    x_tr, y_tr, x_te, y_te = digits_split(seed)
    torch.manual_seed(seed)
    hybrid = hybrid_model(n_qubits)
    torch.manual_seed(seed)
    classical = classical_model(n_qubits)
    print(f"digits: {len(x_tr)} train / {len(x_te)} test samples, 64 features, 10 classes")
    print(f"torch threads: {torch.get_num_threads()}\n")
    print(summary(hybrid))
    t_hybrid = train(hybrid, x_tr, y_tr, epochs, batch_size, seed, "hybrid")
    t_classical = train(classical, x_tr, y_tr, epochs, batch_size, seed, "classical")
    results = {
        "hybrid_accuracy": accuracy(hybrid, x_te, y_te),
        "classical_accuracy": accuracy(classical, x_te, y_te),
        "hybrid_seconds_per_epoch": t_hybrid,
        "classical_seconds_per_epoch": t_classical,
    }
    n_params = lambda m: sum(p.numel() for p in m.parameters())  # noqa: E731
    print()
    from hybridai.core.text_table import format_table

    print(
        format_table(
            ["model", "parameters", "test accuracy", "seconds / epoch"],
            [
                [
                    f"hybrid ({n_qubits} qubits)",
                    n_params(hybrid),
                    f"{results['hybrid_accuracy']:.3f}",
                    f"{t_hybrid:.2f}",
                ],
                ["classical", n_params(classical), f"{results['classical_accuracy']:.3f}", f"{t_classical:.2f}"],
            ],
        )
    )
    print(f"\n{epochs} epochs, batch {batch_size}, seed {seed}")
    return results
