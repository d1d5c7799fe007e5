"""Train a small hybrid classifier in one process, in many processes on one machine, or on many machines.

Linear(64 -> 4) -> Tanh -> QuantumLayer (4 qubits, ``statevector``) -> Linear(4 -> 10), in float64, trained with
Adam by ``hybridai.training.fit`` on scikit-learn's 8x8 digits (bundled with scikit-learn: nothing is downloaded),
on GPU ``LOCAL_RANK`` with NCCL when CUDA is available, else on the CPU with gloo.
The same script, unchanged, runs as

    python examples/distributed_training.py [--samples 1536] [--epochs 4] [--batch-size 32] [--out DIR]
    torchrun --nproc-per-node 2 examples/distributed_training.py
    torchrun --nnodes 2 --nproc-per-node 1 --rdzv-backend c10d --rdzv-endpoint HOST:PORT --rdzv-id ID \\
        examples/distributed_training.py

The last command runs on each of the two machines: HOST:PORT is a free port on one of them that the other can
reach, ID any name the two commands share (docs/training.md, "Many machines"). Every rank builds the model
with its own quantum backend, seeds itself with ``seed + rank``, trains on its share of each global batch
(``--batch-size`` is per rank: the global batch is ``batch_size x world size``) and DDP averages the gradients.
Rank 0 prints the losses and writes ``DIR/checkpoint.pt`` (``hybridai.save``); the other ranks write nothing.
Two ranks end with the weights of one process trained on the same global batches, in the same order
(``tests/examples/test_distributed_training.py``).
"""

from __future__ import annotations

import argparse
from pathlib import Path

import pennylane as qml
import torch
import torch.distributed as dist
from torch import nn
from torch.utils.data import TensorDataset

import hybridai
from hybridai.training import distributed, fit

N_QUBITS = 4
VALIDATION = 256  # the last 256 of scikit-learn's 1797 digits
MAX_SAMPLES = 1797 - VALIDATION  # training digits: up to the first 1541
LR = 0.05


def circuit(inputs, weights):
    qml.AngleEmbedding(inputs, wires=range(N_QUBITS))
    qml.BasicEntanglerLayers(weights, wires=range(N_QUBITS))
    return [qml.expval(qml.PauliZ(w)) for w in range(N_QUBITS)]


def make_model() -> nn.Sequential:
    """The classifier, in float64; its initial weights come from torch's global generator."""
    quantum = hybridai.QuantumLayer(circuit, N_QUBITS, {"weights": (2, N_QUBITS)}, backend="statevector")
    return nn.Sequential(nn.Linear(64, N_QUBITS), nn.Tanh(), quantum, nn.Linear(N_QUBITS, 10)).double()


def digits(samples: int) -> tuple[TensorDataset, TensorDataset]:
    """The first ``samples`` digits to train on and the last ``VALIDATION`` to validate on (pixels scaled to [0, 1])."""
    from sklearn.datasets import load_digits

    x, y = load_digits(return_X_y=True)
    x, y = torch.as_tensor(x / 16.0, dtype=torch.float64), torch.as_tensor(y, dtype=torch.long)
    return TensorDataset(x[:samples], y[:samples]), TensorDataset(x[-VALIDATION:], y[-VALIDATION:])


def train(model: nn.Module, train_data, val_data, epochs: int, device=None) -> tuple[list[dict], torch.optim.Optimizer]:
    """``fit`` with Adam and cross-entropy (batches moved to ``device``); the history and the optimizer."""
    optimizer = torch.optim.Adam(model.parameters(), lr=LR)
    loss = nn.functional.cross_entropy
    history = fit(model, train_data, val_data, loss, optimizer, epochs, device=device, progress=False)
    return history, optimizer


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=1536, help="training digits (default 1536)")
    parser.add_argument("--epochs", type=int, default=4, help="epochs (default 4)")
    parser.add_argument("--batch-size", type=int, default=32, help="samples per rank per step (default 32)")
    parser.add_argument("--seed", type=int, default=0, help="initial weights and shuffling (default 0)")
    wait = "seconds a rank waits for the others to join or to reach a collective (default 300)"
    parser.add_argument("--timeout", type=float, default=300.0, help=wait)
    parser.add_argument("--out", type=Path, default=Path("."), help="folder for checkpoint.pt (rank 0 creates it)")
    args = parser.parse_args(argv)
    if not 0 < args.samples <= MAX_SAMPLES:
        parser.error(f"--samples {args.samples}: accepted 1 to {MAX_SAMPLES}")

    distributed.init_from_env(timeout=args.timeout)  # False, and nothing done, under plain python
    # NCCL with CUDA (one GPU per process, LOCAL_RANK's), else gloo on the CPU
    device = torch.device("cuda", distributed.local_rank()) if torch.cuda.is_available() else torch.device("cpu")
    if distributed.rank() == 0:
        args.out.mkdir(parents=True, exist_ok=True)  # before training, not after it
    train_set, val_set = digits(args.samples)
    torch.manual_seed(args.seed)  # rank 0's initial weights, which DDP copies to every rank
    model = make_model().to(device)
    distributed.seed_everything(args.seed, model)  # from here on seed + rank: torch, numpy, seeded backends
    model = distributed.wrap(model)  # DistributedDataParallel under torchrun, the model itself otherwise
    train_data = distributed.distributed_loader(train_set, args.batch_size, seed=args.seed)
    val_data = distributed.distributed_loader(val_set, 64, shuffle=False)
    history, optimizer = train(model, train_data, val_data, args.epochs, device)

    rank, world = distributed.rank(), distributed.world_size()
    checkpoint = None
    if rank == 0:
        backend = dist.get_backend() if distributed.is_distributed() else "one process"
        print(f"digits: {len(train_set)} training, {len(val_set)} validation samples; {world} rank(s) ({backend}), "
              f"global batch {args.batch_size * world}")  # fmt: skip
        for epoch in history:
            print(f"epoch {epoch['epoch']}: train loss {epoch['train_loss']:.4f}, val loss {epoch['val_loss']:.4f}")
        final = history[-1]
        with torch.no_grad():
            x, y = val_set.tensors
            accuracy = (distributed.unwrap(model)(x.to(device)).argmax(1).cpu() == y).double().mean().item()
        print(f"final train loss {final['train_loss']!r}, val accuracy {accuracy:.3f}")
        checkpoint = hybridai.save(
            distributed.unwrap(model), args.out / "checkpoint.pt", optimizer=optimizer, epoch=final["epoch"],
            train_loss=final["train_loss"], val_loss=final["val_loss"], world_size=world,
        )  # fmt: skip
        print(f"saved {checkpoint}")
    if distributed.is_distributed():
        dist.barrier()  # the other ranks leave once rank 0 has written the checkpoint
        dist.destroy_process_group()
    return {"history": history, "rank": rank, "world_size": world, "checkpoint": checkpoint}


if __name__ == "__main__":
    main()
