"""Quantum-kernel matrices divided among the ranks of a ``torch.distributed`` group, and kernel methods that use
them without ever gathering the N x N matrix.

``gram_shards(kernel, X)`` gives each rank its share of the Gram matrix as row blocks (``ShardedGram``): every rank
prepares the statevectors (fidelity kernel) or Bloch vectors (projected kernel) of its share of the samples, the
features are exchanged (``N x 2^n`` numbers, not products), and each rank computes only its own rows. A symmetric
matrix (``Y`` None) is computed once per pair, as in one process: the rows are cut into ``2 * world`` equal
chunks, rank ``r`` owns chunks ``r`` and ``2 * world - 1 - r``, and stores each chunk's entries on and right of
the diagonal (about ``N^2 / (2 * world)`` numbers and as many overlaps per rank). ``ShardedGram.matvec`` (``K @ v``
with one all-reduce of ``N`` numbers) is what kernel methods need: ``ShardedKernelRidge`` solves
``(K + alpha I) c = y`` by conjugate gradients and ``sharded_alignment`` computes the kernel-target alignment.
``gather()`` assembles the whole matrix on every rank when it is asked for.

Without a process group (or with one rank) everything runs in this process, with the same results. Values carry no
autograd history: these are for fitting estimators on many samples, not for training the feature map.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch
import torch.distributed as dist

from hybridai.core.errors import ConfigError, ShapeError, invalid
from hybridai.quantum.kernels.gram_blocks import block_rows, fidelity_block, fidelity_features, projected_block
from hybridai.quantum.kernels.quantum_kernel import QuantumKernel


def group() -> tuple[int, int]:
    """This process's rank and the group's size; ``(0, 1)`` without a process group."""
    if dist.is_available() and dist.is_initialized():
        return dist.get_rank(), dist.get_world_size()
    return 0, 1


def _targets(y: Any, n: int) -> torch.Tensor:
    """``y`` as float64 targets ``[n]`` or ``[n, T]``, else a ShapeError naming ``y``."""
    try:
        target = torch.as_tensor(y, dtype=torch.float64)
    except (TypeError, ValueError, RuntimeError):
        target = None
    if target is None or target.ndim not in (1, 2) or target.shape[0] != n or not torch.isfinite(target).all():
        shape = tuple(target.shape) if target is not None else type(y).__name__
        raise invalid("y.shape", shape, f"finite numeric targets [{n}] or [{n}, T]", ShapeError)
    return target


def _exchange_device() -> torch.device:
    """Where the group's backend exchanges tensors: the current CUDA device with NCCL, else the CPU (gloo)."""
    return torch.device("cuda", torch.cuda.current_device()) if dist.get_backend() == "nccl" else torch.device("cpu")


def _all_reduce(values: torch.Tensor) -> torch.Tensor:
    """The sum of ``values`` over ranks (on the device the group's backend reduces on), back on its device."""
    if group()[1] == 1:
        return values
    summed = values.to(_exchange_device()).contiguous()
    dist.all_reduce(summed, op=dist.ReduceOp.SUM)
    return summed.to(values.device)


def _all_gather_rows(rows: torch.Tensor, n: int) -> torch.Tensor:
    """Every rank's ``rows`` (equal row counts, padded) in rank order, the first ``n`` kept."""
    if group()[1] == 1:
        return rows[:n]
    real = torch.view_as_real(rows) if rows.is_complex() else rows
    real = real.to(_exchange_device()).contiguous()
    parts = [torch.empty_like(real) for _ in range(group()[1])]
    dist.all_gather(parts, real)
    whole = torch.cat(parts)[:n].to(rows.device)
    return torch.view_as_complex(whole) if rows.is_complex() else whole


