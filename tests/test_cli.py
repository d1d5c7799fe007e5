import subprocess
import sys
import textwrap
from importlib import metadata

import pytest

from hybridai.cli import main
from hybridai.demo import run_demo


def run_cli(*args):
    return subprocess.run([sys.executable, "-m", "hybridai", *args], capture_output=True, text=True)


@pytest.mark.parametrize("args", [[], ["backends"], ["info"], ["demo"], ["test-backend"], ["deploy-report"]])
def test_help_everywhere(args):
    out = run_cli(*args, "--help")
    assert out.returncode == 0
    assert out.stdout.startswith("usage: hybridai")
    if not args:
        for command in ("backends", "info", "demo", "test-backend", "deploy-report"):
            assert command in out.stdout
    if args == ["deploy-report"]:  # what it reads, and that nothing in the files can run
        text = " ".join(out.stdout.split())
        assert "--weights" in text and "FILE.py:FACTORY" in text and "weights_only=True" in text and ".npz" in text


def test_no_command_is_an_error():
    out = run_cli()
    assert out.returncode == 2 and "required" in out.stderr


def table_rows(text: str) -> dict[str, dict[str, str]]:
    """A table printed by the CLI as {first cell: {header: cell}} (columns read from the rule line)."""
    lines = text.splitlines()
    rule = next(i for i, line in enumerate(lines) if line and set(line) <= {"-", " "})
    spans, start = [], 0
    for dashes in lines[rule].split("  "):
        spans.append((start, start + len(dashes)))
        start += len(dashes) + 2
    cells = lambda line: [line[a:b].strip() for a, b in spans]  # noqa: E731
    headers = cells(lines[rule - 1])
    rows = [dict(zip(headers, cells(line), strict=True)) for line in lines[rule + 1 :] if line.strip()]
    return {row[headers[0]]: row for row in rows}


def test_backends_table(capsys):
    assert main(["backends"]) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[0].split()[:4] == ["family", "contract", "domains", "available"]
    rows = table_rows(out)
    assert rows["pennylane"]["contract"] == "quantum executor" and rows["pennylane"]["available"] == "yes"
    assert rows["pennylane"]["domains"] == "quantum" and "differentiable" in rows["pennylane"]["capabilities"]
    assert rows["torch"]["contract"] == "placement" and rows["torch"]["domains"] == "classical/spiking"
    assert rows["loihi"]["contract"] == "chip compiler" and rows["loihi"]["domains"] == "spiking"
    assert "bit_exact" in rows["loihi"]["capabilities"] and rows["statevector"]["source"] == "built-in"
    assert rows["density"]["contract"] == "quantum executor" and rows["density"]["source"] == "built-in"


BROKEN = """
    from hybridai.backends import Placement, PlacementCapabilities


    class Good(Placement):
        @property
        def capabilities(self):
            return PlacementCapabilities()

        def place(self, module):
            return module


    class RaisesInAvailable(Good):
        @classmethod
        def is_available(cls):
            raise RuntimeError("driver crashed while probing")


    class AnswersABool(Good):
        @classmethod
        def is_available(cls):
            return True  # not an Availability


    class RaisesInCapabilities(Good):
        @property
        def capabilities(self):
            raise RuntimeError("firmware query failed")
"""


@pytest.fixture
def broken_plugins(tmp_path, monkeypatch, fresh_registry):
    """Plugins that fail to import, raise in is_available or capabilities, or answer is_available wrongly."""
    (tmp_path / "broken_mod.py").write_text(textwrap.dedent(BROKEN))
    (tmp_path / "missing_mod.py").write_text("import no_such_driver_module  # noqa: F401\n")
    info = tmp_path / "hybridai_broken-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: hybridai-broken\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text(
        "[hybridai.backends]\n"
        "missing = missing_mod:Backend\n"
        "probecrash = broken_mod:RaisesInAvailable\n"
        "capscrash = broken_mod:RaisesInCapabilities\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    yield info
    for name in ("broken_mod", "missing_mod"):
        sys.modules.pop(name, None)


