"""Data-parallel training: two CPU processes (gloo) against one process doing the same global work.

One spawn of two ranks runs every distributed check (imports dominate its cost) and saves each
rank's results to a file; the tests compare them with single-process references computed here.
"""

import contextlib
import copy
import io
import math
import os
import socket

import numpy as np
import pytest
import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from torch import nn
from torch.distributed.algorithms.ddp_comm_hooks import default_hooks
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset

import hybridai
from hybridai.core.errors import ConfigError, HybridAIError
from hybridai.demo import entangling_classifier
from hybridai.quantum.kernels.quantum_kernel import IQPFeatureMap
from hybridai.quantum.kernels.sharded import ShardedKernelRidge, gram_shards, sharded_alignment
from hybridai.training import distributed, fit, gradient_exchange
from hybridai.training.gradient_exchange import DIRECT_BYTES, LoopbackAverage

WORLD = 2
PER_RANK = 4  # samples per rank per step: the global batch is 8
EPOCHS = 2
FIT_EPOCHS = 4  # a rank-1 callback stops fit after epoch 1 (0-based)
LR = 0.5


def hybrid_model() -> nn.Sequential:
    """Classical -> quantum (statevector, float64) -> spiking (repeat-encode, Linear, LIF, rate) -> classical."""
    torch.manual_seed(0)
    quantum = hybridai.QuantumLayer(entangling_classifier, 2, {"weights": (1, 2, 3)}, backend="statevector")
    return nn.Sequential(
        nn.Linear(4, 2),
        nn.Tanh(),
        quantum,
        hybridai.RepeatEncoder(6),
        nn.Linear(2, 3),
        hybridai.LIF(0.8, threshold=0.3, learn_beta=True),
        hybridai.RateDecoder(),
        nn.Linear(3, 1),
    ).double()


def data(n: int, seed: int) -> TensorDataset:
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n, 4, generator=g, dtype=torch.float64)
    return TensorDataset(x, torch.sin(x[:, :1]) + 0.5 * x[:, 1:2])


def kernels() -> dict[str, hybridai.QuantumKernel]:
    torch.manual_seed(0)

    def feature_map(x, weights):
        import pennylane as qml

        IQPFeatureMap(3)(x)
        qml.StronglyEntanglingLayers(weights, wires=range(3))

    return {
        "fidelity": hybridai.QuantumKernel(feature_map, 3, {"weights": (1, 3, 3)}),
        "projected": hybridai.QuantumKernel(feature_map, 3, {"weights": (1, 3, 3)}, kind="projected", gamma=0.7),
    }


def gram_inputs() -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(2)
    return torch.rand(7, 3, generator=g, dtype=torch.float64), torch.rand(5, 3, generator=g, dtype=torch.float64)


def targets() -> torch.Tensor:
    return torch.randn(7, generator=torch.Generator().manual_seed(4), dtype=torch.float64)


def sgd_steps(model: nn.Module, loader) -> None:
    optimizer = torch.optim.SGD(model.parameters(), lr=LR)
    for _ in range(EPOCHS):
        for x, y in loader:
            optimizer.zero_grad()
            nn.functional.mse_loss(model(x), y).backward()
            optimizer.step()


def exchange_checks(rank: int) -> dict:
    """Per model and exchange: the gradients DDP leaves on this rank, this rank's own gradients, and the hooks."""
    out = {}
    for name, width, exchange in (
        ("small", 8, "auto"),
        ("large", 600, "auto"),  # 600 x 600 float32 weights: 1.4 MiB, past DIRECT_BYTES
        ("small_process_group", 8, "process_group"),
    ):
        torch.manual_seed(0)
        local = nn.Linear(width, 3)
        model = distributed.wrap(copy.deepcopy(local), gradient_exchange=exchange)
        x = torch.randn(5, width, generator=torch.Generator().manual_seed(100 + rank))
        model(x).square().sum().backward()
        local(x).square().sum().backward()
        out[name] = {
            "hooks": [type(state).__name__ for _, state in model._comm_hooks],
            "synced": [p.grad.clone() for p in model.parameters()],
            "own": [p.grad.clone() for p in local.parameters()],
        }
    # your own communication hook: wrapped with the process group's exchange, DDP takes it
    torch.manual_seed(0)
    own = distributed.wrap(nn.Linear(8, 3), gradient_exchange="process_group")
    own.register_comm_hook(None, default_hooks.allreduce_hook)
    own(torch.randn(5, 8, generator=torch.Generator().manual_seed(100 + rank))).square().sum().backward()
    out["own_hook"] = [p.grad.clone() for p in own.parameters()]
    # a rank that cannot reach rank 0 over loopback (a separate network namespace): no exchange on any rank
    real = socket.create_connection
    if rank == 1:
        gradient_exchange.socket.create_connection = lambda *a, **k: (_ for _ in ()).throw(ConnectionRefusedError())
    out["unreachable"] = LoopbackAverage.connect(reach=2.0)
    gradient_exchange.socket.create_connection = real
    # a rank that exchanges while the other does not: a clear error after the timeout, not a hang
    exchange = LoopbackAverage.connect(timeout=1.0)
    assert exchange is not None
    if rank == 1:
        try:
            exchange.average(torch.ones(4))
        except HybridAIError as error:
            out["unmatched"] = str(error)
    dist.barrier()
    exchange.close()
    return out


