"""Every chip package has one shape: ``plan``, ``network`` (the runner), ``backend`` (the registry class and
the verb ``compile``, exported by the package); the registry class's ``compile`` is that verb."""

import importlib
import inspect

import pytest
import torch
from torch import nn

from hybridai import LIF, SpikeCountDecoder
from hybridai.core import registry
from hybridai.core.chip import CompiledNetwork
from hybridai.core.contracts import ChipCompiler
from hybridai.neuromorphic import fixed_point
from hybridai.spiking import SigmaDelta

CHIPS = ("loihi", "loihi2", "akida", "nengo")
PARTS = ("plan", "network", "backend")  # the modules every chip package has


@pytest.mark.parametrize("chip", CHIPS)
def test_every_chip_package_has_plan_network_and_backend_with_one_verb(chip):
    package = importlib.import_module(f"hybridai.neuromorphic.{chip}")
    plan, network, backend = (importlib.import_module(f"{package.__name__}.{m}") for m in PARTS)
    assert package.compile is backend.compile  # the verb, exported by the package
    assert list(inspect.signature(backend.compile).parameters)[:2] == ["model", "calibration"]
    assert inspect.signature(backend.compile).parameters["calibration"].kind is inspect.Parameter.KEYWORD_ONLY
    runners = [c for _, c in inspect.getmembers(network, inspect.isclass) if c.__module__ == network.__name__]
    assert any(issubclass(c, CompiledNetwork) for c in runners), f"{network.__name__} holds no runner"
    compilers = [c for _, c in inspect.getmembers(backend, inspect.isclass) if c.__module__ == backend.__name__]
    assert [c for c in compilers if issubclass(c, ChipCompiler)], f"{backend.__name__} holds no chip compiler"
    assert plan.ACCEPTS and plan.SUPPORTED  # what backend.capabilities reads (layers=, takes=)
    for word in ("plan", "network", "backend", "compile"):
        assert word in package.__doc__ and word in backend.__doc__, (chip, word)


def _counts(steps: int = 12, batch: int = 3, width: int = 6) -> torch.Tensor:
    return (torch.rand(steps, batch, width, generator=torch.Generator().manual_seed(0)) < 0.4).float()


def _lif_model() -> nn.Sequential:
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(6, 5), LIF(0.8, reset="zero"), nn.Linear(5, 3), LIF(0.9, reset="zero"))


def _sigma_delta_model() -> nn.Sequential:
    torch.manual_seed(0)
    return nn.Sequential(
        SigmaDelta(threshold=0.05, scale=2**-6, input="value"),
        nn.Linear(6, 5, bias=False),
        SigmaDelta(threshold=0.03, scale=2**-7, features=5),
        nn.Linear(5, 3, bias=False),
        SpikeCountDecoder(),
    )


@pytest.mark.parametrize(
    ("chip", "options", "build"),
    [
        ("loihi", {"quirks": "lava"}, _lif_model),
        ("loihi2", {}, _sigma_delta_model),
        ("nengo", {"cuba_refractory_steps": 1.0}, _lif_model),
    ],
)
def test_the_verb_and_the_registry_class_compile_the_same_network(chip, options, build):
    model, x = build(), _counts()
    package = importlib.import_module(f"hybridai.neuromorphic.{chip}")
    calibration = x if chip != "loihi2" else None  # loihi2 quantizes from the model alone: it refuses a batch
    by_verb = package.compile(model, calibration=calibration, **options).run(x)
    by_class = registry.get(chip, **options).compile(model, calibration=calibration).run(x)
    assert torch.equal(by_verb.outputs, by_class.outputs)
    assert by_verb.layers == by_class.layers


def test_the_chip_packages_share_fixed_point_rules_instead_of_importing_each_other():
    from hybridai.neuromorphic import loihi

    assert loihi.wrap is fixed_point.wrap and loihi.decay is fixed_point.decay
    x = torch.tensor([2**31, -(2**31) - 1, 5, -7])
    assert fixed_point.int32(x).tolist() == [-(2**31), 2**31 - 1, 5, -7]
    assert fixed_point.decay(torch.tensor([-100, 100]), 2048, 0).tolist() == [-50, 50]
    with pytest.raises(Exception, match="device"):
        fixed_point.check_device("tpu")
