"""The ``density`` backend: values equal ``aer`` (density-matrix method) on fake devices and user noise models,
sampled statistics, gradients equal PennyLane's ``default.mixed`` with the same channels, ZNE, refusals."""

import threading

import numpy as np
import pennylane as qml
import pytest
import torch

import hybridai
from hybridai import QuantumLayer, backends
from hybridai.core.errors import ConfigError, ResourceLimitError, UnsupportedOperationError
from hybridai.core.execution import ExecutionConfig

FIXED = {"Hadamard": 1, "PauliX": 1, "PauliY": 1, "PauliZ": 1, "S": 1, "T": 1, "SX": 1, "CNOT": 2, "CZ": 2,
         "CY": 2, "SWAP": 2, "Toffoli": 3, "CSWAP": 3, "ISWAP": 2, "ECR": 2, "CH": 2}  # fmt: skip
ROTATIONS = {"RX": 1, "RY": 1, "RZ": 1, "PhaseShift": 1, "U1": 1, "IsingXX": 2, "IsingYY": 2, "IsingZZ": 2}
ADJOINTS = ("S", "T", "SX")
LETTERS = (qml.PauliX, qml.PauliY, qml.PauliZ)


def random_unitary(rng: np.random.Generator, k: int) -> np.ndarray:
    z = rng.normal(size=(2**k, 2**k)) + 1j * rng.normal(size=(2**k, 2**k))
    q, r = np.linalg.qr(z)
    return q * (np.diag(r) / np.abs(np.diag(r)))


def random_tape(seed: int, n: int, batch: int = 3, depth: int = 14, exclude: tuple[str, ...] = ()):
    """A batched tape with every gate the Qiskit conversion emits (fixed, rotations by inputs, weights and
    constants, adjoints, constant unitaries), and expval / var / probs measurements."""
    rng = np.random.default_rng(seed)
    x = torch.tensor(rng.uniform(-np.pi, np.pi, (batch, 4)))
    w = torch.tensor(rng.uniform(-np.pi, np.pi, 6))
    names = [g for g, k in {**FIXED, **ROTATIONS}.items() if k <= n and g not in exclude] + ["adjoint", "unitary"]

    def qfunc():
        qml.RX(x[:, 0], wires=0)  # always broadcast
        for _ in range(depth):
            name = names[rng.integers(len(names))]
            if name == "adjoint":
                qml.adjoint(getattr(qml, ADJOINTS[rng.integers(3)]))(wires=int(rng.integers(n)))
                continue
            k = 1 + int(rng.integers(min(2, n))) if name == "unitary" else {**FIXED, **ROTATIONS}[name]
            wires = [int(v) for v in rng.permutation(n)[:k]]
            if name == "unitary":
                qml.QubitUnitary(random_unitary(rng, k), wires=wires)
            elif name in FIXED:
                getattr(qml, name)(wires=wires)
            else:
                source = rng.integers(3)
                angle = x[:, rng.integers(4)] if source == 0 else w[rng.integers(6)] if source == 1 else 0.37
                getattr(qml, name)(angle, wires=wires)
        word = [LETTERS[rng.integers(3)](int(q)) for q in rng.permutation(n)[: 1 + rng.integers(n)]]
        return [
            qml.expval(qml.prod(*word) if len(word) > 1 else word[0]),
            qml.expval(0.5 * qml.PauliZ(0) - 0.25 * qml.PauliX(n - 1)),
            qml.var(qml.PauliY(int(rng.integers(n)))),
            qml.probs(wires=[int(q) for q in rng.permutation(n)[: min(n, 2)]]),
        ]

    return qml.tape.make_qscript(qfunc)()


def flat(result, batch: int) -> torch.Tensor:
    parts = result if isinstance(result, tuple | list) else (result,)
    return torch.cat([torch.as_tensor(p).reshape(batch, -1) for p in parts], -1)