def test_broken_plugins_never_crash_the_cli(broken_plugins, capsys):
    assert main(["backends"]) == 0
    rows = table_rows(capsys.readouterr().out)
    assert rows["missing"]["available"] == "no" and "no_such_driver_module" in rows["missing"]["reason"]
    assert rows["probecrash"]["available"] == "no" and "driver crashed while probing" in rows["probecrash"]["reason"]
    assert rows["capscrash"]["available"] == "no" and "firmware query failed" in rows["capscrash"]["reason"]
    assert rows["torch"]["available"] == "yes" and rows["statevector"]["available"] == "yes"
    for name in ("missing", "probecrash", "capscrash"):
        assert main(["test-backend", name]) == 1  # a FAIL table, not a traceback
        out = capsys.readouterr().out
        assert table_rows(out)[name]["result"] == "FAIL" and out.splitlines()[-1].split()[3] == "FAIL"


def test_a_plugin_that_breaks_available_itself_is_still_listed(broken_plugins, capsys):
    (broken_plugins / "entry_points.txt").write_text("[hybridai.backends]\nbool = broken_mod:AnswersABool\n")
    assert main(["backends"]) == 0
    rows = table_rows(capsys.readouterr().out)
    assert rows["bool"]["available"] == "no" and "is_available() returned True" in rows["bool"]["reason"]
    assert rows["torch"]["available"] == "yes" and rows["torch"]["contract"] == "placement"
    assert main(["test-backend", "bool"]) == 1
    assert "not a hybridai Availability" in capsys.readouterr().out


def test_info_lists_versions_and_devices(capsys):
    assert main(["info"]) == 0
    out = capsys.readouterr().out
    line = next(x for x in out.splitlines() if x.startswith("pennylane "))
    assert line.split()[1] == metadata.version("pennylane")
    assert "torch device" in out and "cpu" in out


def test_demo_rejects_bad_qubits(capsys):
    assert main(["demo", "--task", "digits", "--qubits", "9"]) == 2
    assert "qubits=9 is not valid; accepted: an int in [4, 8]" in capsys.readouterr().err
    assert main(["demo", "--qubits", "9"]) == 2  # the three-domain demo: the circuit must fit FakeManila
    assert "qubits=9 is not valid; accepted: an int in [2, 5]" in capsys.readouterr().err


def test_demo_chip_is_one_with_a_front_end(capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["demo", "--chip", "spinnaker"])
    assert exit_info.value.code == 2
    assert "invalid choice: 'spinnaker'" in capsys.readouterr().err
    help_text = " ".join(run_cli("demo", "--help").stdout.split())
    assert "--chip {loihi2,loihi,akida,nengo}" in help_text and "loihi or nengo (LIF), akida" in help_text


@pytest.mark.parametrize(("flag", "backend"), [([], "density:fake_manila"), (["--noisy", "aer"], "aer:fake_manila")])
def test_demo_noisy_picks_what_simulates_the_noisy_device(monkeypatch, flag, backend):
    import hybridai.demo

    seen = {}
    monkeypatch.setattr(hybridai.demo, "run_hybrid_demo", lambda **kwargs: seen.update(kwargs))
    monkeypatch.setattr("torch.set_num_threads", lambda n: None)  # the command sets the threads; not in a test
    assert main(["demo", *flag, "--shots", "50"]) == 0
    assert seen["noisy"] == backend and seen["shots"] == 50


def test_demo_noisy_is_density_or_aer(capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["demo", "--noisy", "ibm"])
    assert exit_info.value.code == 2 and "invalid choice: 'ibm'" in capsys.readouterr().err


@pytest.mark.slow
def test_demo_learns(capsys):
    results = run_demo(n_qubits=4, epochs=2, batch_size=64, seed=1)
    out = capsys.readouterr().out
    assert "QuantumLayer" in out and "test accuracy" in out and "hybrid (4 qubits)" in out
    assert results["hybrid_accuracy"] > 0.3  # ten classes: chance is 0.1
    assert results["classical_accuracy"] > 0.3