def _bounds(n: int, chunks: int) -> list[int]:
    """Starts of ``chunks`` near-equal contiguous chunks of ``range(n)``, and ``n``."""
    return [n * i // chunks for i in range(chunks + 1)]


@dataclass(frozen=True)
class ShardedGram:
    """This rank's share of a kernel matrix ``[N, M]``: ``blocks`` of ``(row start, column start, values)``.

    A symmetric matrix holds, for each owned chunk of rows ``a:b``, ``K[a:b, a:]`` (its entries on and right of
    the diagonal; the rest follow by symmetry); a rectangular one holds ``K[a:b, :]``."""

    shape: tuple[int, int]
    symmetric: bool
    blocks: tuple[tuple[int, int, torch.Tensor], ...]

    @property
    def nbytes(self) -> int:
        """Bytes of matrix entries this rank holds."""
        return sum(values.numel() * values.element_size() for _, _, values in self.blocks)

    def _local(self, v: torch.Tensor) -> torch.Tensor:
        out = v.new_zeros((self.shape[0], *v.shape[1:]))
        for a, c, values in self.blocks:
            b = a + values.shape[0]
            out[a:b] += values @ v[c:]
            if self.symmetric:  # the transposed part below the chunk: K[b:, a:b] = K[a:b, b:]^T
                out[b:] += values[:, b - a :].T @ v[a:b]
        return out

    def matvec(self, v: torch.Tensor) -> torch.Tensor:
        """``K @ v`` for ``v`` ``[M]`` or ``[M, T]`` (the same on every rank): every rank gets all ``N`` rows,
        after one all-reduce."""
        if v.shape[0] != self.shape[1]:
            raise invalid("v.shape", tuple(v.shape), f"[{self.shape[1]}] or [{self.shape[1]}, T]", ShapeError)
        dtype = self.blocks[0][2].dtype if self.blocks else v.dtype
        return _all_reduce(self._local(v.to(dtype)))

    def squared_norm(self) -> torch.Tensor:
        """``||K||_F^2`` (every rank)."""
        total = torch.zeros((), dtype=torch.float64)
        for _, _, values in self.blocks:
            if self.symmetric:
                width = values.shape[0]
                total += values[:, :width].double().square().sum() + 2 * values[:, width:].double().square().sum()
            else:
                total += values.double().square().sum()
        return _all_reduce(total)

    def gather(self) -> torch.Tensor:
        """The whole matrix ``[N, M]`` on every rank (``N * M`` numbers exchanged)."""
        dtype = self.blocks[0][2].dtype if self.blocks else torch.float64
        device = self.blocks[0][2].device if self.blocks else torch.device("cpu")
        K = torch.zeros(self.shape, dtype=dtype, device=device)
        for a, c, values in self.blocks:
            b = a + values.shape[0]
            K[a:b, c:] = values
            if self.symmetric:
                K[b:, a:b] = values[:, b - a :].T
        return _all_reduce(K)


def _features(kernel: QuantumKernel, samples: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """The left and right factors (``gram_blocks``) of every sample's features, each rank computing its share."""
    rank, world = group()
    bounds = _bounds(samples.shape[0], world)
    size = max(bounds[i + 1] - bounds[i] for i in range(world))
    mine = samples[bounds[rank] : bounds[rank + 1]]
    if mine.shape[0] < size:  # equal shares for the exchange: padded with copies of the first sample
        mine = torch.cat([mine, samples[:1].expand(size - mine.shape[0], -1)])
    if kernel.kind == "fidelity":
        features = kernel.states(mine)
    else:
        features = kernel.bloch_vectors(mine).reshape(mine.shape[0], -1)
    parts = _all_gather_rows(features, world * size)
    features = torch.cat([parts[r * size : r * size + bounds[r + 1] - bounds[r]] for r in range(world)])
    if kernel.kind == "fidelity":
        return fidelity_features(features)
    return features, features


def gram_shards(kernel: QuantumKernel, X: Any, Y: Any = None) -> ShardedGram:
    """This rank's share of ``kernel(X, Y)`` ``[N, M]`` (``Y=None``: ``X``, symmetric); see the module docstring.

    ``kernel``: a ``hybridai.QuantumKernel`` whose fidelity is computed from statevectors (an exact backend,
    ``shots=None``) or a projected kernel. Row blocks are computed within ``kernel.gram_memory``."""
    if not isinstance(kernel, QuantumKernel):
        raise invalid("kernel", type(kernel).__name__, "a hybridai.QuantumKernel")
    if kernel.kind == "fidelity" and kernel.method != "statevector":
        raise invalid(
            "kernel.method",
            kernel.method,
            "'statevector' for a sharded fidelity kernel (an exact backend, shots=None) or kind='projected'; "
            "compute-uncompute kernels are computed with kernel(X, Y)",
        )
    X, Y = kernel.check_inputs(X, Y)
    n = X.shape[0]
    with torch.no_grad():
        left, right = _features(kernel, X if Y is None else torch.cat([X, Y]))
        m = n if Y is None else right.shape[0] // (2 if kernel.kind == "fidelity" else 1) - n
        first = 0 if Y is None else n  # where the column samples start

        def columns(c0: int) -> torch.Tensor:  # the right factor of columns c0: (Re rows, then Im rows)
            if kernel.kind != "fidelity":
                return right[first + c0 : first + m]
            half = right.shape[0] // 2
            return torch.cat([right[first + c0 : first + m], right[half + first + c0 : half + first + m]])

        def block(rows: torch.Tensor, cols: torch.Tensor) -> torch.Tensor:
            if kernel.kind == "fidelity":
                return fidelity_block(rows, cols)
            return projected_block(rows, cols, kernel.gamma)

        rank, world = group()
        owned = [rank, 2 * world - 1 - rank] if Y is None else [rank]
        bounds = _bounds(n, 2 * world if Y is None else world)
        step = block_rows(m, left.element_size(), kernel.gram_memory, left.device, kernel.block_size)
        blocks = []
        for chunk in owned:
            a, b = bounds[chunk], bounds[chunk + 1]
            if a == b:
                continue
            c = a if Y is None else 0
            values = torch.cat([block(left[r : min(r + step, b)], columns(c)) for r in range(a, b, step)])
            if Y is None:  # the diagonal square exactly symmetric, as in one process
                square = values[:, : b - a]
                square.copy_(0.5 * (square + square.T))
            blocks.append((a, c, values.to(X.dtype)))
    return ShardedGram((n, m), Y is None, tuple(blocks))


def sharded_alignment(gram: ShardedGram, y: Any, *, centered: bool = False) -> torch.Tensor:
    """Kernel-target alignment ``<K, y y^T>_F / (||K||_F ||y y^T||_F)`` of a symmetric ``ShardedGram``, as
    ``hybridai.target_alignment(gram.gather(), y, centered=...)`` gives it, from one or two ``matvec``s."""
    if not gram.symmetric:
        raise invalid(
            "gram", "a rectangular ShardedGram", "the symmetric Gram matrix of one set of samples", ShapeError
        )
    n = gram.shape[0]
    Y = _targets(y, n).reshape(n, -1)
    squared = gram.squared_norm()
    if centered:
        Y = Y - Y.mean(0)
        ones = gram.matvec(torch.ones(n, dtype=torch.float64)).double()
        squared = squared - 2.0 / n * ones.square().sum() + ones.sum().square() / n**2
    inner = (Y * gram.matvec(Y).double()).sum()
    norm = squared.clamp_min(0).sqrt() * torch.linalg.matrix_norm(Y.T @ Y)
    if norm == 0:
        raise ConfigError("target_alignment is undefined: K or y y^T is zero (after centring); accepted: non-zero ones")
    return inner / norm


class ShardedKernelRidge:
    """Kernel ridge regression on a sharded Gram matrix: ``(K + alpha I) c = y`` solved by conjugate gradients
    (one all-reduce per iteration), so no rank holds ``K``; the same dual coefficients and predictions as
    ``hybridai.QuantumKernelRidge`` (scikit-learn's ``KernelRidge``) to the solver's tolerance.

    Args:
        kernel: a ``hybridai.QuantumKernel`` (as ``gram_shards`` takes it).
        alpha: ridge regularisation, > 0.
        tol: relative residual ``||y - (K + alpha I) c|| / ||y||`` at which the solve stops (default 1e-12).
        max_iter: at most this many iterations (default ``max(100, 2 * N)``); not converging by then is an error.
    """

    def __init__(self, kernel: QuantumKernel, alpha: float = 1.0, *, tol: float = 1e-12, max_iter: int | None = None):
        if isinstance(alpha, bool) or not isinstance(alpha, int | float) or not alpha > 0:
            raise invalid("alpha", alpha, "a number > 0")
        if isinstance(tol, bool) or not isinstance(tol, int | float) or not 0 < tol < 1:
            raise invalid("tol", tol, "a number in (0, 1)")
        if max_iter is not None and (isinstance(max_iter, bool) or not isinstance(max_iter, int) or max_iter < 1):
            raise invalid("max_iter", max_iter, "None or an int >= 1")
        self.kernel, self.alpha, self.tol, self.max_iter = kernel, float(alpha), float(tol), max_iter

    def fit(self, X: Any, y: Any) -> ShardedKernelRidge:
        """Dual coefficients ``dual_coef_`` ``[N]`` (or ``[N, T]``) on every rank; ``iterations_`` taken."""
        gram = gram_shards(self.kernel, X)
        X_checked, _ = self.kernel.check_inputs(X)
        target = _targets(y, gram.shape[0])
        B = target.reshape(gram.shape[0], -1)
        coef, self.iterations_ = self._solve(gram, B)
        self.dual_coef_ = coef.reshape(target.shape)
        self.X_fit_ = X_checked.detach()
        self.gram_nbytes_ = gram.nbytes
        return self

    def _solve(self, gram: ShardedGram, B: torch.Tensor) -> tuple[torch.Tensor, int]:
        """Conjugate gradients on every column of ``B`` at once (each column its own step sizes)."""
        x = torch.zeros_like(B)
        r = B.clone()
        p = r.clone()
        rr = (r * r).sum(0)
        stop = self.tol**2 * (B * B).sum(0)
        limit = self.max_iter or max(100, 2 * gram.shape[0])
        for iteration in range(limit + 1):
            if bool((rr <= stop).all()):
                return x, iteration
            if iteration == limit:
                break
            Ap = gram.matvec(p).double() + self.alpha * p
            step = rr / (p * Ap).sum(0).clamp_min(torch.finfo(torch.float64).tiny)
            x += step * p
            r -= step * Ap
            rr_next = (r * r).sum(0)
            p = r + (rr_next / rr.clamp_min(torch.finfo(torch.float64).tiny)) * p
            rr = rr_next
        raise ConfigError(
            f"the conjugate-gradient solve did not reach tol={self.tol} in max_iter={limit} iterations (relative "
            f"residual {float((rr / (B * B).sum(0).clamp_min(1e-300)).max().sqrt()):.3g}); accepted: a larger "
            "alpha, a larger tol or max_iter"
        )

    def predict(self, X: Any) -> torch.Tensor:
        """Predictions ``K(X, X_fit) @ dual_coef_`` ``[N]`` (or ``[N, T]``) on every rank."""
        if not hasattr(self, "dual_coef_"):
            raise ConfigError("ShardedKernelRidge.predict before fit; accepted: call fit(X, y) first")
        gram = gram_shards(self.kernel, X, self.X_fit_)
        coef = self.dual_coef_.reshape(self.dual_coef_.shape[0], -1)
        return gram.matvec(coef).double().reshape(-1, *self.dual_coef_.shape[1:])
