"""`import hybridai` imports torch and numpy only, and the import contract holds (and would catch a cycle, one
chip package importing another, or one quantum executor package importing another)."""

import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

PROBE = """
import sys, torch, numpy
before = {m.split('.')[0] for m in sys.modules}
import hybridai
added = sorted({m.split('.')[0] for m in sys.modules} - before - {'hybridai'})
print(','.join(added))
"""


def test_import_hybridai_adds_no_third_party_package_to_torch_and_numpy():
    out = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, check=True, cwd=ROOT)
    added = [m for m in out.stdout.strip().split(",") if m]
    third_party = [m for m in added if m not in sys.stdlib_module_names]
    assert third_party == [], f"import hybridai also imported {third_party}"


def _lint_imports(root: Path) -> subprocess.CompletedProcess:
    exe = Path(sys.executable).with_name("lint-imports")
    return subprocess.run([str(exe), "--config", str(ROOT / "pyproject.toml")], capture_output=True, text=True,
                          cwd=root)  # fmt: skip


def test_import_contract_holds():
    result = _lint_imports(ROOT)
    assert result.returncode == 0, result.stdout[-2000:]
    assert "0 broken" in result.stdout


def _lint_imports_with(tmp_path: Path, module: str, line: str) -> subprocess.CompletedProcess:
    """lint-imports on a copy of the package in which ``module`` (a path under hybridai/) ends with ``line``."""
    copy = tmp_path / "hybridai"
    shutil.copytree(ROOT / "hybridai", copy, ignore=shutil.ignore_patterns("__pycache__"))
    with open(copy / module, "a") as f:
        f.write(f"\n{line}\n")
    return subprocess.run(
        [str(Path(sys.executable).with_name("lint-imports")), "--config", str(ROOT / "pyproject.toml")],
        capture_output=True, text=True, cwd=tmp_path, env={"PYTHONPATH": str(tmp_path), "PATH": "/usr/bin:/bin"},
    )  # fmt: skip


def test_import_contract_fails_on_a_deliberate_cycle(tmp_path):
    line = "import hybridai.quantum.layer  # a deliberate upward import and cycle"
    result = _lint_imports_with(tmp_path, "core/errors.py", line)
    assert result.returncode != 0
    assert "BROKEN" in result.stdout and "hybridai.core.errors -> hybridai.quantum.layer" in result.stdout


def _independence(package: str) -> dict:
    """The independence contract of pyproject.toml whose modules include ``package``."""
    contracts = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]["contracts"]
    (independence,) = [c for c in contracts if c["type"] == "independence" and package in c["modules"]]
    return independence


def test_import_contract_fails_when_one_chip_package_imports_another(tmp_path):
    independence = _independence("hybridai.neuromorphic.loihi")
    line = "import hybridai.neuromorphic.loihi.compartments  # Loihi 2 stacked on Loihi 1 again"
    result = _lint_imports_with(tmp_path, "neuromorphic/loihi2/sigma_delta.py", line)
    assert result.returncode != 0
    out = " ".join(result.stdout.split())  # lint-imports wraps long lines at 80 columns
    assert f"{independence['name']} BROKEN" in out
    assert "hybridai.neuromorphic.loihi2.sigma_delta -> hybridai.neuromorphic.loihi.compartments" in out


def test_the_quantum_executor_packages_are_under_an_independence_contract():
    independence = _independence("hybridai.quantum.density")
    packages = ["statevector", "density", "qiskit", "pennylane"]
    assert sorted(independence["modules"]) == sorted(f"hybridai.quantum.{p}" for p in packages)


def test_import_contract_fails_when_density_imports_the_qiskit_executors(tmp_path):
    independence = _independence("hybridai.quantum.density")
    line = "import hybridai.quantum.qiskit.executor  # density on the aer/ibm job machinery again"
    result = _lint_imports_with(tmp_path, "quantum/density/backend.py", line)
    assert result.returncode != 0
    out = " ".join(result.stdout.split())  # lint-imports wraps long lines at 80 columns
    assert f"{independence['name']} BROKEN" in out
    assert "hybridai.quantum.density.backend -> hybridai.quantum.qiskit.executor" in out
    assert f"{_independence('hybridai.neuromorphic.loihi')['name']} KEPT" in out  # only the executors' contract broke
