"""Question: how much faster is hybridai's ``density`` backend than the noisy peers on the same noisy work?

5 qubits, AngleEmbedding + 3 StronglyEntanglingLayers, <Z> on every qubit, a batch of 64 parameter sets, one
torch thread (``OMP_NUM_THREADS=1`` before any import), all in this one process:

1. forward on ``fake_manila`` (its noise model, coupling map and basis gates): ``density:fake_manila`` against
   ``aer:fake_manila`` (Aer's density-matrix estimator; the same transpiled circuit);
2. a training step (forward + backward, gradients of the weights and the inputs): ``density`` by backprop against
   ``aer`` by the parameter-shift rule (every shifted circuit in one Aer call);
3. one mitigated value (Richardson at scale factors 1, 3, 5, global folding) in a batch of 16: a QuantumLayer with
   ``hybridai.ZNE()`` on ``density:fake_manila`` against Mitiq's ``execute_with_zne`` per value on Aer with the same
   noise model (each folded circuit transpiled for the device at level 0, Aer's exact density-matrix estimator);
4. the same noise written as channels: PennyLane ``default.mixed`` (backprop, broadcasting) with a
   ``DepolarizingChannel`` after every gate (on each wire of a CNOT) against ``density`` with the equivalent
   ``noise_model`` (Qiskit's ``depolarizing_error(4 p / 3)``), no device and ``optimization_level=0``: the same
   gates (RZ RY RZ per rotation, CNOT ring), forward and training step;
5. trainable channels: the same gates with a ``DepolarizingChannel(p_w)`` and an ``AmplitudeDamping(g_w)`` after
   every gate (on each wire it touches), per-qubit rates ``0.05 * sigmoid(rates)`` of a trainable weight ``rates
   [2, 5]``, on ``density`` (a QuantumLayer whose weights include the rates) against PennyLane ``default.mixed`` at
   its best: one broadcast call of a torch QNode (``diff_method="backprop"``, the inputs ``[64, 5]``; the rates are
   not per sample, so ``default.mixed`` broadcasts them), under ``torch.set_default_dtype(torch.float64)`` (float64
   throughout; hybridai's ``working_dtype`` gives the same values 12% slower, its torch function mode sees every
   call; numpy instead of torch is 3x slower, a row at a time 15x). Values and the gradients of the inputs, weights
   and rates are checked equal (1e-8) before the engines are timed in turn; forward and training step (gradients
   of all three). Target: >= 20x both.

Prints the CPU model, torch threads, median seconds and ratios.

    python benchmarks/quantum_noisy.py [--batch 64] [--repeats 5] [--aer-repeats 1] [--mitiq-values 4]
"""

from __future__ import annotations

import os

os.environ["OMP_NUM_THREADS"] = "1"  # before numpy, torch and Aer are imported

import argparse  # noqa: E402
import contextlib  # noqa: E402
import statistics  # noqa: E402
import time  # noqa: E402
import warnings  # noqa: E402

import pennylane as qml  # noqa: E402
import torch  # noqa: E402
from machine import cpu_model  # noqa: E402

import hybridai  # noqa: E402
from hybridai import QuantumLayer  # noqa: E402

N, LAYERS, P = 5, 3, 0.01
RATE_SCALE, TARGET = 0.05, 20.0  # case 5: rates 0.05 * sigmoid(weight), in [0, 0.05]; the speed-up it aims at


def circuit(inputs, weights):
    qml.AngleEmbedding(inputs, wires=range(N))
    qml.StronglyEntanglingLayers(weights, wires=range(N))
    return [qml.expval(qml.PauliZ(i)) for i in range(N)]


def first_z(inputs, weights):
    qml.AngleEmbedding(inputs, wires=range(N))
    qml.StronglyEntanglingLayers(weights, wires=range(N))
    return qml.expval(qml.PauliZ(0))


