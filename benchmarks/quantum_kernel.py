"""How fast is a fidelity-kernel Gram matrix in hybridai, against PennyLane and Qiskit ML?

Same 6-qubit ZZ feature map (Havlicek et al.) and the same N x N Gram matrix, in one process:

- hybridai ``QuantumKernel.matrix``: N statevectors (one broadcast tape) and one matrix product,
  on ``pennylane:default.qubit`` and, where registered, hybridai's own ``statevector`` backend;
- PennyLane ``qml.kernels.square_kernel_matrix``: one compute-uncompute QNode per pair;
- Qiskit ML ``FidelityStatevectorKernel.evaluate`` (when qiskit-machine-learning is installed).

Times are the median of repeated runs (PennyLane: one run; it is the slow one). Values are
checked against each other. Run: ``.venv/bin/python benchmarks/quantum_kernel.py``.
"""

from __future__ import annotations

import argparse
import math
import statistics
import time
from collections.abc import Callable

import numpy as np
import torch

N_QUBITS = 6


def zz_map(x: torch.Tensor) -> None:
    """ZZ feature map, one repetition: H, RZ(2 x_i), then CNOT-RZ(2 (pi - x_i)(pi - x_j))-CNOT on a line;
    one qubit per feature of ``x``."""
    import pennylane as qml

    n = x.shape[-1]
    for i in range(n):
        qml.Hadamard(i)
        qml.RZ(2 * x[..., i], wires=i)
    for i in range(n - 1):
        qml.CNOT([i, i + 1])
        qml.RZ(2 * (math.pi - x[..., i]) * (math.pi - x[..., i + 1]), wires=i + 1)
        qml.CNOT([i, i + 1])


def qiskit_zz_map(n: int = N_QUBITS):
    """The same circuit in Qiskit on ``n`` qubits, with a ParameterVector."""
    from qiskit import QuantumCircuit
    from qiskit.circuit import ParameterVector

    p = ParameterVector("x", n)
    qc = QuantumCircuit(n)
    for i in range(n):
        qc.h(i)
        qc.rz(2 * p[i], i)
    for i in range(n - 1):
        qc.cx(i, i + 1)
        qc.rz(2 * (math.pi - p[i]) * (math.pi - p[i + 1]), i + 1)
        qc.cx(i, i + 1)
    return qc


def timed(fn: Callable[[], object], repeats: int) -> tuple[float, object]:
    """Median wall time in seconds over ``repeats`` runs (after one warm-up when repeats > 1)."""
    out = fn() if repeats > 1 else None
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times), out


def pennylane_square(X: np.ndarray) -> np.ndarray:
    import pennylane as qml

    dev = qml.device("default.qubit", wires=N_QUBITS)

    @qml.qnode(dev)
    def circuit(a, b):
        zz_map(a)
        qml.adjoint(zz_map)(b)
        return qml.probs(wires=range(N_QUBITS))

    return np.asarray(qml.kernels.square_kernel_matrix(X, lambda a, b: circuit(a, b)[0]))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[50, 200])
    parser.add_argument("--pennylane-max-n", type=int, default=200, help="skip PennyLane above this N")
    parser.add_argument("--repeats", type=int, default=7)
    args = parser.parse_args()
    torch.set_num_threads(1)

    import hybridai
    from hybridai import QuantumKernel

    backends = ["pennylane:default.qubit"]
    if "statevector" in hybridai.backends.families():
        backends.append("statevector")
    kernels = {b: QuantumKernel(zz_map, N_QUBITS, backend=b) for b in backends}
    try:
        from qiskit_machine_learning.kernels import FidelityStatevectorKernel

        qiskit_kernel = FidelityStatevectorKernel(feature_map=qiskit_zz_map())
    except ImportError as exc:
        qiskit_kernel = None
        print(f"Qiskit ML left out: {exc}")

    rows = []
    for n in args.sizes:
        X = np.random.default_rng(n).uniform(0, 2 * math.pi, size=(n, N_QUBITS))
        Xt = torch.from_numpy(X)
        ours = {}
        for name, kernel in kernels.items():
            with torch.no_grad():
                ours[name] = timed(lambda k=kernel, x=Xt: k.matrix(x), args.repeats)
        reference = ours[backends[0]][1].numpy()
        peers = {}
        if qiskit_kernel is not None:
            peers["Qiskit ML FidelityStatevectorKernel"] = timed(lambda x=X: qiskit_kernel.evaluate(x), args.repeats)
        if n <= args.pennylane_max_n:
            peers["PennyLane square_kernel_matrix"] = timed(lambda x=X: pennylane_square(x), 1)
        for peer, (t_peer, K_peer) in peers.items():
            diff = np.abs(np.asarray(K_peer) - reference).max()
            for name, (t_ours, K_ours) in ours.items():
                diff_ours = max(diff, np.abs(K_ours.numpy() - reference).max())
                rows.append((n, peer, t_peer, name, t_ours, t_peer / t_ours, diff_ours))

    print(f"\nfidelity kernel, {N_QUBITS} qubits, ZZ feature map, torch threads = {torch.get_num_threads()}\n")
    print("| N | peer | peer s | hybridai backend | hybridai s | speed-up | max abs diff |")
    print("|---|---|---|---|---|---|---|")
    for n, peer, t_peer, name, t_ours, ratio, diff in rows:
        print(f"| {n} | {peer} | {t_peer:.4g} | {name} | {t_ours:.4g} | {ratio:,.0f}x | {diff:.1e} |")


if __name__ == "__main__":
    main()
