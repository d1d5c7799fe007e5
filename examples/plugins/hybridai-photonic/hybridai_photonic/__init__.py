"""hybridai-photonic: an example hybridai backend plugin, a simulated photonic matrix multiplier.

Installed, it registers the backend family ``photonic`` in the ``hybridai.backends``
entry-point group; ``hybridai.place(model, classical="photonic")`` then moves every
``nn.Linear`` that fits the chip onto it. See README.md.
"""

from .backend import PRESETS, PhotonicBackend, PhotonicConfig, PhotonicEnergy
from .layer import PhotonicLinear, energy_report, unplace
from .mesh import program

__version__ = "0.1.0"

__all__ = [
    "PRESETS",
    "PhotonicBackend",
    "PhotonicConfig",
    "PhotonicEnergy",
    "PhotonicLinear",
    "energy_report",
    "program",
    "unplace",
]