def gates(inputs, weights, noise) -> list:
    """The SEL circuit gate by gate (RZ RY RZ per Rot, CNOT ring of range 1, 2, 1 as SEL's defaults for 3 layers),
    ``noise(*wires)`` after every gate; <Z> on every qubit."""
    for w in range(N):
        qml.RX(inputs[..., w], wires=w)
        noise(w)
    for layer in range(LAYERS):
        for w in range(N):
            for gate, k in ((qml.RZ, 0), (qml.RY, 1), (qml.RZ, 2)):
                gate(weights[layer, w, k], wires=w)
                noise(w)
        r = layer % (N - 1) + 1
        for w in range(N):
            qml.CNOT(wires=[w, (w + r) % N])
            noise(w, (w + r) % N)
    return [qml.expval(qml.PauliZ(i)) for i in range(N)]


def channel_circuit(noisy: bool):
    """The SEL circuit gate by gate with a DepolarizingChannel after every gate when ``noisy``."""

    def noise(*wires):
        if noisy:
            for w in wires:
                qml.DepolarizingChannel(P, wires=w)

    def qfunc(inputs, weights):
        return gates(inputs, weights, noise)

    return qfunc


def rated_circuit(inputs, weights, rates):
    """The SEL circuit gate by gate with a DepolarizingChannel and an AmplitudeDamping after every gate on each wire
    it touches, their rates per qubit ``0.05 * sigmoid(rates[0 or 1, wire])`` (trainable, in range)."""
    p, gamma = RATE_SCALE * torch.sigmoid(rates[0]), RATE_SCALE * torch.sigmoid(rates[1])

    def noise(*wires):
        for w in wires:
            qml.DepolarizingChannel(p[w], wires=w)
            qml.AmplitudeDamping(gamma[w], wires=w)

    return gates(inputs, weights, noise)


def channel_model():
    from qiskit_aer.noise import NoiseModel, depolarizing_error

    one = depolarizing_error(4 * P / 3, 1)  # PennyLane's DepolarizingChannel(p)
    model = NoiseModel()
    model.add_all_qubit_quantum_error(one, ["rx", "ry", "rz"])
    model.add_all_qubit_quantum_error(one.tensor(one), ["cx"])
    return model


def median_time(call, repeats: int, warm: bool = True) -> float:
    """Median seconds of ``call()`` over ``repeats`` runs (after one warm-up run when ``warm``)."""
    if warm:
        call()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        call()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def interleaved(calls: list, repeats: int) -> list[float]:
    """Median seconds of each of ``calls`` over ``repeats`` rounds, each round running every call once in turn
    (after one warm-up round): the engines see the same machine load."""
    for call in calls:
        call()
    times: list[list[float]] = [[] for _ in calls]
    for _ in range(repeats):
        for call, spent in zip(calls, times, strict=True):
            start = time.perf_counter()
            call()
            spent.append(time.perf_counter() - start)
    return [statistics.median(t) for t in times]


@contextlib.contextmanager
def float64_default():
    """torch's default dtype float64 for PennyLane's calls (``default.mixed``'s torch path makes constants, RZ's
    phases among them, in the default dtype: float32 would leave values 1e-8 off); restored after."""
    before = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64)
    try:
        yield
    finally:
        torch.set_default_dtype(before)


