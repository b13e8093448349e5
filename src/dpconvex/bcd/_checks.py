"""Input checks of the DP-MBCD problems: they refuse rather than release."""

from __future__ import annotations

import numpy as np


def finite_matrix(name: str, values, ndim: int = 2) -> np.ndarray:
    """``values`` as a float array of ``ndim`` dimensions; raise on NaN/inf or a wrong shape."""
    arr = np.asarray(values, dtype=float)
    if arr.ndim != ndim:
        raise ValueError(f"{name} must be {ndim}-dimensional, got shape {arr.shape}")
    if arr.size == 0:
        raise ValueError(f"{name} is empty")
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} contains NaN or infinity")
    return arr


def clip_rows(values: np.ndarray, bound: float) -> np.ndarray:
    """Rows scaled to norm <= bound (a per-row map: free of privacy cost)."""
    norms = np.linalg.norm(values, axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        factor = np.where(norms > bound, bound / norms, 1.0)
    return values * factor[:, None]


def normalize_rows(values: np.ndarray) -> np.ndarray:
    """x / ||x|| per row (zero rows stay zero)."""
    norms = np.linalg.norm(values, axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        factor = np.where(norms > 0, 1.0 / norms, 0.0)
    return values * factor[:, None]


def labels(name: str, y, n: int) -> np.ndarray:
    arr = np.asarray(y)
    if arr.shape != (n,):
        raise ValueError(f"{name} must have shape ({n},), got {arr.shape}")
    if not np.issubdtype(arr.dtype, np.integer):
        if not np.all(np.isfinite(arr.astype(float))) or np.any(arr != np.round(arr)):
            raise ValueError(f"{name} must hold integer class labels")
        arr = arr.astype(int)
    if arr.min() < 0:
        raise ValueError(f"{name} must hold class labels >= 0")
    return arr
