"""Training utilities: atomic, resumable checkpoints (``save`` / ``load``)."""

from .checkpoint import load, save

__all__ = ["load", "save"]
