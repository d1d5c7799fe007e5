"""Backend family ``density``: hybridai's own batched, differentiable density-matrix simulator with Qiskit noise
and PennyLane's channels.

PennyLane's noise channels written in a circuit (``qml.BitFlip``, ..., ``qml.QubitChannel``; ``qml.noise`` models)
run as ``default.mixed`` runs them, with rates that are constants, trainable weights or one per sample
(``pennylane_channels``), alone or together with the Qiskit noise below. Qiskit noise exactly as the ``aer``
family takes it: ``density:fake_<device>`` (the device's ``NoiseModel.from_backend``, its coupling map and basis
gates), ``depolarizing=p`` or ``(p1, p2)`` and ``readout_error=q``, or ``noise_model=`` a
``qiskit_aer.noise.NoiseModel`` of your own, resolved by the code ``aer`` uses (``qiskit_frontend.noise_models``).
Circuits are converted and transpiled by a Qiskit front end like the one ``aer`` holds
(``qiskit_frontend.frontend.QiskitFrontEnd``: same target, the fake device or ``AerSimulator(noise_model=m)`` with
the model's basis gates, optimisation level and seed), so both run the same gates with the same noise after each
(``noise``). Each circuit structure is compiled once into blocks of Pauli transfer matrices (``planning``), then a
whole batch of parameter sets runs as torch operations on the parameters' device (``simulate``): CPU or CUDA. The
density matrices are held in the Pauli basis, ``[B, 4, ..., 4]`` real coefficients ``tr(rho P)`` (``channels``: a
quarter of the multiply-adds of complex superoperators, half the memory, the same information): float64 for
``dtype="complex128"`` (the default, as precise as complex128), float32 for ``"complex64"``. Only the qubits a gate
or an observable touches are simulated.

- ``shots=None``: exact ``tr(rho O)`` of the noisy state; read errors (readout errors and quantum errors on
  ``measure``) are left out, as Aer's estimator leaves them out: its circuits have no measurement
  (``readout_error=`` is refused without shots, as on ``aer``). Gradients: ``"best"``/``"backprop"``
  (autograd through every gate and channel, double backward too), or ``"parameter-shift"``.
- ``shots=N``: seeded samples (``torch.Generator``, never the global RNG) of each qubit-wise commuting basis group,
  rotated as ``aer`` rotates it, with errors on ``measure`` applied before the read and readout errors on the read
  bits (``sampling``); gradients by the
  parameter-shift rule on sampled values (``"best"``/``"parameter-shift"``).
- Zero-noise extrapolation (``mitigation=hybridai.ZNE()`` on a layer) folds with barriers and transpiles the
  folded circuits as ``aer`` does (``capabilities.folds_need_barriers``); training through it is differentiable.

A state that would not fit in memory (``4^m`` coefficients per parameter set, and one per block for backprop) is
refused before anything is allocated.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np
import torch

from hybridai.core.capabilities import QuantumCapabilities
from hybridai.core.contracts import Availability, QuantumExecutor
from hybridai.core.errors import ConfigError, check_seed, check_shots, invalid
from hybridai.core.execution import Execution, ExecutionConfig, ExecutionStats
from hybridai.quantum.density import converting
from hybridai.quantum.density.noise import Noise, device_noise_model
from hybridai.quantum.density.plan import Plan
from hybridai.quantum.density.planning import compile_circuit, exact_readout, used_qubits
from hybridai.quantum.density.sampling import sampled_parities, sampled_readout
from hybridai.quantum.density.simulate import expectations, run
from hybridai.quantum.execution.config_check import check_config
from hybridai.quantum.execution.resources import check_state_memory, memory_limit
from hybridai.quantum.execution.shift_rule import parameter_shift
from hybridai.quantum.qiskit_frontend.conversion import Converted, tape_results
from hybridai.quantum.qiskit_frontend.fake_devices import fake_backend, fake_names
from hybridai.quantum.qiskit_frontend.frontend import HoldsFrontEnd, QiskitFrontEnd, qiskit_availability
from hybridai.quantum.qiskit_frontend.measuring import basis_groups, measured_circuit
from hybridai.quantum.qiskit_frontend.noise_models import resolve_noise
from hybridai.quantum.qiskit_frontend.options import FRONT_END_OPTIONS, check_optimization_level, refuse_options

DTYPES = {"complex128": torch.float64, "complex64": torch.float32}  # the real dtype of the Pauli coefficients
DIFF_METHODS = ("best", "backprop", "parameter-shift")
DEFAULTS = {"optimization_level": 1}  # options left out of ``options`` when given at their default
REMEDY = ("fewer qubits, or backend='aer' with shots (Aer samples noisy statevectors, 2^n amplitudes each), or "
          "hardware ('ibm:<device>')")  # fmt: skip


class DensityBackend(HoldsFrontEnd, QuantumExecutor):
    """Batched density matrices in torch with Qiskit noise models; see the module docstring. Its ``frontend``
    (``QiskitFrontEnd``) holds the device, the noise model, the transpiled circuits and the compiled plans."""

    family = "density"  # also when built directly (the registry sets the same)
    own_options = ("dtype", "depolarizing", "readout_error", "noise_model")

    @classmethod
    def known_targets(cls) -> list[str]:
        """Every fake IBM device of the installed provider (``fake_manila``, ``fake_brisbane``, ...)."""
        return fake_names()

    @classmethod
    def is_available(cls) -> Availability:
        return qiskit_availability()

    def __init__(
        self,
        target: str | None = None,
        *,
        dtype: str | torch.dtype = "complex128",
        depolarizing: Any = None,
        readout_error: float | None = None,
        noise_model: Any = None,
        **options: Any,
    ) -> None:
        name = f"{self.family}:{target}" if target else self.family
        unknown = {k: v for k, v in options.items() if k not in FRONT_END_OPTIONS}
        refuse_options(name, unknown, [*FRONT_END_OPTIONS, *self.own_options])
        shots, seed = options.get("shots"), options.get("seed")
        optimization_level = options.get("optimization_level", 1)
        check_shots(shots)
        check_seed(seed)
        check_optimization_level(optimization_level)
        given = {"shots": shots, "seed": seed, "optimization_level": optimization_level}
        # options: what differs from the defaults (the repr, and rebuilding the backend after unpickling)
        super().__init__(target, **{k: v for k, v in given.items() if v is not None and v != DEFAULTS.get(k)})
        self.shots, self.seed, self.optimization_level = shots, seed, optimization_level
        if isinstance(dtype, torch.dtype):
            dtype = str(dtype).removeprefix("torch.")
        if dtype not in DTYPES:
            raise invalid("dtype", dtype, f"one of {sorted(DTYPES)}")
        self.dtype = dtype
        if dtype != "complex128":
            self.options["dtype"] = dtype
        if target and depolarizing is None and readout_error is None and noise_model is None:  # the device's noise
            device = fake_backend(target)
            model = device_noise_model(device)  # = NoiseModel.from_backend, built once per device
        else:
            device, model, noise_options = resolve_noise(self.family, target, depolarizing, readout_error, noise_model)
            self.options.update(noise_options)
        self.frontend = QiskitFrontEnd(
            self.name, device=device, noise_model=model, optimization_level=optimization_level, seed=seed
        )
        self.noise = Noise(model)

    @property
    def capabilities(self) -> QuantumCapabilities:
        noisy = self.noise_model is not None
        return QuantumCapabilities(
            differentiable=True, exact=self.shots is None and not noisy, shots=True, noise=noisy,
            max_qubits=self.device.num_qubits if self.device is not None else None, diff_methods=DIFF_METHODS,
            devices=("cpu", "cuda"), dtype=self.dtype, folds_need_barriers=True,
            runs_channels=True,  # PennyLane's noise channels in a circuit are noise even without a noise model
        )  # fmt: skip

    def best_method(self, tapes: list[Any], config: ExecutionConfig) -> str:
        """``"parameter-shift"`` with shots (sampled values have no autograd gradient), ``"backprop"`` without."""
        return "parameter-shift" if config.shots else "backprop"

    def check_resources(self, n_qubits: int, config: ExecutionConfig) -> None:
        """Refuse a register wider than the device, or whose density matrix would not fit in memory."""
        self.frontend.check_register(n_qubits)
        check_state_memory(self.name, n_qubits, density=True, itemsize=DTYPES[self.dtype].itemsize, remedy=REMEDY)

    def execute(self, tapes: Any, config: ExecutionConfig) -> Execution:
        """Every tape's whole batch (and, for parameter-shift gradients, every shifted copy of it) in one run."""
        tapes, config = self.settle(tapes, config)
        check_config(self, config)
        self.check_resources(len(config.wires), config)
        shots = config.shots
        if shots is None and self.options.get("readout_error") is not None:
            raise invalid("shots", None, "a number of shots when readout_error is set (readout errors act on samples)")
        generator = None
        if shots:
            generator = torch.Generator()
            generator.seed() if config.seed is None else generator.manual_seed(config.seed)
        started = time.perf_counter()
        results, circuits = [], 0
        for tape in tapes:
            converted = converting.converted(tape, list(config.wires))
            result, rows = self._tape(tape, converted, config, generator)
            results.append(result)
            circuits += rows
        stats = ExecutionStats(circuits, len(tapes), circuits * (shots or 0), time.perf_counter() - started)
        return Execution(results, stats)

    def _tape(
        self, tape: Any, converted: Converted, config: ExecutionConfig, generator: torch.Generator | None
    ) -> tuple[Any, int]:
        """One tape's results and the number of parameter sets run."""
        params = converted.params
        batch = tape.batch_size or 1
        device = next((p.device for p in params if p.device.type != "cpu"), torch.device("cpu"))
        needs_grad = torch.is_grad_enabled() and any(p.requires_grad for p in params)
        method = config.diff_method
        if config.shots and needs_grad and method == "backprop":
            raise ConfigError(
                f"shots={config.shots} with diff_method='backprop' on {self.name!r}: sampled values have no autograd "
                "gradient; accepted: diff_method='parameter-shift' (or 'best') with shots, or shots=None"
            )
        level = 0 if config.keep_gates else self.optimization_level
        if needs_grad and (config.shots or method == "parameter-shift"):
            _refuse_rate_gradients(converted, config, self.name)
            ran: list[int] = []

            def evaluate(values: list[np.ndarray]) -> list[np.ndarray]:
                (v,) = values
                rows = v.shape[0] * v.shape[1]
                columns = torch.from_numpy(v.reshape(rows, v.shape[-1])).to(device, DTYPES[self.dtype])
                with torch.no_grad():
                    out = self._values(converted, level, list(columns.unbind(-1)), rows, device, config, generator)
                ran.append(rows)
                return [out.double().cpu().numpy().reshape(v.shape[0], v.shape[1], -1)]

            (raw,) = parameter_shift([params], [batch], evaluate)
            raw = raw.to(device, DTYPES[self.dtype])
            rows = sum(ran)
        else:
            raw = self._values(converted, level, params, batch, device, config, generator)
            rows = batch
        return tape_results(tape, converted, raw), rows

    def _values(
        self,
        converted: Converted,
        level: int,
        params: list[torch.Tensor],
        rows: int,
        device: torch.device,
        config: ExecutionConfig,
        generator: torch.Generator | None,
    ) -> torch.Tensor:
        """Expectations ``[rows, R]`` of the converted circuit's raw observables for its parameter values."""
        dtype = DTYPES[self.dtype]
        values = _stacked(params, rows, device, dtype)
        varying = tuple(p.dim() > 0 and rows > 1 for p in params)  # what is the same for every row is made once
        if not config.shots:
            plan = self._exact_plan(converted, config.keep_gates, level, varying)
            state = self._run(plan, values, rows, device)
            return expectations(plan, state)
        circuit, groups, weights, constant = self._sampled_terms(converted, config.keep_gates, level)
        parities = []
        for basis in groups:
            plan = self._sampled_plan(converted, circuit, basis, level, varying)
            with torch.no_grad():
                state = self._run(plan, values, rows, device)
            parities.append(sampled_parities(plan, state, config.shots, generator or torch.Generator()))
        terms = torch.as_tensor(weights, dtype=dtype, device=device)
        identity = torch.as_tensor(constant, dtype=dtype, device=device)
        if not parities:  # observables of identities only
            return identity.expand(rows, -1).clone()
        return torch.cat(parities, -1).to(device, dtype) @ terms + identity

    def _sampled_terms(self, converted: Converted, keep_gates: bool, level: int) -> tuple[Any, list[dict], Any, Any]:
        """The transpiled circuit, its basis groups, and how the observables are made of the groups' labels (in
        the groups' order, each group's labels sorted): ``weights [W, R]`` and the identity terms ``constant [R]``."""

        def make() -> tuple[Any, list[dict], np.ndarray, np.ndarray]:
            circuit, observables = self.frontend.transpiled(converted, keep_gates)
            groups = basis_groups(observables)
            where = {label: i for i, label in enumerate(lb for basis in groups for lb in sorted(basis["labels"]))}
            weights, constant = np.zeros((len(where), len(observables))), np.zeros(len(observables))
            for r, obs in enumerate(observables):
                for label, coeff in zip(obs.paulis.to_labels(), obs.coeffs, strict=True):
                    if set(label) == {"I"}:
                        constant[r] += float(np.real(coeff))
                    else:
                        weights[where[label], r] += float(np.real(coeff))
            return circuit, groups, weights, constant

        return self.frontend.cached(("density terms", converted.key, level), make)

    def _run(self, plan: Plan, values: torch.Tensor, rows: int, device: torch.device) -> torch.Tensor:
        """The plan's final state for ``rows`` parameter sets (``values``: ``[P, rows]``), after checking that it fits
        in memory (one state per block kept for backprop, a few otherwise)."""
        grad = torch.is_grad_enabled() and values.requires_grad
        copies = rows * (2 * len(plan.blocks) + 2 if grad else 3)
        where = "half the GPU's free memory" if device.type == "cuda" else "half the RAM"
        check_state_memory(self.name, plan.m, density=True, copies=copies, itemsize=DTYPES[self.dtype].itemsize,
                           limit=memory_limit(device), remedy=REMEDY, where=where)  # fmt: skip
        return run(plan, values, device, DTYPES[self.dtype])

    def _exact_plan(self, converted: Converted, keep_gates: bool, level: int, varying: tuple[bool, ...]) -> Plan:
        def make() -> Plan:
            circuit, observables = self.frontend.transpiled(converted, keep_gates)
            used = used_qubits(circuit, observables)
            plan = compile_circuit(circuit, self.noise, used, converted.channels, varying)
            plan.readout = exact_readout(plan, observables)
            return plan

        return self.frontend.cached(("density", converted.key, level, varying), make)

    def _sampled_plan(
        self, converted: Converted, circuit: Any, basis: dict, level: int, varying: tuple[bool, ...]
    ) -> Plan:
        def make() -> Plan:
            measured, _ = measured_circuit(circuit, basis, self.frontend.transpile_target(converted))
            letters = tuple(sorted(basis["letters"]))
            used = used_qubits(measured, [], basis["letters"])
            plan = compile_circuit(measured, self.noise, used, converted.channels, varying)
            readouts = [self.noise.readout(q) for q in letters]
            plan.readout = sampled_readout(plan, letters, sorted(basis["labels"]), readouts)
            return plan

        return self.frontend.cached(("density", converted.key, level, basis["key"], varying), make)


def _refuse_rate_gradients(converted: Converted, config: ExecutionConfig, name: str) -> None:
    """A ConfigError naming the channels whose rates need gradients where only the parameter-shift rule applies."""
    trainable = sorted({s.name for s in converted.channels if any(converted.params[i].requires_grad for i in s.rates)})
    if trainable:
        how = f"shots={config.shots}" if config.shots else "diff_method='parameter-shift'"
        raise ConfigError(
            f"{how} on {name!r} with noise rates that need gradients ({', '.join(trainable)}): a rate has no "
            "parameter-shift rule; accepted: shots=None with diff_method='best' or 'backprop' (autograd through the "
            "rates), or rates that need no gradient (detach them)"
        )


def _stacked(params: list[torch.Tensor], rows: int, device: torch.device, dtype: torch.dtype) -> torch.Tensor:
    """The circuit parameters (scalars or ``[rows]``) as one ``[P, rows]`` tensor on ``device`` in ``dtype``."""
    if not params:
        return torch.zeros(0, rows, dtype=dtype, device=device)
    columns = torch.broadcast_tensors(*(p.to(device, dtype) for p in params))
    return torch.stack(columns).reshape(len(params), -1).expand(-1, rows)
