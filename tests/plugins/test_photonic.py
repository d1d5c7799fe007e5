"""The example photonic plugin: discovery through its entry point, conformance, placement, the physics."""

import copy
import math
import sys

import numpy as np
import pytest
import torch
from torch import nn

import hybridai
from hybridai import backends
from hybridai.backends import PlacementCapabilities
from hybridai.cli import main
from hybridai.core.errors import BackendNotFoundError, BackendUnavailableError, ConfigError, ShapeError
from hybridai.demo import hybrid_model
from hybridai.testing import run_conformance


def test_discovered_through_the_entry_point_and_imported_lazily(photonic):
    sys.modules.pop("hybridai_photonic", None)
    for name in [m for m in sys.modules if m.startswith("hybridai_photonic.")]:
        sys.modules.pop(name)
    assert "photonic" in backends.families()
    assert "hybridai_photonic" not in sys.modules  # listing families imports no plugin
    backend = backends.get("photonic:ideal")
    assert type(backend).__module__ == "hybridai_photonic.backend" and backend.name == "photonic:ideal"
    rows = {r.name: r for r in backends.available()}
    assert rows["photonic"].available and rows["photonic"].source == (
        "plugin hybridai-photonic (hybridai_photonic:PhotonicBackend)"
    )
    assert rows["photonic"].domains == ("classical",) and rows["photonic"].contract == "placement"
    assert isinstance(rows["photonic"].capabilities, PlacementCapabilities)


def test_broken_plugin_is_listed_unavailable_with_its_error(photonic, capsys):
    rows = {r.name: r for r in backends.available()}
    assert not rows["lasers"].available
    assert "ModuleNotFoundError" in rows["lasers"].reason and "no_such_laser_driver" in rows["lasers"].reason
    assert rows["lasers"].source == "plugin hybridai-lasers (lasers_mod:LaserBackend)"
    assert rows["photonic"].available and rows["torch"].available
    with pytest.raises(BackendUnavailableError, match="no_such_laser_driver"):
        backends.get("lasers")
    assert main(["backends"]) == 0
    line = next(x for x in capsys.readouterr().out.splitlines() if x.startswith("lasers"))
    assert line.split()[1:4] == ["?", "?", "no"] and "no_such_laser_driver" in line  # contract, domains
    report = run_conformance("lasers")
    assert not report.ok and "failed to load" in report.failures[0].detail


@pytest.mark.parametrize("name", ["photonic", "photonic:ideal"])
def test_photonic_passes_the_conformance_suite(photonic, name):
    report = run_conformance(name)
    assert report.ok, report.table(0)
    status = {r.check: r.status for r in report.results}
    assert status["classical: shared instance"] == status["classical: thread safety"] == "pass"
    if name == "photonic:ideal":  # exact and differentiable: the honesty checks run
        assert status["classical: exact values"] == status["classical: gradients"] == "pass"
    else:  # noisy and quantised: exactness and gradients are not claimed, the seed is checked
        assert status["classical: exact values"] == status["classical: gradients"] == "skip"
        assert status["classical: noise per seed"] == "pass"


def test_cli_test_backend_on_the_plugin(photonic, capsys):
    assert main(["test-backend", "photonic", "-o", "phase_bits=6", "-o", "detector_noise=0.01"]) == 0
    out = capsys.readouterr().out
    assert "photonic  classical: noise per seed" in out and out.splitlines()[-1].split()[3] == "PASS"


def test_place_moves_the_demo_models_linear_layers(photonic):
    torch.manual_seed(0)
    model = hybrid_model(4)
    x = torch.rand(8, 64)
    expected = model(x)
    first = model[0].weight
    hybridai.place(model, classical="photonic", seed=3)
    assert [type(m).__name__ for m in model] == ["PhotonicLinear", "Tanh", "QuantumLayer", "PhotonicLinear"]
    assert model[0].weight is first  # parameters are shared, so optimizers keep working
    rows = {line.split()[0]: line.split() for line in hybridai.summary(model, show=False).splitlines()[2:-2]}
    assert rows["0"][1:4] == ["PhotonicLinear", "classical", "photonic"] and rows["0"][5:7] == [
        "252",
        "MZIs,",
    ]  # 246 + 6
    assert rows["2"][1:4] == ["QuantumLayer", "quantum", "statevector"]
    assert rows["3"][3] == "photonic"
    got = model(x)
    assert 0 < (got - expected).abs().max() < 0.2  # 8-bit chip: close to, not equal to, the float model
    hybridai.place(model, classical="photonic:ideal")  # reprograms the photonic layers in place
    torch.testing.assert_close(model(x), expected, atol=1e-5, rtol=0)
    torch.manual_seed(1)
    plain = hybrid_model(4).state_dict()
    model.load_state_dict(plain)  # a plain torch checkpoint loads into the placed model (same names)
    assert torch.equal(model[0].weight, plain["0.weight"])