def trainable_channels(x: torch.Tensor, weights: torch.Tensor, repeats: int) -> tuple[list, str]:
    """Case 5: rows of the table (forward, training step) and a line of the largest differences."""
    rates = torch.randn(2, N, dtype=torch.float64)
    layer = QuantumLayer(rated_circuit, N, {"weights": (LAYERS, N, 3), "rates": (2, N)}, backend="density").double()
    with torch.no_grad():
        layer.weights.copy_(weights)
        layer.rates.copy_(rates)
    qnode = qml.QNode(rated_circuit, qml.device("default.mixed", wires=N), interface="torch", diff_method="backprop")
    w_mixed, r_mixed = weights.clone().requires_grad_(), rates.clone().requires_grad_()

    def mixed(inputs: torch.Tensor) -> torch.Tensor:
        with float64_default():
            return torch.stack(qnode(inputs, w_mixed, r_mixed), -1)  # one call, broadcast over the 64 rows

    # equal values and gradients (inputs, weights, rates) first, under a random weighting of the outputs
    probe = torch.randn(len(x), N, dtype=torch.float64)
    x_ours, x_mixed = x.clone().requires_grad_(), x.clone().requires_grad_()
    ours, theirs = layer(x_ours), mixed(x_mixed)
    (ours * probe).sum().backward()
    (theirs * probe).sum().backward()
    differences = {
        "values": (ours - theirs).detach().abs().max(),
        "d/inputs": (x_ours.grad - x_mixed.grad).abs().max(),
        "d/weights": (layer.weights.grad - w_mixed.grad).abs().max(),
        "d/rates": (layer.rates.grad - r_mixed.grad).abs().max(),
    }
    worst = max(float(d) for d in differences.values())
    if not worst <= 1e-8:
        raise RuntimeError(f"density and default.mixed disagree on the trainable channels: {differences}")
    layer.zero_grad(set_to_none=True)
    w_mixed.grad = r_mixed.grad = None

    def mixed_forward():
        with torch.no_grad():
            mixed(x)

    def mixed_step():
        mixed(x.clone().requires_grad_()).sum().backward()
        w_mixed.grad = r_mixed.grad = None

    def density_step():
        layer(x.clone().requires_grad_()).sum().backward()  # gradients of the inputs, weights and rates
        layer.zero_grad(set_to_none=True)

    peer = "PennyLane default.mixed (one broadcast call)"
    theirs_forward, ours_forward = interleaved([mixed_forward, forward(layer, x)], repeats)
    theirs_step, ours_step = interleaved([mixed_step, density_step], repeats)
    rows = [("forward, trainable depolarizing + amplitude damping", peer, theirs_forward, ours_forward),
            ("training step, trainable depolarizing + amplitude damping", peer, theirs_step, ours_step)]  # fmt: skip
    shown = ", ".join(f"{k} {float(v):.1e}" for k, v in differences.items())
    return rows, f"density vs default.mixed with trainable channels: {shown}"


def layer_pair(qfunc, weights: torch.Tensor, *backends: tuple[str, dict]) -> list:
    layers = []
    for name, options in backends:
        layer = QuantumLayer(qfunc, N, {"weights": (LAYERS, N, 3)}, backend=name, **options).double()
        with torch.no_grad():
            layer.weights.copy_(weights)
        layers.append(layer)
    return layers


def forward(layer, x):
    def call():
        with torch.no_grad():
            return layer(x)

    return call


def step(layer, x):
    def call():
        xi = x.clone().requires_grad_()
        layer(xi).sum().backward()
        layer.weights.grad = None

    return call