def worker(rank: int, port: int, folder: str) -> None:
    os.environ.update(
        RANK=str(rank), LOCAL_RANK=str(rank), WORLD_SIZE=str(WORLD), MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port)
    )
    torch.set_num_threads(1)
    assert distributed.init_from_env(timeout=60)
    results = {"rank": distributed.rank(), "world_size": distributed.world_size()}

    # (a) a few SGD steps of the DDP-wrapped hybrid model on this rank's half of each global batch
    model = distributed.wrap(hybrid_model())
    results["wrapped"] = type(model).__name__
    sgd_steps(model, distributed.distributed_loader(data(16, 1), PER_RANK, shuffle=False))
    results["params"] = {k: v.detach().clone() for k, v in distributed.unwrap(model).state_dict().items()}

    # (b) sharded Gram matrices (7 + 5 samples: odd, so shards are padded)
    X, Y = gram_inputs()
    for kind, kernel in kernels().items():
        results[f"gram_{kind}_xx"] = distributed.sharded_gram(kernel, X)
        results[f"gram_{kind}_xy"] = distributed.sharded_gram(kernel, X, Y)
        shards = gram_shards(kernel, X)
        results[f"shards_{kind}_nbytes"] = shards.nbytes
        results[f"align_{kind}"] = [sharded_alignment(shards, targets(), centered=c) for c in (False, True)]
        ridge = ShardedKernelRidge(kernel, alpha=0.1).fit(X, targets())
        results[f"ridge_{kind}"] = (ridge.dual_coef_, ridge.predict(Y))

    # (c) fit: shuffled training data, validation, TensorBoard, and a callback that stops on rank 1 only
    model = distributed.wrap(hybrid_model())
    progress = io.StringIO()
    with contextlib.redirect_stderr(progress):
        results["history"] = fit(
            model,
            distributed.distributed_loader(data(16, 1), PER_RANK, shuffle=True, seed=3),
            distributed.distributed_loader(data(8, 2), PER_RANK, shuffle=False),
            nn.functional.mse_loss,
            torch.optim.SGD(model.parameters(), lr=LR),
            FIT_EPOCHS,
            callbacks=[lambda epoch, metrics: not (rank == 1 and epoch == 1)],
            progress=True,
            tensorboard=os.path.join(folder, "tb"),
        )
    results["progress"] = progress.getvalue()

    # (d) gradient exchange: loopback sockets (small buckets), gloo (a bucket over DIRECT_BYTES, or on request)
    results["exchange"] = exchange_checks(rank)

    # seeds: seed + rank everywhere, encoders included
    encoder = hybridai.RateEncoder(4, seed=0)
    results["seed"] = distributed.seed_everything(10, nn.Sequential(encoder))
    results["torch_draw"] = torch.rand(3)
    results["encoder_seed"] = encoder.seed
    torch.save(results, os.path.join(folder, f"rank{rank}.pt"))
    dist.barrier()
    dist.destroy_process_group()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


SPAWNS = pytest.mark.slow  # the tests of the two spawned ranks: about 20 s for the run they share


@pytest.fixture(scope="module")
def ranks(tmp_path_factory):
    folder = tmp_path_factory.mktemp("ddp")
    mp.spawn(worker, args=(free_port(), str(folder)), nprocs=WORLD, join=True, start_method="spawn")
    return folder, [torch.load(folder / f"rank{r}.pt", weights_only=False) for r in range(WORLD)]


