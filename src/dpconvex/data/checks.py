"""Preconditions on the rows and labels a source holds: sources refuse rather than hold them."""

from __future__ import annotations

import math

import numpy as np

from .._arrays import row_norms
from ..losses import GLMLoss


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
