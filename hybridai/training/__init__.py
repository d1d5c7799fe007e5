"""Training utilities: atomic, resumable checkpoints (``save`` / ``load``), a ``fit`` loop, shuffled minibatches of
in-memory tensors along any batch dimension (``TensorBatches``), and data-parallel helpers in
``hybridai.training.distributed`` (DDP, samplers, a sharded Gram matrix)."""

from hybridai.training import distributed
from hybridai.training.batches import TensorBatches
from hybridai.training.checkpoint import load, save
from hybridai.training.fit import fit
from hybridai.training.profiling import ProfileReport, profile

__all__ = ["ProfileReport", "TensorBatches", "distributed", "fit", "load", "profile", "save"]
