import math
import sys

import pytest
import torch
from torch.utils.data import DataLoader, TensorDataset

from hybridai.core.errors import HybridAIError, MissingExtraError
from hybridai.training import fit


def _data(seed):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(64, 4, generator=g)
    return TensorDataset(x, x @ torch.tensor([[1.0], [-2.0], [0.5], [0.0]]))


def _fit_with_validation(model, optimizer, epochs, **options):
    """``fit`` with MSE on the training set (batches of 16) and the validation set (batches of 32), no bars."""
    train, val = DataLoader(_data(0), batch_size=16), DataLoader(_data(1), batch_size=32)
    return fit(model, train, val, torch.nn.functional.mse_loss, optimizer, epochs, progress=False, **options)


def test_fit_reduces_loss_and_returns_history():
    torch.manual_seed(0)
    m = torch.nn.Linear(4, 1)
    hist = _fit_with_validation(m, torch.optim.SGD(m.parameters(), lr=0.1), 5)
    assert [h["epoch"] for h in hist] == [0, 1, 2, 3, 4]
    assert hist[-1]["val_loss"] < hist[0]["val_loss"] * 0.5


def test_early_stopping_and_callbacks():
    torch.manual_seed(0)
    m = torch.nn.Linear(4, 1)
    seen = []
    optimizer = torch.optim.SGD(m.parameters(), lr=0.0)
    hist = _fit_with_validation(m, optimizer, 20, patience=2, callbacks=[lambda e, mets: seen.append(e)])
    assert len(hist) == 3 and seen == [0, 1, 2]
    hist = fit(
        m,
        DataLoader(_data(0), batch_size=16),
        None,
        torch.nn.functional.mse_loss,
        torch.optim.SGD(m.parameters(), lr=0.1),
        20,
        callbacks=[lambda e, mets: e < 1],
        progress=True,
    )
    assert len(hist) == 2 and "val_loss" not in hist[0]


def _regression(seed=0):
    torch.manual_seed(seed)
    model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.Tanh(), torch.nn.Linear(8, 1))
    return model, torch.optim.SGD(model.parameters(), lr=0.05)


def _record_dtypes(model):
    seen = []
    model[0].register_forward_hook(lambda module, args, out: seen.append(out.dtype))
    return seen


def test_amp_bfloat16_on_cpu_runs_forward_under_autocast():
    model, optimizer = _regression()
    seen = _record_dtypes(model)
    hist = _fit_with_validation(model, optimizer, 4, amp=torch.bfloat16)
    assert seen and set(seen) == {torch.bfloat16}
    assert all(p.dtype == torch.float32 for p in model.parameters())  # weights stay in full precision
    assert all(isinstance(h["train_loss"], float) and math.isfinite(h["train_loss"]) for h in hist)
    assert hist[-1]["val_loss"] < hist[0]["val_loss"]
    model, optimizer = _regression()
    seen = _record_dtypes(model)
    fit(model, DataLoader(_data(0), batch_size=16), None, torch.nn.functional.mse_loss, optimizer, 1, progress=False)
    assert set(seen) == {torch.float32}  # amp=None: no autocast


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_amp_on_cuda(dtype):
    model, optimizer = _regression()
    model = model.cuda()
    seen = _record_dtypes(model)
    hist = _fit_with_validation(model, optimizer, 4, device="cuda", amp=dtype)
    assert set(seen) == {dtype}
    assert hist[-1]["val_loss"] < hist[0]["val_loss"]


def test_tensorboard_writes_scalars_per_epoch(tmp_path):
    pytest.importorskip("tensorboard")
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    model, optimizer = _regression()
    hist = _fit_with_validation(model, optimizer, 3, tensorboard=tmp_path / "run")
    events = EventAccumulator(str(tmp_path / "run"))
    events.Reload()
    assert set(events.Tags()["scalars"]) == {"train_loss", "val_loss", "lr"}
    for name in ("train_loss", "val_loss"):
        scalars = events.Scalars(name)
        assert [s.step for s in scalars] == [0, 1, 2]
        assert [s.value for s in scalars] == pytest.approx([h[name] for h in hist], rel=1e-6)
    assert [s.value for s in events.Scalars("lr")] == pytest.approx([0.05] * 3)


def test_tensorboard_missing_names_the_extra(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "tensorboard", None)  # import tensorboard -> ImportError
    model, optimizer = _regression()
    with pytest.raises(MissingExtraError, match=r"pip install -e '\.\[tensorboard\]' in a clone of hybridai"):
        fit(model, [], None, torch.nn.functional.mse_loss, optimizer, 1, tensorboard=tmp_path / "run")
    assert not (tmp_path / "run").exists()


def _fit_call(**changes):
    model, optimizer = _regression()
    arguments = {
        "model": model,
        "train_data": DataLoader(_data(0), batch_size=16),
        "val_data": None,
        "loss": torch.nn.functional.mse_loss,
        "optimizer": optimizer,
        "epochs": 1,
        "progress": False,
    }
    arguments.update(changes)
    return lambda: fit(**arguments)


