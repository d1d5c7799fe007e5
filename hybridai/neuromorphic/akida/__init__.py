"""Akida: quantized Linear/Conv2d + ReLU (+ max-pool) networks run in BrainChip's engine.

The shape of every chip package: ``plan`` (number formats and per-layer integer scales from a trained model:
``quantize`` gives an ``AkidaIntegerNetwork``), ``network`` (the runner: ``AkidaNetwork`` holds the
``akida.Model``; the integer torch reference and activity counts), ``backend`` (``compile``, the verb, and
the ``akida`` chip compiler). ``hybridai.neuromorphic.akida.compile(model, calibration=x)`` returns the
runnable network.
"""

from hybridai.neuromorphic.akida.backend import compile  # noqa: A004  (the chip compiler's verb)
from hybridai.neuromorphic.akida.network import (
    AkidaNetwork,
    LayerTrace,
    build_model,
    count_activity,
    import_akida,
    integer_reference,
    layer_reference,
)
from hybridai.neuromorphic.akida.plan import AkidaIntegerNetwork, QuantizedLayer, check_model, quantize, quantize_input
from hybridai.neuromorphic.macs import dense_macs

__all__ = [
    "AkidaIntegerNetwork",
    "AkidaNetwork",
    "LayerTrace",
    "QuantizedLayer",
    "build_model",
    "check_model",
    "compile",
    "count_activity",
    "dense_macs",
    "import_akida",
    "integer_reference",
    "layer_reference",
    "quantize",
    "quantize_input",
]
