"""nengo: a trained spiking network as ``nengo.LIF`` ensembles run in ``nengo.Simulator``.

``network`` (plan: layers to ensembles and connections; ``to_network``; ``NengoNetwork``, the
compiled network), ``backend`` (the ``nengo`` chip compiler).
"""

from hybridai.neuromorphic.nengo.network import NengoLayerPlan, NengoNetwork, build_network, plan, to_network

__all__ = ["NengoLayerPlan", "NengoNetwork", "build_network", "plan", "to_network"]
