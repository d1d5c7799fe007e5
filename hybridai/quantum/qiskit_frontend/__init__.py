"""Qiskit's side of hybridai, shared by the executors that speak Qiskit (``aer``, ``ibm``, ``density``), each of which
holds a ``QiskitFrontEnd`` (``frontend``: device, noise model, transpiled and measured circuits, a cache): tapes to
circuits and observables and results back (``conversion``, ``expressions``, ``channels``), transpilation and its
targets (``transpiling``), measured circuits of sampled runs (``measuring``), noise from options
(``noise_models``), the options they share (``options``), Qiskit circuits as quantum functions (``from_circuit``,
``circuit_function``, ``observables``), fake IBM devices (``fake_devices``) and NoiseModels checked as Aer checks
them (``noise_checks``)."""
