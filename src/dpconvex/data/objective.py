"""The perturbed GLM objective over a row source: every evaluation is one pass of row kernels."""

from __future__ import annotations

from functools import partial

import numpy as np

from ..losses import GLMLoss
from .kernels import chunk_hessian, chunk_hvp, chunk_value_grad


class RowSourceObjective:
    """F(theta) = sum_i f(x_i~^T theta; y_i) + (lam/2)||theta||^2 + b^T theta over a row source.

    Built by the sources' ``objective`` method (dense rows in memory, or dask chunks).
    The source adds the partial sums of the kernels of
    :mod:`dpconvex.data.kernels` over its chunks (``source.reduce``), so the
    transformed rows x_i~ are never copied. Every evaluation is one pass over the rows
    (counted in ``passes``); gradients and the certificate are computed in float64 on
    the full objective. ``passes_are_expensive`` (the source's) tells the solvers to
    minimize passes out of core: Newton with the d x d Hessian formed in the gradient's
    pass for moderate d, L-BFGS otherwise.
    """

    #: the pass that computes the gradient also forms the Hessian from the margins it
    #: has, for less than a separate Hessian: Newton asks for it there (solvers.solve)
    hessian_rides_on_pass = True

    def __init__(self, source, loss: GLMLoss, lam: float, b: np.ndarray | None = None):
        self.source = source
        self.n, self.d = source.n, source.d
        self.loss = loss
        self.lam = float(lam)
        self.b = np.zeros(self.d) if b is None else np.asarray(b, dtype=np.float64)
        self.passes_are_expensive = bool(source.passes_are_expensive)
        #: the rows are held in memory (in memory, or kept in dask's workers for the fit)
        self.rows_held = bool(getattr(source, "rows_held", not self.passes_are_expensive))
        #: a Hessian pass costs about this many gradient passes in memory (n d^2 / 2
        #: multiply-adds in BLAS-3 against 2 n d in BLAS-2; 0.52 s against 0.10 s at d = 101)
        self.hessian_cost = self.d / 20
        self.passes = 0
        self.grad_evals = 0

    def _reduce(self, fn, width: int, *args) -> np.ndarray:
        self.passes += 1
        self.grad_evals += self.n
        return self.source.reduce(fn, width, *args, scaled=True)

    def value_and_gradient(self, theta) -> tuple[float, np.ndarray]:
        theta = np.asarray(theta, dtype=np.float64)
        total = self._reduce(chunk_value_grad, self.d + 1, theta, self.loss, self.source.policy)
        value = total[0] + 0.5 * self.lam * theta @ theta + self.b @ theta
        return float(value), total[1:] + self.lam * theta + self.b

    def gradient_hessian(self, theta, hessian: bool = True, stride: int = 1):
        """(grad F, Hessian or None) in one pass; the Hessian's partial sums are d x d.

        The loss value is not computed (Newton steers by the gradient alone). ``stride``
        > 1: the Hessian from every ``stride``-th row of each chunk, rescaled (see
        :meth:`dpconvex.optim.PerturbedGLMObjective.hessian`); the gradient uses every row.
        """
        theta = np.asarray(theta, dtype=np.float64)
        d = self.d
        width = d + (d * d if hessian else 0)
        stride = max(1, int(stride)) if hessian else 0
        total = self._reduce(
            chunk_value_grad, width, theta, self.loss, self.source.policy, stride, False
        )
        grad = total[:d] + self.lam * theta + self.b
        return grad, self._regularized(total[d:]) if hessian else None

    def subsample(self, m: int):
        """The objective on m of the rows (the source chooses which), rescaled.

        See :meth:`dpconvex.optim.PerturbedGLMObjective.subsample`; only a starting point.
        """
        return _rescaled(self.source.subsample(m), self.loss, self.lam, self.b, self.n)

    def on_subsample(self, m: int, fn):
        """``fn(self.subsample(m))``, computed where the source keeps its rows when it can
        (:meth:`dpconvex.scale.DaskRows.on_subsample`: on the worker that holds them, so
        that they are neither sent here nor solved beside the workers' loads)."""
        ask = partial(_on_objective, fn, self.loss, self.lam, self.b, self.n)
        if hasattr(self.source, "on_subsample"):
            return self.source.on_subsample(m, ask)
        return ask(self.source.subsample(m))

    def hessian(self, theta, stride: int = 1) -> np.ndarray:
        """The d x d Hessian alone (one pass); ``stride`` as in :meth:`gradient_hessian`."""
        theta = np.asarray(theta, dtype=np.float64)
        total = self._reduce(
            chunk_hessian, self.d * self.d, theta, self.loss, self.source.policy, stride
        )
        return self._regularized(total)

    def _regularized(self, flat: np.ndarray) -> np.ndarray:
        hess = flat.reshape(self.d, self.d)
        hess[np.diag_indices_from(hess)] += self.lam
        return hess

    def value(self, theta) -> float:
        return self.value_and_gradient(theta)[0]

    def gradient(self, theta) -> np.ndarray:
        return self.gradient_hessian(theta, hessian=False)[0]

    def hessian_vector(self, theta, v) -> np.ndarray:
        theta = np.asarray(theta, dtype=np.float64)
        v = np.asarray(v, dtype=np.float64)
        hvp = self._reduce(chunk_hvp, self.d, theta, v, self.loss, self.source.policy)
        return hvp + self.lam * v

    def smoothness(self) -> float:
        """A smoothness constant of F: n beta + lam, beta = sup f'' R^2 with R the source's
        public row bound (see :meth:`dpconvex.optim.PerturbedGLMObjective.smoothness`)."""
        return float(self.loss.curvature * self.n * self.source.row_bound**2 + self.lam)

    def gradient_norm(self, theta) -> float:
        """||grad F(theta)||_2 in float64 on the full objective: the certificate."""
        return float(np.linalg.norm(self.gradient(theta)))

    def random_access(self):
        """The same objective on rows held in memory (for SVRG's random mini-batches)."""
        if not hasattr(self.source, "design"):
            raise ValueError("SVRG needs random access to rows; use 'lbfgs' on dask data")
        from ..optim import PerturbedGLMObjective

        return PerturbedGLMObjective(
            self.source.design(), self.source.y, self.loss, self.lam, self.b
        )


def _rescaled(sub, loss: GLMLoss, lam: float, b: np.ndarray, n: int):
    """The objective on the sub-source ``sub`` of n rows: lam and b times its share of them."""
    share = sub.n / n
    return sub.objective(loss, lam * share, b * share)


def _on_objective(fn, loss: GLMLoss, lam: float, b: np.ndarray, n: int, sub):
    return fn(_rescaled(sub, loss, lam, b, n))
