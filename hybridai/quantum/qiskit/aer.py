"""Backend family ``aer``: qiskit-aer, exact, sampled, or noisy (a fake IBM device, given rates, or a
user's ``qiskit_aer.noise.NoiseModel``)."""

from __future__ import annotations

import functools
import numbers
from typing import Any

import numpy as np

from hybridai.core.capabilities import QuantumCapabilities
from hybridai.core.errors import ConfigError, UnsupportedOperationError, invalid, non_negative_int
from hybridai.core.execution import ExecutionConfig
from hybridai.quantum.execution.resources import check_state_memory
from hybridai.quantum.qiskit.executor import QiskitBackend, Tally, column
from hybridai.quantum.qiskit_frontend.fake_devices import fake_backend
from hybridai.quantum.qiskit_frontend.noise_checks import check_noise_model


def _probability(argument: str, value: Any, accepted: str, given: Any = None) -> float:
    """``value`` as a float if it is a real number (not a bool) in [0, 1], else a ConfigError showing ``given``
    (the whole argument, ``value`` by default)."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not 0 <= float(value) <= 1:
        raise invalid(argument, value if given is None else given, accepted)
    return float(value)


# The basis of hybridai's own rate models: every gate a circuit transpiled for AerSimulator(noise_model=...) of such a
# model can contain is one of these (the transpiler targets exactly the model's basis gates), and each carries the
# error, so no gate escapes the rates (merging H.S.T gives a noisy 'u', never an error-free 'u3').
RATE_GATES_1 = ("rx", "ry", "rz", "p", "h", "x", "y", "z", "s", "sdg", "t", "tdg", "sx", "sxdg", "u")
RATE_GATES_2 = ("cx", "cz", "cy", "swap", "rxx", "ryy", "rzz", "ecr", "iswap", "ch")


def _noise_from_rates(depolarizing: Any, readout_error: Any) -> Any:
    from qiskit_aer.noise import NoiseModel, ReadoutError, depolarizing_error

    model = NoiseModel(basis_gates=[*RATE_GATES_1, *RATE_GATES_2])
    if depolarizing is not None:
        accepted = "a probability p or a pair (p1, p2) of probabilities in [0, 1] (one- and two-qubit gates)"
        pair = depolarizing if isinstance(depolarizing, tuple | list) else (depolarizing, depolarizing)
        if len(pair) != 2:
            raise invalid("depolarizing", depolarizing, accepted)
        p1, p2 = (_probability("depolarizing", p, accepted, depolarizing) for p in pair)
        model.add_all_qubit_quantum_error(depolarizing_error(p1, 1), list(RATE_GATES_1))
        model.add_all_qubit_quantum_error(depolarizing_error(p2, 2), list(RATE_GATES_2))
    if readout_error is not None:
        q = _probability("readout_error", readout_error, "a probability in [0, 1] (a flipped measured bit)")
        model.add_all_qubit_readout_error(ReadoutError([[1 - q, q], [q, 1 - q]]))
    return model


def aer_target(backend: QiskitBackend) -> Any:
    """What a noisy Qiskit family (``aer``, ``density``) transpiles for: its fake device, else the simulator Aer
    builds for its noise model, ``AerSimulator(noise_model=m)``, whose basis gates are the model's (so a model's
    errors land where Aer puts them), else ``AerSimulator()``; built once per backend."""
    if backend.device is not None:
        return backend.device
    model = getattr(backend, "noise_model", None)

    def make() -> Any:
        from qiskit_aer import AerSimulator

        return AerSimulator() if model is None else AerSimulator(noise_model=model)

    return backend.cached(("aer target",), make)


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
        self.device, self.noise_model = resolve_noise(self, target, depolarizing, readout_error, noise_model)

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

    def hardware(self) -> Any:
        """The fake device, else ``AerSimulator(noise_model=...)`` (``aer_target``)."""
        return aer_target(self)

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

        return self.cached(("estimator", seed), make)

    def _sampler(self, seed: int | None) -> Any:
        def make() -> Any:
            from qiskit_aer.primitives import SamplerV2

            backend_options = {"method": "statevector" if self.noise_model is None else "automatic",
                               "max_parallel_threads": self.threads}  # fmt: skip
            if self.noise_model is not None:
                backend_options["noise_model"] = self.noise_model
            return SamplerV2(default_shots=1024, seed=seed, options={"backend_options": backend_options})

        return self.cached(("sampler", seed), make)

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
            (self._measured(pair, basis)[0], v) for (pair, _, groups), v in zip(plan, values, strict=True)
            for basis in groups
        ]  # fmt: skip
        result = iter(self.run_job(lambda: self._sampler(config.seed).run(pubs, shots=config.shots), tally))
        outs = []
        for f, (pair, observables, groups) in enumerate(plan):
            out = np.zeros(values[f].shape[:2] + (len(observables),))
            expectation: dict[str, np.ndarray] = {}
            for basis in groups:
                labels = sorted(basis["labels"])
                measured = self._measured(pair, basis)[1]
                expectation.update(zip(labels, _parities(next(result).data.meas, labels, measured), strict=True))
            for r, obs in enumerate(observables):
                for label, coeff in zip(obs.paulis.to_labels(), obs.coeffs, strict=True):
                    term = 1.0 if set(label) == {"I"} else expectation[label]
                    out[..., r] += float(np.real(coeff)) * term
            outs.append(out)
        return outs

    def _measured(self, pair: Any, basis: dict) -> tuple[Any, tuple[int, ...]]:
        """``measured_circuit`` of a transpiled pair, cached by the structure it was transpiled from (its ``key``,
        ``QiskitBackend.transpiled``); built anew for a pair without one."""
        make = functools.partial(measured_circuit, pair[0], basis, self.hardware())
        key = getattr(pair, "key", None)
        return make() if key is None else self.cached(("measured", key, basis["key"]), make)


@functools.cache
def _density_matrix_refuses() -> frozenset[str]:
    """Instructions Aer's statevector method takes and its density-matrix method does not."""
    from qiskit_aer import AerSimulator

    names = {
        method: set(AerSimulator(method=method).configuration().basis_gates)
        for method in ("statevector", "density_matrix")
    }
    return frozenset(names["statevector"] - names["density_matrix"])


