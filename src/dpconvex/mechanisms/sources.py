"""Where a mechanism reads its rows: one interface for in-memory and out-of-core data.

Every mechanism (AMP, output perturbation, DP-GD, AdaSSP) is written once against a
:class:`RowSource`. A source holds the rows the mechanism sees (row policy and intercept
already applied, so their norms are at most ``row_bound``) and their labels, and
answers the few questions the mechanisms ask:

* ``objective(loss, lam, b)`` — the perturbed GLM objective
  sum_i l(theta; z_i) + (lam/2)||theta||^2 + b^T theta (value, gradient, Hessian);
* ``clipped_gradient_sum(theta, loss, clip)`` — DP-GD's sum of clipped gradients;
* ``sufficient_statistics()`` — AdaSSP's (X^T X, X^T y, max row norm, max |y|).

:class:`InMemoryRows` wraps a numpy array or CSR matrix; the dask source
(:class:`dpconvex.scale.DaskRows`) transforms each row chunk where it lives and
reduces it there. Mechanisms accept either a source (with ``y=None``) or the arrays
``X, y`` themselves (wrapped in :class:`InMemoryRows`).
"""

from __future__ import annotations

import math
from typing import Protocol, runtime_checkable

import numpy as np

from ..losses import GLMLoss
from ._checks import check_labels, check_rows


@runtime_checkable
class RowSource(Protocol):
    """Rows of norm <= ``row_bound`` with their labels, as the mechanisms read them."""

    n: int
    d: int
    row_bound: float

    def objective(self, loss: GLMLoss, lam: float, b: np.ndarray | None = None): ...

    def clipped_gradient_sum(self, theta: np.ndarray, loss: GLMLoss, clip: float): ...

    def sufficient_statistics(self) -> tuple[np.ndarray, np.ndarray, float, float]: ...


class InMemoryRows:
    """A numpy array or CSR matrix ``X`` (rows of norm <= ``row_bound``, checked) and ``y``.

    The labels are checked against ``loss`` (finite; +-1 for a classification loss).
    """

    def __init__(self, X, y, loss: GLMLoss | None, row_bound: float):
        check_rows(X, row_bound)
        self.X = X
        self.y = check_labels(loss, y) if loss is not None else np.asarray(y, dtype=np.float64)
        if self.y.ndim != 1 or self.y.shape[0] != X.shape[0]:
            raise ValueError(
                f"y must be one-dimensional with {X.shape[0]} entries, got shape {self.y.shape}"
            )
        self.n, self.d = X.shape
        self.row_bound = float(row_bound)
        self.passes = 0

    def objective(self, loss: GLMLoss, lam: float, b: np.ndarray | None = None):
        from ..optim import PerturbedGLMObjective

        return PerturbedGLMObjective(self.X, self.y, loss, lam, b)

    def clipped_gradient_sum(self, theta: np.ndarray, loss: GLMLoss, clip: float) -> np.ndarray:
        from .dpsgd import clipped_gradient_sum
        from .rows import row_norms

        self.passes += 1
        return clipped_gradient_sum(self.X, self.y, row_norms(self.X), loss, theta, clip)

    def sufficient_statistics(self) -> tuple[np.ndarray, np.ndarray, float, float]:
        from .adassp import sufficient_statistics

        self.passes += 1
        return sufficient_statistics(self.X, self.y)


def as_rows(X, y, loss: GLMLoss | None, row_bound: float) -> RowSource:
    """``X`` if it is already a :class:`RowSource` (then ``y`` must be None), else the arrays.

    A source's own bound must not exceed the ``row_bound`` the mechanism is priced with.
    """
    if isinstance(X, RowSource) and not isinstance(X, np.ndarray):
        if y is not None:
            raise ValueError("give the labels inside the row source, not as y")
        if not (math.isfinite(row_bound) and row_bound > 0):
            raise ValueError(f"row_bound must be a finite number > 0, got {row_bound}")
        if X.row_bound > row_bound * (1 + 1e-12):
            raise ValueError(
                f"the rows are bounded by {X.row_bound:.6g}, above the declared bound "
                f"{row_bound}; the privacy analysis does not cover them"
            )
        return X
    return InMemoryRows(X, y, loss, row_bound)
