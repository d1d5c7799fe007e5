"""Backend family ``ibm``: IBM Quantum Runtime, local testing mode on ``fake_*`` devices or a real account."""

from __future__ import annotations

import math
from typing import Any, cast

import numpy as np

from hybridai.core.capabilities import QuantumCapabilities
from hybridai.core.errors import (
    BackendNotFoundError,
    BackendUnavailableError,
    ConfigError,
    ResourceLimitError,
    invalid,
)
from hybridai.core.execution import ExecutionConfig
from hybridai.core.redaction import is_secret_name
from hybridai.quantum.execution.resources import check_state_memory
from hybridai.quantum.qiskit.executor import QiskitBackend, Tally, column
from hybridai.quantum.qiskit.redaction import redact, redact_logs, remember_account
from hybridai.quantum.qiskit_frontend.fake_devices import fake_backend
from hybridai.quantum.qiskit_frontend.frontend import QiskitFrontEnd

ACCOUNT_HELP = (
    "save an account with qiskit_ibm_runtime.QiskitRuntimeService.save_account(...) or set the environment "
    "variables QISKIT_IBM_TOKEN and QISKIT_IBM_INSTANCE (optionally QISKIT_IBM_CHANNEL)"
)


def _check_local_device(device: Any, target: str) -> None:
    """Refuse a fake device too wide for local testing mode: qiskit-ibm-runtime's local executor measures every
    qubit of the device (0.51), so Aer must hold a statevector of all of them, whatever the circuit uses."""
    try:
        check_state_memory(f"ibm:{target}", device.num_qubits)
    except ResourceLimitError as exc:
        raise ResourceLimitError(
            f"backend='ibm:{target}': qiskit-ibm-runtime's local testing mode simulates all {device.num_qubits} "
            f"qubits of {target} (it measures each one), which cannot fit here ({exc}); accepted: "
            f"'aer:{target}' (the same device's noise model, coupling map and basis gates, only the qubits the "
            "circuit uses simulated) or a fake device of fewer qubits for 'ibm:'"
        ) from None


