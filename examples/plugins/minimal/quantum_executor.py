"""The smallest conforming QuantumExecutor: exact, differentiable, delegating to PennyLane's default.qubit.

A real executor would send the tapes to its simulator or QPU; everything else here is the contract:
typed capabilities, errors naming the argument, one ``Execution`` per call, and no per-call state.
"""

import pennylane as qml

from hybridai.backends import Execution, ExecutionStats, QuantumCapabilities, QuantumExecutor
from hybridai.core.errors import invalid


class MinimalExecutor(QuantumExecutor):
    def __init__(self, target=None):  # no **options: the registry turns unknown options into ConfigErrors
        if target is not None:
            raise invalid("target", target, "none (this executor has no targets)")
        super().__init__()

    @property
    def capabilities(self):
        return QuantumCapabilities(differentiable=True, exact=True, diff_methods=("best", "backprop"))

    def execute(self, tapes, config):
        tapes, config = self.settle(tapes, config)  # shots (the tapes' too), seed and "best" final; methods checked
        if config.shots:
            raise invalid("shots", config.shots, "None (this executor is exact)")
        device = qml.device("default.qubit", wires=list(config.wires))  # per call: nothing kept between calls
        results = qml.execute(tapes, device, diff_method="backprop")
        return Execution(list(results), ExecutionStats(circuits=sum(t.batch_size or 1 for t in tapes), calls=1))
