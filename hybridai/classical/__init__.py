"""Classical layers on torch devices: the ``torch`` placement."""

from hybridai.classical.torch_device import TorchBackend

__all__ = ["TorchBackend"]
