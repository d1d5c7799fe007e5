"""A QNode's own transforms (``@qml.transforms.merge_rotations``, ``qml.noise.add_noise(qnode, model)``, any
``@qml.transform`` applied to a QNode), kept with the circuit hybridai takes from it.

They are part of the user's circuit, so they apply on every backend, ``backend=`` given or not:

- ``QuantumLayer`` applies them to each recorded tape as PennyLane's QNode does, one sample at a time (``run``):
  the transformed tapes go to the backend in one call (zero-noise folding folds them) and the transforms'
  post-processing makes the results of the tape hybridai recorded; autograd flows through it.
- ``QuantumKernel`` uses a feature map's operations, so only transforms that rewrite a circuit into one other
  circuit, results untouched, can apply (``rewrite``); one that returns several circuits or processes results
  is refused, by name, at the first call.
- Refused when the QNode is taken, by name: transforms with a classical co-transform (gradient transforms, which
  need the QNode's arguments), informative and final ones (their result is not the circuit's measurements), and
  compiler passes without a tape transform.

Pickled by reference (``hybridai.quantum.pennylane.transform_pickling``), so ``torch.save(model)`` keeps them.
"""

from __future__ import annotations

import copy
import sys
from collections.abc import Callable
from typing import Any

from hybridai.core.errors import ConfigError
from hybridai.quantum.circuits.recording import recording
from hybridai.quantum.pennylane.transform_pickling import TransformReference, check_picklable, transform_name


def _pipeline(qnode: Any) -> Any:
    """The QNode's compile pipeline (``transform_program`` before PennyLane 0.45)."""
    pipeline = getattr(type(qnode), "compile_pipeline", None)
    return qnode.compile_pipeline if pipeline is not None else qnode.transform_program


def _refusal(bound: Any) -> str | None:
    """Why ``bound`` (one transform of a pipeline, with its arguments) cannot apply to hybridai's tapes, or None."""
    if getattr(bound, "tape_transform", None) is None:
        return "a compiler pass without a tape transform"
    if getattr(bound, "classical_cotransform", None) is not None:
        return (
            "a transform with a classical co-transform (it needs the QNode's own arguments, as gradient transforms do)"
        )
    if getattr(bound, "is_informative", False):
        return "an informative transform (its result describes the circuit instead of measuring it)"
    if getattr(bound, "is_final_transform", False):
        return "a final transform (its result is not the circuit's measurements)"
    return None


def _rebuilt(steps: list[tuple[Any, tuple, dict]], role: str) -> QNodeTransforms:
    from pennylane.transforms.core import BoundTransform, CompilePipeline

    return QNodeTransforms(CompilePipeline([BoundTransform(t, args, kwargs) for t, args, kwargs in steps]), role)


class QNodeTransforms:
    """The transforms of one QNode, applied to the tapes hybridai records from its function (module docstring)."""

    def __init__(self, pipeline: Any, role: str) -> None:
        self.pipeline = copy.copy(pipeline)  # the QNode's own pipeline is not touched
        self.role = role
        for bound in self.pipeline:
            why = _refusal(bound)
            if why is not None:
                raise ConfigError(
                    f"{role}= a QNode with the transform {transform_name(bound)!r}, {why}, which hybridai cannot apply "
                    f"exactly; accepted: a QNode whose transforms rewrite its circuit (merge_rotations, add_noise, a "
                    f"@qml.transform returning tapes and a post-processing function), or the QNode's function "
                    f"({role}=qnode.func) without it"
                )

    @property
    def names(self) -> list[str]:
        return [transform_name(b) for b in self.pipeline]

    def run(self, tapes: list[Any], execute: Callable[[list[Any]], list[Any]]) -> list[Any]:
        """The results of ``tapes`` as the QNode gives them sample by sample: broadcast tapes split into one tape
        per sample (a transform need not handle broadcasting: ``mitigate_with_zne`` does not), transformed,
        executed by ``execute`` (one call for all), post-processed and stacked again."""
        import pennylane as qml

        with recording():
            split, stack = qml.transforms.broadcast_expand(tuple(tapes))
            transformed, post = self.pipeline(tuple(split))
        return list(stack(post(execute(list(transformed)))))

    def rewrite(self, tape: Any) -> Any:
        """``tape`` rewritten by each transform, which must give one tape and leave results as they are."""
        marker = object()
        for bound in self.pipeline:
            kwargs = {k: v for k, v in bound.kwargs.items() if k not in ("argnums", "hybrid")}  # as PennyLane does
            with recording():
                tapes, post = bound.tape_transform(tape, *bound.args, **kwargs)
            try:
                same = len(tapes) == 1 and post((marker,)) is marker
            except Exception:  # it computes with the results: not a rewrite
                same = False
            if not same:
                raise ConfigError(
                    f"{self.role}= a QNode with the transform {transform_name(bound)!r}, which turns the feature map "
                    f"into {len(tapes)} circuit(s) with a post-processing of their results; accepted for a kernel: "
                    "transforms that rewrite the feature map into one circuit (merge_rotations, add_noise, insert), "
                    f"or {self.role}=qnode.func without it"
                )
            tape = tapes[0]
        return tape

    def __repr__(self) -> str:
        return f"QNodeTransforms({', '.join(self.names)})"

    def __reduce__(self) -> tuple[Any, tuple]:
        what = f"the QNode given as {self.role}="
        steps = []
        for bound in self.pipeline:
            check_picklable((bound.args, bound.kwargs), what, bound)
            steps.append((TransformReference(bound, what), bound.args, bound.kwargs))
        return _rebuilt, (steps, self.role)

    def __copy__(self) -> QNodeTransforms:
        return self  # never changed after it is made: copies of a layer may share it

    def __deepcopy__(self, memo: dict) -> QNodeTransforms:
        return self


def qnode_transforms(qfunc: Any, role: str, backend: Any = None) -> QNodeTransforms | None:
    """The transforms of ``qfunc`` when it is a QNode that has some; None otherwise. ``role`` names the argument.
    When ``backend`` (as given) is not None nor the QNode's device, the QNode runs elsewhere, so the noise that its
    device's own transforms add (``qml.noise.insert(dev, ...)``, ``add_noise``) comes along: the device's
    preprocessing (its decomposition, where that noise meets the gates) and its transforms, after the QNode's."""
    if "pennylane" not in sys.modules:
        return None
    import pennylane as qml

    if not isinstance(qfunc, qml.QNode):
        return None
    pipeline = _pipeline(qfunc)
    if backend is not None and backend is not qfunc.device:
        from hybridai.quantum.pennylane.device_recipes import NOISE_TRANSFORMS, transform_chain

        base, steps = transform_chain(qfunc.device)
        if any(transform_name(t) in NOISE_TRANSFORMS for t, _, _ in steps):
            from pennylane.transforms.core import BoundTransform, CompilePipeline

            device_steps = CompilePipeline([BoundTransform(t, args, kwargs) for t, args, kwargs in steps])
            pipeline = pipeline + base.preprocess_transforms() + device_steps
    return QNodeTransforms(pipeline, role) if len(pipeline) else None