def measured_circuit(circuit: Any, basis: dict, hardware: Any) -> tuple[Any, tuple[int, ...]]:
    """The circuit rotated into ``basis`` (a ``basis_groups`` entry) with its used qubits measured (clbit j: the j-th
    of them), transpiled for ``hardware`` (a backend or a ``Target``) at level 0, and those qubits. Only the qubits a
    gate or an observable touches are measured: a measured idle qubit would keep Aer from leaving it out, and a
    127-qubit device's whole register cannot be simulated."""
    from qiskit import ClassicalRegister, transpile

    measured = circuit.copy()
    for q, letter in basis["letters"].items():
        if letter == "X":
            measured.h(q)
        elif letter == "Y":
            measured.sdg(q)
            measured.h(q)
    used = {measured.find_bit(q).index for i in measured.data if i.operation.name != "barrier" for q in i.qubits}
    qubits = tuple(sorted(used | set(basis["letters"])))
    bits = ClassicalRegister(len(qubits), "meas")
    measured.add_register(bits)
    for j, q in enumerate(qubits):
        measured.measure(q, bits[j])
    from qiskit.transpiler import Target

    where = {"target": hardware} if isinstance(hardware, Target) else {"backend": hardware}
    measured = transpile(measured, **where, optimization_level=0, seed_transpiler=1234)
    return measured, qubits


def resolve_noise(
    backend: QiskitBackend, target: str | None, depolarizing: Any, readout_error: Any, noise_model: Any
) -> tuple[Any, Any]:
    """``(device, noise model)`` of a noisy Qiskit family (``aer``, ``density``): the fake device named by ``target``
    (or None) and the noise from ``noise_model=``, else the device's, else the rates (or None: noiseless). The
    options given are recorded in ``backend.options``; contradictory ones are refused."""
    if noise_model is not None:
        check_noise_model(noise_model)  # what Aer refuses, refused now (never a job sent and retried)
        if depolarizing is not None or readout_error is not None:
            raise ConfigError(
                f"noise_model= cannot be combined with {_rates(depolarizing, readout_error)}; accepted: one "
                "source of noise (add the rates to your NoiseModel)"
            )
    device = fake_backend(target) if target else None
    if device is not None and (depolarizing is not None or readout_error is not None):
        family = backend.family or "aer"  # the registry names the family; a class built directly is aer's
        raise ConfigError(
            f"{_rates(depolarizing, readout_error)} would be ignored on backend='{family}:{target}', which brings the "
            f"device's own noise; accepted: backend='{family}' with the rates, or noise_model= a NoiseModel to "
            "replace the device's noise"
        )
    for key, value in (("depolarizing", depolarizing), ("readout_error", readout_error),
                       ("noise_model", noise_model)):  # fmt: skip
        if value is not None:
            backend.options[key] = value
    if noise_model is not None:
        return device, noise_model
    if device is not None:
        from qiskit_aer.noise import NoiseModel

        return device, NoiseModel.from_backend(device)
    if depolarizing is not None or readout_error is not None:
        return device, _noise_from_rates(depolarizing, readout_error)
    return device, None


def _rates(depolarizing: Any, readout_error: Any) -> str:
    """'depolarizing=..., readout_error=...' for the rates that were given."""
    given = (("depolarizing", depolarizing), ("readout_error", readout_error))
    return " and ".join(f"{k}={v!r}" for k, v in given if v is not None)


def _parities(bits: Any, labels: list[str], qubits: tuple[int, ...]) -> list[np.ndarray]:
    """Mean of (-1)^(parity of the measured bits under each label's letters), per parameter set; clbit j holds
    qubit ``qubits[j]``, and a label's letter for qubit q is its (q+1)-th from the right."""
    k = len(qubits)
    unpacked = np.unpackbits(bits.array, axis=-1)[..., -k:][..., ::-1]  # [..., shots, k]: clbit j at column j
    masks = np.array([[label[-1 - q] != "I" for q in qubits] for label in labels], dtype=np.uint8).T  # [k, W]
    parity = (unpacked.astype(np.uint16) @ masks) & 1  # [..., shots, W]
    means = (1.0 - 2.0 * parity).mean(axis=-2)  # [..., W]
    return [means[..., w] for w in range(len(labels))]


def basis_groups(observables: list[Any]) -> list[dict]:
    """Greedy qubit-wise commuting groups of the Pauli labels of ``observables``."""
    groups: list[dict] = []
    for obs in observables:
        for label in obs.paulis.to_labels():
            if set(label) == {"I"}:
                continue
            n = len(label)
            letters = {n - 1 - i: c for i, c in enumerate(label) if c != "I"}
            for group in groups:
                if all(group["letters"].get(q, c) == c for q, c in letters.items()):
                    group["letters"].update(letters)
                    group["labels"].add(label)
                    break
            else:
                groups.append({"letters": dict(letters), "labels": {label}})
    for group in groups:
        group["key"] = tuple(sorted(group["letters"].items()))
    return groups