@SPAWNS
def test_ranks_joined_the_group(ranks):
    _, results = ranks
    assert [r["rank"] for r in results] == [0, 1]
    assert all(r["world_size"] == WORLD and r["wrapped"] == "DistributedDataParallel" for r in results)


@SPAWNS
def test_ddp_training_equals_one_process_with_the_global_batch(ranks):
    _, results = ranks
    reference = hybrid_model()
    initial = {k: v.clone() for k, v in reference.state_dict().items()}
    sgd_steps(reference, DataLoader(data(16, 1), batch_size=WORLD * PER_RANK, shuffle=False))
    expected = reference.state_dict()
    trained = [k for k in expected if not torch.equal(expected[k], initial[k])]
    assert "2.weights" in trained and "5.beta" in trained and "0.weight" in trained  # every domain learnt
    for result in results:
        assert result["params"].keys() == expected.keys()
        for name, value in expected.items():
            torch.testing.assert_close(result["params"][name], value, atol=1e-6, rtol=0, msg=name)


@SPAWNS
@pytest.mark.parametrize("kind", ["fidelity", "projected"])
def test_sharded_gram_equals_unsharded(ranks, kind):
    _, results = ranks
    X, Y = gram_inputs()
    kernel = kernels()[kind]
    with torch.no_grad():
        expected = {"xx": kernel(X), "xy": kernel(X, Y)}
    assert expected["xx"].shape == (7, 7) and expected["xy"].shape == (7, 5)
    for result in results:
        for key, value in expected.items():
            got = result[f"gram_{kind}_{key}"]
            assert got.dtype == value.dtype and got.shape == value.shape
            torch.testing.assert_close(got, value, atol=1e-12, rtol=0)


@SPAWNS
@pytest.mark.parametrize("kind", ["fidelity", "projected"])
def test_sharded_kernel_methods_equal_one_process_and_divide_the_matrix(ranks, kind):
    _, results = ranks
    X, Y = gram_inputs()
    kernel = kernels()[kind]
    with torch.no_grad():
        K = kernel(X)
    reference = hybridai.QuantumKernelRidge(kernel, alpha=0.1).fit(X.numpy(), targets().numpy())
    for result in results:
        coef, predicted = result[f"ridge_{kind}"]
        np.testing.assert_allclose(coef.numpy(), reference.dual_coef_, atol=1e-8, rtol=0)
        np.testing.assert_allclose(predicted.numpy(), reference.predict(Y.numpy()), atol=1e-8, rtol=0)
        for got, centered in zip(result[f"align_{kind}"], (False, True), strict=True):
            expected = hybridai.target_alignment(K, targets(), centered=centered)
            torch.testing.assert_close(got, expected, atol=1e-12, rtol=0)
    # 7 rows in 4 chunks (1, 2, 2, 2 rows): each chunk's entries on and right of the diagonal, each pair once
    held = [result[f"shards_{kind}_nbytes"] for result in results]
    assert sum(held) == (1 * 7 + 2 * 6 + 2 * 4 + 2 * 2) * 8
    assert max(held) < 7 * 7 * 8 / 2


@SPAWNS
def test_fit_histories_agree_across_ranks_and_with_one_process(ranks):
    folder, results = ranks
    histories = [r["history"] for r in results]
    assert histories[0] == histories[1]  # identical floats on both ranks
    assert [h["epoch"] for h in histories[0]] == [0, 1]  # rank 1's callback stopped both ranks
    # one process, global batch 8, the same shuffled order as the two ranks' samplers together
    model = hybrid_model()
    train = DataLoader(
        data(16, 1), batch_size=WORLD * PER_RANK, sampler=DistributedSampler(data(16, 1), 1, 0, shuffle=True, seed=3)
    )
    expected = fit(
        model,
        train,
        DataLoader(data(8, 2), batch_size=8),
        nn.functional.mse_loss,
        torch.optim.SGD(model.parameters(), lr=LR),
        FIT_EPOCHS,
        callbacks=[lambda epoch, metrics: epoch < 1],
        progress=False,
    )
    assert len(expected) == 2
    for got, want in zip(histories[0], expected, strict=True):
        assert got.keys() == want.keys()
        for key in ("train_loss", "val_loss"):
            assert math.isclose(got[key], want[key], rel_tol=1e-10), (key, got[key], want[key])
    events = list((folder / "tb").glob("events.out.tfevents.*"))
    assert len(events) == 1  # rank 0 only
    assert "epoch 1/4" in results[0]["progress"] and results[1]["progress"] == ""  # bars on rank 0 only


