"""Weights as a photonic circuit: SVD, two meshes of Mach-Zehnder interferometers, attenuators.

A real weight matrix ``W = U diag(sigma) V^T`` is realised as ``s * U' diag(t') V'^T``:

- ``V`` and ``U`` (orthonormal columns) become triangular meshes of MZIs between neighbouring
  waveguides; each MZI is a rotation by an angle ``theta`` in [-pi/2, pi/2] (a Givens rotation):
  its internal phase ``phi = 2 |theta|`` is set by a heater whose 2*pi range is programmed with
  ``phase_bits`` bits (steps of ``2 pi / 2**phase_bits``); the sign comes from an external phase
  shifter at 0 or pi (exact).
- ``t = sigma / s`` (``s`` = the largest singular value) are attenuators: MZIs with one port
  dropped, transmission ``cos(phi / 2)``, whose phase ``phi`` has the same precision.
- ``s`` is applied electronically after detection (a gain).

Everything here is float64 numpy and runs when a layer is (re)programmed, not per sample.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Mesh:
    """A triangular MZI mesh realising a matrix with orthonormal columns ``[modes, k]``."""

    modes: int
    rotations: tuple[tuple[int, float], ...]  # (upper waveguide p of the pair (p, p+1), theta), in elimination order
    signs: tuple[float, ...]  # +-1 on the first k waveguides (0 or pi phase shifters)

    @property
    def n_mzi(self) -> int:
        return len(self.rotations)

    @property
    def depth(self) -> int:
        """Columns of MZIs light passes through (MZIs on disjoint waveguide pairs share a column)."""
        last = [0] * self.modes
        for p, _ in self.rotations:
            last[p] = last[p + 1] = max(last[p], last[p + 1]) + 1
        return max(last, default=0)


def quantise_phase(phi: np.ndarray, bits: int | None) -> np.ndarray:
    """Phases on a heater's grid: steps of ``2 pi / 2**bits`` (unchanged when ``bits`` is None)."""
    if bits is None:
        return phi
    step = 2 * math.pi / 2**bits
    return np.round(np.asarray(phi) / step) * step


def quantise_rotation(theta: np.ndarray, bits: int | None) -> np.ndarray:
    """MZI rotation angles in [-pi/2, pi/2]: internal phase ``2 |theta|`` quantised, sign exact."""
    theta = np.asarray(theta)
    return np.sign(theta) * quantise_phase(2 * np.abs(theta), bits) / 2


def decompose(a: np.ndarray) -> Mesh:
    """Givens rotations between neighbouring rows that reduce ``a`` (orthonormal columns) to +-identity."""
    r = np.array(a, dtype=np.float64, copy=True)
    modes, k = r.shape
    rotations = []
    for j in range(k):
        for i in range(modes - 1, j, -1):  # zero r[i, j] with the pair (i-1, i), bottom-up
            a, b = r[i - 1, j], r[i, j]
            theta = math.atan(b / a) if a != 0 else math.copysign(math.pi / 2, b)  # in [-pi/2, pi/2]
            c, s = math.cos(theta), math.sin(theta)
            upper, lower = r[i - 1, j:].copy(), r[i, j:].copy()
            r[i - 1, j:] = c * upper + s * lower
            r[i, j:] = -s * upper + c * lower
            rotations.append((i - 1, theta))
    signs = tuple(1.0 if d >= 0 else -1.0 for d in np.diag(r[:k, :k]))
    return Mesh(modes, tuple(rotations), signs)


def realise(mesh: Mesh, bits: int | None) -> np.ndarray:
    """The matrix ``[modes, k]`` the mesh computes when its phases are stored with ``bits`` bits."""
    k = len(mesh.signs)
    out = np.zeros((mesh.modes, k))
    out[np.arange(k), np.arange(k)] = mesh.signs
    thetas = quantise_rotation(np.array([t for _, t in mesh.rotations]), bits)
    for (p, _), theta in zip(reversed(mesh.rotations), thetas[::-1], strict=True):
        c, s = math.cos(theta), math.sin(theta)
        upper, lower = out[p].copy(), out[p + 1].copy()
        out[p] = c * upper - s * lower  # the transposed rotation undoes the elimination step
        out[p + 1] = s * upper + c * lower
    return out


def attenuators(t: np.ndarray, bits: int | None) -> np.ndarray:
    """Transmissions ``t`` in [0, 1] realised as ``cos(phi / 2)`` with ``phi`` stored with ``bits`` bits."""
    if bits is None:
        return t
    phi = quantise_phase(2 * np.arccos(np.clip(t, 0.0, 1.0)), bits)
    return np.cos(phi / 2)


@dataclass(frozen=True)
class Programmed:
    """A weight matrix as the chip realises it, with the numbers the energy model needs."""

    matrix: np.ndarray  # [out, in] float64: s * U' diag(t') V'^T
    scale: float  # s, the largest singular value (electronic gain)
    n_mzi: int  # MZIs in both meshes
    n_attenuators: int
    depth: int  # optical depth: V mesh + attenuators + U mesh


def program(weight: np.ndarray, bits: int | None) -> Programmed:
    """SVD of ``weight [out, in]``, meshes for both factors, phases stored with ``bits`` bits."""
    u, sigma, vt = np.linalg.svd(np.asarray(weight, dtype=np.float64), full_matrices=False)
    scale = float(sigma[0]) if sigma.size else 0.0
    t = sigma / scale if scale > 0 else np.zeros_like(sigma)
    u_mesh, v_mesh = decompose(u), decompose(vt.T)
    realised = realise(u_mesh, bits) @ np.diag(attenuators(t, bits)) @ realise(v_mesh, bits).T
    return Programmed(
        matrix=scale * realised,
        scale=scale,
        n_mzi=u_mesh.n_mzi + v_mesh.n_mzi,
        n_attenuators=len(sigma),
        depth=v_mesh.depth + 1 + u_mesh.depth,
    )
