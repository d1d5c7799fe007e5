"""Zero-noise extrapolation around any quantum executor: settings and Mitiq's extrapolation (``zne``),
tape folding decided by Mitiq (``folding``), a plot of one extrapolation (``plots``)."""

from hybridai.quantum.mitigation.folding import fold_tape
from hybridai.quantum.mitigation.plots import plot_zne
from hybridai.quantum.mitigation.zne import ZNE, ZNEResult

__all__ = ["ZNE", "ZNEResult", "fold_tape", "plot_zne"]
