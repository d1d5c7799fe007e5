"""A user's PennyLane device that ``qml.device(name)`` could not rebuild, kept whole as a backend option.

A device that carries transforms (``qml.noise.insert(dev, qml.DepolarizingChannel, 0.05)``,
``qml.noise.add_noise(dev, noise_model)``, any device transform) or is a subclass of its plugin's class runs
circuits its own way: hybridai maps it to ``"pennylane:<name>"`` with ``device=DeviceRecipe(dev)``, and
``PennyLaneBackend`` runs tapes on copies of it, so its preprocessing (noise insertion included) applies.

- The recipe copies the device when it is made: later changes to the user's object are not seen, and nothing
  hybridai does (locks, random draws) touches the user's object.
- ``build(seed)``: a fresh copy; with ``seed``, its random generator (``_rng``, what PennyLane's simulators draw
  shots from) is a new ``numpy.random.default_rng(seed)``, so one seed gives the same samples on every call.
- ``native_operations(tape)``: the tape in the gates the device's noise transform meets (after its base device's
  decomposition), the gates zero-noise folding must fold so that each fold adds the noise of one gate, as
  ``qml.noise.mitigate_with_zne`` on the same device does (hybridai's own elementary gates are finer: ``Rot`` is
  one noisy gate on ``default.mixed``, three once decomposed, and the noise would not scale with the factor).
- Pickled as its base device and its transforms by reference (``hybridai.quantum.pennylane.transform_pickling``); deep
  copies copy the device.
"""

from __future__ import annotations

import copy
import sys
from typing import Any

import numpy as np

from hybridai.core.errors import ConfigError
from hybridai.quantum.circuits.recording import recording
from hybridai.quantum.pennylane.transform_pickling import TransformReference, check_picklable, transform_name

NOISE_TRANSFORMS = ("insert", "add_noise")  # device transforms that add noise channels to every circuit


def device_name(device: Any) -> str:
    return getattr(device, "short_name", None) or device.name


def transform_chain(device: Any) -> tuple[Any, list[tuple[Any, tuple, dict]]]:
    """``(base device, [(transform, args, kwargs), ...])``, transforms in the order they were applied."""
    steps = []
    while type(device).__name__ == "TransformedDevice" and hasattr(device, "original_device"):
        steps.append((device.transform, tuple(device.targs), dict(device.tkwargs)))
        device = device.original_device
    return device, steps[::-1]


def is_kept(device: Any) -> bool:
    """Whether ``device`` must be kept whole: it carries transforms, or is a subclass of its plugin's class."""
    base, steps = transform_chain(device)
    if steps:
        return True
    import pennylane as qml

    entry = qml.plugin_devices.get(device_name(device))
    try:
        plugin = entry.load() if entry is not None else None
    except Exception:  # a plugin that fails to load: qml.device(name) fails as well, as before
        return False
    return isinstance(plugin, type) and isinstance(base, plugin) and type(base) is not plugin


def _rebuilt(base: Any, steps: list[tuple[Any, tuple, dict]]) -> DeviceRecipe:
    """A recipe from its pickled parts: the base device with each transform applied again, its arguments as saved."""
    device = base
    for transform, args, kwargs in steps:
        device = transform(device, *args, **kwargs)
        device.targs, device.tkwargs = args, kwargs  # as they were, not set up a second time
    return DeviceRecipe(device, copied=True)


class DeviceRecipe:
    """A copy of a user's PennyLane device, from which hybridai builds the devices it runs on (module docstring)."""

    def __init__(self, device: Any, *, copied: bool = False) -> None:
        self.device = device if copied else copy.deepcopy(device)
        self.base, self.steps = transform_chain(self.device)

    @property
    def name(self) -> str:
        """The plugin name (``default.mixed``)."""
        return device_name(self.device)

    @property
    def wires(self) -> Any:
        return self.device.wires

    @property
    def adds_noise(self) -> bool:
        """Whether one of its transforms adds noise to every circuit (``qml.noise.insert``, ``add_noise``)."""
        return any(transform_name(t) in NOISE_TRANSFORMS for t, _, _ in self.steps)

    def build(self, seed: int | None = None) -> Any:
        """A fresh copy of the device; with ``seed``, its random generator seeded with it."""
        device = copy.deepcopy(self.device)
        if seed is not None:
            if not isinstance(getattr(device, "_rng", None), np.random.Generator):
                raise ConfigError(
                    f"seed={seed!r} cannot seed backend= {self!r}: the device draws its random numbers in its own "
                    "way; accepted: seed=None, with the device seeded itself (qml.device(..., seed=...))"
                )
            device._rng = np.random.default_rng(seed)
        return device

    def native_operations(self, tape: Any) -> list[Any] | None:
        """The operations of ``tape`` where the device's noise meets them: after its base device's preprocessing
        (its decomposition) and the transforms before the first that adds noise; None when that turns the tape
        into more than one."""
        with recording():
            tapes, _ = self.base.preprocess_transforms()((tape,))
            for transform, args, kwargs in self.steps:
                if transform_name(transform) in NOISE_TRANSFORMS or len(tapes) != 1:
                    break
                tapes, _ = transform(tapes[0], *args, **kwargs)
        return list(tapes[0].operations) if len(tapes) == 1 else None

    def __repr__(self) -> str:
        wires = "" if self.wires is None else f", wires={list(self.wires)}"
        kind = "" if self.steps else f" ({type(self.base).__qualname__})"
        steps = "".join(f" + {transform_name(t)}{_shown(a, k)}" for t, a, k in self.steps)
        return f"<{self.name} device{kind}{wires}{steps}>"

    def __deepcopy__(self, memo: dict) -> DeviceRecipe:
        return DeviceRecipe(copy.deepcopy(self.device, memo), copied=True)

    def __copy__(self) -> DeviceRecipe:
        return self  # never changed after it is made: a copy may share it

    def __reduce__(self) -> tuple[Any, tuple]:
        what = f"backend= {self!r}"
        check_picklable(self.base, what)
        steps = []
        for transform, args, kwargs in self.steps:
            check_picklable((args, kwargs), what, transform)
            steps.append((TransformReference(transform, what), args, kwargs))
        return _rebuilt, (self.base, steps)


def _shown(args: tuple, kwargs: dict) -> str:
    parts = [getattr(a, "__name__", None) or repr(a) for a in args] + [f"{k}={v!r}" for k, v in kwargs.items()]
    return f"({', '.join(parts)})"


def as_recipe(device: Any) -> DeviceRecipe:
    """``device`` (a ``DeviceRecipe`` or a PennyLane device object) as a recipe."""
    if isinstance(device, DeviceRecipe):
        return device
    if "pennylane" in sys.modules:
        import pennylane as qml

        if isinstance(device, qml.devices.Device):
            return DeviceRecipe(device)
    shown = type(device).__qualname__
    raise ConfigError(
        f"device={shown} is not valid; accepted: a PennyLane device object (qml.device(...), with its transforms)"
    )
