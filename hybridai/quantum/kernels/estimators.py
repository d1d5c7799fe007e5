"""scikit-learn estimators on a QuantumKernel: QuantumKernelRidge, QSVC and QSVR.

Each computes Gram matrices with its ``kernel`` (a ``QuantumKernel``; ``None`` builds PennyLane's
IQP embedding at ``fit``: one qubit per feature, re-uploaded on 8 qubits beyond 8 features) and
hands them to scikit-learn's own ``KernelRidge``/``SVC``/``SVR`` with ``kernel="precomputed"``,
so the optimisation and the input validation are scikit-learn's. ``get_params``/``set_params``,
``clone``, pipelines and grid searches work as for any scikit-learn estimator. scikit-learn is
imported when this module is first used, never by ``import hybridai``.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch
from sklearn.base import BaseEstimator, ClassifierMixin, RegressorMixin
from sklearn.kernel_ridge import KernelRidge
from sklearn.svm import SVC, SVR
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_is_fitted, validate_data

from hybridai.core.errors import ShapeError, invalid
from hybridai.quantum.kernels.quantum_kernel import DEFAULT_MAX_QUBITS, IQPFeatureMap, QuantumKernel


class _QuantumKernelEstimator(BaseEstimator):
    """Shared plumbing: the fitted kernel ``kernel_`` and Gram matrices as float64 numpy arrays."""

    kernel: QuantumKernel | None

    def _build_kernel(self, n_features: int) -> Any:
        if self.kernel is None:
            n_qubits = min(n_features, DEFAULT_MAX_QUBITS)
            return QuantumKernel(IQPFeatureMap(n_qubits), n_qubits=n_qubits, n_features=n_features)
        if not callable(getattr(self.kernel, "matrix", None)):
            raise invalid("kernel", self.kernel, "None or a hybridai.QuantumKernel (an object with .matrix(X, Y))")
        return self.kernel

    def _gram(self, X: np.ndarray, Y: np.ndarray | None = None) -> np.ndarray:
        with torch.no_grad():
            K = self.kernel_.matrix(torch.tensor(X), None if Y is None else torch.tensor(Y))
        return K.detach().cpu().double().numpy()

    def _fit_gram(self, X: np.ndarray) -> np.ndarray:
        self.kernel_ = self._build_kernel(X.shape[1])
        self.X_fit_ = X
        return self._gram(X)

    def _predict_gram(self, X: Any) -> np.ndarray:
        check_is_fitted(self, "X_fit_")
        X = validate_data(self, X, reset=False, dtype=np.float64)
        return self._gram(X, self.X_fit_)


class QuantumKernelRidge(RegressorMixin, _QuantumKernelEstimator):
    """Kernel ridge regression with a quantum kernel.

    Args:
        kernel: a ``hybridai.QuantumKernel``, or ``None`` for ``IQPFeatureMap`` (features as radians).
        alpha: ridge regularisation (in units of the targets squared per kernel unit).
    """

    def __init__(self, kernel: QuantumKernel | None = None, alpha: float = 1.0) -> None:
        self.kernel = kernel
        self.alpha = alpha

    def __sklearn_tags__(self) -> Any:
        tags = super().__sklearn_tags__()
        tags.target_tags.multi_output = True  # y may be [N, T], as in KernelRidge
        return tags

    def fit(self, X: Any, y: Any, sample_weight: Any = None) -> QuantumKernelRidge:
        """Solve (K + alpha I) c = y for the dual coefficients ``dual_coef_``."""
        X, y = validate_data(self, X, y, y_numeric=True, multi_output=True, dtype=np.float64)
        self.ridge_ = KernelRidge(alpha=self.alpha, kernel="precomputed").fit(self._fit_gram(X), y, sample_weight)
        self.dual_coef_ = self.ridge_.dual_coef_
        return self

    def predict(self, X: Any) -> np.ndarray:
        """Predicted targets ``[N]`` (or ``[N, T]``), in the units of ``y``."""
        K = self._predict_gram(X)
        return self.ridge_.predict(K)

    def predict_tensor(self, X: torch.Tensor) -> torch.Tensor:
        """Differentiable prediction: a torch tensor with autograd to ``X`` and the kernel parameters.

        ``-torch.autograd.grad(model.predict_tensor(r).sum(), r)[0]`` gives forces from a fitted
        energy model (energy units per input unit).
        """
        check_is_fitted(self, "X_fit_")
        X_fit = torch.from_numpy(self.X_fit_)
        if torch.is_tensor(X) and X.is_floating_point():
            X_fit = X_fit.to(dtype=X.dtype, device=X.device)
        if torch.is_tensor(X) and X.ndim == 2 and X.shape[1] != self.n_features_in_:
            raise invalid("X.shape", tuple(X.shape), f"[N, {self.n_features_in_}] (the width seen in fit)", ShapeError)
        K = self.kernel_.matrix(X, X_fit)
        return K @ torch.as_tensor(self.dual_coef_, dtype=K.dtype, device=K.device)


class QSVC(ClassifierMixin, _QuantumKernelEstimator):
    """Support-vector classifier with a quantum kernel (scikit-learn's ``SVC`` on its Gram matrix).

    For class probabilities wrap it as scikit-learn recommends for ``SVC``:
    ``CalibratedClassifierCV(QSVC(kernel), ensemble=False)``.

    Args:
        kernel: a ``hybridai.QuantumKernel``, or ``None`` for ``IQPFeatureMap`` (features as radians).
        C: inverse regularisation strength.
        class_weight: as in ``sklearn.svm.SVC``.
        tol: stopping tolerance of libsvm.
    """

    def __init__(
        self,
        kernel: QuantumKernel | None = None,
        C: float = 1.0,
        class_weight: dict | str | None = None,
        tol: float = 1e-3,
    ) -> None:
        self.kernel = kernel
        self.C = C
        self.class_weight = class_weight
        self.tol = tol

    def fit(self, X: Any, y: Any, sample_weight: Any = None) -> QSVC:
        """Fit the SVM on the quantum Gram matrix of ``X``."""
        X, y = validate_data(self, X, y, dtype=np.float64)
        check_classification_targets(y)
        svc = SVC(kernel="precomputed", C=self.C, class_weight=self.class_weight, tol=self.tol)
        self.svc_ = svc.fit(self._fit_gram(X), y, sample_weight)
        self.classes_ = self.svc_.classes_
        self.support_ = self.svc_.support_
        return self

    def predict(self, X: Any) -> np.ndarray:
        """Predicted class labels ``[N]``."""
        K = self._predict_gram(X)
        return self.svc_.predict(K)

    def decision_function(self, X: Any) -> np.ndarray:
        """Signed distances to the separating hyperplane(s), ``[N]`` or ``[N, n_classes]``."""
        K = self._predict_gram(X)
        return self.svc_.decision_function(K)


class QSVR(RegressorMixin, _QuantumKernelEstimator):
    """Epsilon support-vector regression with a quantum kernel (scikit-learn's ``SVR``).

    Args:
        kernel: a ``hybridai.QuantumKernel``, or ``None`` for ``IQPFeatureMap`` (features as radians).
        C: inverse regularisation strength.
        epsilon: width of the insensitive tube, in the units of ``y``.
        tol: stopping tolerance of libsvm.
    """

    def __init__(
        self, kernel: QuantumKernel | None = None, C: float = 1.0, epsilon: float = 0.1, tol: float = 1e-3
    ) -> None:
        self.kernel = kernel
        self.C = C
        self.epsilon = epsilon
        self.tol = tol

    def fit(self, X: Any, y: Any, sample_weight: Any = None) -> QSVR:
        """Fit the SVR on the quantum Gram matrix of ``X``."""
        X, y = validate_data(self, X, y, y_numeric=True, dtype=np.float64)
        self.svr_ = SVR(kernel="precomputed", C=self.C, epsilon=self.epsilon, tol=self.tol).fit(
            self._fit_gram(X), y, sample_weight
        )
        self.support_ = self.svr_.support_
        return self

    def predict(self, X: Any) -> np.ndarray:
        """Predicted targets ``[N]``, in the units of ``y``."""
        K = self._predict_gram(X)
        return self.svr_.predict(K)
