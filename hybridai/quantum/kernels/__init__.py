"""Quantum kernels k(x, y): the ``QuantumKernel`` module (``quantum_kernel``), Gram matrices in row blocks with
bounded memory (``gram_blocks``), kernel matrices as data (``matrices``: alignment, PSD repair) and scikit-learn
estimators on a kernel (``estimators``)."""
