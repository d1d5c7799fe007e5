import sys
import textwrap

import pytest
import torch

import hybridai
from hybridai import backends
from hybridai.backends import (
    Backend,
    ChipCapabilities,
    ChipCompiler,
    PlacementCapabilities,
    QuantumCapabilities,
    QuantumExecutor,
)
from hybridai.core import registry
from hybridai.core.errors import BackendNotFoundError, BackendUnavailableError, ConfigError


def test_builtin_families_are_listed_with_domains_and_capabilities():
    rows = {r.name: r for r in backends.available()}
    assert rows["torch"].available and rows["torch"].domains == ("classical", "spiking")
    assert rows["pennylane"].available and rows["pennylane"].domains == ("quantum",)
    caps = rows["pennylane"].capabilities
    assert isinstance(caps, QuantumCapabilities) and caps.dtype == "complex128"
    assert caps.differentiable and caps.exact and "backprop" in caps.diff_methods
    assert isinstance(rows["torch"].capabilities, PlacementCapabilities)
    assert rows["torch"].source == "built-in" and rows["torch"].contract == "placement"
    assert rows["statevector"].contract == "quantum executor" and rows["pennylane"].contract == "quantum executor"
    if rows["loihi"].available:
        assert rows["loihi"].contract == "chip compiler" and isinstance(rows["loihi"].capabilities, ChipCapabilities)


@pytest.mark.parametrize("cls", [QuantumCapabilities, PlacementCapabilities, ChipCapabilities])
def test_capabilities_are_frozen_and_extra_is_never_compared(cls):
    caps = cls(extra={"note": 1})
    with pytest.raises(AttributeError):
        caps.devices = ("cuda",)  # type: ignore[misc]
    assert caps == cls(extra={"note": 2})


def test_typed_capabilities_of_the_quantum_families():
    assert backends.get("statevector", dtype="complex64").capabilities.dtype == "complex64"
    assert backends.get("statevector").capabilities.mitigation_engines == ()
    assert backends.get("ibm:fake_manila").capabilities.mitigation_engines == ("ibm",)
    for family in ("aer", "density"):
        noisy = backends.get(f"{family}:fake_manila").capabilities
        assert noisy.noise and not noisy.exact and noisy.max_qubits == 5
    assert backends.get("density").capabilities.exact and not backends.get("density", shots=10).capabilities.exact


def test_get_parses_family_and_target():
    b = backends.get("pennylane:lightning.qubit", seed=3)
    assert b.name == "pennylane:lightning.qubit" and b.options == {"seed": 3}
    assert "adjoint" in b.capabilities.diff_methods and "backprop" not in b.capabilities.diff_methods
    assert backends.get("pennylane").name == "pennylane:default.qubit"
    assert backends.get("pennylane:default.mixed").capabilities.noise
    assert backends.get("torch").device == torch.device("cpu")
    assert backends.get("torch:cpu").name == "torch:cpu"


def test_unknown_family_suggests_closest():
    with pytest.raises(BackendNotFoundError, match="Did you mean: 'pennylane'"):
        backends.get("pennylan")


def test_unknown_pennylane_device_suggests_installed_ones():
    with pytest.raises(BackendNotFoundError, match="default.qubit") as info:
        backends.get("pennylane:default.qbit")
    assert "installed:" in str(info.value)


@pytest.mark.parametrize("name", ["", "   ", 3])
def test_malformed_names_are_config_errors(name):
    with pytest.raises(ConfigError, match="backend="):
        backends.get(name)


def test_wrong_domain_is_rejected():
    with pytest.raises(ConfigError, match="not quantum"):
        backends.get("torch", domain="quantum")
    with pytest.raises(ConfigError, match="not classical"):
        backends.get("pennylane", domain="classical")
    with pytest.raises(ConfigError, match="is a placement, not a quantum executor; accepted: .*'statevector'"):
        backends.get("torch", QuantumExecutor)


def test_unknown_options_name_the_backend_and_the_options():
    with pytest.raises(ConfigError, match=r"backend='statevector' does not accept the option\(s\) \['colour'\]"):
        backends.get("statevector", colour="red")
    with pytest.raises(ConfigError, match=r"backend='pennylane:default.qubit' does not accept .*\['colour'\]"):
        backends.get("pennylane", colour="red")
    with pytest.raises(ConfigError, match=r"backend='aer' does not accept the option\(s\) \['colour'\]"):
        backends.get("aer", colour="red")


