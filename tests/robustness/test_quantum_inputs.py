"""Hostile inputs to the quantum layers, kernels, backends and zero-noise extrapolation.

Every bad input must give a ``hybridai.HybridAIError`` whose message names the argument, shows the value
and says what is accepted; right answers are checked against PennyLane's ``default.qubit`` (gate angles
kept in float64 under torch's float32 default), and ZNE's own noisy value at scale factor 1 against the
unmitigated layer it is compared with.
"""

from __future__ import annotations

import math
import pickle

import numpy as np
import pennylane as qml
import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import hybridai
from hybridai import ZNE, QuantumKernel, QuantumLayer, backends
from hybridai.core.errors import (
    BackendNotFoundError,
    BackendUnavailableError,
    ConfigError,
    ResourceLimitError,
    ShapeError,
)
from hybridai.core.execution import ExecutionConfig
from hybridai.quantum import target_alignment
from hybridai.quantum.mitigation import ZNEResult, plot_zne
from tests.robustness.refusals import refusal

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")  # ZNE on exact backends warns, on purpose

QISKIT = ("aer", "aer:fake_manila", "ibm:fake_manila")


# -- circuits -------------------------------------------------------------------------------------


def small(inputs, weights):
    qml.RY(inputs[..., 0], wires=0)
    qml.RX(weights[0], wires=1)
    qml.CNOT(wires=[0, 1])
    return qml.expval(qml.PauliZ(1))


def feature_map(x, theta):
    qml.RX(x[..., 0], wires=0)
    qml.RY(theta[0], wires=1)
    qml.CNOT(wires=[0, 1])


def plain_map(x):
    qml.RX(x[..., 0], wires=0)


def bell(inputs):
    qml.Hadamard(wires=0)
    qml.CNOT(wires=[0, 1])
    return qml.expval(qml.PauliZ(0) @ qml.PauliZ(1))


def one_wire(inputs):
    qml.Hadamard(wires=0)
    return qml.expval(qml.PauliZ(0))


def no_inputs(weights):
    qml.RY(weights[0], wires=0)
    qml.CNOT(wires=[0, 1])
    return qml.expval(qml.PauliZ(1)), qml.probs(wires=[0])


# -- callables that take the bad value ----------------------------------------------------------


def layer_with_weight(value):
    layer = QuantumLayer(small, 2, {"weights": 1})
    with torch.no_grad():
        layer.weights.fill_(value)
    return layer(torch.zeros(1, 1))


def kernel_with_weight(value):
    kernel = QuantumKernel(feature_map, 2, {"theta": 1})
    with torch.no_grad():
        kernel.theta.fill_(value)
    return kernel.matrix(torch.zeros(2, 1))


def zne_result():
    noisy = np.array([[[0.8]], [[0.5]], [[0.3]]])
    return ZNEResult((1.0, 3.0, 5.0), noisy, np.array([[0.95]]), "richardson", np.array([1.875, -1.25, 0.375]))


def place_wide_layer(target):
    model = torch.nn.Sequential(QuantumLayer(one_wire, 2, {}), QuantumLayer(one_wire, 6, {}))
    try:
        hybridai.place(model, quantum=target)
    finally:
        assert [layer.backend for layer in model] == ["statevector", "statevector"]  # nothing changed


def run_40_qubits(backend):
    return QuantumLayer(one_wire, 40, {}, backend=backend)(torch.zeros(1, 1))


def aer_6_wires(_):
    tape = qml.tape.QuantumScript([qml.Hadamard(0)], [qml.expval(qml.PauliZ(0))])
    return backends.get("aer:fake_manila").execute([tape], ExecutionConfig(range(6)))


def statevector_without_cuda(target, monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 0)
    return backends.get(target)


NAN, INF = float("nan"), float("inf")