def run_both(name: str, tape, n: int, **options):
    config = ExecutionConfig(tuple(range(n)))
    aer = backends.get(f"aer{name}", **options).execute([tape], config).results[0]
    density = backends.get(f"density{name}", **options).execute([tape], config).results[0]
    batch = tape.batch_size or 1
    return flat(aer, batch), flat(density, batch)


# -- values equal aer (exact: Aer's density-matrix estimator) -------------------------------------------------


@pytest.mark.parametrize(
    "device, n, seed",
    [("fake_manila", 1, 0), ("fake_manila", 3, 1), ("fake_manila", 5, 2), ("fake_lima", 2, 3), ("fake_lima", 4, 4),
     ("fake_jakarta", 6, 5), ("fake_jakarta", 7, 6)],
)  # fmt: skip
def test_values_equal_aer_on_fake_devices(device, n, seed):
    aer, density = run_both(f":{device}", random_tape(seed, n), n)
    torch.testing.assert_close(density, aer, rtol=0, atol=1e-10)


@pytest.mark.parametrize("seed", [7, 8])
def test_values_equal_aer_with_depolarizing_rates_and_no_device(seed):
    """Without a device both transpile for AerSimulator(noise_model=m) of the rates' model, whose basis gates all
    carry the rates (CSWAP, too, is decomposed into them)."""
    aer, density = run_both("", random_tape(seed, 3), 3, depolarizing=(0.02, 0.05))
    torch.testing.assert_close(density, aer, rtol=0, atol=1e-10)


def test_aer_refuses_gates_its_density_matrix_method_cannot_take_before_sending_a_job():
    """cswap survives transpiling for AerSimulator(noise_model=m) of a model whose basis has it; Aer's density-matrix
    method refuses it. aer says so by name before any job (no retries), pointing to density, which runs it and
    agrees with aer's sampled estimate."""
    from qiskit_aer.noise import NoiseModel, depolarizing_error

    model = NoiseModel(basis_gates=["rx", "ry", "rz", "cx", "cswap"])
    model.add_all_qubit_quantum_error(depolarizing_error(0.02, 1), ["rx", "ry"])
    model.add_all_qubit_quantum_error(depolarizing_error(0.02, 3), ["cswap"])
    tape = qml.tape.QuantumScript(
        [qml.RY(0.7, 0), qml.RX(1.1, 1), qml.CSWAP([0, 1, 2]), qml.RY(0.3, 2)], [qml.expval(qml.PauliZ(2))]
    )
    config = ExecutionConfig((0, 1, 2))
    aer = backends.get("aer", noise_model=model)
    with pytest.raises(UnsupportedOperationError, match=r"\['cswap'\]; accepted: backend='density'"):
        aer.execute([tape], config)
    density = backends.get("density", noise_model=model).execute([tape], config).results[0]
    sampled = aer.execute([tape], ExecutionConfig((0, 1, 2), shots=20000, seed=3)).results[0]
    assert abs(float(density) - float(sampled)) < 5 * 1 / np.sqrt(20000)  # |<Z>| <= 1: standard error <= 1/sqrt(N)


def thermal_model(readout: bool = True):
    from qiskit_aer.noise import NoiseModel, ReadoutError, depolarizing_error, thermal_relaxation_error

    model = NoiseModel(basis_gates=["rz", "sx", "x", "cx"])
    t1, t2 = (50e3, 70e3, 40e3), (40e3, 90e3, 30e3)
    for q in range(3):  # local errors: thermal relaxation per qubit, composed with depolarizing on sx
        relax = thermal_relaxation_error(t1[q], t2[q], 60 + 10 * q)
        model.add_quantum_error(relax.compose(depolarizing_error(0.002 * (q + 1), 1)), ["sx"], [q])
        model.add_quantum_error(relax, ["x"], [q])
    model.add_all_qubit_quantum_error(depolarizing_error(0.03, 2), ["cx"])  # all-qubit default
    model.add_quantum_error(thermal_relaxation_error(30e3, 20e3, 300).tensor(depolarizing_error(0.05, 1)), ["cx"],
                            [0, 1])  # fmt: skip  # a local error overrides the default on (0, 1) only
    if readout:
        model.add_all_qubit_readout_error(ReadoutError([[0.95, 0.05], [0.1, 0.9]]))
        model.add_readout_error(ReadoutError([[0.9, 0.1], [0.02, 0.98]]), [1])
    return model


