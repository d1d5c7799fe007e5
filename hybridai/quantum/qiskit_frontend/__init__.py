"""Qiskit's side of hybridai, shared by the executors that speak Qiskit (``aer``, ``ibm``, ``density``): tapes to
circuits and observables (``conversion``, ``expressions``, ``channels``), Qiskit circuits as quantum functions
(``from_circuit``, ``circuit_function``, ``observables``), fake IBM devices (``fake_devices``) and NoiseModels
checked as Aer checks them (``noise_checks``)."""
