"""Kernel matrices as data: kernel-target alignment (a training objective) and PSD repair (for Gram
matrices estimated with shots or noise)."""

from __future__ import annotations

import reprlib
from typing import Any

import torch

from hybridai.core.errors import ConfigError, ShapeError, invalid


def target_alignment(K: torch.Tensor, y: Any, *, centered: bool = False) -> torch.Tensor:
    """Kernel-target alignment A = <K, T>_F / (||K||_F ||T||_F), a scalar in [-1, 1].

    ``T = y y^T`` for targets ``y`` ``[N]`` (use +-1 class labels, or centred regression
    targets), or ``T = Y Y^T`` for ``[N, C]`` (one-hot classes). ``centered=True`` centres K and
    T in feature space first (Cortes et al., JMLR 13 (2012)). Differentiable in ``K``: use
    ``-target_alignment(kernel.matrix(X), y)`` as a loss for any torch optimiser.
    """
    if not torch.is_tensor(K) or K.ndim != 2 or K.shape[0] != K.shape[1] or K.shape[0] == 0:
        shape = tuple(K.shape) if torch.is_tensor(K) else type(K).__name__
        raise invalid("K", shape, "a square torch.Tensor [N, N] with N >= 1", ShapeError)
    if not torch.isfinite(K.detach()).all():  # NaN would come out as the alignment itself
        raise invalid("K", "a matrix with non-finite values", "finite values only")
    try:
        y = torch.as_tensor(y, device=K.device)
    except (TypeError, ValueError, RuntimeError):
        raise invalid(
            "y", reprlib.repr(y), "numeric targets [N] or [N, C] (+-1 labels, one-hot rows or real values)"
        ) from None
    if y.is_complex():
        raise invalid("y.dtype", y.dtype, "a real floating, integer or bool dtype", ShapeError)
    y = y.to(K.dtype if K.is_floating_point() else torch.get_default_dtype())
    if y.ndim not in (1, 2) or y.shape[0] != K.shape[0]:
        raise invalid(
            "y.shape", tuple(y.shape), f"[{K.shape[0]}] or [{K.shape[0]}, C] (one target per row of K)", ShapeError
        )
    if not torch.isfinite(y).all():
        raise invalid("y", "a tensor with non-finite values", "finite values only")
    T = torch.outer(y, y) if y.ndim == 1 else y @ y.T
    if centered:
        n = K.shape[0]
        H = torch.eye(n, dtype=K.dtype, device=K.device) - 1.0 / n
        K, T = H @ K @ H, H @ T @ H
    norm = torch.linalg.matrix_norm(K) * torch.linalg.matrix_norm(T)
    if norm.detach() == 0:
        raise ConfigError("target_alignment is undefined: K or y y^T is zero (after centring); accepted: non-zero ones")
    return (K * T).sum() / norm


def psd_repair(K: torch.Tensor) -> torch.Tensor:
    """The nearest (Frobenius) positive semi-definite matrix: symmetrise, clip negative eigenvalues to 0.

    For Gram matrices estimated with shots or noise, which can have small negative eigenvalues
    that break SVMs and Cholesky solves. Exact Gram matrices come back unchanged up to rounding.
    Not meant to be back-propagated through (eigenvector gradients are unstable at degeneracies).
    """
    if not torch.is_tensor(K) or K.ndim != 2 or K.shape[0] != K.shape[1] or K.shape[0] == 0:
        shape = tuple(K.shape) if torch.is_tensor(K) else type(K).__name__
        raise invalid("K", shape, "a square torch.Tensor [N, N] with N >= 1", ShapeError)
    if not torch.isfinite(K).all():
        raise invalid("K", "a matrix with non-finite values", "finite values only")
    sym = 0.5 * (K + K.T)
    values, vectors = torch.linalg.eigh(sym)
    return (vectors * values.clamp_min(0)) @ vectors.T
