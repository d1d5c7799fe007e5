"""PennyLane transforms pickled by reference, so that a layer holding them survives ``torch.save(model)``.

A ``qml.transform`` object (``qml.noise.insert``, ``qml.transforms.merge_rotations``, a user's ``@qml.transform``)
cannot be pickled as it is: pickle looks its function up by name and finds the transform object there instead.
``TransformReference`` stands for one by the module and qualified name where it lives and looks it up again when
loaded. ``check_picklable`` turns what pickle would fail on (a transform defined inside a function, a noise model
holding a local function) into a ConfigError that names the transform and says what to save instead.
"""

from __future__ import annotations

import importlib
import pickle
from typing import Any

from hybridai.core.errors import ConfigError


def transform_name(transform: Any) -> str:
    """The name a transform is known by (``insert``, ``merge_rotations``)."""
    function = getattr(transform, "tape_transform", None)
    return getattr(function, "__name__", None) or getattr(transform, "pass_name", None) or repr(transform)


def _lookup(module: str, qualname: str) -> Any:
    found: Any = importlib.import_module(module)
    for part in qualname.split("."):
        found = getattr(found, part)
    return found


class TransformReference:
    """A transform by the place it lives (``pennylane.noise.insert_ops.insert``); unpickled, it is that transform."""

    def __init__(self, transform: Any, what: str) -> None:
        """``transform``: a ``qml.transform`` object or one bound to its arguments (a QNode's ``BoundTransform``)."""
        function = getattr(transform, "tape_transform", None)
        module: str | None = getattr(function, "__module__", None)
        qualname: str = getattr(function, "__qualname__", "")
        try:
            found = _lookup(module, qualname) if module and "<locals>" not in qualname else None
        except (ImportError, AttributeError):
            found = None
        if function is None or module is None or getattr(found, "tape_transform", None) is not function:
            raise ConfigError(
                f"{what} carries the transform {transform_name(transform)!r} ({module}.{qualname}), which pickle "
                "cannot find by name, so torch.save/pickle/copy to another process cannot keep it; accepted: a "
                "transform defined at module level, or save model.state_dict() and rebuild the layer with its device "
                "or QNode"
            )
        self.module, self.qualname = module, qualname

    def __reduce__(self) -> tuple[Any, tuple[str, str]]:
        return _lookup, (self.module, self.qualname)


def check_picklable(value: Any, what: str, transform: Any = None) -> None:
    """A ConfigError naming ``what`` (and ``transform``) when ``value`` (its arguments, a device) cannot be pickled."""
    try:
        pickle.dumps(value)
    except Exception as exc:  # pickle raises PicklingError, AttributeError or TypeError for what it cannot store
        part = "" if transform is None else f" (the arguments of its transform {transform_name(transform)!r})"
        raise ConfigError(
            f"{what}{part} cannot be pickled ({type(exc).__name__}: {exc}), "
            "so torch.save/pickle cannot keep it; accepted: a device and transform arguments that pickle can store "
            "(defined at module level), or save model.state_dict() and rebuild the layer with its device or QNode"
        ) from None
