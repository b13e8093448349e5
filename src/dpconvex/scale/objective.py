"""The dask row source: raw row chunks transformed and reduced where they live."""

from __future__ import annotations

import numpy as np

from ..losses import GLMLoss
from ..mechanisms._checks import check_labels
from ..mechanisms.rows import add_intercept, design_bound, row_scales, transform_rows
from ..optim.objective import PerturbedGLMObjective, clipping_kappa, weighted_gram


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


class RowChunk:
    """A block of raw rows as the mechanism sees them, without copying the block.

    The transformed row is (f_i x_i, c): the row policy's factor f_i
    (:func:`~dpconvex.mechanisms.rows.row_scales`) and, with an intercept, the constant
    c = ``intercept_scaling``. Margins, gradients and Hessians are formed from the raw
    block and f, which is the arithmetic of the in-memory objective on the copied rows
    up to rounding. The kernels cut each chunk into blocks of :data:`BLOCK_ROWS` rows
    (:func:`row_blocks`), so that the row norms, the margins, the gradient and the
    Hessian read a block from the cache, not the chunk several times from memory.
    """

    def __init__(self, xb, yb, loss: GLMLoss | None, rows: dict):
        xb = np.asarray(xb, dtype=np.float64)
        if xb.ndim != 2:
            raise ValueError(f"X must be two-dimensional, got a chunk of shape {xb.shape}")
        squares = np.einsum("ij,ij->i", xb, xb)
        if not np.all(np.isfinite(squares)) and not np.all(np.isfinite(xb)):
            raise ValueError("X contains NaN or infinity")
        norms = np.sqrt(squares)
        self.xb = xb
        self.f = row_scales(norms, rows["row_norm"], rows["row_bound"])
        self.c = float(rows["intercept_scaling"]) if rows["fit_intercept"] else None
        scaled = norms * self.f
        self.norms = scaled if self.c is None else np.sqrt(scaled**2 + self.c**2)
        if loss is None:
            self.y, self.loss, self.args = np.asarray(yb, dtype=np.float64).ravel(), None, ()
            return
        self.y = check_labels(loss, np.asarray(yb).ravel())
        self.loss, kappa = clipping_kappa(loss, self.norms)
        self.args = (self.y,) if kappa is None else (self.y, kappa)

    def times(self, theta: np.ndarray) -> np.ndarray:
        """X~ theta for the transformed rows X~."""
        if self.c is None:
            return self.f * (self.xb @ theta)
        return self.f * (self.xb @ theta[:-1]) + self.c * theta[-1]

    def transposed_times(self, weights: np.ndarray) -> np.ndarray:
        """X~^T weights."""
        head = self.xb.T @ (self.f * weights)
        return head if self.c is None else np.append(head, self.c * weights.sum())

    def hessian(
        self,
        curvature: np.ndarray,
        stride: int = 1,
        scale: float | None = None,
        scratch: np.ndarray | None = None,
    ) -> np.ndarray:
        """X~^T diag(curvature) X~ (a BLAS rank-k update on the scaled block).

        With ``stride`` k > 1, from every k-th row only, times ``scale`` (default: rows /
        rows used): the subsampled Hessian of a sub-sampled Newton method (the gradient
        stays exact). ``scratch``: a flat float64 array of at least (rows used) x p
        numbers for the weighted copy of the block, reused from block to block.
        """
        xb = self.xb[::stride] if stride > 1 else self.xb
        if scale is None:
            scale = self.xb.shape[0] / max(xb.shape[0], 1)
        weights = np.maximum(curvature[::stride], 0.0)
        f = self.f[::stride]
        root = f * np.sqrt(weights * scale)
        head = weighted_gram(xb, root, scratch)
        if self.c is None:
            return head
        d = head.shape[0] + 1
        hess = np.empty((d, d))
        hess[:-1, :-1] = head
        hess[:-1, -1] = hess[-1, :-1] = self.c * scale * (xb.T @ (f * weights))
        hess[-1, -1] = self.c**2 * scale * weights.sum()
        return hess

    def value_grad(
        self,
        theta,
        hessian: int = 0,
        value: bool = True,
        scale: float | None = None,
        scratch: np.ndarray | None = None,
    ) -> np.ndarray:
        """[value (if ``value``), gradient, Hessian (row stride ``hessian``, if > 0)]."""
        u = self.times(theta)
        parts = [self.transposed_times(self.loss.derivative(u, *self.args))]
        if value:
            parts.insert(0, [self.loss.value(u, *self.args).sum()])
        if hessian:
            curvature = self.loss.second_derivative(u, *self.args)
            parts.append(self.hessian(curvature, int(hessian), scale, scratch).ravel())
        return np.concatenate(parts)


