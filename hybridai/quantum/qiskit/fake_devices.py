"""Fake IBM devices by name: ``fake_manila`` -> ``qiskit_ibm_runtime.fake_provider.FakeManilaV2()``."""

from __future__ import annotations

from typing import Any

from hybridai.core.errors import BackendNotFoundError, suggest


def fake_backend(name: str) -> Any:
    """``fake_manila`` -> ``qiskit_ibm_runtime.fake_provider.FakeManilaV2()``."""
    from qiskit_ibm_runtime import fake_provider

    classes = {
        cls.__name__.removesuffix("V2").removeprefix("Fake").lower(): cls
        for cls in vars(fake_provider).values()
        if isinstance(cls, type) and cls.__name__.startswith("Fake") and cls.__name__.endswith("V2")
    }
    key = name.removeprefix("fake_").replace("_", "").lower()
    if key not in classes:
        names = sorted(f"fake_{k}" for k in classes)
        raise BackendNotFoundError(
            f"no fake IBM device named {name!r} in qiskit_ibm_runtime.fake_provider; "
            f"accepted: one of {len(names)} names such as {', '.join(names[:6])}.{suggest(name, names)}"
        )
    return classes[key]()
