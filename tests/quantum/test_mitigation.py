"""Zero-noise extrapolation with Mitiq on noisy Aer backends."""

import numpy as np
import pennylane as qml
import pytest
import torch

import hybridai
from hybridai import ZNE, QuantumLayer, backends
from hybridai.core.errors import ConfigError
from hybridai.quantum.mitigation import plot_zne

NOISE = {"depolarizing": (0.01, 0.04)}


def circuit(inputs, weights):
    qml.AngleEmbedding(inputs, wires=range(2))
    qml.BasicEntanglerLayers(weights, wires=range(2))
    qml.CNOT(wires=[0, 1])
    return qml.expval(qml.PauliZ(0)), qml.expval(qml.PauliZ(0) @ qml.PauliZ(1))


def layers(mitigation, **options):
    torch.manual_seed(0)
    ideal = QuantumLayer(circuit, 2, {"weights": (3, 2)}, backend="statevector").double()
    noisy = QuantumLayer(circuit, 2, {"weights": (3, 2)}, backend="aer", mitigation=mitigation, **options).double()
    noisy.load_state_dict(ideal.state_dict())
    return ideal, noisy


@pytest.mark.parametrize("extrapolation", ["richardson", "linear", "poly"])
def test_linear_extrapolations_reduce_the_error_on_a_known_noise_model(extrapolation):
    x = torch.rand(4, 2, dtype=torch.float64)
    ideal, plain = layers(None, **NOISE)  # set up as the mitigated layer: its scale-1 circuit is this one
    _, mitigated = layers(ZNE(scale_factors=(1, 3, 5), extrapolation=extrapolation, order=2), **NOISE)
    with torch.no_grad():
        exact, raw, zne = ideal(x), plain(x), mitigated(x)
    gain = {"richardson": 0.2, "poly": 0.2, "linear": 0.9}[extrapolation]  # linear under-corrects exp. decay
    assert (zne - exact).abs().mean() < gain * (raw - exact).abs().mean()
    result = mitigated.last_mitigation
    assert result.noisy.shape == (3, 4, 2) and np.allclose(result.noisy[0], raw.numpy(), atol=1e-12)
    assert (np.diff(result.noisy[:, :, 0], axis=0) * np.sign(result.noisy[:1, :, 0]) < 0).all()  # decays


@pytest.mark.parametrize("extrapolation", ["richardson", "linear", "poly", "exp"])
def test_combination_equals_mitigs_factory(extrapolation):
    from mitiq.zne import inference

    zne = ZNE(scale_factors=(1, 2, 3, 5), extrapolation=extrapolation, order=2)
    factory = {"richardson": inference.RichardsonFactory, "linear": inference.LinearFactory,
               "poly": inference.PolyFactory, "exp": inference.ExpFactory}[extrapolation]  # fmt: skip
    noisy = np.array([[0.81, 0.4], [0.66, 0.33], [0.54, 0.27], [0.36, 0.19]])
    value, _ = zne.combine(noisy)
    extra = (2,) if extrapolation == "poly" else ()
    for j in range(2):
        assert value[j] == pytest.approx(factory.extrapolate([1, 2, 3, 5], list(noisy[:, j]), *extra), abs=1e-9)
    if extrapolation != "exp":
        expected = [factory.extrapolate([1, 2, 3, 5], list(e), *extra) for e in np.eye(4)]
        np.testing.assert_allclose(zne.coefficients, expected, atol=1e-12)


@pytest.mark.parametrize("extrapolation", ["richardson", "exp"])
def test_gradients_through_zne_equal_finite_differences(extrapolation):
    zne = ZNE(scale_factors=(1, 2, 3), extrapolation=extrapolation)
    # level 0: every folded gate is a physical gate, so the partial fold at scale 2 scales the noise faithfully
    # (and the exponential fit has a decaying exponential to find)
    _, layer = layers(zne, optimization_level=0, **NOISE)
    x = torch.rand(2, 2, dtype=torch.float64, requires_grad=True)
    cot = torch.tensor([0.7, -1.3], dtype=torch.float64)
    (layer(x) * cot).sum().backward()
    h = 1e-4
    with torch.no_grad():
        for param, grad in ((x, x.grad), (layer.weights, layer.weights.grad)):
            flat, g = param.view(-1), grad.view(-1)
            for i in range(0, flat.numel(), 2):
                flat[i] += h
                up = (layer(x) * cot).sum()
                flat[i] -= 2 * h
                down = (layer(x) * cot).sum()
                flat[i] += h
                assert g[i].item() == pytest.approx(
                    ((up - down) / (2 * h)).item(), abs=2e-5 if extrapolation != "exp" else 2e-3
                )


