"""The smallest conforming Placement: moves torch modules to a device (target ``cpu``, ``cuda``, ...)."""

from torch import nn

from hybridai.backends import Placement, PlacementCapabilities
from hybridai.core.devices import resolve_torch_device
from hybridai.core.errors import invalid


class MinimalPlacement(Placement):
    def __init__(self, target=None):  # no **options: the registry turns unknown options into ConfigErrors
        self.device = resolve_torch_device(target)  # a HybridAIError for an unknown or missing device
        super().__init__(target)

    @property
    def capabilities(self):
        return PlacementCapabilities(differentiable=True, exact=True, devices=(self.device.type,))

    def place(self, module):
        if not isinstance(module, nn.Module):
            raise invalid("module", type(module).__name__, "a torch.nn.Module")
        return module.to(self.device)
