"""Training utilities: atomic, resumable checkpoints (``save`` / ``load``) and a ``fit`` loop."""

from .checkpoint import load, save
from .fit import fit

__all__ = ["fit", "load", "save"]
