"""A picture of one zero-noise extrapolation: noisy values against scale factor, the fit, the zero-noise value.

Drawn with matplotlib's object API only (no ``pyplot`` state, no ``matplotlib.use``): the function returns
the ``Figure`` (a notebook shows it), draws into the caller's ``ax=`` when given, and saves nothing unless
asked to (``path=``, or ``fig.savefig(...)`` by the caller).
"""

from __future__ import annotations

import numbers
import os
from typing import Any

import numpy as np

from hybridai.core.errors import bounded_int, invalid
from hybridai.quantum.mitigation.zne import ZNEResult


def plot_zne(
    result: ZNEResult,
    path: str | os.PathLike | None = None,
    sample: int = 0,
    column: int = 0,
    *,
    ax: Any = None,
    ideal: float | None = None,
) -> Any:
    """Draw the noisy values against scale factor, the extrapolation and the zero-noise value; returns the Figure.

    Args:
        result: a ``ZNEResult`` (``layer.last_mitigation``).
        path: where to save a PNG as well (default: nothing is saved; ``fig.savefig(...)`` saves it).
        sample, column: which value of its batch ``[B, R]`` to draw.
        ax: a matplotlib ``Axes`` to draw into (default: a new ``matplotlib.figure.Figure``); its figure is returned.
        ideal: the noiseless value, drawn as a dashed line (default: none).
    """
    if isinstance(result, list | tuple) and result and all(isinstance(r, ZNEResult) for r in result):
        raise invalid("result", f"a list of {len(result)} ZNEResults", "one of them, e.g. layer.last_mitigation[0]")
    if not isinstance(result, ZNEResult):
        raise invalid(
            "result", result, "a ZNEResult, e.g. layer.last_mitigation after a call of a layer with mitigation=ZNE()"
        )
    if path is not None and not isinstance(path, str | os.PathLike):
        raise invalid("path", path, "None (save nothing) or a file path (str or os.PathLike) for the PNG")
    bounded_int("sample", sample, 0, result.noisy.shape[1] - 1)
    bounded_int("column", column, 0, result.noisy.shape[2] - 1)
    if ideal is not None and (isinstance(ideal, bool) or not isinstance(ideal, numbers.Real)):
        raise invalid("ideal", ideal, "None or a real number (the noiseless value)")
    if ax is None:
        from matplotlib.figure import Figure

        fig = Figure(figsize=(5, 3.5), layout="tight")
        ax = fig.add_subplot()
    elif not hasattr(ax, "plot") or not hasattr(ax, "figure"):
        raise invalid("ax", type(ax).__name__, "None or a matplotlib Axes (fig.add_subplot(), plt.subplots()[1])")
    _draw(ax, result, sample, column, ideal)
    fig = ax.figure
    if path is not None:
        fig.savefig(path, dpi=120)
    return fig


def _draw(ax: Any, result: ZNEResult, sample: int, column: int, ideal: float | None) -> None:
    xs = np.asarray(result.scale_factors)
    ys = result.noisy[:, sample, column]
    ax.plot(xs, ys, "o", label="noisy (folded circuits)")
    if result.coefficients is not None and result.extrapolation in ("linear", "poly", "richardson"):
        degree = {"linear": 1, "richardson": len(xs) - 1}.get(result.extrapolation, min(len(xs) - 1, 2))
        fit = np.polyfit(xs, ys, degree)
        grid = np.linspace(0, xs.max(), 100)
        ax.plot(grid, np.polyval(fit, grid), "-", alpha=0.6, label=f"{result.extrapolation} fit")
    ax.plot([0], [result.mitigated[sample, column]], "*", markersize=12, label="zero-noise value")
    if ideal is not None:
        ax.axhline(float(ideal), linestyle="--", color="black", linewidth=1, label="ideal (noiseless)")
    ax.set_xlabel("noise scale factor")
    ax.set_ylabel("expectation value")
    ax.legend()
