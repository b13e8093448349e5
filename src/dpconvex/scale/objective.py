"""The perturbed GLM objective over a row-chunked dask array."""

from __future__ import annotations

import numpy as np

from ..losses import GLMLoss
from ..mechanisms._checks import check_labels
from ..mechanisms.rows import add_intercept, transform_rows
from ..optim.objective import PerturbedGLMObjective


def is_dask_array(x) -> bool:
    """True for a dask array (without importing dask when it is not installed)."""
    return type(x).__module__.startswith("dask.") and hasattr(x, "to_delayed")


def prepare_chunk(
    xb, row_norm: str, row_bound: float, fit_intercept: bool, intercept_scaling: float
) -> np.ndarray:
    """Row policy and intercept for one chunk (both act row by row, so chunking is exact)."""
    xb = np.asarray(xb, dtype=np.float64)
    if xb.ndim != 2:
        raise ValueError(f"X must be two-dimensional, got a chunk of shape {xb.shape}")
    if not np.all(np.isfinite(xb)):
        raise ValueError("X contains NaN or infinity")
    xb = transform_rows(xb, row_norm, row_bound)
    return add_intercept(xb, intercept_scaling) if fit_intercept else xb


def _chunk_objective(xb, yb, loss, rows) -> PerturbedGLMObjective:
    xt = prepare_chunk(xb, **rows)
    return PerturbedGLMObjective(xt, check_labels(loss, np.asarray(yb).ravel()), loss, 0.0)


def _chunk_value_grad(xb, yb, theta, loss, rows):
    value, grad = _chunk_objective(xb, yb, loss, rows).value_and_gradient(theta)
    return np.concatenate([[value], grad])


def _chunk_hvp(xb, yb, theta, v, loss, rows):
    return _chunk_objective(xb, yb, loss, rows).hessian_vector(theta, v)


def _chunk_clipped_sum(xb, yb, theta, loss, clip, rows):
    from ..mechanisms.dpsgd import _clipped_weights

    xt = prepare_chunk(xb, **rows)
    y = check_labels(loss, np.asarray(yb).ravel())
    norms = np.sqrt(np.einsum("ij,ij->i", xt, xt))
    return xt.T @ _clipped_weights(xt @ theta, y, norms, loss, clip)


class DaskGLMObjective:
    """F(theta) = sum_i f(x_i^T theta; y_i) + (lam/2)||theta||^2 + b^T theta over dask chunks.

    ``X`` (n x p, chunked by rows) and ``y`` are dask arrays of *raw* rows; each chunk
    gets the row policy (``row_norm``, ``row_bound``) and the intercept column, then
    the per-chunk sums of :class:`~dpconvex.optim.PerturbedGLMObjective` (same
    float64 math as in memory) are added up. Every evaluation is one pass over the
    data (counted in ``passes``); gradients and the certificate are computed on the
    full objective. Solvers should prefer L-BFGS (``passes_are_expensive``).
    """

    passes_are_expensive = True

    def __init__(
        self,
        X,
        y,
        loss: GLMLoss,
        lam: float,
        b: np.ndarray | None = None,
        *,
        row_norm: str,
        row_bound: float,
        fit_intercept: bool,
        intercept_scaling: float = 1.0,
    ):
        if X.ndim != 2:
            raise ValueError(f"X must be two-dimensional, got {X.ndim} dimensions")
        if any(np.isnan(c) for c in X.chunks[0]):
            X = X.compute_chunk_sizes()
        X = X.rechunk({1: -1})
        self.X, self.y = X, y.rechunk((X.chunks[0],))
        self.n = int(X.shape[0])
        self.d = int(X.shape[1]) + int(bool(fit_intercept))
        self.loss = loss
        self.lam = float(lam)
        self.b = np.zeros(self.d) if b is None else np.asarray(b, dtype=np.float64)
        self.rows = {
            "row_norm": row_norm,
            "row_bound": row_bound,
            "fit_intercept": fit_intercept,
            "intercept_scaling": intercept_scaling,
        }
        self.passes = 0
        self.grad_evals = 0

    def _reduce(self, fn, width: int, *args) -> np.ndarray:
        """One pass: per-chunk partial sums of ``fn`` (a row of ``width`` numbers), added up.

        Written as a blockwise map over (X, y) so that dask fuses it with whatever
        produces the chunks (reading or generating them): each chunk is made, used and
        dropped inside one task, and only the partial sums leave the worker.
        """

        def kernel(xb, yb):
            return np.asarray(fn(xb, yb, *args), dtype=np.float64)[None, :]

        nblocks = len(self.X.chunks[0])
        parts = self.X.map_blocks(
            kernel, self.y[:, None], dtype=np.float64, chunks=((1,) * nblocks, (width,))
        )
        self.passes += 1
        self.grad_evals += self.n
        return np.asarray(parts.sum(axis=0).compute(), dtype=np.float64)

    def value_and_gradient(self, theta) -> tuple[float, np.ndarray]:
        theta = np.asarray(theta, dtype=np.float64)
        total = self._reduce(_chunk_value_grad, self.d + 1, theta, self.loss, self.rows)
        value = total[0] + 0.5 * self.lam * theta @ theta + self.b @ theta
        return float(value), total[1:] + self.lam * theta + self.b

    def value(self, theta) -> float:
        return self.value_and_gradient(theta)[0]

    def gradient(self, theta) -> np.ndarray:
        return self.value_and_gradient(theta)[1]

    def hessian_vector(self, theta, v) -> np.ndarray:
        theta = np.asarray(theta, dtype=np.float64)
        v = np.asarray(v, dtype=np.float64)
        return self._reduce(_chunk_hvp, self.d, theta, v, self.loss, self.rows) + self.lam * v

    def gradient_norm(self, theta) -> float:
        """||grad F(theta)||_2 in float64 on the full objective: the certificate."""
        return float(np.linalg.norm(self.gradient(theta)))

    def clipped_gradient_sum(self, theta, clip: float) -> np.ndarray:
        """sum_i clip_C(grad l_i(theta)) over all rows (one pass): DP-GD's gradient."""
        theta = np.asarray(theta, dtype=np.float64)
        return self._reduce(_chunk_clipped_sum, self.d, theta, self.loss, clip, self.rows)

    def smoothness_bounds(self):
        raise NotImplementedError("SVRG needs random access to rows; use lbfgs on dask data")
