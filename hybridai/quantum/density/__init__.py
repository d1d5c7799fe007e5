"""Executor ``density``: batched density matrices in torch for noisy circuits (Qiskit NoiseModels, fake IBM devices,
PennyLane channels), exact or sampled, with backprop (``backend``); its circuits converted and transpiled by a
``qiskit_frontend.frontend.QiskitFrontEnd``, as ``aer``'s are, then compiled to Pauli transfer matrices."""