# (callable, bad value, error class, argument named, text that shows the value)
CASES = [
    # item 4: NaN / inf in inputs and weights
    (lambda v: QuantumLayer(small, 2, {"weights": 1})(v), torch.tensor([[NAN]]), ConfigError, "inputs", "nan"),
    (lambda v: QuantumLayer(small, 2, {"weights": 1})(v), torch.tensor([0.1, INF]), ConfigError, "inputs", "inf"),
    (layer_with_weight, NAN, ConfigError, "weights", "nan"),
    (layer_with_weight, -INF, ConfigError, "weights", "-inf"),
    (kernel_with_weight, INF, ConfigError, "theta", "inf"),
    (lambda v: QuantumKernel(plain_map, 1).matrix(v), torch.tensor([[0.1], [NAN]]), ConfigError, "X", "nan"),
    # item 4: ZNE settings
    (lambda v: ZNE(scale_factors=v), (1, 1 + 1e-12, 1 + 2e-12), ConfigError, "scale_factors", "1.000000000001"),
    (lambda v: ZNE(scale_factors=v, extrapolation="exp"), (1, 1 + 1e-9, 1 + 2e-9), ConfigError, "scale_factors", "1"),
    (lambda v: ZNE(scale_factors=v), ("a", "b"), ConfigError, "scale_factors", "'a'"),
    (lambda v: ZNE(scale_factors=v), "135", ConfigError, "scale_factors", "'135'"),
    (lambda v: ZNE(scale_factors=v), (1, NAN, 3), ConfigError, "scale_factors", "nan"),
    (lambda v: ZNE(scale_factors=v), 3, ConfigError, "scale_factors", "3"),
    (lambda v: ZNE(order=v), -1, ConfigError, "order", "-1"),
    (lambda v: ZNE(order=v), "2", ConfigError, "order", "'2'"),
    (lambda v: ZNE(order=v, extrapolation="poly"), 2.5, ConfigError, "order", "2.5"),
    (lambda v: ZNE(order=v), True, ConfigError, "order", "True"),
    (lambda v: ZNE(seed=v), "abc", ConfigError, "seed", "'abc'"),
    (lambda v: ZNE(seed=v), -3, ConfigError, "seed", "-3"),
    (lambda v: ZNE(asymptote=v, extrapolation="exp"), "x", ConfigError, "asymptote", "'x'"),
    (lambda v: ZNE(asymptote=v, extrapolation="exp"), NAN, ConfigError, "asymptote", "nan"),
    (lambda v: ZNE().extrapolate(v), [1.0, 2.0], ShapeError, "values", "[1.0, 2.0]"),
    (lambda v: ZNE().extrapolate(v), ["a", "b", "c"], ShapeError, "values", "'a'"),
    (lambda v: ZNE().combine(v), np.ones((2, 1)), ShapeError, "noisy.shape", "(2, 1)"),
    (lambda v: plot_zne(v, "zne.png"), None, ConfigError, "result", "None"),
    (lambda v: plot_zne(v, "zne.png"), [zne_result(), zne_result()], ConfigError, "result", "2 ZNEResults"),
    (lambda v: plot_zne(zne_result(), v), 3, ConfigError, "path", "3"),
    (lambda v: plot_zne(zne_result(), ax=v), "axes", ConfigError, "ax", "str"),
    (lambda v: plot_zne(zne_result(), ideal=v), "0.5", ConfigError, "ideal", "'0.5'"),
    (lambda v: plot_zne(zne_result(), "zne.png", sample=v), "a", ConfigError, "sample", "'a'"),
    (lambda v: plot_zne(zne_result(), "zne.png", column=v), 1, ConfigError, "column", "1"),
    # item 5: qubit counts and memory, refused before allocating
    (lambda v: QuantumLayer(one_wire, v, {}, backend="aer:fake_manila"), 6, ConfigError, "n_qubits", "6"),
    (lambda v: QuantumKernel(plain_map, v, backend="aer:fake_manila"), 6, ConfigError, "n_qubits", "6"),
    (place_wide_layer, "aer:fake_manila", ConfigError, "n_qubits", "6"),
    (run_40_qubits, "statevector", ResourceLimitError, "n_qubits", "40"),
    (run_40_qubits, "aer", ResourceLimitError, "n_qubits", "40"),
    (run_40_qubits, "pennylane:default.qubit", ResourceLimitError, "n_qubits", "40"),
    (run_40_qubits, "pennylane:default.mixed", ResourceLimitError, "n_qubits", "40"),
    (aer_6_wires, None, ResourceLimitError, "n_qubits", "6"),
    # item 6: backend options
    (lambda v: backends.get("aer", depolarizing=v), "x", ConfigError, "depolarizing", "'x'"),
    (lambda v: backends.get("aer", depolarizing=v), (0.01,), ConfigError, "depolarizing", "(0.01,)"),
    (lambda v: backends.get("aer", depolarizing=v), (0.01, 2), ConfigError, "depolarizing", "(0.01, 2)"),
    (lambda v: backends.get("aer", depolarizing=v), NAN, ConfigError, "depolarizing", "nan"),
    (lambda v: backends.get("aer", readout_error=v), "x", ConfigError, "readout_error", "'x'"),
    (lambda v: backends.get("aer", readout_error=v), 1.5, ConfigError, "readout_error", "1.5"),
    (lambda v: backends.get("aer:fake_manila", depolarizing=v), 0.01, ConfigError, "depolarizing", "0.01"),
    (lambda v: backends.get("aer", noise_model=v), "x", ConfigError, "noise_model", "'x'"),
    (lambda v: backends.get("aer", backoff=v), -1, ConfigError, "backoff", "-1"),
    (lambda v: backends.get("aer", backoff=v), "x", ConfigError, "backoff", "'x'"),
    (lambda v: backends.get("aer", backoff=v), INF, ConfigError, "backoff", "inf"),
    (lambda v: backends.get("aer", timeout=v), 0, ConfigError, "timeout", "0"),
    (lambda v: backends.get("aer", timeout=v), "x", ConfigError, "timeout", "'x'"),
    (lambda v: backends.get("aer", timeout=v), NAN, ConfigError, "timeout", "nan"),
    (lambda v: backends.get("ibm:fake_manila", backoff=v), -1, ConfigError, "backoff", "-1"),
    (lambda v: backends.get("ibm:fake_manila", timeout=v), -5, ConfigError, "timeout", "-5"),
    (lambda v: backends.get("aer", optimization_level=v), True, ConfigError, "optimization_level", "True"),
    (lambda v: target_alignment(torch.eye(2), v), ["a", "b"], ConfigError, "y", "'a'"),
    (lambda v: target_alignment(torch.eye(2), v), torch.ones(2, dtype=torch.complex64), ShapeError, "y", "complex"),
    (lambda v: QuantumLayer(one_wire, 1, {}, backend=v), "", ConfigError, "backend", "''"),
    (lambda v: QuantumKernel(plain_map, 1, backend=v), " ", ConfigError, "backend", "' '"),
    (lambda v: backends.get(v), "statevector:mps", BackendNotFoundError, "backend", "statevector:mps"),
    # item 7: circuits without inputs
    (lambda v: QuantumLayer(no_inputs, 2, {"weights": 1})(v), torch.zeros(1, 1), ShapeError, "inputs", "(1, 1)"),
    (lambda v: QuantumLayer(no_inputs, 2, {"weights": 1}, n_inputs=v), 2, ConfigError, "n_inputs", "2"),
    (lambda v: QuantumLayer(small, 2, {"weights": 1})(v), None, ShapeError, "inputs", "NoneType"),
]