@SPAWNS
def test_gradient_exchange_gives_every_rank_the_mean_gradient(ranks):
    _, results = ranks
    assert 600 * 600 * 4 > DIRECT_BYTES
    hooks = {"small": ["LoopbackAverage"], "large": ["LoopbackAverage"], "small_process_group": []}
    for name, expected_hooks in hooks.items():
        own = [r["exchange"][name]["own"] for r in results]
        mean = [(a + b) / 2 for a, b in zip(*own, strict=True)]
        assert not torch.allclose(own[0][0], own[1][0])  # the ranks' data differ: averaging is seen
        for result in results:
            assert result["exchange"][name]["hooks"] == expected_hooks
            for got, want in zip(result["exchange"][name]["synced"], mean, strict=True):
                torch.testing.assert_close(got, want, atol=1e-6, rtol=1e-6)
    local = [r["exchange"]["small"]["own"] for r in results]  # the same model and data as the own hook's
    mean = [(a + b) / 2 for a, b in zip(*local, strict=True)]
    for result in results:
        for got, want in zip(result["exchange"]["own_hook"], mean, strict=True):
            torch.testing.assert_close(got, want, atol=1e-6, rtol=1e-6)
    for name in ("small", "large"):  # the same bits on every rank
        synced = [r["exchange"][name]["synced"] for r in results]
        assert all(torch.equal(a, b) for a, b in zip(*synced, strict=True))


@SPAWNS
def test_gradient_exchange_with_a_missing_rank_fails_clearly(ranks):
    _, results = ranks
    assert [r["exchange"]["unreachable"] for r in results] == [None, None]  # both ranks fall back together
    assert "unmatched" not in results[0]["exchange"]
    message = results[1]["exchange"]["unmatched"]
    assert message.startswith("rank 1: the gradient exchange with the other ranks failed")
    assert "same number of backward passes" in message


@SPAWNS
def test_seed_everything_offsets_by_rank(ranks):
    _, results = ranks
    for rank, result in enumerate(results):
        assert result["seed"] == 10 + rank and result["encoder_seed"] == 10 + rank
        torch.manual_seed(10 + rank)
        assert torch.equal(result["torch_draw"], torch.rand(3))
    assert not torch.equal(results[0]["torch_draw"], results[1]["torch_draw"])


# ----------------------------------------------------------------- one process, no process group


def test_helpers_fall_back_to_one_process():
    assert not distributed.is_distributed()
    assert distributed.rank() == 0 and distributed.world_size() == 1
    model = nn.Linear(2, 1)
    assert distributed.wrap(model) is model and distributed.unwrap(model) is model
    assert distributed.all_reduce_sum([1, 2.5]) == [1.0, 2.5]
    loader = distributed.distributed_loader(data(10, 0), 4, shuffle=True, seed=1)
    again = distributed.distributed_loader(data(10, 0), 4, shuffle=True, seed=1)
    batches = [x for x, _ in loader]
    assert [len(b) for b in batches] == [4, 4, 2]
    assert all(torch.equal(a, b) for a, b in zip(batches, [x for x, _ in again], strict=True))
    X, _ = gram_inputs()
    kernel = kernels()["fidelity"]
    with torch.no_grad():
        torch.testing.assert_close(distributed.sharded_gram(kernel, X), kernel(X), atol=0, rtol=0)


def test_init_from_env_without_torchrun(monkeypatch):
    monkeypatch.delenv("WORLD_SIZE", raising=False)
    assert distributed.init_from_env() is False
    assert not distributed.is_distributed()
    monkeypatch.setenv("WORLD_SIZE", "2")
    monkeypatch.setenv("RANK", "0")
    monkeypatch.delenv("MASTER_ADDR", raising=False)
    monkeypatch.delenv("MASTER_PORT", raising=False)
    with pytest.raises(ConfigError, match="MASTER_ADDR, MASTER_PORT"):
        distributed.init_from_env()
    monkeypatch.setenv("RANK", "first")
    with pytest.raises(ConfigError, match=r"RANK \(environment variable\)='first'.*non-negative int"):
        distributed.init_from_env()