@pytest.mark.parametrize("seed", [9, 10])
def test_values_equal_aer_with_a_user_noise_model_thermal_relaxation_and_readout(seed):
    """Readout errors act on samples: exact values leave them out on both backends."""
    aer, density = run_both(":fake_manila", random_tape(seed, 3), 3, noise_model=thermal_model())
    torch.testing.assert_close(density, aer, rtol=0, atol=1e-10)


@pytest.mark.slow
def test_idle_qubits_of_a_27_qubit_device_are_left_out():
    tape = random_tape(11, 3, depth=10)
    aer, density = run_both(":fake_kolkata", tape, 3)
    torch.testing.assert_close(density, aer, rtol=0, atol=1e-10)
    backend = backends.get("density:fake_kolkata")
    backend.execute([tape], ExecutionConfig((0, 1, 2)))
    (plan,) = [v for k, v in backend.frontend._made.items() if k[0] == "density"]
    assert plan.m <= 6 and plan.physical == tuple(sorted(plan.physical))


# -- sampling ----------------------------------------------------------------------------------------------


def sampled_circuit(inputs, weights):
    qml.AngleEmbedding(inputs, wires=range(3))
    qml.StronglyEntanglingLayers(weights, wires=range(3))
    return (
        qml.expval(qml.PauliZ(0)),
        qml.expval(qml.PauliX(1) @ qml.PauliY(2)),
        qml.expval(qml.PauliZ(1) @ qml.PauliZ(2)),
        qml.expval(0.5 * qml.PauliX(0) - 0.3 * qml.PauliZ(2)),
    )


def sampled_layers(backend: str, **options):
    torch.manual_seed(3)
    return [QuantumLayer(sampled_circuit, 3, {"weights": (1, 3, 3)}, backend=f"{b}{backend}", **options).double()
            for b in ("aer", "density")]  # fmt: skip


@pytest.mark.parametrize("noise", ["device", "user model"])
def test_sampled_values_agree_with_aer_within_five_standard_errors_and_are_seeded(noise):
    """Readout errors (the device's, or the model's asymmetric ones) shift sampled values on both backends alike."""
    options = {"noise_model": thermal_model()} if noise == "user model" else {}
    shots = 20000
    aer, density = sampled_layers(":fake_manila", shots=shots, seed=5, **options)
    density.load_state_dict(aer.state_dict())
    x = torch.rand(2, 3, dtype=torch.float64)
    with torch.no_grad():
        a, d = aer(x), density(x)
        again = density(x)
        exact = QuantumLayer(sampled_circuit, 3, {"weights": (1, 3, 3)}, backend="density:fake_manila", **options)
        exact = exact.double()
        exact.load_state_dict(aer.state_dict())
        e = exact(x)
    scale = torch.tensor([1.0, 1.0, 1.0, 0.8], dtype=torch.float64)  # the largest |value| of each column
    se = scale * np.sqrt(2.0 / shots)  # two independent estimates, each of variance at most scale^2 / shots
    assert ((d - a).abs() < 5 * se).all(), (d - a) / se
    assert torch.equal(d, again)  # same seed, same numbers
    assert (d - e).abs().max() > 0.01  # readout errors shift sampled values away from the exact ones