def _id(case) -> str:
    _, value, _, argument, _ = case
    return f"{argument}={str(value)[:24]}"


@pytest.mark.parametrize("call, value, error, argument, shown", CASES, ids=[_id(c) for c in CASES])
def test_bad_input_gives_a_typed_error_naming_argument_value_and_accepted(call, value, error, argument, shown, tmp_path,
                                                                           monkeypatch):  # fmt: skip
    monkeypatch.chdir(tmp_path)  # plot_zne's relative paths
    message = refusal(call, value, error)
    assert argument in message and shown in message, message
    assert "accepted" in message, message
    assert "3.5 factors" not in message  # order=2.5 once asked for "at least 3.5 factors"


def test_statevector_cuda_without_cuda_names_the_statevector_backend(monkeypatch):
    for target in ("statevector:cuda", "statevector:cuda:1"):
        with pytest.raises(BackendUnavailableError) as caught:
            statevector_without_cuda(target, monkeypatch)
        message = str(caught.value)
        assert target in message and "torch:" not in message and "accepted" in message


def test_ill_conditioned_scale_factors_say_which_bound():
    with pytest.raises(ConfigError, match=r"amplifies the noise .* at most 10000 times .* is \d(\.\d+)?e\+11"):
        ZNE(scale_factors=(1, 1 + 1e-12, 1 + 2e-12))
    assert ZNE(scale_factors=(1, 2, 3, 4, 5, 6, 7)).coefficients.__abs__().sum() == pytest.approx(127)  # 2^7 - 1


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    factors=st.lists(
        st.one_of(st.floats(allow_nan=True, allow_infinity=True), st.integers(-3, 9), st.text(max_size=2)),
        max_size=5,
    ),
    extrapolation=st.sampled_from(["richardson", "linear", "poly", "exp", "cubic"]),
    order=st.one_of(st.integers(-2, 4), st.floats(0, 4), st.just("2")),
)
def test_zne_settings_either_work_or_raise_a_config_error(factors, extrapolation, order):
    asymptote = 0.0 if extrapolation == "exp" else None  # a fitted asymptote may fail to converge, on purpose
    try:
        zne = ZNE(scale_factors=tuple(factors), extrapolation=extrapolation, order=order, asymptote=asymptote)
    except ConfigError as exc:
        assert "accepted" in str(exc)
        return
    assert all(1 <= s for s in zne.scale_factors) and list(zne.scale_factors) == sorted(set(zne.scale_factors))
    values = np.exp(-0.1 * np.asarray(zne.scale_factors))  # a decaying signal every fit can extrapolate
    assert math.isfinite(zne.extrapolate(values))