def test_batch_equals_per_sample_and_one_call_for_all_folds():
    _, layer = layers(ZNE(scale_factors=(1, 3, 5)), **NOISE)
    x = torch.rand(3, 2, dtype=torch.float64, requires_grad=True)
    batch = layer(x)
    # every angle occurrence of each fold is shifted separately: (2 inputs + 6 weights) x scale factor
    stats = layer.execution_stats
    assert (stats["calls"], stats["circuits"], stats["shots"]) == (1, 3 * sum(1 + 2 * 8 * s for s in (1, 3, 5)), 0)
    with torch.no_grad():
        for i in range(3):
            torch.testing.assert_close(layer(x[i]), batch[i].detach(), rtol=0, atol=1e-12)


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"scale_factors": ()}, "non-empty"),
        ({"scale_factors": (0.5, 1, 3)}, ">= 1"),
        ({"scale_factors": (1, 5, 3)}, "increasing"),
        ({"scale_factors": (1,)}, "at least 2"),
        ({"extrapolation": "cubic"}, "extrapolation="),
        ({"folding": "local"}, "folding="),
        ({"engine": "ibmq"}, "engine="),
    ],
)
def test_invalid_settings(kwargs, match):
    with pytest.raises(ConfigError, match=match):
        ZNE(**kwargs)


def test_mitigation_only_where_it_means_something():
    for exact in ("statevector", "pennylane:default.qubit", "aer"):
        with pytest.warns(UserWarning, match="exact, noiseless"):
            QuantumLayer(circuit, 2, {"weights": (3, 2)}, backend=exact, mitigation=ZNE())
    with pytest.raises(ConfigError, match="engine='mitiq'"):
        QuantumLayer(circuit, 2, {"weights": (3, 2)}, backend="aer", mitigation=ZNE(engine="ibm"), **NOISE)
    with pytest.raises(ConfigError, match=r"mitigation='zne'.*hybridai.ZNE"):
        QuantumLayer(circuit, 2, {"weights": (3, 2)}, backend="aer", mitigation="zne", **NOISE)
    for name in ("statevector", "pennylane:default.mixed", "aer"):  # layers and kernels take it, not backends
        with pytest.raises(ConfigError, match=r"does not accept the option\(s\) \['mitigation'\]"):
            backends.get(name, mitigation=ZNE())


def test_ibm_engine_sets_runtime_resilience_and_warns_about_ignored_options():
    zne = ZNE(scale_factors=(1, 3), extrapolation="linear", seed=3, engine="ibm")
    layer = QuantumLayer(circuit, 2, {"weights": (3, 2)}, backend="ibm:fake_manila", mitigation=zne)
    backend = layer.resolved_backend
    assert backend.capabilities.mitigation_engines == ("ibm",)
    with pytest.warns(UserWarning) as record:
        estimator = backend.estimator(None, layer.mitigation)
    messages = " ".join(str(w.message) for w in record)
    assert "folding='global'" in messages and "ignores seed" in messages
    resilience = estimator.options.resilience
    assert resilience.zne_mitigation and list(resilience.zne.noise_factors) == [1.0, 3.0]
    assert resilience.zne.extrapolator == "linear"
    assert not backend.estimator(None, None).options.resilience.zne_mitigation  # per call, not per backend