def test_torch_cuda_missing_is_a_clear_error(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    with pytest.raises(BackendUnavailableError, match="CUDA is not available"):
        backends.get("torch:cuda")


def test_torch_cuda_index_out_of_range(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 2)
    with pytest.raises(BackendUnavailableError, match=r"torch:cuda:0 \.\. torch:cuda:1"):
        backends.get("torch:cuda:5")


@pytest.mark.parametrize("target", ["tpu", "cuda:x"])
def test_torch_bad_target(target):
    with pytest.raises(BackendNotFoundError, match="'torch:cpu' or 'torch:cuda' or 'torch:cuda:N' or 'torch:mps'"):
        backends.get(f"torch:{target}")


def test_torch_rejects_options():
    with pytest.raises(ConfigError, match="options="):
        backends.get("torch", foo=1)


def test_register_validates_family_and_domains():
    with pytest.raises(ConfigError, match="family="):
        backends.register("a:b")

    class NoDomain(QuantumExecutor):
        domains = ()

        @property
        def capabilities(self):
            return QuantumCapabilities()

        def execute(self, tapes, config):
            raise NotImplementedError

    with pytest.raises(ConfigError, match="domains"):
        backends.register("nodomain")(NoDomain)

    class NoContract(Backend):
        domains = ("quantum",)

        @property
        def capabilities(self):
            return QuantumCapabilities()

    with pytest.raises(ConfigError, match="implements none of the contracts"):
        backends.register("nocontract")(NoContract)
    assert "nodomain" not in backends.families() and "nocontract" not in backends.families()


def test_registered_family_is_found_and_its_contract_checked():
    class Chip(ChipCompiler):
        @property
        def capabilities(self):
            return ChipCapabilities()

        def compile(self, model, *, calibration=None):
            return model

    backends.register("testchip")(Chip)
    try:
        assert "testchip" in backends.families() and backends.get("testchip").family == "testchip"
        rows = {r.name: r for r in backends.available()}
        assert rows["testchip"].source == "registered" and rows["testchip"].contract == "chip compiler"
        from hybridai.core.errors import UnsupportedOperationError

        with pytest.raises(UnsupportedOperationError, match="hybridai.deploy"):
            backends.get("testchip", QuantumExecutor)
    finally:
        registry._registered.pop("testchip")


PLUGIN = """
    import pennylane as qml
    from hybridai.backends import Execution, ExecutionStats, QuantumCapabilities, QuantumExecutor

    class FakeQPU(QuantumExecutor):
        @property
        def capabilities(self):
            return QuantumCapabilities(differentiable=True, diff_methods=("best",))

        def execute(self, tapes, config):
            dev = qml.device("default.qubit", wires=list(config.wires))
            results = list(qml.execute(tapes, dev, diff_method="backprop"))
            return Execution(results, ExecutionStats(circuits=sum(t.batch_size or 1 for t in tapes), calls=1))
"""


@pytest.fixture
def plugin_dist(tmp_path, monkeypatch, fresh_registry):
    """A fake installed distribution with three entry points: good, broken, not a Backend."""
    (tmp_path / "fakeqpu_mod.py").write_text(textwrap.dedent(PLUGIN))
    (tmp_path / "broken_mod.py").write_text("raise ImportError('needs libfoo')\n")
    (tmp_path / "notabackend_mod.py").write_text("class Thing:\n    pass\n")
    info = tmp_path / "hybridai_fakeqpu-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: hybridai-fakeqpu\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text(
        "[hybridai.backends]\n"
        "fakeqpu = fakeqpu_mod:FakeQPU\n"
        "broken = broken_mod:Broken\n"
        "notabackend = notabackend_mod:Thing\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    yield tmp_path
    for mod in ("fakeqpu_mod", "broken_mod", "notabackend_mod"):
        sys.modules.pop(mod, None)


def test_entry_point_plugin_is_discovered_lazily_and_runs(plugin_dist):
    assert "fakeqpu" in backends.families()
    backends.get("torch")
    assert "fakeqpu_mod" not in sys.modules  # listing names and using others imports nothing
    backend = backends.get("fakeqpu")
    assert "fakeqpu_mod" in sys.modules and backend.name == "fakeqpu"
    assert isinstance(backend, QuantumExecutor)

    from tests.quantum.test_layer import expval_circuit

    torch.manual_seed(0)
    layer = hybridai.QuantumLayer(expval_circuit, 3, {"weights": (2, 3, 3)}, backend="fakeqpu").double()
    x = torch.rand(4, 3, dtype=torch.float64)
    reference = hybridai.QuantumLayer(expval_circuit, 3, {"weights": (2, 3, 3)}).double()
    reference.load_state_dict(layer.state_dict())
    torch.testing.assert_close(layer(x), reference(x), rtol=0, atol=1e-12)
    assert layer.execution_stats["circuits"] == 4 and layer.execution_stats["calls"] == 1


def test_broken_plugins_are_reported_and_break_nothing_else(plugin_dist):
    rows = {r.name: r for r in backends.available()}
    assert not rows["broken"].available and "needs libfoo" in rows["broken"].reason
    assert "hybridai-fakeqpu" in rows["broken"].source
    assert not rows["notabackend"].available and "not a subclass" in rows["notabackend"].reason
    assert rows["fakeqpu"].available and rows["torch"].available and rows["pennylane"].available
    with pytest.raises(BackendUnavailableError, match="needs libfoo"):
        backends.get("broken")
    assert backends.get("fakeqpu").family == "fakeqpu"
