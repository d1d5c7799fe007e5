"""Executor ``density``: batched density matrices in torch for noisy circuits (Qiskit NoiseModels, fake IBM devices,
PennyLane channels), exact or sampled, with backprop (``backend``)."""
