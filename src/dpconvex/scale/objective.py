"""The dask row source: raw row chunks transformed and reduced where they live."""

from __future__ import annotations

import numpy as np

from ..losses import GLMLoss
from ..mechanisms._checks import check_labels
from ..mechanisms.rows import add_intercept, design_bound, transform_rows
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


def _chunk_value_grad_hess(xb, yb, theta, loss, rows):
    value, grad, hess = _chunk_objective(xb, yb, loss, rows).value_gradient_hessian(theta)
    return np.concatenate([[value], grad, hess.ravel()])


def _chunk_clipped_sum(xb, yb, theta, loss, clip, rows):
    from ..mechanisms.dpsgd import _clipped_weights

    xt = prepare_chunk(xb, **rows)
    y = check_labels(loss, np.asarray(yb).ravel())
    norms = np.sqrt(np.einsum("ij,ij->i", xt, xt))
    return xt.T @ _clipped_weights(xt @ theta, y, norms, loss, clip)


def _chunk_statistics(xb, yb, rows):
    from ..mechanisms.adassp import sufficient_statistics

    gram, xty, max_norm, max_y = sufficient_statistics(
        prepare_chunk(xb, **rows), np.asarray(yb, dtype=np.float64).ravel()
    )
    return np.concatenate([gram.ravel(), xty, [max_norm, max_y]])


def check_dask_inputs(X, y):
    """(X, y) as row-chunked dask arrays with known chunk sizes; labels aligned with rows."""
    import dask.array as da

    if X.ndim != 2:
        raise ValueError(f"X must be two-dimensional, got {X.ndim} dimensions")
    if any(np.isnan(c) for c in X.chunks[0]):
        X = X.compute_chunk_sizes()
    X = X.rechunk({1: -1})
    if not is_dask_array(y):
        y = np.asarray(y)
        if y.ndim != 1 or y.shape[0] != X.shape[0]:
            raise ValueError(f"y must have shape ({X.shape[0]},), got {y.shape}")
        y = da.from_array(y, chunks=(X.chunks[0],))
    elif any(np.isnan(c) for c in y.chunks[0]):
        y = y.compute_chunk_sizes()
    if y.ndim != 1 or y.shape[0] != X.shape[0]:
        raise ValueError(f"y must have shape ({X.shape[0]},), got {y.shape}")
    if X.shape[0] < 1:
        raise ValueError("X has no rows")
    return X, y.rechunk((X.chunks[0],))


class DaskRows:
    """A row source (:class:`dpconvex.mechanisms.sources.RowSource`) over dask arrays.

    ``X`` (n x p, chunked by rows) and ``y`` hold *raw* rows; each chunk gets the row
    policy (``row_norm``, ``row_bound``) and the intercept column where it lives, so
    the rows the mechanism sees have norm at most ``design_bound(...)`` without the
    data being looked at. Every question a mechanism asks is one pass over the chunks
    (counted in ``passes``), written as a blockwise map fused with whatever produces
    the chunks (reading or generating them): each chunk is made, used and dropped
    inside one task, and only partial sums (d-vectors, or d x d for the Hessian)
    leave the worker. The arithmetic per chunk is the in-memory objective's.
    """

    def __init__(
        self,
        X,
        y,
        *,
        row_norm: str,
        row_bound: float,
        fit_intercept: bool,
        intercept_scaling: float = 1.0,
    ):
        self.X, self.y = check_dask_inputs(X, y)
        self.n = int(self.X.shape[0])
        self.d = int(self.X.shape[1]) + int(bool(fit_intercept))
        self.rows = {
            "row_norm": row_norm,
            "row_bound": row_bound,
            "fit_intercept": fit_intercept,
            "intercept_scaling": intercept_scaling,
        }
        self.row_bound = design_bound(row_norm, row_bound, fit_intercept, intercept_scaling)
        self.passes = 0

    def reduce(self, fn, width: int, *args) -> np.ndarray:
        """One pass: per-chunk partial sums of ``fn(xb, yb, *args)`` (``width`` numbers), added."""

        def kernel(xb, yb):
            return np.asarray(fn(xb, yb, *args), dtype=np.float64)[None, :]

        nblocks = len(self.X.chunks[0])
        parts = self.X.map_blocks(
            kernel, self.y[:, None], dtype=np.float64, chunks=((1,) * nblocks, (width,))
        )
        self.passes += 1
        return np.asarray(parts.sum(axis=0).compute(), dtype=np.float64)

    def objective(self, loss: GLMLoss, lam: float, b: np.ndarray | None = None):
        return DaskGLMObjective(self, loss, lam, b)

    def clipped_gradient_sum(self, theta, loss: GLMLoss, clip: float) -> np.ndarray:
        """sum_i clip_C(grad l_i(theta)) over all rows (one pass): DP-GD's gradient."""
        theta = np.asarray(theta, dtype=np.float64)
        return self.reduce(_chunk_clipped_sum, self.d, theta, loss, clip, self.rows)

    def sufficient_statistics(self) -> tuple[np.ndarray, np.ndarray, float, float]:
        """AdaSSP's (X^T X, X^T y, max row norm, max |y|), in one pass.

        Sums are added over chunks; the two maxima are per-chunk maxima combined by max.
        """
        import dask
        from dask.delayed import delayed

        d = self.d
        parts = [
            delayed(_chunk_statistics)(xb, yb, self.rows)
            for xb, yb in zip(self.X.to_delayed().ravel(), self.y.to_delayed().ravel(), strict=True)
        ]
        parts = np.vstack(dask.compute(*parts))
        self.passes += 1
        gram = parts[:, : d * d].sum(axis=0).reshape(d, d)
        xty = parts[:, d * d : d * d + d].sum(axis=0)
        return gram, xty, float(parts[:, -2].max()), float(parts[:, -1].max())