def test_noise_comes_from_the_seed_and_the_layer_not_from_the_backend(photonic):
    """One backend instance holds no per-call state: placing the same model twice gives the same noise;
    two layers of one model draw different noise; another seed other noise."""
    torch.manual_seed(0)
    base = nn.Sequential(nn.Linear(8, 8), nn.Linear(8, 8))
    backend = backends.get("photonic", seed=4)
    a = hybridai.place(copy.deepcopy(base), classical=backend)
    b = hybridai.place(copy.deepcopy(base), classical=backend)
    c = hybridai.place(copy.deepcopy(base), classical="photonic", seed=5)
    x = torch.randn(16, 8)
    with torch.no_grad():
        assert torch.equal(a(x), b(x)) and not torch.equal(a(x), c(x))
    seeds = [m.noise_generator().initial_seed() for m in (a[0], a[1], b[0])]
    assert seeds[0] != seeds[1] and seeds[0] == seeds[2]


def test_a_layer_too_large_for_the_chip_stays_on_torch(photonic):
    model = nn.Sequential(nn.Linear(100, 3), nn.Linear(3, 2))
    with pytest.warns(UserWarning, match=r"Linear\(100, 3\) does not fit the 64-waveguide"):
        hybridai.place(model, classical="photonic")
    assert type(model[0]) is nn.Linear and type(model[1]).__name__ == "PhotonicLinear"


def test_back_to_torch(photonic):
    model = nn.Sequential(nn.Linear(4, 3))
    hybridai.place(model, classical="photonic")
    with pytest.raises(ConfigError, match="to_linear"):
        hybridai.place(model, classical="torch")
    assert type(model[0]).__name__ == "PhotonicLinear" and model[0].backend == "photonic"
    photonic.unplace(model)
    assert type(model[0]) is nn.Linear
    assert hybridai.summary(model, show=False).splitlines()[2].split()[3] == "torch:cpu"


@pytest.mark.parametrize(
    ("options", "match"),
    [
        ({"phase_bits": 1}, "phase_bits=1 is not valid; accepted: None"),
        ({"adc_bits": 4.5}, "adc_bits=4.5"),
        ({"detector_noise": -1}, "detector_noise=-1"),
        ({"seed": -3}, "seed=-3"),
        ({"laser": 1}, r"does not accept the option\(s\) \['laser'\]"),
    ],
)
def test_bad_options_are_config_errors(photonic, options, match):
    with pytest.raises(ConfigError, match=match):
        backends.get("photonic", **options)


def test_unknown_preset_suggests_one(photonic):
    with pytest.raises(BackendNotFoundError, match="Did you mean: 'ideal'"):
        backends.get("photonic:idael")


def test_wrong_input_is_a_shape_error(photonic):
    layer = photonic.PhotonicLinear(5, 2)
    with pytest.raises(ShapeError, match=r"x.shape=\(3, 4\) is not valid; accepted: \[\.\.\., 5\]"):
        layer(torch.zeros(3, 4))


