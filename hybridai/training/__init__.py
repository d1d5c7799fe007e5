"""Training utilities: atomic, resumable checkpoints (``save`` / ``load``), a ``fit`` loop, and
data-parallel helpers in ``hybridai.training.distributed`` (DDP, samplers, a sharded Gram matrix)."""

from . import distributed
from .checkpoint import load, save
from .fit import fit
from .profiling import ProfileReport, profile

__all__ = ["ProfileReport", "distributed", "fit", "load", "profile", "save"]
