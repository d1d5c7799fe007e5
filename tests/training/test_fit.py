import torch
from torch.utils.data import DataLoader, TensorDataset

from hybridai.training import fit


def _data(seed):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(64, 4, generator=g)
    return TensorDataset(x, x @ torch.tensor([[1.0], [-2.0], [0.5], [0.0]]))


def test_fit_reduces_loss_and_returns_history():
    torch.manual_seed(0)
    m = torch.nn.Linear(4, 1)
    hist = fit(
        m,
        DataLoader(_data(0), batch_size=16),
        DataLoader(_data(1), batch_size=32),
        torch.nn.functional.mse_loss,
        torch.optim.SGD(m.parameters(), lr=0.1),
        5,
        progress=False,
    )
    assert [h["epoch"] for h in hist] == [0, 1, 2, 3, 4]
    assert hist[-1]["val_loss"] < hist[0]["val_loss"] * 0.5


def test_early_stopping_and_callbacks():
    torch.manual_seed(0)
    m = torch.nn.Linear(4, 1)
    seen = []
    hist = fit(
        m,
        DataLoader(_data(0), batch_size=16),
        DataLoader(_data(1), batch_size=32),
        torch.nn.functional.mse_loss,
        torch.optim.SGD(m.parameters(), lr=0.0),
        20,
        patience=2,
        callbacks=[lambda e, mets: seen.append(e)],
        progress=False,
    )
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
