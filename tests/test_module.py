"""hybridai.place replaces what a classical backend wraps, the root module included."""

import pytest
import torch
from torch import nn

import hybridai
from hybridai import backends
from hybridai.backends import Capabilities, ClassicalBackend, registry


class Wrapped(nn.Module):
    def __init__(self, inner: nn.Module) -> None:
        super().__init__()
        self.inner = inner

    def forward(self, x):
        return 2 * self.inner(x)


class Doubler(ClassicalBackend):
    domains = ("classical",)

    @property
    def capabilities(self) -> Capabilities:
        return Capabilities(differentiable=True, exact=False)

    def place(self, module: nn.Module) -> nn.Module:
        return module if isinstance(module, Wrapped) else Wrapped(module)


@pytest.fixture
def doubler():
    backends.register("doubler")(Doubler)
    yield
    registry._builtin.pop("doubler")


def test_place_wraps_leaves_and_the_root(doubler):
    torch.manual_seed(0)
    x = torch.rand(3, 4)
    model = nn.Sequential(nn.Linear(4, 4), nn.Sequential(nn.Linear(4, 2)))
    before = model(x)
    placed = hybridai.place(model, classical="doubler")
    assert placed is model and isinstance(model[0], Wrapped) and isinstance(model[1][0], Wrapped)
    assert torch.allclose(model(x), 2 * model[1][0].inner(2 * model[0].inner(x)))
    assert not torch.allclose(model(x), before)
    root = nn.Linear(4, 2)
    assert isinstance(hybridai.place(root, classical="doubler"), Wrapped)
