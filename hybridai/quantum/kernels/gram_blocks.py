"""Kernel matrices of many samples in blocks of rows, with bounded working memory.

A Gram matrix ``K[i, j] = k(a_i, b_j)`` of N x M samples is computed ``rows`` rows at a time from the
samples' features (statevectors for the fidelity kernel, Bloch vectors for the projected kernel, each
computed once by the caller). The block size comes from ``max_memory``: a block's temporaries take about
``WORK_PER_ENTRY`` numbers per matrix entry, so ``rows = max_memory // (WORK_PER_ENTRY * M * itemsize)``.
The result itself (N x M) is the caller's and is not counted: N * M * 8 bytes in float64 (3.2 GB at
N = M = 20,000).

Without gradients the blocks are written into one preallocated result, and a symmetric matrix (``right``
None) computes only the blocks on and above the diagonal and mirrors them (half the work, exactly
symmetric). With gradients each block is kept for backward (autograd holds every block's product, so
memory grows with N * M) and the blocks are joined at the end.

Both kernels use real matrix products only, which every BLAS runs fast (complex GEMMs of the same size
were several times slower on an AMD EPYC):

- fidelity ``|<a|b>|^2``: with ``a = ar + i ai`` and ``b = br + i bi``, ``Re<a|b> = ar.br + ai.bi`` and
  ``Im<a|b> = ar.bi - ai.br``, i.e. one product ``[ar, ai] @ [[br, bi], [bi, -br]]^T``;
- projected ``exp(-gamma |r_a - r_b|^2 / 2)`` with ``|r_a - r_b|^2 = |r_a|^2 + |r_b|^2 - 2 r_a.r_b``
  (clamped at 0: rounding can make a zero distance slightly negative).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

import torch

from hybridai.core.errors import ConfigError, invalid
from hybridai.quantum.execution.resources import memory_limit

WORK_PER_ENTRY = 4  # temporaries per entry of a block: the product (2 for the fidelity kernel), squares, sum
DEFAULT_MAX_MEMORY = 2 * 2**30  # bytes of working memory per kernel call, unless the device has less


def check_max_memory(value: Any, argument: str) -> int | None:
    """``value`` (None or a positive number of bytes) as an int, else a ConfigError naming ``argument``."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or not value >= 1 or value != value:
        raise invalid(argument, value, "None (the default) or a positive number of bytes")
    return int(value)


def block_rows(
    columns: int, itemsize: int, max_memory: int | None, device: torch.device, cap: int, argument: str = "gram_memory"
) -> int:
    """Rows per block so that a block's temporaries stay under ``max_memory`` bytes (default: the smaller of
    ``DEFAULT_MAX_MEMORY`` and the device's ``memory_limit``), at most ``cap``."""
    limit = min(DEFAULT_MAX_MEMORY, memory_limit(device)) if max_memory is None else max_memory
    per_row = WORK_PER_ENTRY * max(columns, 1) * itemsize
    rows = limit // per_row
    if rows < 1:
        raise ConfigError(
            f"{argument}={limit} bytes cannot hold one row of a kernel matrix with {columns} columns "
            f"({per_row} bytes of temporaries per row); accepted: {argument} >= {per_row}"
        )
    return int(min(rows, cap))


def fidelity_features(states: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Real forms of statevectors ``[N, D]``: the left ``[N, 2D]`` and the right ``[2N, 2D]`` factor whose
    product gives Re and Im of every overlap (module docstring)."""
    re, im = states.real, states.imag
    return torch.cat([re, im], 1), torch.cat([torch.cat([re, im], 1), torch.cat([im, -re], 1)], 0)


def fidelity_block(left: torch.Tensor, right: torch.Tensor) -> torch.Tensor:
    """``|<a|b>|^2`` of left rows ``[R, 2D]`` against right ``[2M, 2D]`` (``fidelity_features``): ``[R, M]``,
    clipped at 1: a fidelity is a probability, and rounding (which differs between CPU code paths) can put
    the overlap of a state with itself at 1 + 4e-16."""
    product = left @ right.T  # [R, 2M]: Re then Im
    m = right.shape[0] // 2
    return (product[:, :m].square() + product[:, m:].square()).clamp(max=1.0)


def projected_block(left: torch.Tensor, right: torch.Tensor, gamma: float) -> torch.Tensor:
    """``exp(-gamma |r_a - r_b|^2 / 2)`` of Bloch vectors ``[R, 3n]`` against ``[M, 3n]``: ``[R, M]``."""
    distance = (left.square().sum(1, keepdim=True) + right.square().sum(1) - 2 * (left @ right.T)).clamp(min=0)
    return torch.exp(-0.5 * gamma * distance)


def gram(
    block: Callable[[torch.Tensor, torch.Tensor], torch.Tensor],
    left: torch.Tensor,
    right: torch.Tensor,
    *,
    symmetric: bool,
    n_columns: int,
    columns_of: Callable[[torch.Tensor, int, int], torch.Tensor],
    rows: int,
    starts: Callable[[range], Iterable[int]] = lambda r: r,
) -> torch.Tensor:
    """The ``[N, n_columns]`` matrix ``block(left[r0:r1], columns_of(right, c0, c1))``, row block by row block.

    ``symmetric``: the samples of ``left`` and ``right`` are the same (the matrix is symmetric); ``columns_of``
    gives the right factor of columns ``c0:c1`` (the fidelity kernel's interleaves Re and Im rows);
    ``starts`` wraps the block starts (a progress bar)."""
    n = left.shape[0]
    if torch.is_grad_enabled() and (left.requires_grad or right.requires_grad):
        every = columns_of(right, 0, n_columns)
        parts = [block(left[r0 : r0 + rows], every) for r0 in starts(range(0, n, rows))]
        K = torch.cat(parts) if len(parts) > 1 else parts[0]
        return 0.5 * (K + K.T) if symmetric else K
    K = torch.empty(n, n_columns, dtype=left.dtype, device=left.device)
    for r0 in starts(range(0, n, rows)):
        r1 = min(r0 + rows, n)
        c0 = r0 if symmetric else 0  # a symmetric matrix: the blocks on and right of the diagonal only
        values = block(left[r0:r1], columns_of(right, c0, n_columns))
        K[r0:r1, c0:] = values
        if symmetric:
            diagonal = K[r0:r1, r0:r1]
            diagonal.copy_(0.5 * (diagonal + diagonal.T))
            K[r1:, r0:r1] = values[:, r1 - r0 :].T
    return K