def test_sampled_values_without_readout_errors_are_within_five_standard_errors_of_exact():
    shots = 20000
    backend = backends.get("density:fake_manila", noise_model=thermal_model(readout=False))
    tape = qml.tape.make_qscript(sampled_circuit)(torch.rand(3, 3, dtype=torch.float64), torch.rand(1, 3, 3))
    config = ExecutionConfig((0, 1, 2))
    exact = flat(backend.execute([tape], config).results[0], 3)
    sampled = [flat(backend.execute([tape], config.replace(shots=shots, seed=s)).results[0], 3) for s in (1, 1, 2)]
    se = torch.tensor([1.0, 1.0, 1.0, 0.8], dtype=torch.float64) / np.sqrt(shots)
    assert ((sampled[0] - exact).abs() < 5 * se).all()
    assert torch.equal(sampled[0], sampled[1]) and not torch.equal(sampled[0], sampled[2])


def test_sampled_gradients_use_the_parameter_shift_rule():
    shots = 40000
    aer, density = sampled_layers(":fake_manila", shots=shots, seed=2)
    density.load_state_dict(aer.state_dict())
    exact = QuantumLayer(sampled_circuit, 3, {"weights": (1, 3, 3)}, backend="density:fake_manila").double()
    exact.load_state_dict(aer.state_dict())
    x = torch.rand(2, 3, dtype=torch.float64)
    (g_exact,) = torch.autograd.grad(exact(x)[:, 0].sum(), [exact.weights])
    (g_sampled,) = torch.autograd.grad(density(x)[:, 0].sum(), [density.weights])
    assert (g_sampled - g_exact).abs().max() < 5 * 2 * np.sqrt(2 / shots)  # two rows, each (f+ - f-) / 2
    with pytest.raises(ConfigError, match="diff_method='backprop'"):
        layer = QuantumLayer(sampled_circuit, 3, {"weights": (1, 3, 3)}, backend="density:fake_manila", shots=10,
                             diff_method="backprop")  # fmt: skip
        layer(x).sum().backward()


# -- gradients -----------------------------------------------------------------------------------------------

P1, GAMMA, P2 = 0.03, 0.05, 0.08  # PennyLane's DepolarizingChannel(p) is Qiskit's depolarizing_error(4 p / 3)


def mixed_circuit(noisy: bool):
    def circuit(inputs, weights):
        def one(gate, *args, wires):
            gate(*args, wires=wires)
            if noisy:
                qml.DepolarizingChannel(P1, wires=wires)
                qml.AmplitudeDamping(GAMMA, wires=wires)

        def cnot(c, t):
            qml.CNOT(wires=[c, t])
            if noisy:  # Qiskit's error dep(t) (x) damping(c): its qubit 0 is the control
                qml.AmplitudeDamping(GAMMA, wires=c)
                qml.DepolarizingChannel(P2, wires=t)

        one(qml.RX, inputs[..., 0], wires=0)
        one(qml.RY, inputs[..., 1], wires=1)
        one(qml.Hadamard, wires=2)
        one(qml.RZ, weights[0], wires=2)
        cnot(0, 1)
        one(qml.RY, weights[1] * inputs[..., 2], wires=0)
        cnot(1, 2)
        one(qml.RX, weights[2], wires=1)
        cnot(2, 0)
        one(qml.RZ, weights[3], wires=0)
        return qml.expval(qml.PauliZ(0)), qml.expval(qml.PauliX(1) @ qml.PauliY(2)), qml.probs(wires=[2, 0])

    return circuit


def equivalent_noise_model():
    from qiskit_aer.noise import NoiseModel, amplitude_damping_error, depolarizing_error

    model = NoiseModel()
    one = depolarizing_error(4 * P1 / 3, 1).compose(amplitude_damping_error(GAMMA))
    model.add_all_qubit_quantum_error(one, ["rx", "ry", "rz", "h"])
    model.add_all_qubit_quantum_error(depolarizing_error(4 * P2 / 3, 1).tensor(amplitude_damping_error(GAMMA)), "cx")
    return model


