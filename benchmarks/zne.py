"""Question: how much does zero-noise extrapolation help, and what does it cost per value?

20 random 4-qubit circuits (depth ~10: layers of input- and weight-dependent rotations and
CNOTs), 16 inputs each, <Z0 Z1>, on `aer:fake_manila` (FakeManila's noise model, exact
density-matrix expectations). Median absolute error against the noiseless value, unmitigated
and with ZNE (scale factors 1, 3, 5; each extrapolation); wall time of a mitigated batch
relative to an unmitigated one; hybridai's overhead per mitigated value beyond the executions,
next to Mitiq's `execute_with_zne` called per value on the same noise model.

    python benchmarks/zne.py [--circuits 20] [--batch 16]
"""

from __future__ import annotations

import argparse
import statistics
import time
import warnings

import numpy as np
import pennylane as qml
import torch

from hybridai import ZNE, backends
from hybridai.backends import ExecutionConfig
from hybridai.quantum.execution.run import execute

N, DEPTH = 4, 10
WIRES = tuple(range(N))


def random_circuit(seed: int):
    rng = np.random.default_rng(seed)
    layers = [
        (rng.choice(["RX", "RY", "RZ"], N), rng.uniform(0, np.pi, N), rng.integers(0, 2, N)) for _ in range(DEPTH)
    ]

    def circuit(x):
        for names, angles, uses_input in layers:
            for w in range(N):
                angle = angles[w] * (1 + x[..., w]) if uses_input[w] else float(angles[w])
                getattr(qml, names[w])(angle, wires=w)
            for w in range(0, N - 1, 2) if seed % 2 else range(1, N - 1, 2):
                qml.CNOT(wires=[w, w + 1])
        return qml.expval(qml.PauliZ(0) @ qml.PauliZ(1))

    return circuit


def evaluate(backend, circuit, x, mitigation=None):
    """Values, wall seconds, and seconds beyond the executions (the call's own statistics)."""
    tape = qml.tape.make_qscript(circuit)(x)
    start = time.perf_counter()
    run = execute(backend, [tape], ExecutionConfig(WIRES, mitigation=mitigation))
    elapsed = time.perf_counter() - start
    return np.asarray(run.results[0]), elapsed, elapsed - run.stats.seconds


def mitiq_per_value(circuit, x, noisy_backend) -> tuple[float, float]:
    """Mitiq's execute_with_zne for each value: returns (seconds per value, overhead per value)."""
    from mitiq import zne as mzne
    from qiskit import transpile
    from qiskit_aer.primitives import EstimatorV2

    from hybridai.quantum.qiskit_frontend.conversion import convert

    estimator = EstimatorV2(options={"backend_options": {"method": "density_matrix",
                                                         "noise_model": noisy_backend.noise_model}})  # fmt: skip
    executions = 0.0

    def executor(qc) -> float:
        nonlocal executions
        start = time.perf_counter()
        isa = transpile(qc, backend=noisy_backend.device, optimization_level=0, seed_transpiler=1234)
        value = estimator.run([(isa, observable.apply_layout(isa.layout))]).result()[0].data.evs
        executions += time.perf_counter() - start
        return float(value)

    start = time.perf_counter()
    for sample in x:
        tape = qml.tape.make_qscript(circuit)(sample)
        converted = convert(tape, list(range(N)))
        observable = converted.observables[0]
        bound = converted.circuit.assign_parameters([float(p) for p in converted.params])
        mzne.execute_with_zne(bound, executor, factory=mzne.inference.RichardsonFactory([1, 3, 5]),
                              scale_noise=mzne.scaling.fold_global)  # fmt: skip
    total = time.perf_counter() - start
    return total / len(x), (total - executions) / len(x)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--circuits", type=int, default=20)
    parser.add_argument("--batch", type=int, default=16)
    args = parser.parse_args()
    torch.set_num_threads(1)
    warnings.simplefilter("ignore")
    ideal = backends.get("statevector")
    plain = backends.get("aer:fake_manila", optimization_level=0)
    extrapolations = ("richardson", "linear", "poly", "exp")  # exp with asymptote 0 (Pauli expectation)
    settings = {e: ZNE(extrapolation=e, asymptote=0.0 if e == "exp" else None) for e in extrapolations}
    noisy = backends.get("aer:fake_manila")  # one backend for every setting: mitigation travels with each call
    errors = {"unmitigated": [], **{e: [] for e in extrapolations}}
    times = {"unmitigated": [], "richardson": []}
    overhead = []
    for seed in range(args.circuits):
        circuit = random_circuit(seed)
        x = torch.rand(args.batch, N, dtype=torch.float64, generator=torch.Generator().manual_seed(seed))
        exact = np.asarray(ideal.execute([qml.tape.make_qscript(circuit)(x)], ExecutionConfig(WIRES)).results[0])
        value, seconds, _ = evaluate(plain, circuit, x)
        errors["unmitigated"].extend(np.abs(value - exact))
        times["unmitigated"].append(seconds)
        for e, zne in settings.items():
            if e == "richardson" and not times["richardson"]:
                evaluate(noisy, circuit, x, zne)  # warm the fold cache
            value, seconds, extra = evaluate(noisy, circuit, x, zne)
            errors[e].extend(np.abs(value - exact))
            if e == "richardson":
                times["richardson"].append(seconds)
                overhead.append(extra / args.batch)
    per_value, mitiq_overhead = mitiq_per_value(random_circuit(0), torch.rand(4, N, dtype=torch.float64), plain)
    base = statistics.median(errors["unmitigated"])
    print(f"torch threads: {torch.get_num_threads()}; {args.circuits} circuits x {args.batch} inputs, 4 qubits, "
          f"depth {DEPTH}, aer:fake_manila, scale factors (1, 3, 5)")  # fmt: skip
    print("| extrapolation | median abs error | ratio to unmitigated |")
    print("|---|---|---|")
    for name, errs in errors.items():
        print(f"| {name} | {statistics.median(errs):.4f} | {statistics.median(errs) / base:.2f}x |")
    ratio = statistics.median(t / u for t, u in zip(times["richardson"], times["unmitigated"], strict=True))
    print(f"\nmitigated batch / unmitigated batch wall time (richardson, median): {ratio:.2f}x")
    print(f"hybridai overhead per mitigated value beyond the executions: {1000 * statistics.median(overhead):.2f} ms")
    print(
        f"Mitiq execute_with_zne per value: {1000 * per_value:.1f} ms, of which overhead {1000 * mitiq_overhead:.1f} ms"
    )


if __name__ == "__main__":
    main()
