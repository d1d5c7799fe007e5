"""Fake IBM devices by name: every ``Fake*`` backend class of the installed ``qiskit_ibm_runtime.fake_provider``.

``fake_manila`` -> ``FakeManilaV2()``, ``fake_brisbane`` -> ``FakeBrisbane()``: the name is the class name
without ``Fake`` and the ``V2`` suffix (current devices have none), in snake case as IBM writes device names;
underscores and case do not matter (``fake_Brisbane``, ``fakebrisbane``). A fake backend object maps back to
the same name, so ``FakeTorino()`` and ``"fake_torino"`` are one device.
"""

from __future__ import annotations

import functools
from typing import Any

from hybridai.core.errors import BackendNotFoundError, suggest


def _key(name: str) -> str:
    return name.lower().removeprefix("fake").replace("_", "").removesuffix("v2")


@functools.cache
def _classes() -> dict[str, type]:
    """``{key: class}`` of every fake IBM backend the installed provider has (``FakeProviderForBackendV2`` and
    other non-devices left out)."""
    from qiskit_ibm_runtime import fake_provider
    from qiskit_ibm_runtime.fake_provider.fake_backend import FakeBackendV2

    return {
        _key(cls.__name__): cls
        for name, cls in vars(fake_provider).items()
        if isinstance(cls, type) and name.startswith("Fake") and issubclass(cls, FakeBackendV2)
    }


def fake_names() -> list[str]:
    """Every fake IBM device name: ``['fake_aachen', 'fake_algiers', ...]``."""
    return sorted(str(fake_name(cls)) for cls in _classes().values())


def fake_name(device: Any) -> str | None:
    """The hybridai name of a fake IBM backend class or object (``FakeBrisbane()`` -> ``fake_brisbane``; a
    subclass's object by the provider class it extends), or None for anything else."""
    cls = device if isinstance(device, type) else type(device)
    for known in cls.__mro__:
        if known in _classes().values():
            return "fake_" + known.__name__.removeprefix("Fake").removesuffix("V2").lower()
    return None


def fake_backend(name: str) -> Any:
    """``fake_manila`` -> ``FakeManilaV2()``, ``fake_brisbane`` -> ``FakeBrisbane()``."""
    classes = _classes()
    key = _key(name)
    if not name.lower().startswith("fake") or key not in classes:
        names = fake_names()
        raise BackendNotFoundError(
            f"no fake IBM device named {name!r} in qiskit_ibm_runtime.fake_provider; accepted: one of "
            f"{len(names)} names such as {', '.join(names[:6])} (`hybridai backends` lists them all)."
            f"{suggest(name, names)}"
        )
    return classes[key]()
