"""QuantumKernelRidge, QSVC, QSVR: scikit-learn's estimator checks and agreement with scikit-learn itself."""

import pickle

import numpy as np
import pennylane as qml
import pytest
import torch
from sklearn.base import clone
from sklearn.calibration import CalibratedClassifierCV
from sklearn.kernel_ridge import KernelRidge
from sklearn.model_selection import GridSearchCV, KFold
from sklearn.svm import SVC, SVR
from sklearn.utils.estimator_checks import parametrize_with_checks

import hybridai
from hybridai import QSVC, QSVR, QuantumKernel, QuantumKernelRidge

N = 3
SVM_XFAIL = {
    # libsvm's own behaviour, marked the same way for sklearn.svm.SVC/SVR in scikit-learn's test suite
    "check_sample_weight_equivalence_on_dense_data": "sample_weight is not equivalent to removing/repeating samples",
}


def feature_map(x, w):
    qml.AngleEmbedding(x, wires=range(N), rotation="Y")
    for i in range(N):
        qml.CNOT([i, (i + 1) % N])
        qml.RY(w[i], wires=i)
    qml.AngleEmbedding(x, wires=range(N), rotation="Z")


def make_kernel(seed=0):
    torch.manual_seed(seed)
    return QuantumKernel(feature_map, N, {"w": N}).double()


def pennylane_gram(kernel, A, B):
    """Circuit by circuit with PennyLane: the oracle for the Gram matrices handed to scikit-learn."""
    w = kernel.w.detach()

    @qml.qnode(qml.device("default.qubit", wires=N), interface="torch")
    def circuit(a, b):
        feature_map(a, w)
        qml.adjoint(feature_map)(b, w)
        return qml.probs(wires=range(N))

    return np.asarray(qml.kernels.kernel_matrix(A, B, lambda a, b: float(circuit(a, b)[0])))


