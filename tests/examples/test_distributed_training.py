"""The distributed-training example: plain python, and two torchrun "nodes" joined by a c10d rendezvous on this
machine, which end with the weights and losses of one process trained on the same global batches."""

import os
import signal
import socket
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest
import torch
from torch.utils.data import DataLoader, DistributedSampler

import hybridai
from tests.examples import EXAMPLES, load_example

REPOSITORY = EXAMPLES.parent
SAMPLES, EPOCHS, PER_RANK = 64, 2, 8  # 64 digits: 4 global batches of 16 per epoch, 8 on each of the two ranks
LIMIT_S = 300  # both launches together; then every process they started is killed
MARKER = "HYBRIDAI_TEST_RUN"  # in the launchers' environment, inherited by their workers: finds strays


def test_plain_python_trains_in_one_process_and_writes_the_checkpoint(tmp_path, capsys):
    module = load_example("distributed_training")
    with torch.random.fork_rng():  # the script seeds the global generator, as scripts do
        out = module.main(["--samples", "64", "--epochs", "2", "--batch-size", "16", "--out", str(tmp_path / "new")])
    assert out["rank"] == 0 and out["world_size"] == 1
    history = out["history"]
    assert [h["epoch"] for h in history] == [0, 1] and history[1]["train_loss"] < history[0]["train_loss"]
    assert out["checkpoint"] == tmp_path / "new" / "checkpoint.pt"
    info = hybridai.load(out["checkpoint"], module.make_model())
    assert info["epoch"] == 1 and info["metadata"]["world_size"] == 1
    assert info["metadata"]["train_loss"] == history[1]["train_loss"]
    printed = capsys.readouterr().out
    assert "1 rank(s) (one process), global batch 16" in printed and printed.count("epoch ") == 2
    assert f"final train loss {history[1]['train_loss']!r}" in printed


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def marked_processes(run: str) -> list[int]:
    """This user's processes whose environment holds ``MARKER=run``: the launchers and their workers."""
    marker = f"{MARKER}={run}".encode()
    pids = []
    for entry in Path("/proc").glob("[0-9]*"):
        try:
            if marker in (entry / "environ").read_bytes().split(b"\0"):
                pids.append(int(entry.name))
        except OSError:  # another user's process, or one that has just exited
            continue
    return pids


def stop(launchers: list[subprocess.Popen], run: str) -> None:
    """Stop what is left of a run: SIGTERM to each launcher (torchrun then stops its workers), SIGKILL to the rest."""
    for launcher in launchers:
        if launcher.poll() is None:
            launcher.send_signal(signal.SIGTERM)
    for launcher in launchers:
        try:
            launcher.wait(timeout=20)
        except subprocess.TimeoutExpired:
            launcher.kill()
            launcher.wait()
    for pid in marked_processes(run):
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            continue


def launch_two_nodes(folder: Path) -> tuple[list[int], list[str], list[Path]]:
    """Two ``torchrun --nnodes 2 --nproc-per-node 1`` launchers sharing a c10d rendezvous on 127.0.0.1, each with its
    own output folder (as two machines have); their exit codes, logs and output folders."""
    run = f"hybridai-test-{uuid.uuid4().hex[:12]}"
    env = {
        **os.environ,
        "OMP_NUM_THREADS": "1",
        "CUDA_VISIBLE_DEVICES": "",  # gloo on the CPU: two "nodes" on one machine would share its GPU 0
        "PYTHONPATH": os.pathsep.join([str(REPOSITORY), *filter(None, [os.environ.get("PYTHONPATH")])]),
        MARKER: run,
    }
    torchrun = [sys.executable, "-m", "torch.distributed.run", "--nnodes", "2", "--nproc-per-node", "1"]
    torchrun += ["--rdzv-backend", "c10d", "--rdzv-endpoint", f"127.0.0.1:{free_port()}", "--rdzv-id", run]
    torchrun += ["--rdzv-conf", "join_timeout=120"]
    script = [str(EXAMPLES / "distributed_training.py"), "--samples", str(SAMPLES), "--epochs", str(EPOCHS)]
    script += ["--batch-size", str(PER_RANK), "--timeout", "120"]
    outs, logs, launchers = [folder / f"node{n}" for n in "ab"], [folder / f"node{n}.log" for n in "ab"], []
    try:
        for out, log in zip(outs, logs, strict=True):
            with open(log, "wb") as sink:
                launchers.append(
                    subprocess.Popen([*torchrun, *script, "--out", str(out)], env=env, stdout=sink, stderr=sink)
                )
        deadline = time.monotonic() + LIMIT_S
        codes = [launcher.wait(timeout=max(deadline - time.monotonic(), 1)) for launcher in launchers]
    except subprocess.TimeoutExpired:
        pytest.fail(f"the two nodes ran past {LIMIT_S} s:\n" + "\n".join(log.read_text() for log in logs))
    finally:
        stop(launchers, run)
    assert marked_processes(run) == []  # no launcher or worker outlives the run
    return codes, [log.read_text() for log in logs], outs


@pytest.mark.slow
def test_two_nodes_with_a_c10d_rendezvous_equal_one_process_on_the_global_batch(tmp_path):
    codes, logs, outs = launch_two_nodes(tmp_path)
    assert codes == [0, 0], "\n".join(logs)
    # the rendezvous decides which node holds rank 0: exactly one node printed and wrote the checkpoint
    first = [n for n, log in enumerate(logs) if "final train loss" in log]
    assert len(first) == 1, "\n".join(logs)
    rank0, other = outs[first[0]], outs[1 - first[0]]
    assert "2 rank(s) (gloo), global batch 16" in logs[first[0]]
    assert (rank0 / "checkpoint.pt").is_file() and not (other / "checkpoint.pt").exists()

    # one process, global batch 16, the two ranks' samplers' order (a DistributedSampler over one replica)
    module = load_example("distributed_training")
    train_set, val_set = module.digits(SAMPLES)
    with torch.random.fork_rng():
        torch.manual_seed(0)
        reference = module.make_model()
    order = DistributedSampler(train_set, num_replicas=1, rank=0, shuffle=True, seed=0)
    train = DataLoader(train_set, batch_size=2 * PER_RANK, sampler=order)
    history, _ = module.train(reference, train, DataLoader(val_set, batch_size=64), EPOCHS)

    trained = module.make_model()
    info = hybridai.load(rank0 / "checkpoint.pt", trained)
    assert info["epoch"] == EPOCHS - 1 and info["metadata"]["world_size"] == 2
    for key in ("train_loss", "val_loss"):
        assert abs(info["metadata"][key] - history[-1][key]) < 1e-6, (key, info["metadata"][key], history[-1][key])
    assert f"final train loss {info['metadata']['train_loss']!r}" in logs[first[0]]
    expected = reference.state_dict()
    assert trained.state_dict().keys() == expected.keys()
    for name, value in expected.items():
        torch.testing.assert_close(trained.state_dict()[name], value, atol=1e-6, rtol=0, msg=name)
    assert history[-1]["train_loss"] < history[0]["train_loss"]  # it learnt: the comparison is not of two no-ops
