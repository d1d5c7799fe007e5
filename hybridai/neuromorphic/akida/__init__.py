"""Akida: quantized Linear/Conv2d + ReLU (+ max-pool) networks run in BrainChip's engine.

``plan`` (formats and per-layer integer scales from a trained model: ``quantize`` gives an
``AkidaIntegerNetwork``), ``engine`` (the ``akida.Model``, the integer torch reference, activity counts:
``compile``), ``backend`` (the ``akida`` chip compiler).
"""

from hybridai.neuromorphic.akida.engine import (
    AkidaNetwork,
    LayerTrace,
    build_model,
    compile,  # noqa: A004
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
