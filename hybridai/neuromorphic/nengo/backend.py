"""Backend family ``nengo``: a trained spiking network in nengo's reference simulator (``nengo.Simulator``).

Every chip package has the same shape: ``plan`` (trained model -> the chip's description: ``nengo.LIF``
ensembles and connections, and the ``nengo.Network`` built from them), ``network`` (the runner:
``NengoNetwork``, a ``CompiledNetwork``), ``backend`` (this module: the verb ``compile`` and the registry
class, whose ``compile`` calls it with its options).

No target (the reference simulator is the only one). ``compile(model)`` maps ``nn.Linear`` +
``LIF``/``CUBA`` layers (``reset="zero"``) onto ``nengo.LIF`` ensembles; see
``hybridai.neuromorphic.nengo.plan`` for how the discrete layers become nengo's continuous-time neurons.
Option: ``cuba_refractory_steps`` (default 1.5), the refractory period in time steps given to CUBA
layers. nengo is imported when the backend is first used.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from hybridai.core.capabilities import ChipCapabilities
from hybridai.core.contracts import Availability, ChipCompiler
from hybridai.core.errors import BackendUnavailableError, invalid

if TYPE_CHECKING:
    from hybridai.neuromorphic.nengo.network import NengoNetwork


def compile(  # noqa: A001  (the chip compiler's verb)
    model: Any, *, calibration: Any = None, n_inputs: int | None = None, cuba_refractory_steps: float = 1.5
) -> NengoNetwork:
    """A ``NengoNetwork`` for ``model`` (nengo needs no quantization).

    ``n_inputs``: the input width, needed only when the model starts with a spiking layer of unknown size;
    without it, ``calibration`` (``[T, B, F]``) gives it. ``cuba_refractory_steps``: the refractory period
    in time steps given to CUBA layers (``plan``'s module docstring).
    """
    status = NengoBackend.is_available()
    if not status.available:
        raise BackendUnavailableError(f"backend 'nengo' is not available here: {status.reason}")
    from hybridai.neuromorphic.nengo.network import NengoNetwork

    if n_inputs is None and hasattr(calibration, "shape") and len(calibration.shape) == 3:
        n_inputs = int(calibration.shape[-1])
    return NengoNetwork(model, n_inputs=n_inputs, cuba_refractory_steps=cuba_refractory_steps)


class NengoBackend(ChipCompiler):
    """Runs whole spiking networks as ``nengo.LIF`` ensembles in ``nengo.Simulator`` (float64, CPU)."""

    def __init__(self, target: str | None = None, *, cuba_refractory_steps: float = 1.5) -> None:
        if target is not None:
            raise invalid("backend", f"nengo:{target}", "'nengo' (no target: it runs nengo's reference simulator)")
        from hybridai.neuromorphic.nengo.plan import check_refractory_steps

        self.cuba_refractory_steps = check_refractory_steps(cuba_refractory_steps)
        super().__init__(None, cuba_refractory_steps=cuba_refractory_steps)

    @property
    def capabilities(self) -> ChipCapabilities:
        from hybridai.neuromorphic.nengo.plan import ACCEPTS, SUPPORTED

        return ChipCapabilities(
            bit_exact=False,  # nengo's LIF is continuous-time; LIF layers match spike for spike, CUBA only in rate
            devices=("cpu",),
            layers=ACCEPTS,
            takes=SUPPORTED,
            event_word="spikes",
            extra={
                "simulator": "nengo.Simulator (reference, float64)",
                "resets": ("zero",),
                "neurons": ("LIF", "CUBA"),
            },
        )

    @classmethod
    def is_available(cls) -> Availability:
        try:
            import nengo  # noqa: F401
        except ImportError as exc:
            return Availability(
                False, f"nengo is not installed ({exc}); nengo is a core dependency: pip install 'nengo>=4.1'"
            )
        return Availability(True)

    def compile(self, model: Any, *, calibration: Any = None) -> NengoNetwork:
        """``nengo.compile(model, calibration=..., cuba_refractory_steps=...)`` with this backend's option;
        ``calibration`` (``[T, B, F]``) only gives the input width when the model starts with a spiking layer
        of unknown size."""
        return compile(model, calibration=calibration, cuba_refractory_steps=self.cuba_refractory_steps)
