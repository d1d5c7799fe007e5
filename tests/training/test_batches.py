"""TensorBatches: seeded shuffled minibatches of in-memory tensors along any batch dimension."""

import pytest
import torch

from hybridai.core.errors import ConfigError, ShapeError
from hybridai.training import TensorBatches


def time_major(samples: int = 10) -> tuple[torch.Tensor, torch.Tensor]:
    """``[T=3, B, 2]`` inputs whose values name their sample, and labels ``[B]`` equal to the sample's index."""
    x = torch.arange(samples, dtype=torch.float32).repeat(3, 1).unsqueeze(-1).repeat(1, 1, 2)
    return x, torch.arange(samples)


def test_each_pass_is_a_new_seeded_permutation_of_every_sample_along_the_batch_dimension():
    x, y = time_major()
    batches = TensorBatches(x, y, 4, batch_dim=1, seed=5)
    first, second = list(batches), list(batches)
    assert len(batches) == 3 and [b[1].numel() for b in first] == [4, 4, 2]  # the last batch holds what is left
    for xb, yb in first:
        assert xb.shape == (3, len(yb), 2) and torch.equal(xb[0, :, 0], yb.float())  # x and y of the same samples
    order = torch.cat([yb for _, yb in first])
    assert sorted(order.tolist()) == list(range(10)) and order.tolist() != list(range(10))
    assert torch.cat([yb for _, yb in second]).tolist() != order.tolist()  # a new order on every pass
    # the order is torch.randperm's from a generator seeded once: the same seed gives the same passes
    generator = torch.Generator().manual_seed(5)
    assert order.tolist() == torch.randperm(10, generator=generator).tolist()
    again = TensorBatches(x, y, 4, batch_dim=1, seed=5)
    assert [yb.tolist() for _, yb in again] == [yb.tolist() for _, yb in first]


def test_mismatched_shapes_and_bad_arguments_are_refused_by_name():
    x, y = time_major()
    with pytest.raises(ShapeError, match=r"y\.shape=\(10,\) is not valid; accepted: one row per sample of x: \(3, "):
        TensorBatches(x, y, 4)  # batch_dim 0 of [T, B, F] holds 3 time steps, not 10 samples
    with pytest.raises(ConfigError, match=r"batch_dim=3 is not valid; accepted: a dimension of x, which has 3"):
        TensorBatches(x, y, 4, batch_dim=3)
    with pytest.raises(ConfigError, match="batch_size=0 is not valid"):
        TensorBatches(x, y, 0, batch_dim=1)
    with pytest.raises(ConfigError, match="x='list' is not valid; accepted: a torch.Tensor"):
        TensorBatches([1, 2], y, 4)