@settings(max_examples=40, deadline=None)
@given(st.lists(st.one_of(st.floats(-4, 4), st.just(NAN), st.just(INF), st.just(-INF)), min_size=2, max_size=2))
def test_layer_inputs_either_give_values_or_name_the_bad_entry(row):
    layer = QuantumLayer(small, 2, {"weights": 1}, init=torch.nn.init.zeros_)
    x = torch.tensor([row], dtype=torch.float64)
    if all(math.isfinite(v) for v in row):
        assert layer(x)[0].item() == pytest.approx(math.cos(row[0]), abs=1e-12)  # one expval: [B]
    else:
        with pytest.raises(ConfigError, match=r"inputs=.*(nan|inf).*finite values only"):
            layer(x)


# -- item 6: errors of the user's own circuit function are the user's --------------------------------


def test_an_error_raised_inside_qfunc_is_the_users_own():
    def divides(inputs, weights):
        qml.RX(weights[0] * (1 / 0), wires=0)
        return qml.expval(qml.PauliZ(0))

    with pytest.raises(ZeroDivisionError):
        QuantumLayer(divides, 1, {"weights": 1})(torch.zeros(1, 1))

    def looks_up(x):
        {}["missing"]

    with pytest.raises(KeyError, match="missing"):
        QuantumKernel(looks_up, 1).matrix(torch.zeros(2, 1))

    with pytest.raises(ShapeError, match=r"IndexError.*check the input width"):  # a real width problem
        QuantumLayer(lambda inputs: (qml.RX(inputs[..., 3], 0), qml.expval(qml.PauliZ(0)))[1], 1, {})(torch.zeros(1, 2))


# -- item 6: a circuit without parametrised gates on every Qiskit backend -----------------------------


@pytest.mark.parametrize("backend", [*QISKIT, "statevector", "pennylane:default.qubit"])
def test_a_bell_pair_without_parameters_runs_everywhere(backend):
    options = {"seed": 5} if backend.startswith(("aer", "ibm")) else {}
    value = QuantumLayer(bell, 2, {}, backend=backend, **options)(torch.zeros(1, 1)).item()
    want = qml.QNode(lambda: bell(None), qml.device("default.qubit", wires=2))()
    if backend in ("aer", "statevector", "pennylane:default.qubit"):  # exact, noiseless
        assert value == pytest.approx(float(want), abs=1e-12)
    else:  # the device's noise and, on ibm, shots
        assert value == pytest.approx(float(want), abs=0.2) and value != float(want)


# -- item 1: fixed angles written as Python floats keep float64 -----------------------------------------

