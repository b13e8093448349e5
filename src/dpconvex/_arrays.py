"""Small array helpers shared across layers."""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp


def row_norms(X) -> np.ndarray:
    """Euclidean norm of every row (dense or sparse), in float64."""
    if sp.issparse(X):
        return np.sqrt(np.asarray(X.multiply(X).sum(axis=1), dtype=np.float64).ravel())
    X = np.asarray(X, dtype=np.float64)
    return np.sqrt(np.einsum("ij,ij->i", X, X))


def jsonable(value):
    """A numpy array or scalar as plain Python (lists, floats, ints) for JSON; else as is."""
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, np.generic):
        return value.item()
    return value
