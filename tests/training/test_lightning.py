"""hybridai layers inside PyTorch Lightning's Trainer: on the CPU, and data-parallel with DDP over gloo.

The model mixes the three domains (Linear -> QuantumLayer on ``statevector`` -> a spiking block with a
learnt decay -> Linear). One process under Lightning must equal a plain torch loop with the same seed,
data and optimizer; two DDP processes (``ddp_spawn``: the model is pickled into each process) must end
with the weights of one process trained on the same global batches.
"""

from __future__ import annotations

import copy
import os
import warnings

import lightning as L
import pytest
import torch
from torch import nn
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset

import hybridai
from hybridai.demo import entangling_classifier

# Lightning 2.6 calls a torch pytree API that torch 2.13 deprecates: Lightning's business, not this test's
pytestmark = pytest.mark.filterwarnings("ignore:.*LeafSpec.*")

BATCH = 8  # the global batch: 4 samples per rank under DDP
STEPS = 6
LR = 0.1


def hybrid_model() -> nn.Sequential:
    """Classical -> quantum (3 qubits, statevector) -> spiking (repeat-encode, Linear, LIF, rate) -> classical."""
    with torch.random.fork_rng():
        torch.manual_seed(0)
        quantum = hybridai.QuantumLayer(entangling_classifier, 3, {"weights": (1, 3, 3)}, backend="statevector")
        return nn.Sequential(
            nn.Linear(4, 3),
            nn.Tanh(),
            quantum,
            hybridai.RepeatEncoder(5),
            nn.Linear(3, 4),
            hybridai.LIF(0.8, threshold=0.3, learn_beta=True),
            hybridai.RateDecoder(),
            nn.Linear(4, 2),
        )


def dataset(n: int = BATCH * STEPS) -> TensorDataset:
    g = torch.Generator().manual_seed(1)
    x = torch.randn(n, 4, generator=g)
    return TensorDataset(x, (x[:, 0] * x[:, 1] > 0).long())


class HybridClassifier(L.LightningModule):
    """The hybrid model as a LightningModule: cross-entropy, plain SGD."""

    def __init__(self) -> None:
        super().__init__()
        self.model = hybrid_model()
        self.losses: list[float] = []

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.model(x)

    def training_step(self, batch, batch_idx):
        x, y = batch
        loss = nn.functional.cross_entropy(self.model(x), y)
        self.losses.append(float(loss.detach()))
        return loss

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=LR)

    def train_dataloader(self) -> DataLoader:
        """Rank r of W takes samples r, r+W, ... in order, BATCH // W per step: the global batches are the plain
        loop's. (Lightning's own sampler, ``use_distributed_sampler=True``, would shuffle the training data.)"""
        world, rank = self.trainer.world_size, self.trainer.global_rank
        data = dataset()
        sampler = DistributedSampler(data, num_replicas=world, rank=rank, shuffle=False)
        return DataLoader(data, batch_size=BATCH // world, sampler=sampler)


class SaveWeights(L.Callback):
    """Writes each rank's final weights to ``folder/rank{r}.pt`` (under DDP the ranks are other processes)."""

    def __init__(self, folder: str) -> None:
        self.folder = folder

    def on_train_end(self, trainer, pl_module) -> None:
        state = {k: v.detach().cpu().clone() for k, v in pl_module.model.state_dict().items()}
        torch.save(state, os.path.join(self.folder, f"rank{trainer.global_rank}.pt"))


def trainer(**kwargs) -> L.Trainer:
    options = dict(
        max_steps=STEPS,
        accelerator="cpu",
        logger=False,
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
    )
    return L.Trainer(**{**options, **kwargs})


def fit(module: L.LightningModule, **kwargs) -> L.Trainer:
    run = trainer(use_distributed_sampler=False, **kwargs)
    with warnings.catch_warnings():  # "does not have many workers": a 48-sample data set needs none
        warnings.filterwarnings("ignore", message=".*does not have many workers.*")
        run.fit(module)
    return run


def plain_torch_loop() -> tuple[nn.Module, list[float]]:
    """The reference: the same model, data, order and optimizer without Lightning."""
    model = hybrid_model()
    optimizer = torch.optim.SGD(model.parameters(), lr=LR)
    losses = []
    for x, y in DataLoader(dataset(), batch_size=BATCH, shuffle=False):
        optimizer.zero_grad()
        loss = nn.functional.cross_entropy(model(x), y)
        loss.backward()
        optimizer.step()
        losses.append(float(loss.detach()))
    return model, losses


def assert_same_weights(got: dict[str, torch.Tensor], want: dict[str, torch.Tensor]) -> None:
    assert got.keys() == want.keys()
    for name in want:
        torch.testing.assert_close(got[name], want[name], rtol=0, atol=1e-6, msg=f"parameter {name}")


@pytest.fixture(scope="module")
def reference() -> tuple[nn.Module, list[float]]:
    return plain_torch_loop()


def test_one_process_under_lightning_equals_a_plain_torch_loop(reference):
    module = HybridClassifier()
    initial = copy.deepcopy(module.model.state_dict())
    run = fit(module)
    want_model, want_losses = reference
    assert run.global_step == STEPS
    assert module.losses == pytest.approx(want_losses, abs=1e-6)
    assert_same_weights(module.model.state_dict(), want_model.state_dict())
    # the quantum weights and the spiking layer's learnt decay trained (not just the classical layers)
    for name in ("2.weights", "5.beta"):
        assert not torch.allclose(module.model.state_dict()[name], initial[name])
    assert module.model[2].backend == "statevector"


def test_the_loss_decreases_under_lightning(reference):
    _, losses = reference
    module = HybridClassifier()
    fit(module, max_steps=4 * STEPS, max_epochs=4)  # four passes over the data
    first, last = sum(module.losses[:STEPS]) / STEPS, sum(module.losses[-STEPS:]) / STEPS
    assert last < first


@pytest.mark.slow  # about 20 s: two spawned processes
def test_ddp_over_gloo_on_two_processes_equals_one_process_on_the_global_batch(tmp_path, reference):
    module = HybridClassifier()
    # each rank gets BATCH // 2 samples per step (rank r: samples r, r+2, ...): together the global batch of the
    # one-process run; DDP averages the two ranks' gradients
    fit(module, strategy="ddp_spawn", devices=2, callbacks=[SaveWeights(str(tmp_path))])
    ranks = [torch.load(tmp_path / f"rank{r}.pt", weights_only=True) for r in range(2)]
    want_model, _ = reference
    for state in ranks:
        assert_same_weights(state, want_model.state_dict())
    # Lightning brings rank 0's weights back into this process's module after the spawn
    assert_same_weights(module.model.state_dict(), want_model.state_dict())
