import subprocess
import sys
from importlib import metadata

import pytest

from hybridai.cli import main
from hybridai.demo import run_demo


def run_cli(*args):
    return subprocess.run([sys.executable, "-m", "hybridai", *args], capture_output=True, text=True)


@pytest.mark.parametrize("args", [[], ["backends"], ["info"], ["demo"]])
def test_help_everywhere(args):
    out = run_cli(*args, "--help")
    assert out.returncode == 0
    assert out.stdout.startswith("usage: hybridai")
    if not args:
        for command in ("backends", "info", "demo"):
            assert command in out.stdout


def test_no_command_is_an_error():
    out = run_cli()
    assert out.returncode == 2 and "required" in out.stderr


def test_backends_table(capsys):
    assert main(["backends"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split()[:3] == ["family", "domains", "available"]
    rows = {line.split()[0]: line.split() for line in lines[2:]}
    assert rows["pennylane"][1:3] == ["quantum", "yes"]
    assert rows["torch"][1:3] == ["classical/spiking", "yes"]


def test_info_lists_versions_and_devices(capsys):
    assert main(["info"]) == 0
    out = capsys.readouterr().out
    line = next(x for x in out.splitlines() if x.startswith("pennylane "))
    assert line.split()[1] == metadata.version("pennylane")
    assert "torch device" in out and "cpu" in out


def test_demo_rejects_bad_qubits(capsys):
    assert main(["demo", "--qubits", "9"]) == 2
    assert "qubits=9 is not valid; accepted: an int from 4 to 8" in capsys.readouterr().err


@pytest.mark.slow
def test_demo_learns(capsys):
    results = run_demo(n_qubits=4, epochs=2, batch_size=64, seed=1)
    out = capsys.readouterr().out
    assert "QuantumLayer" in out and "test accuracy" in out and "hybrid (4 qubits)" in out
    assert results["hybrid_accuracy"] > 0.3  # ten classes: chance is 0.1
    assert results["classical_accuracy"] > 0.3