def mitiq_per_value(x: torch.Tensor, weights: torch.Tensor, backend) -> float:
    """Seconds per value of Mitiq's execute_with_zne on Aer (the noise model of ``backend``)."""
    from mitiq import zne as mzne
    from qiskit import transpile
    from qiskit_aer.primitives import EstimatorV2

    from hybridai.quantum.qiskit_frontend.conversion import convert

    estimator = EstimatorV2(options={"default_precision": 0.0, "backend_options": {
        "method": "density_matrix", "noise_model": backend.noise_model}})  # fmt: skip
    start = time.perf_counter()
    for sample in x:
        converted = convert(qml.tape.make_qscript(first_z)(sample, weights), list(range(N)))
        observable = converted.observables[0]
        bound = converted.circuit.assign_parameters([float(p) for p in converted.params])

        def executor(qc) -> float:
            isa = transpile(qc, backend=backend.device, optimization_level=0, seed_transpiler=1234)
            return float(estimator.run([(isa, observable.apply_layout(isa.layout))]).result()[0].data.evs)  # noqa: B023

        mzne.execute_with_zne(bound, executor, factory=mzne.inference.RichardsonFactory([1, 3, 5]),
                              scale_noise=mzne.scaling.fold_global)  # fmt: skip
    return (time.perf_counter() - start) / len(x)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--aer-repeats", type=int, default=1, help="Aer's training step takes tens of seconds")
    parser.add_argument("--zne-batch", type=int, default=16)
    parser.add_argument("--mitiq-values", type=int, default=4, help="values Mitiq mitigates (one at a time)")
    args = parser.parse_args()
    torch.set_num_threads(1)
    warnings.simplefilter("ignore")
    print(f"CPU: {cpu_model()}, torch threads: {torch.get_num_threads()}, OMP_NUM_THREADS=1")
    print(f"{N} qubits, {LAYERS} SEL layers, batch {args.batch}, <Z> on every qubit; median of {args.repeats} runs "
          f"({args.aer_repeats} for Aer's training step)\n")  # fmt: skip
    torch.manual_seed(0)
    x = torch.rand(args.batch, N, dtype=torch.float64)
    weights = torch.rand(LAYERS, N, 3, dtype=torch.float64)
    rows = []

    density, aer = layer_pair(circuit, weights, ("density:fake_manila", {}), ("aer:fake_manila", {}))
    agree = float((forward(density, x)() - forward(aer, x)()).abs().max())
    ours = median_time(forward(density, x), args.repeats)
    theirs = median_time(forward(aer, x), args.repeats)
    rows.append(("forward, fake_manila", "aer:fake_manila (Aer density matrix)", theirs, ours))
    ours_step = median_time(step(density, x), args.repeats)
    theirs_step = median_time(step(aer, x), args.aer_repeats, warm=False)  # transpiled already by the forward runs
    rows.append(("training step, fake_manila", "aer:fake_manila (parameter shift)", theirs_step, ours_step))

    (mitigated,) = layer_pair(first_z, weights, ("density:fake_manila", {"mitigation": hybridai.ZNE()}))
    xz = x[: args.zne_batch]
    ours_zne = median_time(forward(mitigated, xz), args.repeats) / len(xz)
    theirs_zne = mitiq_per_value(xz[: args.mitiq_values], weights, aer.resolved_backend)
    rows.append((f"one ZNE value (batch {len(xz)})", "Mitiq execute_with_zne on Aer", theirs_zne, ours_zne))

    qnode = qml.QNode(channel_circuit(True), qml.device("default.mixed", wires=N), interface="torch",
                      diff_method="backprop")  # fmt: skip
    w_mixed = weights.clone().requires_grad_()
    (channels,) = layer_pair(channel_circuit(False), weights,
                             ("density", {"noise_model": channel_model(), "optimization_level": 0}))  # fmt: skip

    def mixed_forward():
        with torch.no_grad():
            return torch.stack(qnode(x, w_mixed), -1)

    def mixed_step():
        xi = x.clone().requires_grad_()
        torch.stack(qnode(xi, w_mixed), -1).sum().backward()
        w_mixed.grad = None

    agree_mixed = float((mixed_forward() - forward(channels, x)()).abs().max())
    theirs_mixed = median_time(mixed_forward, args.repeats)
    ours_mixed = median_time(forward(channels, x), args.repeats)
    rows.append(("forward, depolarizing channels", "PennyLane default.mixed", theirs_mixed, ours_mixed))
    theirs_mixed_step = median_time(mixed_step, args.repeats)
    ours_mixed_step = median_time(step(channels, x), args.repeats)
    rows.append(("training step, depolarizing channels", "PennyLane default.mixed", theirs_mixed_step, ours_mixed_step))

    trained, agree_trained = trainable_channels(x, weights, args.repeats)
    rows += trained

    print("| work | peer | peer s | hybridai density s | speed-up |")
    print("|---|---|---|---|---|")
    for work, peer, t_peer, t_ours in rows:
        print(f"| {work} | {peer} | {t_peer:.4g} | {t_ours:.4g} | {t_peer / t_ours:.1f}x |")
    print(f"\nlargest difference of the values: density vs aer {agree:.1e}, density vs default.mixed {agree_mixed:.1e} "
          "(default.mixed applies RZ in complex64 under torch)")  # fmt: skip
    print(f"{agree_trained}; target >= {TARGET:.0f}x: forward {trained[0][2] / trained[0][3]:.1f}x, training step "
          f"{trained[1][2] / trained[1][3]:.1f}x")  # fmt: skip


if __name__ == "__main__":
    main()
