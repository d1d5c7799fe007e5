"""Recorded circuits: the lock around PennyLane's queue (``recording``), a tape's structure (``tape_structure``),
what one recording spares the next (``rebinding``, ``unsafe_rebinding``), the batch-axis check (``batch_axis``),
trainable arrays of a quantum function (``weights``), text drawings (``drawing``), decomposition into the
operations a consumer takes (``decomposition``) and the Hermiticity check of observables (``hermiticity``)."""
