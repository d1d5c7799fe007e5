"""Install the example photonic plugin into the test environment without pip: a temporary
distribution whose entry points are copied from the plugin's own pyproject.toml, and the
plugin's source folder on sys.path."""

import pathlib
import sys
import tomllib

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
PLUGIN = ROOT / "examples" / "plugins" / "hybridai-photonic"


@pytest.fixture
def photonic(tmp_path, monkeypatch, fresh_registry):
    """The photonic plugin, discoverable through its entry point, next to a deliberately broken plugin."""
    project = tomllib.loads((PLUGIN / "pyproject.toml").read_text())["project"]
    group = project["entry-points"]["hybridai.backends"]
    lines = [f"{name} = {target}" for name, target in group.items()]
    info = tmp_path / f"hybridai_photonic-{project['version']}.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {project['name']}\nVersion: {project['version']}\n")
    (info / "entry_points.txt").write_text("[hybridai.backends]\n" + "\n".join(lines) + "\n")
    broken = tmp_path / "hybridai_lasers-0.1.dist-info"
    broken.mkdir()
    (broken / "METADATA").write_text("Metadata-Version: 2.1\nName: hybridai-lasers\nVersion: 0.1\n")
    (broken / "entry_points.txt").write_text("[hybridai.backends]\nlasers = lasers_mod:LaserBackend\n")
    (tmp_path / "lasers_mod.py").write_text("import no_such_laser_driver  # noqa: F401\n")
    monkeypatch.syspath_prepend(str(PLUGIN))
    monkeypatch.syspath_prepend(str(tmp_path))
    import hybridai_photonic

    yield hybridai_photonic
    for name in [m for m in sys.modules if m.startswith(("hybridai_photonic", "lasers_mod"))]:
        sys.modules.pop(name)
