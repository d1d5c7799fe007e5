"""Executor ``pennylane``: tapes on any installed PennyLane device (``backend``), a user's device kept whole
(``device_recipes``), a QNode's own transforms (``qnode_transforms``) and transforms pickled by reference
(``transform_pickling``), PennyLane's constants kept in the circuit's dtype (``working_dtype``)."""
