"""A picture of one zero-noise extrapolation: noisy values against scale factor, the fit, the zero-noise value."""

from __future__ import annotations

import os

import numpy as np

from hybridai.core.errors import bounded_int, invalid
from hybridai.quantum.mitigation.zne import ZNEResult


def plot_zne(result: ZNEResult, path: str | os.PathLike, sample: int = 0, column: int = 0) -> str:
    """Save a PNG of the noisy values against scale factor and the zero-noise value; returns the path.

    ``result``: a ``ZNEResult`` (``layer.last_mitigation``); ``sample`` and ``column``: which value of
    its batch ``[B, R]`` to draw."""
    if isinstance(result, list | tuple) and result and all(isinstance(r, ZNEResult) for r in result):
        raise invalid("result", f"a list of {len(result)} ZNEResults", "one of them, e.g. layer.last_mitigation[0]")
    if not isinstance(result, ZNEResult):
        raise invalid(
            "result", result, "a ZNEResult, e.g. layer.last_mitigation after a call of a layer with mitigation=ZNE()"
        )
    if not isinstance(path, str | os.PathLike):
        raise invalid("path", path, "a file path (str or os.PathLike) for the PNG")
    bounded_int("sample", sample, 0, result.noisy.shape[1] - 1)
    bounded_int("column", column, 0, result.noisy.shape[2] - 1)

    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(5, 3.5))
    FigureCanvasAgg(fig)
    ax = fig.add_subplot()
    xs = np.asarray(result.scale_factors)
    ys = result.noisy[:, sample, column]
    ax.plot(xs, ys, "o", label="noisy (folded circuits)")
    if result.coefficients is not None and result.extrapolation in ("linear", "poly", "richardson"):
        degree = {"linear": 1, "richardson": len(xs) - 1}.get(result.extrapolation, min(len(xs) - 1, 2))
        fit = np.polyfit(xs, ys, degree)
        grid = np.linspace(0, xs.max(), 100)
        ax.plot(grid, np.polyval(fit, grid), "-", alpha=0.6, label=f"{result.extrapolation} fit")
    ax.plot([0], [result.mitigated[sample, column]], "*", markersize=12, label="zero-noise value")
    ax.set_xlabel("noise scale factor")
    ax.set_ylabel("expectation value")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    return str(path)
