"""nengo: a trained spiking network as ``nengo.LIF`` ensembles run in ``nengo.Simulator``.

The shape of every chip package: ``plan`` (layers to ensembles and connections: ``plan.plan`` gives the
``NengoLayerPlan``s, ``build_network`` the ``nengo.Network``), ``network`` (the runner: ``NengoNetwork``),
``backend`` (``compile``, the verb, and the ``nengo`` chip compiler).
``hybridai.neuromorphic.nengo.compile(model)`` returns the runnable network.
"""

from hybridai.neuromorphic.nengo.backend import compile  # noqa: A004  (the chip compiler's verb)
from hybridai.neuromorphic.nengo.network import NengoNetwork
from hybridai.neuromorphic.nengo.plan import NengoLayerPlan, build_network

__all__ = ["NengoLayerPlan", "NengoNetwork", "build_network", "compile"]
