"""Executor ``pennylane``: tapes on any installed PennyLane device (``backend``), a user's device kept whole
(``device_recipes``), a QNode's own transforms (``qnode_transforms``) and transforms pickled by reference
(``transform_pickling``)."""