def test_values_and_gradients_equal_default_mixed_with_the_same_channels():
    """No device and optimization_level=0: the gates are the user's own, each followed by its channels. The
    oracle runs under autograd: under torch, default.mixed applies RZ through complex64 eigenvalues
    (``qml.RZ.compute_eigvals`` of a float64 tensor), off by about 1e-8."""
    from pennylane import numpy as pnp

    rng = np.random.default_rng(0)
    x, w = rng.uniform(0, 1, (4, 3)), rng.uniform(0, 1, 4)
    cot = np.linspace(0.3, 1.2, 6)
    qnode = qml.QNode(mixed_circuit(True), qml.device("default.mixed", wires=3), interface="autograd",
                      diff_method="backprop")  # fmt: skip

    def outputs(inputs, weights):
        r = qnode(inputs, weights)
        return pnp.concatenate([r[0][:, None], r[1][:, None], r[2]], -1)

    want = outputs(x, w)
    want_x, want_w = qml.grad(lambda a, b: (outputs(a, b) * cot).sum())(pnp.array(x), pnp.array(w))
    layer = QuantumLayer(mixed_circuit(False), 3, {"weights": 4}, backend="density", optimization_level=0,
                         noise_model=equivalent_noise_model()).double()  # fmt: skip
    with torch.no_grad():
        layer.weights.copy_(torch.from_numpy(w))
    xt = torch.from_numpy(x).requires_grad_()
    got = layer(xt)
    got_x, got_w = torch.autograd.grad((got * torch.from_numpy(cot)).sum(), [xt, layer.weights])
    np.testing.assert_allclose(got.detach().numpy(), want, rtol=0, atol=1e-10)
    np.testing.assert_allclose(got_x.numpy(), want_x, rtol=0, atol=1e-10)
    np.testing.assert_allclose(got_w.numpy(), want_w, rtol=0, atol=1e-10)


def small(inputs, weights):
    qml.RX(inputs[..., 0], wires=0)
    qml.RY(weights[0], wires=1)
    qml.CNOT(wires=[0, 1])
    qml.RZ(weights[1] * inputs[..., 1], wires=1)
    qml.IsingXX(weights[2], wires=[0, 1])
    return qml.expval(qml.PauliZ(0) @ qml.PauliX(1)), qml.expval(qml.PauliY(1))


def small_layers(*backends_, **options):
    torch.manual_seed(4)
    layers = [QuantumLayer(small, 2, {"weights": 3}, backend=b, **options).double() for b in backends_]
    for layer in layers[1:]:
        layer.load_state_dict(layers[0].state_dict())
    return layers


def test_gradients_on_fake_manila_equal_parameter_shift_and_finite_differences():
    density, shifted, aer = small_layers("density:fake_manila", "density:fake_manila", "aer:fake_manila")
    shifted.diff_method = "parameter-shift"
    x = torch.rand(3, 2, dtype=torch.float64)
    results = []
    for layer in (density, shifted, aer):
        xi = x.clone().requires_grad_()
        results.append(torch.autograd.grad(layer(xi).sum(), [xi, layer.weights]))
    for other in results[1:]:
        for a, b in zip(results[0], other, strict=True):
            torch.testing.assert_close(a, b, rtol=0, atol=1e-10)
    h = 1e-5
    with torch.no_grad():
        for k in range(3):
            plus, minus = density.weights.clone(), density.weights.clone()
            plus[k] += h
            minus[k] -= h
            density.weights.copy_(plus)
            f_plus = density(x).sum()
            density.weights.copy_(minus)
            f_minus = density(x).sum()
            density.weights.copy_((plus + minus) / 2)
            assert float((f_plus - f_minus) / (2 * h)) == pytest.approx(float(results[0][1][k]), abs=1e-8)


