"""All T time steps of a spiking layer in ONE autograd node, with an analytic backward pass.

The forward pass runs the recurrence over ``x.unbind(0)`` without recording a graph and
writes spikes and membrane potentials into preallocated ``[T, B, ...]`` tensors. The
backward pass runs the adjoint recurrence from T-1 down to 0, each step touching its own
slices once, so backward costs O(T), never O(T^2) (indexing ``x[t]`` inside autograd would
allocate a full-size gradient per step).

Saved for backward: the membrane trace ``U`` (one value per neuron-step, the same tensor
that is returned as the membrane output) and, only when the synaptic decay ``alpha`` is
learnt, the synaptic-current trace ``I``. Surrogate derivatives and reset masks are
recomputed from ``U`` step by step while the slice is hot in cache.

Recomputation (``recompute_steps=K``): the T steps run as chunks of K steps (the last one
shorter when K does not divide T). Forward keeps no trace, only the input ``x`` and the state
before each chunk (``ceil(T/K)`` states); backward recomputes one chunk's traces into a K-step
buffer and runs that chunk's adjoint, last chunk first. The recomputation repeats the
forward arithmetic exactly, so outputs and gradients are bit-identical to the single-chunk
pass; backward stays O(T) (one extra forward pass) and no [T, ...] trace is ever allocated
unless the membrane is an output.

The arithmetic follows snnTorch's ``Leaky``/``Synaptic`` (``reset_delay=True``) operation by
operation, so spikes are bit-identical for the same inputs and parameters.

Modules: ``recurrence`` (what every neuron model shares: chunks, output buffers, the adjoint's
base class), one module per neuron model (``lif``, ``cuba``). A new neuron model is one new
module: its recurrence, its chunk recomputation, its adjoint step and its autograd function.
"""

from hybridai.spiking.fused.cuba import CUBAFunction
from hybridai.spiking.fused.lif import LIFFunction

__all__ = ["CUBAFunction", "LIFFunction"]