def test_plot_zne_returns_a_figure_and_saves_only_when_asked(tmp_path):
    import matplotlib
    from matplotlib.figure import Figure

    _, layer = layers(ZNE(), **NOISE)
    with torch.no_grad():
        layer(torch.rand(2, 2, dtype=torch.float64))
    backend = matplotlib.get_backend()
    fig = plot_zne(layer.last_mitigation, sample=1, column=1, ideal=0.25)
    assert isinstance(fig, Figure) and matplotlib.get_backend() == backend  # no matplotlib.use, no pyplot state
    (ax,) = fig.axes
    assert {t.get_text() for t in ax.get_legend().get_texts()} >= {"zero-noise value", "ideal (noiseless)"}
    assert list(tmp_path.iterdir()) == []  # nothing saved without path=
    fig.savefig(tmp_path / "mine.png")
    assert (tmp_path / "mine.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    saved = plot_zne(layer.last_mitigation, tmp_path / "zne.png")  # path= saves AND returns the Figure
    assert isinstance(saved, Figure) and (tmp_path / "zne.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    with pytest.raises(ConfigError, match="sample=5"):
        plot_zne(layer.last_mitigation, sample=5)
    assert hybridai.mitigation.plot_zne is plot_zne


def test_plot_zne_draws_into_the_callers_axes():
    from matplotlib.figure import Figure

    _, layer = layers(ZNE(), **NOISE)
    with torch.no_grad():
        layer(torch.rand(1, 2, dtype=torch.float64))
    mine = Figure()
    left, right = mine.subplots(1, 2)
    assert plot_zne(layer.last_mitigation, ax=right) is mine
    assert not left.lines and len(right.lines) >= 3  # noisy points, fit, zero-noise value


def test_quantum_kernel_with_zne_is_closer_to_the_noiseless_gram_matrix():
    def feature_map(x):
        qml.AngleEmbedding(x, wires=range(2))
        qml.CNOT(wires=[0, 1])
        qml.AngleEmbedding(x, wires=range(2), rotation="Y")

    torch.manual_seed(3)
    X = torch.rand(4, 2, dtype=torch.float64)
    exact = hybridai.QuantumKernel(feature_map, 2).matrix(X)
    plain = hybridai.QuantumKernel(feature_map, 2, backend="aer", **NOISE).matrix(X)  # set up as the ZNE kernel
    zne = hybridai.QuantumKernel(feature_map, 2, backend="aer", mitigation=ZNE(), **NOISE).matrix(X)
    off = ~torch.eye(4, dtype=torch.bool)
    assert (zne - exact)[off].abs().mean() < 0.3 * (plain - exact)[off].abs().mean()


def test_exponential_fit_failure_is_a_clear_error():
    zne = ZNE(extrapolation="exp")
    with pytest.raises(ConfigError, match="asymptote=0.0"):
        zne.combine(np.array([[0.5], [0.6], [0.9]]))  # grows with noise: no decaying exponential fits
    stable = ZNE(extrapolation="exp", asymptote=0.0)
    value, _ = stable.combine(np.array([[0.5], [0.25], [0.125]]))  # halves per two folds: 0.5 / sqrt(1/2)
    assert value[0] == pytest.approx(0.5 * 2**0.5, rel=1e-6)


def test_folds_are_fenced_by_barriers_only_for_executors_that_optimise():
    from hybridai.core.execution import ExecutionConfig
    from hybridai.quantum.execution.run import execute
    from hybridai.quantum.mitigation.folding import elementary_ops, fold_tape, is_fold_barrier

    tape = qml.tape.make_qscript(circuit)(torch.rand(2), torch.rand(3, 2))
    plain, fenced = fold_tape(tape, ZNE(), (0, 1)), fold_tape(tape, ZNE(), (0, 1), barriers=True)
    assert plain[0].operations == fenced[0].operations == tape.operations  # scale 1: the circuit itself
    n_gates = len(elementary_ops(tape.operations))
    for scale, (a, b) in list(zip((1, 3, 5), zip(plain, fenced, strict=True), strict=True))[1:]:
        gates = [op for op in b.operations if not is_fold_barrier(op)]
        assert [op.name for op in gates] == [op.name for op in a.operations] and len(gates) == scale * n_gates
        assert sum(map(is_fold_barrier, b.operations)) == scale - 1  # U | U^dagger | U | ...
    random = fold_tape(tape, ZNE(scale_factors=(1, 1.5), folding="random", seed=4), (0, 1), barriers=True)[1]
    ops = random.operations
    for k, op in enumerate(ops):  # every folded gate G G^dagger G is fenced off: G | G^dagger | G
        if op.name.startswith("Adjoint("):
            assert is_fold_barrier(ops[k - 1]) and is_fold_barrier(ops[k + 1])

    seen = []

    class Recorder(type(backends.get("aer"))):
        def execute(self, tapes, config):
            seen.append((config.keep_gates, sum(is_fold_barrier(op) for t in tapes for op in t.operations)))
            return super().execute(tapes, config)

    qiskit = Recorder(depolarizing=0.01)
    execute(qiskit, [tape], ExecutionConfig((0, 1), mitigation=ZNE()))
    assert seen == [(False, 0 + 2 + 4)]  # the Qiskit executors transpile folds as any circuit: barriers fence them
