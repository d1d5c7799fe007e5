"""Training utilities: atomic, resumable checkpoints (``save`` / ``load``), a ``fit`` loop, and
data-parallel helpers in ``hybridai.training.distributed`` (DDP, samplers, a sharded Gram matrix)."""

from hybridai.training import distributed
from hybridai.training.checkpoint import load, save
from hybridai.training.fit import fit
from hybridai.training.profiling import ProfileReport, profile

__all__ = ["ProfileReport", "distributed", "fit", "load", "profile", "save"]
