"""docs/api.md documents every public name: the built page has an entry for each one.

The public names are the ``__all__`` of the package and of its public subpackages. The site is built
(mkdocs + mkdocstrings) and every ``hybridai.*`` anchor of the API page is resolved to the object it
documents; each public name must be one of those objects (documented once, wherever it lives:
``hybridai.LIF`` is covered by the entry of ``hybridai.spiking.LIF``).
"""

from __future__ import annotations

import importlib
import os
import re
import subprocess
import sys
import types
from typing import Any

import pytest

from tests.docs.markdown import ROOT

PUBLIC_MODULES = (
    "hybridai",
    "hybridai.quantum",
    "hybridai.quantum.mitigation",
    "hybridai.spiking",
    "hybridai.events",
    "hybridai.neuromorphic",
    "hybridai.deployment",
    "hybridai.training",
    "hybridai.training.distributed",
    "hybridai.backends",
    "hybridai.testing",
)
MISSING = object()


def resolve(path: str) -> Any:
    """The object a dotted path names, as a user reaches it: attributes first (``hybridai.training.fit`` is
    the function, not the module of that name), the submodule of that name where the attribute does not
    lead on (``hybridai.training.fit.fit``); MISSING if nothing does."""
    first, *rest = path.split(".")
    try:
        return _walk(importlib.import_module(first), rest)
    except ImportError:
        return MISSING


def _walk(obj: Any, rest: list[str]) -> Any:
    if not rest:
        return obj
    name, *tail = rest
    found = _walk(getattr(obj, name), tail) if hasattr(obj, name) else MISSING
    if found is MISSING and isinstance(obj, types.ModuleType):
        try:
            found = _walk(importlib.import_module(f"{obj.__name__}.{name}"), tail)
        except ImportError:
            return MISSING
    return found


def public_names() -> list[tuple[str, Any]]:
    names = []
    for module_name in PUBLIC_MODULES:
        module = importlib.import_module(module_name)
        names += [(f"{module_name}.{name}", getattr(module, name)) for name in module.__all__]
    return names


@pytest.fixture(scope="module")
def documented(tmp_path_factory) -> dict[int, str]:
    """``id(object) -> anchor`` for every hybridai object that has an entry on the built API page."""
    site = tmp_path_factory.mktemp("site")
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    build = [sys.executable, "-m", "mkdocs", "build", "--quiet", "--site-dir", str(site)]
    subprocess.run(build, cwd=ROOT, env=env, check=True, capture_output=True, timeout=120)
    html = (site / "api" / "index.html").read_text(encoding="utf-8")
    anchors = set(re.findall(r'id="(hybridai(?:\.[\w]+)*)"', html))
    objects = {}
    for anchor in sorted(anchors, key=len):
        obj = resolve(anchor)
        if obj is not MISSING:
            objects.setdefault(id(obj), anchor)
    return objects


def test_every_public_name_has_an_entry_in_the_api_reference(documented):
    text = (ROOT / "docs" / "api.md").read_text(encoding="utf-8")

    def covered(path: str, obj: Any) -> bool:
        # constants set by tuple unpacking (PASS, FAIL, SKIP = ...) get no entry of their own: the page
        # must name them in full instead
        constant = isinstance(obj, str | int | float) and f"`{path}`" in text
        return id(obj) in documented or constant

    missing = [path for path, obj in public_names() if not covered(path, obj)]
    assert not missing, f"public names without an entry in docs/api.md: {missing}"


def test_the_headline_names_of_the_issue_are_documented(documented):
    import hybridai

    for name in ("QuantumLayer", "QuantumKernel", "LIF", "CUBA", "RateEncoder", "MembraneDecoder",
                 "TimeDistributed", "ZNE", "place", "summary", "deploy"):  # fmt: skip
        assert id(getattr(hybridai, name)) in documented, name


def test_the_check_notices_a_missing_entry(documented):
    """A name that has no entry (a private helper) is reported missing: the check can fail."""
    from hybridai.core.errors import missing_extra

    assert id(missing_extra) not in documented
    assert resolve("hybridai.spiking.LIF") is importlib.import_module("hybridai").LIF
    assert resolve("hybridai.no_such_name") is MISSING
    assert resolve("hybridai.training.fit") is resolve("hybridai.training.fit.fit")  # the function either way