ANGLE = np.pi / 2 - 0.1
FIXED = {
    "RY": lambda: qml.RY(ANGLE, wires=0),
    "RZ": lambda: (qml.Hadamard(0), qml.RZ(ANGLE, wires=0)),
    "PhaseShift": lambda: (qml.Hadamard(0), qml.PhaseShift(ANGLE, wires=0)),
    "Rot": lambda: qml.Rot(0.3, ANGLE, 0.7, wires=0),
    "IsingZZ": lambda: (qml.Hadamard(0), qml.Hadamard(1), qml.IsingZZ(ANGLE, wires=[0, 1])),
    "U3": lambda: qml.U3(ANGLE, 0.3, 0.2, wires=0),
    "CRX": lambda: (qml.Hadamard(1), qml.CRX(ANGLE, wires=[1, 0])),
    "CRot": lambda: (qml.Hadamard(1), qml.CRot(0.3, ANGLE, 0.2, wires=[1, 0])),
    "Hamiltonian": None,  # a fixed coefficient written as a Python float
}


def _measure():
    return [qml.expval(qml.PauliX(0)), qml.expval(qml.PauliY(0)), qml.expval(qml.PauliZ(0))]


@pytest.mark.parametrize("backend", ["statevector", "aer", "pennylane:default.qubit"])
@pytest.mark.parametrize("gate", list(FIXED))
def test_fixed_python_float_angles_equal_default_qubit_in_float64(gate, backend):
    assert torch.get_default_dtype() == torch.float32  # the process default the bug needed

    def ops():
        if gate == "Hamiltonian":
            qml.RY(0.4, wires=0)
        else:
            FIXED[gate]()

    def measured():
        if gate == "Hamiltonian":
            return [qml.expval(qml.Hamiltonian([0.1, ANGLE], [qml.PauliZ(0), qml.PauliX(0)]))]
        return _measure()

    def circuit(inputs):
        qml.RX(inputs[..., 0], wires=1)
        ops()
        return measured()

    def reference():
        ops()
        return measured()

    want = np.asarray(qml.QNode(reference, qml.device("default.qubit", wires=2))(), dtype=np.float64)
    got = QuantumLayer(circuit, 2, {}, backend=backend)(torch.zeros(1, 1, dtype=torch.float64))
    assert got.dtype == torch.float64
    np.testing.assert_allclose(got[0].numpy(), want, rtol=0, atol=1e-12)


# -- item 3: ZNE's noisy value at scale factor 1 is the unmitigated layer's value -----------------------


def layered(inputs, weights):  # on fake_manila, optimisation levels 0 and 1 differ by about 0.01 for it
    qml.AngleEmbedding(inputs[..., :2], wires=range(2))
    qml.BasicEntanglerLayers(weights, wires=range(2))
    qml.CNOT(wires=[0, 1])
    return qml.expval(qml.PauliZ(0))


def reordered(inputs, weights):  # gates on disjoint wires that Cirq's moments would put in another order
    qml.RX(inputs[..., 0], wires=0)
    qml.CNOT(wires=[0, 1])
    qml.RY(weights[0, 0], wires=2)
    qml.CNOT(wires=[1, 2])
    qml.RX(weights[1, 1], wires=0)
    return qml.expval(qml.PauliZ(2))


def _twins(circuit, n_qubits, zne, **options):
    torch.manual_seed(0)
    plain = QuantumLayer(circuit, n_qubits, {"weights": (3, 2)}, backend="aer:fake_manila", **options).double()
    mitigated = QuantumLayer(circuit, n_qubits, {"weights": (3, 2)}, backend="aer:fake_manila", mitigation=zne,
                             **options).double()  # fmt: skip
    mitigated.load_state_dict(plain.state_dict())
    return plain, mitigated