def test_init_from_env_refuses_a_rank_outside_the_world_and_more_processes_than_gpus(monkeypatch):
    monkeypatch.setenv("WORLD_SIZE", "2")
    monkeypatch.setenv("MASTER_ADDR", "127.0.0.1")
    monkeypatch.setenv("MASTER_PORT", "29500")
    monkeypatch.setenv("RANK", "2")
    with pytest.raises(ConfigError, match=r"RANK \(environment variable\)='2'.*0 to 1 \(WORLD_SIZE=2\)"):
        distributed.init_from_env(timeout=1)  # refused before joining: no wait for a store
    # NCCL: one GPU per process; a LOCAL_RANK past this machine's GPUs is refused before any CUDA call
    monkeypatch.setenv("RANK", "1")
    monkeypatch.setenv("LOCAL_RANK", "1")
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 1)
    monkeypatch.setattr(torch.cuda, "set_device", lambda device: pytest.fail(f"set_device({device}) was called"))
    with pytest.raises(ConfigError, match=r"LOCAL_RANK \(environment variable\)='1'.*0 to 0.*--nproc-per-node 1"):
        distributed.init_from_env(backend="nccl")
    assert not distributed.is_distributed()


@pytest.mark.parametrize(
    "call, match",
    [
        (lambda: distributed.init_from_env(backend="mpi"), r"backend='mpi'.*'gloo', 'nccl'"),
        (lambda: distributed.init_from_env(timeout=0), r"timeout=0.*positive number of seconds"),
        (lambda: distributed.seed_everything(-1), r"seed=-1.*non-negative int"),
        (lambda: distributed.seed_everything(True), r"seed=True.*non-negative int"),
        (lambda: distributed.seed_everything(0, model="net"), r"model='str'.*torch.nn.Module"),
        (lambda: distributed.wrap("net"), r"model='str'.*torch.nn.Module"),
        (
            lambda: distributed.wrap(nn.Linear(2, 1), gradient_exchange="nccl"),
            r"gradient_exchange='nccl'.*'auto', 'process_group'",
        ),
        (lambda: distributed.all_reduce_sum(["a"]), r"values=\['a'\].*sequence of numbers"),
        (lambda: LoopbackAverage.connect(reach=0), r"reach=0.*positive number of seconds"),
        (lambda: LoopbackAverage.connect(timeout=True), r"timeout=True.*positive number of seconds"),
        (lambda: distributed.all_reduce_sum(3), r"values=3.*sequence of numbers"),
        (lambda: distributed.distributed_loader(data(4, 0), 0), r"batch_size=0.*positive int"),
        (lambda: distributed.distributed_loader(iter([1, 2]), 2), r"dataset='list_iterator'.*map-style"),
        (lambda: distributed.distributed_loader(data(4, 0), 2, sampler=[0]), r"sampler=\[0\].*builds the sampler"),
        (lambda: distributed.sharded_gram(nn.Linear(2, 2), torch.zeros(2, 2)), r"kernel='Linear'.*QuantumKernel"),
    ],
)
def test_distributed_argument_errors(call, match):
    with pytest.raises(HybridAIError, match=match):
        call()


def test_seed_everything_reseeds_seeded_backends():
    def circuit(inputs, weights):
        import pennylane as qml

        qml.RY(inputs[..., 0], wires=0)
        qml.RY(weights[0], wires=0)
        return qml.expval(qml.PauliZ(0))

    torch.manual_seed(0)
    seeded = hybridai.QuantumLayer(circuit, 1, {"weights": (1,)}, shots=1000, seed=3)
    unseeded = hybridai.QuantumLayer(circuit, 1, {"weights": (1,)})
    x = torch.rand(8, 1)
    with torch.no_grad():
        with_3 = seeded(x)
        assert distributed.seed_everything(7, nn.Sequential(seeded, unseeded)) == 7
        assert seeded.backend_options["seed"] == 7 and seeded.shots == 1000
        assert "seed" not in unseeded.backend_options
        with_7 = seeded(x)
        reference = hybridai.QuantumLayer(circuit, 1, {"weights": (1,)}, shots=1000, seed=7)
        reference.load_state_dict(seeded.state_dict())
        assert torch.equal(with_7, reference(x)) and not torch.equal(with_7, with_3)
