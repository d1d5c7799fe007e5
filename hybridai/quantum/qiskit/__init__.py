"""Executors ``aer`` (Qiskit Aer's estimator and sampler, ``aer``) and ``ibm`` (IBM Quantum Runtime, ``ibm``), and the
jobs they share (``executor``: submission, retries, redacted errors); circuits come from ``qiskit_frontend``."""