def regression_data(n, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.uniform(0, 2, size=(n, N))
    return X, np.sin(X.sum(1)) + 0.1 * X[:, 0]


@parametrize_with_checks(
    [QuantumKernelRidge(), QSVC(), QSVR()],
    expected_failed_checks=lambda est: SVM_XFAIL if isinstance(est, QSVC | QSVR) else {},
)
def test_scikit_learn_estimator_checks(estimator, check):
    check(estimator)


def test_kernel_ridge_equals_scikit_learn_on_pennylane_gram():
    kernel = make_kernel()
    X, y = regression_data(10)
    X_test, _ = regression_data(4, seed=1)
    model = QuantumKernelRidge(kernel, alpha=0.01).fit(X, y)
    oracle = KernelRidge(alpha=0.01, kernel="precomputed").fit(pennylane_gram(kernel, X, X), y)
    np.testing.assert_allclose(model.predict(X_test), oracle.predict(pennylane_gram(kernel, X_test, X)), atol=1e-8)
    np.testing.assert_allclose(model.dual_coef_, oracle.dual_coef_, atol=1e-8)
    assert model.score(X, y) > 0.9


def test_svc_and_svr_equal_scikit_learn_on_pennylane_gram():
    kernel = make_kernel(1)
    X, t = regression_data(12)
    labels = np.where(t > np.median(t), "high", "low")
    X_test, _ = regression_data(5, seed=2)
    gram, gram_test = pennylane_gram(kernel, X, X), pennylane_gram(kernel, X_test, X)
    svc = QSVC(kernel, C=10.0, tol=1e-10).fit(X, labels)
    oracle = SVC(kernel="precomputed", C=10.0, tol=1e-10).fit(gram, labels)
    np.testing.assert_allclose(svc.decision_function(X_test), oracle.decision_function(gram_test), atol=1e-6)
    assert list(svc.predict(X_test)) == list(oracle.predict(gram_test))
    assert set(svc.classes_) == {"high", "low"} and svc.score(X, labels) >= 0.9
    svr = QSVR(kernel, C=10.0, epsilon=0.01, tol=1e-10).fit(X, t)
    oracle = SVR(kernel="precomputed", C=10.0, epsilon=0.01, tol=1e-10).fit(gram, t)
    np.testing.assert_allclose(svr.predict(X_test), oracle.predict(gram_test), atol=1e-6)


def test_probabilities_through_calibration():
    X, t = regression_data(20)
    labels = (t > np.median(t)).astype(int)
    assert not hasattr(QSVC(make_kernel()), "predict_proba")
    model = CalibratedClassifierCV(QSVC(make_kernel()), ensemble=False, cv=3).fit(X, labels)
    proba = model.predict_proba(X)
    assert proba.shape == (20, 2)
    np.testing.assert_allclose(proba.sum(1), 1.0)
    assert ((proba[:, 1] > 0.5) == labels).mean() >= 0.8


def test_params_clone_grid_search_pickle():
    kernel = make_kernel(2)
    model = QuantumKernelRidge(kernel, alpha=0.5)
    assert model.get_params() == {"kernel": kernel, "alpha": 0.5}
    assert model.set_params(alpha=0.1).alpha == 0.1
    copy = clone(model)
    assert copy.kernel is not kernel and torch.equal(copy.kernel.w, kernel.w)
    X, y = regression_data(16)
    search = GridSearchCV(model, {"alpha": [1e-3, 1.0]}, cv=KFold(3, shuffle=True, random_state=0)).fit(X, y)
    assert search.best_params_["alpha"] in (1e-3, 1.0) and np.isfinite(search.best_score_)
    fitted = model.fit(X, y)
    restored = pickle.loads(pickle.dumps(fitted))
    np.testing.assert_allclose(restored.predict(X[:3]), fitted.predict(X[:3]), rtol=0, atol=0)


def test_predict_tensor_is_differentiable():
    X, y = regression_data(10)
    model = QuantumKernelRidge(make_kernel(3), alpha=0.01).fit(X, y)
    x = torch.tensor(regression_data(3, seed=4)[0], requires_grad=True)
    out = model.predict_tensor(x)
    np.testing.assert_allclose(out.detach().numpy(), model.predict(x.detach().numpy()), atol=1e-12)
    (grad,) = torch.autograd.grad(out.sum(), x)
    h = 1e-6
    for j in range(N):
        step = np.zeros_like(x.detach().numpy())
        step[:, j] = h
        fd = (model.predict(x.detach().numpy() + step) - model.predict(x.detach().numpy() - step)) / (2 * h)
        np.testing.assert_allclose(grad[:, j].numpy(), fd, atol=1e-6)
    assert torch.autograd.gradcheck(model.predict_tensor, (x,))


def test_default_kernel_size_and_bad_input():
    rng = np.random.default_rng(0)
    X, y = rng.uniform(size=(6, 11)), rng.uniform(size=6)
    model = QuantumKernelRidge().fit(X, y)
    assert model.kernel is None and model.kernel_.n_qubits == 8 and model.n_features_in_ == 11
    with pytest.raises(ValueError, match="X has 10 features, but QuantumKernelRidge is expecting 11"):
        model.predict(X[:, :10])
    with pytest.raises(ValueError, match="NaN"):
        QSVC().fit(np.array([[0.1, np.nan], [0.2, 0.3]]), [0, 1])
    with pytest.raises(ValueError, match="0 sample"):
        QSVR().fit(np.zeros((0, 2)), [])
    with pytest.raises(hybridai.HybridAIError, match=r"kernel=.*accepted: None or a hybridai.QuantumKernel"):
        QuantumKernelRidge(kernel="rbf").fit(X, y)
    with pytest.raises(hybridai.ShapeError, match=r"X.shape=\(2, 4\).*\[N, 11\]"):
        model.predict_tensor(torch.zeros(2, 4, dtype=torch.float64))
