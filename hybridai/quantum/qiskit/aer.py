"""Backend family ``aer``: qiskit-aer, exact, sampled, or noisy (a fake IBM device, given rates, or a
user's ``qiskit_aer.noise.NoiseModel``)."""

from __future__ import annotations

import functools
from typing import Any

import numpy as np

from hybridai.core.capabilities import QuantumCapabilities
from hybridai.core.errors import UnsupportedOperationError, invalid, non_negative_int
from hybridai.core.execution import ExecutionConfig
from hybridai.quantum.execution.resources import check_state_memory
from hybridai.quantum.qiskit.executor import QiskitBackend, Tally, column
from hybridai.quantum.qiskit_frontend.frontend import QiskitFrontEnd
from hybridai.quantum.qiskit_frontend.measuring import basis_groups
from hybridai.quantum.qiskit_frontend.noise_models import resolve_noise


class AerBackend(QiskitBackend):
    """qiskit-aer: exact, sampled, or noisy.

    Noise: a fake IBM device as target (``aer:fake_manila``: its noise model, qubit count and layout),
    ``depolarizing=p`` or ``(p1, p2)`` and ``readout_error=q``, or ``noise_model=`` a
    ``qiskit_aer.noise.NoiseModel`` of your own (with a fake device target it replaces the device's noise;
    it cannot be combined with ``depolarizing``/``readout_error``). Without a device, circuits are transpiled for
    ``AerSimulator(noise_model=m)`` (the model's basis gates), as Aer would. Exact runs (``shots=None``) simulate the
    density matrix and leave read errors out (readout errors and errors on ``measure``: Aer's estimator circuits have
    no measurement); sampled runs apply them. A model Aer would refuse is refused when the backend is built
    (``noise_checks``). A register whose state (a
    density matrix with noise) would not fit in half the RAM is refused before anything is allocated.
    """

    aliases = ("aer_simulator", "AerSimulator", "qasm_simulator")  # Qiskit's names: they suggest 'aer'
    own_options = ("threads", "depolarizing", "readout_error", "noise_model")

    def __init__(
        self,
        target: str | None = None,
        *,
        depolarizing: Any = None,
        readout_error: float | None = None,
        noise_model: Any = None,
        **options: Any,
    ) -> None:
        threads = non_negative_int("threads", options.pop("threads", 1))  # 0: all cores
        super().__init__(target, **options)
        self.threads = threads
        if threads != 1:
            self.options["threads"] = threads
        noise = resolve_noise(self.family or "aer", target, depolarizing, readout_error, noise_model)
        self.options.update(noise.options)
        self.frontend = QiskitFrontEnd(
            self.name, device=noise.device, noise_model=noise.model, optimization_level=self.optimization_level,
            seed=self.seed,
        )  # fmt: skip

    def check_resources(self, n_qubits: int, config: ExecutionConfig) -> None:
        super().check_resources(n_qubits, config)
        density = self.noise_model is not None and config.shots is None  # the exact estimator's method
        threads = self.threads or 1
        check_state_memory(self.name, n_qubits, density=density, copies=threads)

    @property
    def capabilities(self) -> QuantumCapabilities:
        caps = super().capabilities
        noisy = self.noise_model is not None
        return QuantumCapabilities(
            differentiable=True, exact=self.shots is None and not noisy, shots=True, noise=noisy,
            max_qubits=self.device.num_qubits if self.device is not None else None,
            diff_methods=caps.diff_methods, devices=caps.devices, folds_need_barriers=caps.folds_need_barriers,
        )  # fmt: skip

    def _estimator(self, seed: int | None) -> Any:
        def make() -> Any:
            from qiskit_aer.primitives import EstimatorV2

            backend_options = {
                "method": "density_matrix" if self.noise_model is not None else "statevector",
                "max_parallel_threads": self.threads,
            }
            if self.noise_model is not None:
                backend_options["noise_model"] = self.noise_model
            run_options = {} if seed is None else {"seed_simulator": seed}
            return EstimatorV2(
                options={"default_precision": 0.0, "backend_options": backend_options, "run_options": run_options}
            )

        return self.frontend.cached(("estimator", seed), make)

    def _sampler(self, seed: int | None) -> Any:
        def make() -> Any:
            from qiskit_aer.primitives import SamplerV2

            backend_options = {"method": "statevector" if self.noise_model is None else "automatic",
                               "max_parallel_threads": self.threads}  # fmt: skip
            if self.noise_model is not None:
                backend_options["noise_model"] = self.noise_model
            return SamplerV2(default_shots=1024, seed=seed, options={"backend_options": backend_options})

        return self.frontend.cached(("sampler", seed), make)

    def estimate(
        self, pairs: list[tuple[Any, list[Any]]], values: list[np.ndarray], config: ExecutionConfig, tally: Tally
    ) -> list:
        if config.shots is None and self.options.get("readout_error") is not None:
            raise invalid("shots", None, "a number of shots when readout_error is set (readout errors act on samples)")
        if config.shots is None:
            if self.noise_model is not None:
                self._check_density_gates([c for c, _ in pairs])
            pubs = [(c, column(o), v) for (c, o), v in zip(pairs, values, strict=True)]
            result = self.run_job(lambda: self._estimator(config.seed).run(pubs), tally)
            return [np.moveaxis(np.asarray(r.data.evs), 0, -1) for r in result]  # each [S, B, R]
        return self._sampled(pairs, values, config, tally)

    def _check_density_gates(self, circuits: list[Any]) -> None:
        """Refuse, before a job is sent (and retried), gates that Aer's density-matrix method does not take
        (``cswap``, ``crx``, ... are kept by transpiling for ``AerSimulator(noise_model=m)`` when the model's basis
        gates hold them): decomposing them would put the noise model's errors on gates the circuit does not have."""
        refused = sorted({i.operation.name for c in circuits for i in c.data} & _density_matrix_refuses())
        if refused:
            raise UnsupportedOperationError(
                f"{self.name!r} with noise and shots=None simulates the density matrix, whose Aer method does not "
                f"take the gates {refused}; accepted: backend='density' (the same noise model; it runs these gates), "
                "shots=N (sampled), or a device target ('aer:fake_<device>')"
            )

    def _sampled(
        self, pairs: list[tuple[Any, list[Any]]], values: list[np.ndarray], config: ExecutionConfig, tally: Tally
    ) -> list:
        """Expectations from real samples: one measured circuit per qubit-wise commuting basis."""
        plan = [(pair, pair[1], basis_groups(pair[1])) for pair in pairs]
        pubs = [
            (self.frontend.measured(pair, basis)[0], v) for (pair, _, groups), v in zip(plan, values, strict=True)
            for basis in groups
        ]  # fmt: skip
        result = iter(self.run_job(lambda: self._sampler(config.seed).run(pubs, shots=config.shots), tally))
        outs = []
        for f, (pair, observables, groups) in enumerate(plan):
            out = np.zeros(values[f].shape[:2] + (len(observables),))
            expectation: dict[str, np.ndarray] = {}
            for basis in groups:
                labels = sorted(basis["labels"])
                measured = self.frontend.measured(pair, basis)[1]
                expectation.update(zip(labels, _parities(next(result).data.meas, labels, measured), strict=True))
            for r, obs in enumerate(observables):
                for label, coeff in zip(obs.paulis.to_labels(), obs.coeffs, strict=True):
                    term = 1.0 if set(label) == {"I"} else expectation[label]
                    out[..., r] += float(np.real(coeff)) * term
            outs.append(out)
        return outs


@functools.cache
def _density_matrix_refuses() -> frozenset[str]:
    """Instructions Aer's statevector method takes and its density-matrix method does not."""
    from qiskit_aer import AerSimulator

    names = {
        method: set(AerSimulator(method=method).configuration().basis_gates)
        for method in ("statevector", "density_matrix")
    }
    return frozenset(names["statevector"] - names["density_matrix"])


def _parities(bits: Any, labels: list[str], qubits: tuple[int, ...]) -> list[np.ndarray]:
    """Mean of (-1)^(parity of the measured bits under each label's letters), per parameter set; clbit j holds
    qubit ``qubits[j]``, and a label's letter for qubit q is its (q+1)-th from the right."""
    k = len(qubits)
    unpacked = np.unpackbits(bits.array, axis=-1)[..., -k:][..., ::-1]  # [..., shots, k]: clbit j at column j
    masks = np.array([[label[-1 - q] != "I" for q in qubits] for label in labels], dtype=np.uint8).T  # [k, W]
    parity = (unpacked.astype(np.uint16) @ masks) & 1  # [..., shots, W]
    means = (1.0 - 2.0 * parity).mean(axis=-2)  # [..., W]
    return [means[..., w] for w in range(len(labels))]
