"""Backend family ``akida``: a trained Linear/Conv2d + ReLU network on BrainChip's Akida engine.

Every chip package has the same shape: ``plan`` (trained model -> the chip's number formats: ``plan.quantize``
gives an ``AkidaIntegerNetwork``), ``network`` (the runner: ``AkidaNetwork``, a ``CompiledNetwork``), ``backend``
(this module: the verb ``compile`` and the registry class, whose ``compile`` calls it with its options).

Target: none (Akida's software engine on this CPU; a chip listed by ``akida.devices()`` is reported in the
capabilities, but the network runs in software). Options, all in bits:

- ``input_bits`` (default 8): input codes; 8 is signed, 1/2/4 are unsigned and need non-negative inputs;
- ``activation_bits`` (default 8): unsigned activations between layers (1, 2, 4 or 8);
- ``output_bits`` (default 8): the last layer's outputs (signed 8-bit when it has no ReLU);
- ``weight_bits``: 8 only (Akida v2 layers store int8 weights).

8 bits by default because Akida v2 layers take 8-bit activations and it keeps the chip closest to the
float model; 4 bits gives sparser, cheaper activity. Results are quantized (they differ from the
float model's); ``bit_exact=True``: BrainChip's own engine computes them, checked against an integer reference.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from hybridai.core.capabilities import ChipCapabilities
from hybridai.core.contracts import Availability, ChipCompiler
from hybridai.core.errors import invalid, missing_extra

if TYPE_CHECKING:
    from hybridai.neuromorphic.akida.network import AkidaNetwork


def compile(  # noqa: A001  (the chip compiler's verb)
    model: Any,
    *,
    calibration: Any = None,
    input_bits: int = 8,
    activation_bits: int = 8,
    output_bits: int = 8,
    weight_bits: int = 8,
) -> AkidaNetwork:
    """Quantize ``model`` to Akida's formats (``plan.quantize``) and build it on Akida: an ``AkidaNetwork``.

    ``calibration`` (a float batch in the model's input layout, [N, F] or [N, C, H, W]) sets the activation
    ranges and is required; the bits are the backend's options (module docstring).
    """
    from hybridai.neuromorphic.akida.network import AkidaNetwork, import_akida
    from hybridai.neuromorphic.akida.plan import check_model, quantize

    check_model(model)  # a model error first: it is the one to fix before any calibration helps
    if calibration is None:
        raise invalid(
            "calibration",
            None,
            "a float tensor batch in the model's input layout ([N, F] or [N, C, H, W]); "
            "Akida's fixed-point activations need their ranges",
        )
    import_akida()
    net = quantize(
        model,
        calibration,
        input_bits=input_bits,
        activation_bits=activation_bits,
        output_bits=output_bits,
        weight_bits=weight_bits,
    )
    return AkidaNetwork(net, source=model)


class AkidaBackend(ChipCompiler):
    """Quantizes a torch ``nn.Sequential`` to Akida's integer formats and runs it on Akida's engine."""

    def __init__(
        self,
        target: str | None = None,
        *,
        input_bits: int = 8,
        activation_bits: int = 8,
        output_bits: int = 8,
        weight_bits: int = 8,
    ) -> None:
        if target is not None:
            raise invalid("backend", f"akida:{target}", "'akida' (no target: Akida's software engine on this CPU)")
        from hybridai.neuromorphic.akida.plan import check_formats

        check_formats(input_bits, activation_bits, output_bits, weight_bits)
        super().__init__(
            None,
            input_bits=input_bits,
            activation_bits=activation_bits,
            output_bits=output_bits,
            weight_bits=weight_bits,
        )

    @classmethod
    def is_available(cls) -> Availability:
        try:
            import akida  # noqa: F401
        except ImportError:
            return Availability(False, missing_extra("akida", "akida", "the Akida backend"))
        except Exception as exc:  # a broken native library must not break the registry
            return Availability(False, f"import akida failed: {type(exc).__name__}: {exc}")
        return Availability(True)

    @staticmethod
    def hardware() -> list[str]:
        """Akida chips attached to this machine (empty: the software engine runs everything)."""
        from hybridai.neuromorphic.akida.network import import_akida

        return [str(d) for d in import_akida().devices()]

    @property
    def capabilities(self) -> ChipCapabilities:
        from hybridai.neuromorphic.akida.network import import_akida
        from hybridai.neuromorphic.akida.plan import ACCEPTS, SUPPORTED

        akida = import_akida()
        return ChipCapabilities(
            bit_exact=True,  # BrainChip's own engine; every run is also checked against an integer reference
            hardware=tuple(str(d) for d in self.hardware()),
            devices=("cpu",),
            layers=ACCEPTS,
            frames=True,
            takes=SUPPORTED,
            event_word="non-zero activations",
            extra={
                "engine": f"akida {akida.__version__} software engine",
                **self.options,
            },
        )

    def compile(self, model: Any, *, calibration: Any = None) -> AkidaNetwork:
        """``akida.compile(model, calibration=..., **options)`` with this backend's number formats."""
        return compile(model, calibration=calibration, **self.options)

    def describe(self) -> str:
        """One line: engine, hardware found and the number formats."""
        hw = self.hardware()
        where = f"chips found: {', '.join(hw)} (not used: runs in software)" if hw else "no chip found: software engine"
        opts = ", ".join(f"{k}={v}" for k, v in self.options.items())
        return f"akida ({where}; {opts})"
