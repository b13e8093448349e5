"""GLM losses l(w; (z, y)) = f(<z, w>; y) in l_p geometry, and their declared constants.

With rows ||z||_q <= R (q the dual index of the geometry), L = sup|f'| * R and
beta = sup f'' * R^2 w.r.t. ||.||_p, and the Hessian f'' z z^T has rank 1, so
r = min(d, 2) in Algorithms 1-2 of Su, Zhao & Wang (arXiv 2303.18047). The row bound R is
*declared* by the caller and checked; it is never read off the data.
"""

from __future__ import annotations

import math

import numpy as np

from .. import _validation as v
from ..losses import LOSSES, GLMLoss
from .geometry import lp_norm


class LinearLoss(GLMLoss):
    """f(u; y) = -y u with |y| <= 1: linear optimization over C (f' = -y, f'' = 0).

    Its population risk is -<E[y z], w>, closed form; its Hessian is zero, so the
    objective-perturbation condition lam >= r beta / (eps n) of Su, Zhao & Wang
    (arXiv 2303.18047), Alg. 1, holds
    for every lam (r = 0).
    """

    name = "linear"
    curvature = 0.0
    derivative_bound = 1.0
    hessian_rank = 0

    def value(self, u, y):
        return -y * u

    def derivative(self, u, y):
        return -np.asarray(y, dtype=float) * np.ones_like(u, dtype=float)

    def second_derivative(self, u, y):
        return np.zeros_like(u, dtype=float)


def as_loss(loss) -> GLMLoss:
    """A :class:`~dpconvex.losses.GLMLoss` from an instance or a name ("linear" included)."""
    if isinstance(loss, str):
        if loss == "linear":
            return LinearLoss()
        if loss not in LOSSES:
            raise ValueError(f"unknown loss {loss!r}; choose 'linear' or one of {sorted(LOSSES)}")
        return LOSSES[loss]()
    if not isinstance(loss, GLMLoss):
        raise TypeError(f"loss must be a GLM loss f(<z, w>; y), got {type(loss).__name__}")
    return loss


def hessian_rank(loss: GLMLoss) -> int:
    """Maximal rank of the Hessian f''(<z,w>; y) z z^T: 0 for linear losses, else 1."""
    return int(getattr(loss, "hessian_rank", 1))


class GLMData:
    """Validated data (X, y) for a GLM loss, with rows ||z||_q <= ``row_bound`` checked.

    Refuses (ValueError) NaN/inf, wrong shapes, labels the loss does not accept,
    |y| above a declared ``label_bound``, and rows above the declared bound.
    ``row_bound=None`` skips the row check (for mechanisms that clip gradients and
    need no constant); the declared constants are then unavailable.
    """

    def __init__(self, X, y, loss, row_bound: float | None, q: float = 2.0, label_bound=None):
        self.loss = as_loss(loss)
        X = np.asarray(X, dtype=np.float64)
        y = np.asarray(y, dtype=np.float64)
        if X.ndim != 2 or X.shape[0] < 1 or X.shape[1] < 1:
            raise ValueError(f"X must be a non-empty 2-D array, got shape {X.shape}")
        if y.shape != (X.shape[0],):
            raise ValueError(f"y must have shape ({X.shape[0]},), got {y.shape}")
        if not (np.all(np.isfinite(X)) and np.all(np.isfinite(y))):
            raise ValueError("X or y contains NaN or infinity")
        if self.loss.binary and not np.all(np.isin(y, (-1.0, 1.0))):
            raise ValueError(f"{self.loss.name} loss needs labels in {{-1, +1}}")
        if isinstance(self.loss, LinearLoss) and np.max(np.abs(y)) > 1:
            raise ValueError("the linear loss needs labels with |y| <= 1")
        self.q = float(q)
        self.row_bound = None if row_bound is None else v.positive("row_bound", row_bound)
        norms = lp_norm(X, self.q) if row_bound is not None else np.zeros(1)
        if row_bound is not None and norms.max() > self.row_bound * (1 + 1e-9):
            raise ValueError(
                f"a row has l_{self.q:g} norm {norms.max():.6g} above the declared bound "
                f"{self.row_bound}; the privacy analysis does not cover it"
            )
        self.label_bound = None
        if label_bound is not None:
            self.label_bound = v.positive("label_bound", label_bound)
            if np.max(np.abs(y)) > self.label_bound * (1 + 1e-12):
                raise ValueError(
                    f"a label has |y| = {np.max(np.abs(y)):.6g} above the declared bound "
                    f"{self.label_bound}"
                )
        self.X, self.y = X, y
        self.n, self.d = X.shape

    # -- declared constants (L = sup|f'| R, beta = sup f'' R^2) ---------------------
    @property
    def smoothness(self) -> float:
        """beta = sup f'' * R^2 (w.r.t. ||.||_p when rows are bounded in ||.||_q)."""
        if self.row_bound is None:
            raise ValueError("no row bound was declared")
        return float(self.loss.curvature) * self.row_bound**2

    def lipschitz(self, l2_radius: float | None = None) -> float:
        """L = sup |f'| * R; for the squared loss, sup over a set of l2-radius rho:
        |f'| = |<z, w> - y| <= R rho + B needs ``label_bound`` B and the set's radius."""
        if self.row_bound is None:
            raise ValueError("no row bound was declared")
        bound = float(self.loss.derivative_bound)
        if math.isfinite(bound):
            return bound * self.row_bound
        if self.loss.name == "squared" and l2_radius is not None and self.label_bound is not None:
            return (self.row_bound * l2_radius + self.label_bound) * self.row_bound
        raise ValueError(
            f"the {self.loss.name} loss is not Lipschitz here: use a Lipschitz loss "
            "(logistic, huber, linear) or, for the squared loss, declare label_bound "
            "and a bounded constraint set"
        )

    # -- values and gradients ---------------------------------------------------------
    def margins(self, w: np.ndarray, rows=None) -> np.ndarray:
        X = self.X if rows is None else self.X[rows]
        return X @ w

    def value(self, w: np.ndarray) -> float:
        return float(np.mean(self.loss.value(self.X @ w, self.y)))

    def grad(self, w: np.ndarray) -> np.ndarray:
        """Gradient of the empirical risk (1/n) sum_i f(<z_i, w>; y_i)."""
        return self.X.T @ self.loss.derivative(self.X @ w, self.y) / self.n

    def sample_gradients(self, w: np.ndarray, rows) -> np.ndarray:
        """Per-sample gradients f'(<z_i, w>; y_i) z_i for ``rows`` (shape (len(rows), d))."""
        X = self.X[rows]
        return self.loss.derivative(X @ w, self.y[rows])[:, None] * X
