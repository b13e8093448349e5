"""Preconditions shared by the mechanisms: they refuse rather than release."""

from __future__ import annotations

import math

import numpy as np

from ..losses import GLMLoss
from .rows import row_norms


def check_rows(X, row_bound: float) -> None:
    """Every row must have norm <= the declared ``row_bound`` (never derived from data)."""
    if not (math.isfinite(row_bound) and row_bound > 0):
        raise ValueError(f"row_bound must be a finite number > 0, got {row_bound}")
    norms = row_norms(X)
    if norms.size and norms.max() > row_bound * (1 + 1e-9):
        raise ValueError(
            f"a row has norm {norms.max():.6g} above the declared bound {row_bound}; "
            "the privacy analysis does not cover it"
        )


def check_labels(loss: GLMLoss, y: np.ndarray) -> np.ndarray:
    y = np.asarray(y, dtype=np.float64)
    if y.ndim != 1:
        raise ValueError(f"y must be one-dimensional, got shape {y.shape}")
    if loss.binary and np.all(np.abs(y) == 1.0):  # +-1 only (and so finite): one test
        return y
    if not np.all(np.isfinite(y)):
        raise ValueError("y contains NaN or infinity")
    if loss.binary:
        raise ValueError(f"{loss.name} loss needs labels in {{-1, +1}}")
    return y


def gradient_bound(loss: GLMLoss, clip: float | None, row_bound: float) -> float:
    """L = min(C, sup|f'| * R): the per-example gradient-norm bound actually enforced."""
    bound = loss.derivative_bound * row_bound
    if clip is not None:
        if not (math.isfinite(clip) and clip > 0):
            raise ValueError(f"clip must be a finite number > 0, got {clip}")
        bound = min(bound, clip)
    if not math.isfinite(bound):
        raise ValueError(
            f"the {loss.name} loss has an unbounded gradient: give a clipping threshold"
        )
    return bound