def test_double_backward():
    (layer,) = small_layers("density:fake_manila")
    x = torch.rand(2, 2, dtype=torch.float64, requires_grad=True)
    torch.autograd.gradgradcheck(lambda v: layer(v), (x,), atol=1e-7)


def test_complex64_is_float32_and_close():
    d64, d32 = small_layers("density:fake_manila", "density:fake_manila", dtype="complex64")[::-1]
    assert d32.resolved_backend.capabilities.dtype == "complex64"
    x = torch.rand(3, 2)
    out32 = d32(x)
    assert out32.dtype == torch.float32
    torch.testing.assert_close(out32.double(), d64(x.double()).detach(), rtol=0, atol=1e-5)


# -- zero-noise extrapolation ------------------------------------------------------------------------------


def test_zne_values_equal_aer_and_training_through_it_is_differentiable():
    density, aer = small_layers("density:fake_manila", "aer:fake_manila", mitigation=hybridai.ZNE())
    x = torch.rand(2, 2, dtype=torch.float64)
    d, a = density(x), aer(x)
    torch.testing.assert_close(d.detach(), a.detach(), rtol=0, atol=1e-10)
    np.testing.assert_allclose(density.last_mitigation.noisy, aer.last_mitigation.noisy, rtol=0, atol=1e-10)
    (gd,) = torch.autograd.grad(d.sum(), [density.weights])  # backprop through folds and extrapolation
    (ga,) = torch.autograd.grad(a.sum(), [aer.weights])  # the parameter-shift rule
    torch.testing.assert_close(gd, ga, rtol=0, atol=1e-9)


# -- the backend object ----------------------------------------------------------------------------------


def test_capabilities_and_options():
    caps = backends.get("density:fake_manila").capabilities
    assert (caps.noise, caps.exact, caps.shots, caps.max_qubits, caps.dtype) == (True, False, True, 5, "complex128")
    assert "backprop" in caps.diff_methods and "parameter-shift" in caps.diff_methods
    assert backends.get("density").capabilities.exact
    backend = backends.get("density", depolarizing=0.01, dtype="complex64", seed=3)
    assert "depolarizing=0.01" in repr(backend) and "complex64" in repr(backend)


def test_simulation_follows_the_parameters_device():
    """No GPU here: torch's meta device (shapes only) shows that every tensor of a run is made on the parameters'
    device, as on CUDA."""
    from hybridai.quantum.density.simulate import expectations, run

    backend = backends.get("density:fake_manila")
    backend.execute([qml.tape.make_qscript(small)(torch.rand(2, 2), torch.rand(3))], ExecutionConfig((0, 1)))
    (plan,) = [v for k, v in backend.frontend._made.items() if k[0] == "density"]
    values = torch.rand(5, 3, dtype=torch.float64, device="meta")
    state = run(plan, values, torch.device("meta"), torch.float64)
    out = expectations(plan, state)
    assert out.device.type == "meta" and out.shape == (3, 2)


def test_threads_share_one_backend():
    backend = backends.get("density:fake_manila")
    tapes = [random_tape(s, 3, batch=2, depth=8) for s in (12, 13)]
    config = ExecutionConfig((0, 1, 2))
    alone = [flat(backend.execute([t], config).results[0], 2) for t in tapes]
    got: dict[int, torch.Tensor] = {}

    def work(i: int) -> None:
        for _ in range(3):
            got[i] = flat(backend.execute([tapes[i % 2]], config).results[0], 2)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for i, value in got.items():
        torch.testing.assert_close(value, alone[i % 2], rtol=0, atol=0)


# -- refusals --------------------------------------------------------------------------------------------