def test_mesh_realises_any_matrix_and_precision_grows_with_bits(photonic):
    rng = np.random.default_rng(0)
    for shape in [(6, 64), (10, 6), (5, 5)]:
        w = rng.normal(size=shape)
        ideal = photonic.program(w, None)
        np.testing.assert_allclose(ideal.matrix, w, atol=1e-12)
        m, k = max(shape), min(shape)  # a mesh on m waveguides for k columns has k(m-1) - k(k-1)/2 MZIs
        assert ideal.n_mzi == (k * (m - 1) - k * (k - 1) // 2) + k * (k - 1) // 2
        errors = [np.linalg.norm(photonic.program(w, b).matrix - w) / np.linalg.norm(w) for b in (4, 6, 8, 10)]
        assert all(a > b for a, b in zip(errors, errors[1:], strict=False)), errors
        assert errors[-1] < 0.01


def test_detector_noise_has_the_configured_size(photonic):
    torch.manual_seed(0)
    linear = nn.Linear(16, 8).double()
    x = torch.randn(4000, 16, dtype=torch.float64)
    sigma, loss_db = 0.01, 0.2
    layer = photonic.PhotonicLinear.from_linear(
        copy.deepcopy(linear), backend="photonic:ideal", detector_noise=sigma, loss_db=loss_db, seed=1
    )
    with torch.no_grad():
        full_scale = x.norm(dim=1, keepdim=True) * layer.programmed().scale  # inputs scaled by max |x|, then back
        relative = (layer(x) - linear(x)) / full_scale
    transmission = 10 ** (-loss_db * layer.programmed().depth / 20)
    assert relative.std().item() == pytest.approx(sigma / transmission, rel=0.03)
    assert relative.mean().abs().item() < 3 * sigma / transmission / math.sqrt(relative.numel())


def test_adc_output_lies_on_its_levels(photonic):
    layer = photonic.PhotonicLinear(6, 3, bias=False, backend="photonic:ideal", adc_bits=4).double()
    x = torch.randn(50, 6, dtype=torch.float64)
    with torch.no_grad():
        scaled = layer(x) / (x.norm(dim=1, keepdim=True) * layer.programmed().scale)
    levels = scaled * (2**3 - 1)
    torch.testing.assert_close(levels, levels.round(), atol=1e-9, rtol=0)
    assert levels.abs().max() <= 7


def test_straight_through_gradients_train_on_the_chip(photonic):
    torch.manual_seed(0)
    x, y = torch.randn(64, 8), torch.randint(0, 3, (64,))
    model = hybridai.place(nn.Sequential(nn.Linear(8, 16), nn.Tanh(), nn.Linear(16, 3)), classical="photonic", seed=0)
    optimizer = torch.optim.Adam(model.parameters(), lr=0.05)
    losses = []
    for _ in range(30):
        optimizer.zero_grad()
        loss = nn.functional.cross_entropy(model(x), y)
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    assert losses[-1] < 0.5 * losses[0]
    caps = backends.get("photonic").capabilities
    assert isinstance(caps, PlacementCapabilities) and not caps.differentiable and not caps.exact
    assert caps.extra["gradients"].startswith("straight-through")  # informational, for people


def test_energy_model_uses_the_given_constants(photonic):
    energy = photonic.PhotonicEnergy(dac_fom=1e-15, adc_fom=2e-15, laser_energy=3e-15, wall_plug_efficiency=0.5,
                                     heater_power=1e-3, symbol_rate=1e9)  # fmt: skip
    layer = photonic.PhotonicLinear(8, 4, backend="photonic", adc_bits=6, energy=energy, loss_db=0.5)
    p = layer.programmed()
    parts = layer.energy_per_sample()
    assert parts["dac"] == pytest.approx(8 * 1e-15 * 2**8)
    assert parts["adc"] == pytest.approx(4 * 2e-15 * 2**6)
    assert parts["laser"] == pytest.approx(8 * 3e-15 * 10 ** (0.5 * p.depth / 10) / 0.5)
    assert parts["phase shifters"] == pytest.approx((p.n_mzi + 4) * 1e-3 / 1e9)
    assert parts["total"] == pytest.approx(sum(v for k, v in parts.items() if k != "total"))
    text, total = photonic.energy_report(nn.Sequential(layer))
    assert total == parts["total"] and text.splitlines()[2].split()[0] == "0"
    with pytest.raises(ConfigError, match="energy.dac_fom=-1"):
        photonic.PhotonicEnergy(dac_fom=-1)


@pytest.mark.slow
def test_experiment_command_runs(tmp_path):
    import subprocess

    from tests.plugins.conftest import PLUGIN

    args = ["--epochs", "2", "--finetune-epochs", "1", "--noise-seeds", "2", "--bits", "4", "8", "--qubits", "4"]
    args += ["--plot", str(tmp_path / "plot.png")]
    out = subprocess.run(
        [sys.executable, str(PLUGIN / "experiment.py"), *args], capture_output=True, text=True, timeout=300
    )
    assert out.returncode == 0, out.stderr[-2000:]
    rows = {
        r.split()[1]: r.split() for r in out.stdout.splitlines() if r.startswith("photonic ") and r.split()[1].isdigit()
    }
    assert set(rows) == {"4", "8"}
    assert float(rows["4"][2]) < float(rows["8"][2])  # fewer bits, lower accuracy
    assert "PhotonicLinear  classical" in out.stdout and "photonic" in out.stdout
    assert (tmp_path / "plot.png").stat().st_size > 1000