@pytest.mark.parametrize(
    "changes, match",
    [
        ({"model": "net"}, r"model='str'.*torch.nn.Module"),
        ({"train_data": None}, r"train_data='NoneType'.*iterable of \(x, y\) batches"),
        ({"val_data": 3}, r"val_data='int'.*None or an iterable"),
        ({"loss": "mse"}, r"loss='mse'.*callable loss\(output, target\)"),
        ({"optimizer": "sgd"}, r"optimizer='str'.*torch.optim.Optimizer"),
        ({"epochs": 0}, r"epochs=0.*positive int"),
        ({"epochs": True}, r"epochs=True.*positive int"),
        ({"patience": 0}, r"patience=0.*positive int"),
        ({"callbacks": print}, r"callbacks=<built-in function print>.*iterable of callables"),
        ({"callbacks": [print, 3]}, r"callbacks\[1\]=3.*callable"),
        ({"device": "gpu0"}, r"device='gpu0'.*'cpu' or 'cuda:0'"),
        ({"progress": "yes"}, r"progress='yes'.*True or False"),
        ({"amp": torch.float16}, r"amp=torch.float16.*torch.bfloat16 on device type 'cpu'"),
        ({"amp": "bf16"}, r"amp='bf16'.*torch.bfloat16"),
        ({"amp": torch.bfloat16, "device": "meta"}, r"amp=torch.bfloat16.*device type 'meta'"),
        ({"tensorboard": 3}, r"tensorboard=3.*log folder"),
    ],
)
def test_fit_argument_errors(changes, match):
    with pytest.raises(HybridAIError, match=match):
        _fit_call(**changes)()


def test_batch_dim_weights_time_major_batches_by_their_samples():
    """With lr=0 the epoch's loss is the mean loss over the samples only when each batch counts its B samples, not
    its T time steps; ``desc`` labels the bars."""
    from hybridai.training import TensorBatches

    g = torch.Generator().manual_seed(0)
    x, y = torch.randn(5, 10, 3, generator=g), torch.randn(10, 1, generator=g)  # [T, B, F], 10 samples

    class Mean(torch.nn.Module):  # time-major in, [B, 1] out
        def __init__(self):
            super().__init__()
            self.linear = torch.nn.Linear(3, 1)

        def forward(self, x):
            return self.linear(x).mean(0)

    torch.manual_seed(0)
    model = Mean()
    with torch.no_grad():
        want = float(torch.nn.functional.mse_loss(model(x), y))

    def epoch_loss(**options):
        batches = TensorBatches(x, y, 4, batch_dim=1, seed=0)  # batches of 4, 4 and 2 samples
        optimizer = torch.optim.SGD(model.parameters(), lr=0.0)
        return fit(model, batches, None, torch.nn.functional.mse_loss, optimizer, 1, progress=False, **options)

    assert epoch_loss(batch_dim=1)[0]["train_loss"] == pytest.approx(want, rel=1e-6)
    assert epoch_loss()[0]["train_loss"] != pytest.approx(want, rel=1e-3)  # len(x) is T: each batch counts alike
    with pytest.raises(HybridAIError, match="batch_dim=3 is not valid; accepted: a dimension of every batch's x"):
        epoch_loss(batch_dim=3)


def test_desc_labels_the_progress_bars(capsys):
    torch.manual_seed(0)
    m = torch.nn.Linear(4, 1)
    data = DataLoader(_data(0), batch_size=16)
    fit(m, data, data, torch.nn.functional.mse_loss, torch.optim.SGD(m.parameters(), lr=0.1), 1, desc="probe")
    err = capsys.readouterr().err
    assert "probe: epoch 1/1" in err and "probe: val" in err
    with pytest.raises(HybridAIError, match="desc=3 is not valid"):
        fit(m, data, None, torch.nn.functional.mse_loss, torch.optim.SGD(m.parameters(), lr=0.1), 1, desc=3)


def test_epoch_loss_is_read_once_per_pass_and_summed_in_float64_in_batch_order(monkeypatch):
    """No loss is read on the host during a pass (no synchronisation per step on an accelerator); the epoch's loss
    is the float64 sum of each batch's loss times its samples, in batch order, over the samples (batches of 16, 16
    and 8)."""
    torch.manual_seed(0)
    model = torch.nn.Linear(4, 1)
    data = DataLoader(TensorDataset(*_data(0)[:40]), batch_size=16)
    losses, reads = [], []

    def loss(output, target):
        value = torch.nn.functional.mse_loss(output, target)
        losses.append(float(value))
        return value

    to_float = torch.Tensor.__float__
    monkeypatch.setattr(torch.Tensor, "__float__", lambda self: reads.append(tuple(self.shape)) or to_float(self))
    history = fit(model, data, None, loss, torch.optim.SGD(model.parameters(), lr=0.0), 1, progress=False)
    monkeypatch.undo()
    assert reads == [()] * 3  # the loss function's own reads only
    want = 0.0
    for value, samples in zip(losses, (16, 16, 8), strict=True):
        want += value * samples
    assert history[0]["train_loss"] == want / 40
