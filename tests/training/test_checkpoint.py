import os

import pytest
import torch

import hybridai
from hybridai.training.checkpoint import CheckpointError


def _model():
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.Tanh(), torch.nn.Linear(8, 2))


def _steps(model, opt, n, seed):
    g = torch.Generator().manual_seed(seed)
    for _ in range(n):
        x = torch.randn(16, 4, generator=g)
        y = torch.randn(16, 2, generator=g)
        opt.zero_grad()
        torch.nn.functional.mse_loss(model(x), y).backward()
        opt.step()


def test_round_trip_with_metadata(tmp_path):
    m = _model()
    opt = torch.optim.Adam(m.parameters(), lr=0.01)
    _steps(m, opt, 3, 1)
    p = hybridai.save(m, tmp_path / "ck.pt", optimizer=opt, epoch=3, note="hi", lr=0.01)
    m2 = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.Tanh(), torch.nn.Linear(8, 2))
    opt2 = torch.optim.Adam(m2.parameters(), lr=0.01)
    info = hybridai.load(p, m2, opt2)
    assert info == {"epoch": 3, "metadata": {"note": "hi", "lr": 0.01}}
    for a, b in zip(m.parameters(), m2.parameters(), strict=True):
        assert torch.equal(a, b)
    assert opt2.state_dict()["state"][0]["step"] == 3


def test_resume_equals_uninterrupted(tmp_path):
    m = _model()
    opt = torch.optim.Adam(m.parameters(), lr=0.01)
    _steps(m, opt, 4, 1)
    _steps(m, opt, 4, 2)

    r = _model()
    ropt = torch.optim.Adam(r.parameters(), lr=0.01)
    _steps(r, ropt, 4, 1)
    hybridai.save(r, tmp_path / "ck.pt", optimizer=ropt, epoch=1)
    r2 = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.Tanh(), torch.nn.Linear(8, 2))
    ropt2 = torch.optim.Adam(r2.parameters(), lr=0.01)
    hybridai.load(tmp_path / "ck.pt", r2, ropt2)
    _steps(r2, ropt2, 4, 2)
    for a, b in zip(m.parameters(), r2.parameters(), strict=True):
        assert torch.equal(a, b)


def test_crash_mid_write_keeps_previous(tmp_path, monkeypatch):
    m = _model()
    path = tmp_path / "ck.pt"
    hybridai.save(m, path, epoch=1)
    before = path.read_bytes()

    def crash(*args, **kwargs):
        raise KeyboardInterrupt("simulated crash mid-write")

    monkeypatch.setattr(os, "fsync", crash)
    with torch.no_grad():
        m[0].weight.add_(1.0)
    with pytest.raises(KeyboardInterrupt):
        hybridai.save(m, path, epoch=2)
    monkeypatch.undo()
    assert path.read_bytes() == before
    assert sorted(os.listdir(tmp_path)) == ["ck.pt"]
    assert hybridai.load(path, _model())["epoch"] == 1


def test_truncated_and_corrupt_files_raise_naming_path(tmp_path):
    m = _model()
    path = tmp_path / "ck.pt"
    hybridai.save(m, path)
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])
    with pytest.raises(CheckpointError, match="ck.pt"):
        hybridai.load(path, _model())
    path.write_bytes(b"garbage" * 10)
    with pytest.raises(hybridai.HybridAIError, match="corrupt or truncated"):
        hybridai.load(path, _model())
    with pytest.raises(CheckpointError, match="does not exist"):
        hybridai.load(tmp_path / "missing.pt", _model())