#: rows per block of a chunk's kernels. A 4,096 x 100 float64 block (3.2 MB) stays in the
#: cache between the sweeps over it (row norms, margins, gradient, the Hessian's weighted
#: copy), and the temporaries stay small: dask's workers set MALLOC_TRIM_THRESHOLD_, so
#: every array above 128 KiB is a fresh mapping whose pages fault on first touch.
#: Measured in dask workers on 10^7 x 100 Parquet rows (125,000-row chunks): a gradient
#: pass 5.2-5.9 s in 4,096- or 8,192-row blocks, 6.3-6.7 s in 32,768 rows or whole chunks.
BLOCK_ROWS = 4096


def row_blocks(xb, yb, loss: GLMLoss | None, rows: dict, multiple: int = 1):
    """The chunk as :class:`RowChunk` blocks of about :data:`BLOCK_ROWS` rows (a multiple of
    ``multiple``, so that every k-th row of each block is every k-th row of the chunk)."""
    xb = np.asarray(xb, dtype=np.float64)
    if xb.ndim != 2:
        raise ValueError(f"X must be two-dimensional, got a chunk of shape {xb.shape}")
    yb = np.asarray(yb).ravel()
    step = multiple * -(-BLOCK_ROWS // multiple)
    for start in range(0, max(xb.shape[0], 1), step):
        yield RowChunk(xb[start : start + step], yb[start : start + step], loss, rows)


def _chunk_value_grad(xb, yb, theta, loss, rows, hessian=0, value=True):
    stride = max(1, int(hessian))
    scale = len(xb) / max(-(-len(xb) // stride), 1)  # rows / rows used, in the whole chunk
    # one scratch array per chunk for the blocks' weighted copies (see BLOCK_ROWS)
    scratch = np.empty(-(-BLOCK_ROWS // stride) * np.shape(xb)[1]) if hessian else None
    blocks = row_blocks(xb, yb, loss, rows, stride)
    return sum(block.value_grad(theta, hessian, value, scale, scratch) for block in blocks)


def _chunk_hessian(xb, yb, theta, loss, rows):
    scratch = np.empty(BLOCK_ROWS * np.shape(xb)[1])
    return sum(
        block.hessian(
            block.loss.second_derivative(block.times(theta), *block.args), scratch=scratch
        ).ravel()
        for block in row_blocks(xb, yb, loss, rows)
    )


def _chunk_hvp(xb, yb, theta, v, loss, rows):
    return sum(
        block.transposed_times(
            block.loss.second_derivative(block.times(theta), *block.args) * block.times(v)
        )
        for block in row_blocks(xb, yb, loss, rows)
    )


def _chunk_clipped_sum(xb, yb, theta, loss, clip, rows):
    from ..mechanisms.dpsgd import _clipped_weights

    return sum(
        block.transposed_times(
            _clipped_weights(
                block.times(theta), check_labels(loss, block.y), block.norms, loss, clip
            )
        )
        for block in row_blocks(xb, yb, None, rows)
    )


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
            _chunk_value_grad, width, theta, self.loss, self.source.rows, stride, False
        )
        grad = total[:d] + self.lam * theta + self.b
        return grad, self._regularized(total[d:]) if hessian else None

    def subsample(self, m: int):
        """The objective on the first m rows (read from the first chunks, not a pass), rescaled.

        See :meth:`dpconvex.optim.PerturbedGLMObjective.subsample`; only a starting point.
        """
        m = min(m, self.n)
        X = self.source.X[:m].compute()
        y = self.source.y[:m].compute()
        xt = prepare_chunk(X, **self.source.rows)
        share = m / self.n
        return PerturbedGLMObjective(
            xt, check_labels(self.loss, y), self.loss, self.lam * share, self.b * share
        )

    def hessian(self, theta) -> np.ndarray:
        """The d x d Hessian alone (one pass)."""
        theta = np.asarray(theta, dtype=np.float64)
        total = self._reduce(_chunk_hessian, self.d * self.d, theta, self.loss, self.source.rows)
        return self._regularized(total)

    def _regularized(self, flat: np.ndarray) -> np.ndarray:
        hess = flat.reshape(self.d, self.d)
        hess[np.diag_indices_from(hess)] += self.lam
        return hess

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
