"""Executors ``aer`` (Qiskit Aer's estimator and sampler, ``aer``) and ``ibm`` (IBM Quantum Runtime, ``ibm``), and the
jobs they share (``executor``: submission, retries, time-outs, the shift rule; ``redaction``: tokens kept out of
errors and logs); each holds a ``qiskit_frontend.frontend.QiskitFrontEnd`` for its device, noise and circuits."""