class DaskGLMObjective:
    """F(theta) = sum_i f(x_i^T theta; y_i) + (lam/2)||theta||^2 + b^T theta over dask chunks.

    Built by :meth:`DaskRows.objective`. Every evaluation is one pass over the data
    (counted in ``passes``); gradients and the certificate are computed in float64 on
    the full objective. ``passes_are_expensive`` tells the solvers to minimize passes:
    Newton with the d x d Hessian formed in the gradient's pass for moderate d,
    L-BFGS otherwise.
    """

    passes_are_expensive = True

    def __init__(self, source: DaskRows, loss: GLMLoss, lam: float, b: np.ndarray | None = None):
        self.source = source
        self.n, self.d = source.n, source.d
        self.loss = loss
        self.lam = float(lam)
        self.b = np.zeros(self.d) if b is None else np.asarray(b, dtype=np.float64)
        self.passes = 0
        self.grad_evals = 0

    def _reduce(self, fn, width: int, *args) -> np.ndarray:
        self.passes += 1
        self.grad_evals += self.n
        return self.source.reduce(fn, width, *args)

    def value_and_gradient(self, theta) -> tuple[float, np.ndarray]:
        theta = np.asarray(theta, dtype=np.float64)
        total = self._reduce(_chunk_value_grad, self.d + 1, theta, self.loss, self.source.rows)
        value = total[0] + 0.5 * self.lam * theta @ theta + self.b @ theta
        return float(value), total[1:] + self.lam * theta + self.b

    def value_gradient_hessian(self, theta) -> tuple[float, np.ndarray, np.ndarray]:
        """(F, grad F, Hessian) in one pass; the Hessian's partial sums are d x d per chunk."""
        theta = np.asarray(theta, dtype=np.float64)
        d = self.d
        total = self._reduce(
            _chunk_value_grad_hess, 1 + d + d * d, theta, self.loss, self.source.rows
        )
        value = total[0] + 0.5 * self.lam * theta @ theta + self.b @ theta
        hess = total[1 + d :].reshape(d, d)
        hess[np.diag_indices_from(hess)] += self.lam
        return float(value), total[1 : 1 + d] + self.lam * theta + self.b, hess

    def value(self, theta) -> float:
        return self.value_and_gradient(theta)[0]

    def gradient(self, theta) -> np.ndarray:
        return self.value_and_gradient(theta)[1]

    def hessian_vector(self, theta, v) -> np.ndarray:
        theta = np.asarray(theta, dtype=np.float64)
        v = np.asarray(v, dtype=np.float64)
        return (
            self._reduce(_chunk_hvp, self.d, theta, v, self.loss, self.source.rows) + self.lam * v
        )

    def gradient_norm(self, theta) -> float:
        """||grad F(theta)||_2 in float64 on the full objective: the certificate."""
        return float(np.linalg.norm(self.gradient(theta)))

    def smoothness_bounds(self):
        raise NotImplementedError("SVRG needs random access to rows; use lbfgs on dask data")
