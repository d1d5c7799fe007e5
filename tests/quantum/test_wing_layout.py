"""The quantum wing's layout: a root of few modules, grouped packages named by concept, "kernel" with one meaning."""

from pathlib import Path

import hybridai.quantum

ROOT = Path(hybridai.quantum.__file__).parent


def test_the_quantum_root_holds_at_most_ten_modules():
    modules = sorted(p.name for p in ROOT.glob("*.py"))
    assert len(modules) <= 10, modules


def test_every_quantum_package_says_what_it_holds():
    for init in ROOT.glob("*/__init__.py"):
        text = init.read_text()
        assert text.startswith('"""') and len(text.split('"""')[1].split()) >= 8, init


def test_kernel_means_a_quantum_kernel_only():
    named = [p.relative_to(ROOT) for p in ROOT.rglob("*kernel*") if p.suffix == ".py" or p.is_dir()]
    assert all(p.parts[0] == "kernels" for p in named if p.name != "__pycache__"), named