@pytest.mark.parametrize("circuit, n_qubits", [(layered, 2), (reordered, 3)], ids=["layered", "reordered"])
@pytest.mark.parametrize("options", [{"seed": 1}, {"seed": 1, "optimization_level": 3}], ids=["level1", "level3"])
@pytest.mark.parametrize("folding", ["global", "random"])
def test_zne_noisy_value_at_scale_one_is_the_unmitigated_value(circuit, n_qubits, options, folding):
    plain, mitigated = _twins(circuit, n_qubits, ZNE(folding=folding, seed=2), **options)
    x = torch.rand(3, 2, dtype=torch.float64)
    with torch.no_grad():
        unmitigated, _ = plain(x), mitigated(x)
    noisy = mitigated.last_mitigation.noisy  # [scale factor, batch, column]
    np.testing.assert_allclose(noisy[0, :, 0], unmitigated.numpy(), rtol=0, atol=1e-12)  # one expval: [B]
    assert (np.abs(noisy[2] - noisy[0]) > 1e-3).all()  # the folds were not optimised away


# -- item 7: a user's Aer noise model; circuits without inputs ------------------------------------------


def test_aer_takes_a_user_noise_model_and_refuses_mixing_it_with_rates():
    from qiskit_aer.noise import NoiseModel, depolarizing_error

    model = NoiseModel()
    model.add_all_qubit_quantum_error(depolarizing_error(0.02, 1), ["rx", "ry", "rz", "h"])
    model.add_all_qubit_quantum_error(depolarizing_error(0.08, 2), ["cx"])
    torch.manual_seed(0)
    mine = QuantumLayer(small, 2, {"weights": 1}, backend="aer", noise_model=model).double()
    rates = QuantumLayer(small, 2, {"weights": 1}, backend="aer", depolarizing=(0.02, 0.08)).double()
    ideal = QuantumLayer(small, 2, {"weights": 1}).double()
    rates.load_state_dict(mine.state_dict())
    ideal.load_state_dict(mine.state_dict())
    x = torch.rand(4, 1, dtype=torch.float64)
    assert mine.resolved_backend.capabilities.noise and not mine.resolved_backend.capabilities.exact
    torch.testing.assert_close(mine(x), rates(x), rtol=0, atol=1e-12)  # the same channels on the same gates
    assert (mine(x) - ideal(x)).abs().max() > 1e-3
    manila = backends.get("aer:fake_manila", noise_model=model)  # the device's layout, the user's noise
    assert manila.noise_model is model and manila.capabilities.max_qubits == 5
    clone = pickle.loads(pickle.dumps(mine))  # the backend is rebuilt from its options after loading
    torch.testing.assert_close(clone(x), mine(x), rtol=0, atol=1e-12)
    with pytest.raises(ConfigError, match=r"noise_model=.*depolarizing="):
        backends.get("aer", noise_model=model, depolarizing=0.01)


@pytest.mark.parametrize("backend", ["statevector", "aer", "pennylane:default.qubit"])
def test_a_circuit_without_inputs_is_called_as_layer(backend):
    layer = QuantumLayer(no_inputs, 2, {"weights": 1}, backend=backend).double()
    out = layer()
    theta = layer.weights.detach()[0].item()
    assert out.shape == (3,) and layer.n_outputs == 3 and out.dtype == torch.float64
    want = [math.cos(theta), math.cos(theta / 2) ** 2, math.sin(theta / 2) ** 2]  # <Z1>, P(q0 = 0), P(q0 = 1)
    np.testing.assert_allclose(out.detach().numpy(), want, rtol=0, atol=1e-12)
    out[0].backward()
    assert layer.weights.grad[0].item() == pytest.approx(-math.sin(theta), abs=1e-8)


def test_weight_shapes_default_to_none_and_takes_inputs_follows_the_signature():
    inputs_only = QuantumLayer(one_wire, 1)
    assert inputs_only.weight_shapes == {} and inputs_only.takes_inputs
    assert inputs_only(torch.zeros(2, 1)).shape == (2,)  # one expval alone: [B], as TorchLayer

    def constant():
        qml.Hadamard(0)
        return qml.expval(qml.PauliX(0))

    layer = QuantumLayer(constant, 1)
    assert not layer.takes_inputs and layer().item() == pytest.approx(1.0, abs=1e-12)
    kw_only = QuantumLayer(lambda *, w: (qml.RX(w[0], 0), qml.expval(qml.PauliZ(0)))[1], 1, {"w": 1})
    assert not kw_only.takes_inputs and kw_only().shape == ()  # one expval alone, no inputs: a scalar