def test_options_are_checked():
    with pytest.raises(ConfigError, match=r"dtype.*complex128"):
        backends.get("density", dtype="float16")
    with pytest.raises(ConfigError, match=r"retries.*accepted: shots, seed, optimization_level, dtype"):
        backends.get("density", retries=3)
    with pytest.raises(ConfigError, match="density:fake_manila.*brings the device's own noise"):
        backends.get("density:fake_manila", depolarizing=0.1)
    with pytest.raises(ConfigError, match="noise_model"):
        backends.get("density", noise_model="strong")
    tape = qml.tape.make_qscript(small)(torch.rand(2, 2), torch.rand(3))
    with pytest.raises(ConfigError, match="readout_error is set"):
        backends.get("density", readout_error=0.1).execute([tape], ExecutionConfig((0, 1)))
    with pytest.raises(ConfigError, match="diff_method.*adjoint"):
        backends.get("density").execute([tape], ExecutionConfig((0, 1), diff_method="adjoint"))


def test_memory_is_checked_before_anything_is_allocated():
    tape = qml.tape.QuantumScript([qml.Hadamard(0)], [qml.expval(qml.PauliZ(29))])
    with pytest.raises(ResourceLimitError, match=r"n_qubits=30.*backend='aer' with shots"):
        backends.get("density").execute([tape], ExecutionConfig(tuple(range(30))))


def test_noise_it_cannot_represent_is_refused_by_name():
    from qiskit_aer.noise import NoiseModel, ReadoutError, depolarizing_error

    tape = qml.tape.make_qscript(small)(torch.rand(2, 2), torch.rand(3))
    config = ExecutionConfig((0, 1))
    # errors on measure are applied (before the read, with shots): tests/quantum/test_noise_models.py
    correlated = NoiseModel()
    correlated.add_readout_error(ReadoutError([[0.9, 0.1, 0, 0], [0, 1, 0, 0], [0, 0, 1, 0], [0, 0, 0, 1]]), [0, 1])
    with pytest.raises(ConfigError, match="correlated readout error on qubits"):
        backends.get("density", noise_model=correlated).execute([tape], config.replace(shots=100, seed=1))
    on_barrier = NoiseModel()
    on_barrier.add_all_qubit_quantum_error(depolarizing_error(0.1, 2), "barrier")
    layer = QuantumLayer(small, 2, {"weights": 3}, backend="density", noise_model=on_barrier,
                         mitigation=hybridai.ZNE())  # fmt: skip
    with pytest.raises(ConfigError, match="quantum error on 'barrier'"):
        layer(torch.rand(2, 2))
    wrong_size = NoiseModel()
    wrong_size.add_all_qubit_quantum_error(depolarizing_error(0.1, 1), "unitary")

    def unitary():
        qml.QubitUnitary(np.eye(4), wires=[0, 1])
        return qml.expval(qml.PauliZ(0))

    with pytest.raises(ConfigError, match="1-qubit error on 'unitary'"):
        backends.get("density", noise_model=wrong_size).execute([qml.tape.make_qscript(unitary)()], config)


def test_instructions_it_cannot_simulate_are_refused_by_name():
    from qiskit import QuantumCircuit
    from qiskit.circuit import Parameter

    from hybridai.quantum.density.noise import Noise
    from hybridai.quantum.density.planning import compile_circuit

    circuit = QuantumCircuit(2)
    circuit.h(0)
    circuit.reset(1)
    with pytest.raises(UnsupportedOperationError, match="'reset' on qubits \\[1\\].*backend='aer'"):
        compile_circuit(circuit, Noise(None), (0, 1))
    a, b = Parameter("a"), Parameter("b")
    circuit = QuantumCircuit(1)
    circuit.u(a, b, 0.3, 0)
    with pytest.raises(UnsupportedOperationError, match="'u'.*2 angles depend"):
        compile_circuit(circuit, Noise(None), (0,))


# -- the contract ------------------------------------------------------------------------------------------


def _conformance():
    from hybridai.testing import conformance_checks

    return [pytest.param(c, id=c.id) for name in ("density", "density:fake_manila") for c in conformance_checks(name)]


@pytest.mark.parametrize("check", _conformance())
def test_conforms(check):
    check()