class IBMBackend(QiskitBackend):
    """IBM Quantum Runtime: local testing mode on ``fake_*`` devices, or a real account."""

    MODES = ("job", "session", "batch")
    own_options = ("mode", "resilience_level")
    shots: int  # IBM's estimator always samples: 4096 unless given

    def __init__(
        self, target: str | None = None, *, mode: str = "job", resilience_level: int = 0, **options: Any
    ) -> None:
        redact_logs()
        secret = sorted(k for k in options if is_secret_name(k))
        if secret:  # a token kept in options would be pickled with every layer: it never travels as one
            raise ConfigError(
                f"backend='ibm:{target or ''}' does not take the option(s) {secret} (values not shown); an IBM "
                f"Quantum token or instance is never an option: {ACCOUNT_HELP}"
            )
        if not target:
            raise invalid("backend", "ibm", "'ibm:fake_<name>' (offline) or 'ibm:<device>' (an IBM Quantum account)")
        if mode not in self.MODES:
            raise invalid("mode", mode, f"one of {self.MODES}")
        if resilience_level not in (0, 1, 2):
            raise invalid("resilience_level", resilience_level, "0, 1 or 2")
        if options.get("shots") is None:  # shots=None reads as not given (an estimate needs a precision)
            options["shots"] = 4096
        super().__init__(target, **options)
        self.options.update(mode=mode, resilience_level=resilience_level)
        self.mode, self.resilience_level = mode, resilience_level
        self.local = target.startswith("fake_")
        device = fake_backend(target) if self.local else self._account_backend(target)
        if self.local:
            _check_local_device(device, target)
        self.frontend = QiskitFrontEnd(
            self.name, device=device, optimization_level=self.optimization_level, seed=self.seed
        )

    @staticmethod
    def _account_backend(name: str) -> Any:
        try:  # the saved account's token and instance are secrets before the service reads (and logs) them
            from qiskit_ibm_runtime.accounts import AccountManager

            remember_account(AccountManager.get())
        except Exception:  # no saved account: the service says so below
            pass
        try:
            from qiskit_ibm_runtime import QiskitRuntimeService

            service = QiskitRuntimeService()
            remember_account(service.active_account())
        except Exception as exc:
            raise BackendUnavailableError(
                f"backend='ibm:{name}' needs an IBM Quantum account ({type(exc).__name__}: {redact(str(exc))}); "
                f"{ACCOUNT_HELP}; offline, use 'ibm:fake_<name>' such as 'ibm:fake_manila'"
            ) from None
        finally:
            redact_logs()  # loggers qiskit-ibm-runtime created while connecting
        try:
            return service.backend(name)
        except Exception as exc:
            raise BackendNotFoundError(f"backend='ibm:{name}': {type(exc).__name__}: {redact(str(exc))}") from None

    @property
    def capabilities(self) -> QuantumCapabilities:
        caps = super().capabilities
        return QuantumCapabilities(
            differentiable=True, exact=False, shots=True, noise=True, max_qubits=self.device.num_qubits,
            diff_methods=caps.diff_methods, devices=caps.devices, mitigation_engines=("ibm",),
            folds_need_barriers=caps.folds_need_barriers,
        )  # fmt: skip

    def estimator(self, seed: int | None = None, mitigation: Any = None) -> Any:
        """The client-side Estimator for a seed and a ZNE(engine='ibm') setting, created once each."""

        def make() -> Any:
            from qiskit_ibm_runtime import Batch, Session
            from qiskit_ibm_runtime.executor_estimator import Estimator

            mode = {"job": lambda d: d, "session": lambda d: Session(backend=d), "batch": lambda d: Batch(backend=d)}
            estimator = Estimator(mode=mode[self.mode](self.device))
            estimator.options.resilience_level = self.resilience_level
            estimator.options.default_precision = 1 / math.sqrt(self.shots)
            if self.resilience_level == 0:
                estimator.options.twirling.enable_gates = False
                estimator.options.twirling.enable_measure = False
            if seed is not None and self.local:
                estimator.options.simulator.seed_simulator = seed
            if mitigation is not None:
                self._ibm_zne(estimator, mitigation)
            return estimator

        return self.frontend.cached(("estimator", seed, mitigation), make)

    @staticmethod
    def _ibm_zne(estimator: Any, zne: Any) -> None:
        """qiskit-ibm-runtime's own ZNE (client-side resilience); warns about what it ignores."""
        import warnings

        extrapolator = {
            "linear": "linear",
            "exp": "exponential",
            "richardson": f"polynomial_degree_{len(zne.scale_factors) - 1}",
            "poly": f"polynomial_degree_{zne.order}",
        }[zne.extrapolation]
        estimator.options.resilience.zne_mitigation = True
        estimator.options.resilience.zne.noise_factors = list(zne.scale_factors)
        estimator.options.resilience.zne.extrapolator = extrapolator
        estimator.options.resilience.zne.amplifier = "gate_folding"
        if zne.folding == "global":
            warnings.warn(
                "ZNE(engine='ibm') folds two-qubit gates (amplifier 'gate_folding'), not the whole circuit: "
                "folding='global' is not available there",
                stacklevel=3,
            )
        if zne.seed is not None:
            warnings.warn("ZNE(engine='ibm') ignores seed= (IBM's folding chooses gates itself)", stacklevel=3)

    def estimate(
        self, pairs: list[tuple[Any, list[Any]]], values: list[np.ndarray], config: ExecutionConfig, tally: Tally
    ) -> list:
        pubs = [(c, column(o), v) for (c, o), v in zip(pairs, values, strict=True)]
        precision = 1 / math.sqrt(cast(int, config.shots))  # settled: an int here (IBM's shots are 4096 unless given)
        estimator = self.estimator(config.seed, config.mitigation)
        redact_logs()  # cheap; covers loggers qiskit-ibm-runtime created since the backend was built
        result = self.run_job(lambda: estimator.run(pubs, precision=precision), tally)
        return [np.moveaxis(np.asarray(r.data.evs), 0, -1) for r in result]
