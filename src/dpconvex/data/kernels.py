"""Row kernels in cache blocks: what every pass over dense rows computes, wherever they live.

A mechanism's rows are raw rows under the row policy and the intercept column
(:mod:`dpconvex.data.policy`). The kernels here read a block of *raw* rows and the
policy's per-row factors, never a transformed copy, and work through it in blocks of
:data:`BLOCK_ROWS` rows. Each ``chunk_*`` function takes one chunk (an in-memory array
is one chunk; a dask array's row chunks are many) and returns its partial sums; the
row sources add them (:class:`dpconvex.data.sources.InMemoryRows`,
:class:`dpconvex.scale.DaskRows`). ``policy`` is the chunk's :class:`~.policy.RowPolicy`
(or a mapping of its fields).
"""

from __future__ import annotations

import numpy as np

from .._arrays import row_norms
from ..losses import GLMLoss
from ..optim.objective import clipping_kappa
from .checks import check_labels
from .clipping import clipped_weights
from .policy import RowPolicy, add_intercept, as_policy, row_scales, transform_rows


def chunk_scales(xb, policy: RowPolicy) -> np.ndarray:
    """Per row of a chunk of raw rows: the row policy's factor f_i and the norm of the
    transformed row (f_i x_i, c), as an (m, 2) array; raises on NaN or infinity.

    They depend on the rows alone (not on theta, the labels or the loss), so a source
    that holds its rows computes them once (:meth:`InMemoryRows.reduce
    <dpconvex.data.sources.InMemoryRows.reduce>`, :func:`dpconvex.scale.fit.cache_rows`)
    and every pass reads them instead of the rows' norms (``scales=`` of the kernels).
    """
    policy = as_policy(policy)
    xb = np.asarray(xb, dtype=np.float64)
    if xb.ndim != 2:
        raise ValueError(f"X must be two-dimensional, got a chunk of shape {xb.shape}")
    out = np.empty((xb.shape[0], 2))
    for start in range(0, xb.shape[0], BLOCK_ROWS):  # each block is read once, from the cache
        block = xb[start : start + BLOCK_ROWS]
        squares = np.einsum("ij,ij->i", block, block)
        if not np.all(np.isfinite(squares)) and not np.all(np.isfinite(block)):
            raise ValueError("X contains NaN or infinity")
        norms = np.sqrt(squares)
        if policy.row_norm is None:
            f = np.ones_like(norms)
        else:
            f = row_scales(norms, policy.row_norm, policy.row_bound)
        scaled = norms * f
        if policy.fit_intercept:
            scaled = np.sqrt(scaled**2 + float(policy.intercept_scaling) ** 2)
        out[start : start + BLOCK_ROWS, 0] = f
        out[start : start + BLOCK_ROWS, 1] = scaled
    return out


class RowChunk:
    """A block of raw rows as the mechanism sees them, without copying the block.

    The transformed row is (f_i x_i, c): the row policy's factor f_i
    (:func:`~dpconvex.data.policy.row_scales`) and, with an intercept, the constant
    c = ``intercept_scaling``; ``rows.row_norm`` None means the rows are already the
    mechanism's (f_i = 1). Margins, gradients and Hessians are formed from the raw block
    and f, which is the arithmetic of :class:`~dpconvex.optim.PerturbedGLMObjective` on
    the copied rows up to rounding. The kernels cut each chunk into blocks of
    :data:`BLOCK_ROWS` rows (:func:`row_blocks`), so that the row norms, the margins, the
    gradient and the Hessian read a block from the cache, not the chunk several times from memory.
    """

    def __init__(self, xb, yb, loss: GLMLoss | None, policy: RowPolicy, scales=None):
        policy = as_policy(policy)
        xb = np.asarray(xb, dtype=np.float64)
        if xb.ndim != 2:
            raise ValueError(f"X must be two-dimensional, got a chunk of shape {xb.shape}")
        if scales is None:
            scales = chunk_scales(xb, policy)
        self.xb = xb
        self.f = np.ascontiguousarray(scales[:, 0])
        self.norms = np.ascontiguousarray(scales[:, 1])
        self.c = float(policy.intercept_scaling) if policy.fit_intercept else None
        if loss is None:
            self.y, self.loss, self.args = np.asarray(yb, dtype=np.float64).ravel(), None, ()
            return
        self.y = check_labels(loss, np.asarray(yb).ravel())
        self.loss, kappa = clipping_kappa(loss, self.norms)
        self.args = (self.y,) if kappa is None else (self.y, kappa)

    def times(self, theta: np.ndarray) -> np.ndarray:
        """X~ theta for the transformed rows X~.

        On rows stored row by row, by ``einsum``, not BLAS: this product is the pass's first
        read of a block held in memory (when the source keeps the rows' scales), and
        numpy's loop streams it from memory faster than OpenBLAS's matrix-vector kernel: a
        pass over 10^6 x 100 rows in 4,096-row blocks took 0.062-0.074 s against
        0.098-0.109 s (with the transposed product, which then reads the block from the
        cache, by BLAS). On rows stored column by column (Parquet chunks) BLAS is the
        faster: 6.9 ms against 11.1 ms for both products over 125,000 x 100 rows.
        """
        head = theta if self.c is None else theta[:-1]
        if self.xb.strides[0] >= self.xb.strides[1]:
            product = np.einsum("ij,j->i", self.xb, head)
        else:
            product = self.xb @ head
        if self.c is None:
            return self.f * product
        return self.f * product + self.c * theta[-1]

    def transposed_times(self, weights: np.ndarray) -> np.ndarray:
        """X~^T weights."""
        head = self.xb.T @ (self.f * weights)
        return head if self.c is None else np.append(head, self.c * weights.sum())

    def hessian(
        self,
        curvature: np.ndarray,
        stride: int = 1,
        scale: float | None = None,
        gram: GramSum | None = None,
    ) -> np.ndarray | None:
        """X~^T diag(curvature) X~ (a BLAS rank-k update on the weighted block).

        With ``stride`` k > 1, from every k-th row only, times ``scale`` (default: rows /
        rows used): the subsampled Hessian of a sub-sampled Newton method (the gradient
        stays exact). ``gram``: a :class:`GramSum` that the block's update is added to
        (then None is returned), reused from block to block; by default a new one whose
        sum is returned.
        """
        xb = self.xb[::stride] if stride > 1 else self.xb
        if scale is None:
            scale = self.xb.shape[0] / max(xb.shape[0], 1)
        root = np.sqrt(np.maximum(curvature[::stride], 0.0) * scale)
        total = GramSum(xb.shape[0], xb.shape[1] + (self.c is not None)) if gram is None else gram
        total.add(xb, self.f[::stride] * root, None if self.c is None else self.c * root)
        return total.result() if gram is None else None

    def value_grad(self, theta, value: bool = True, curvature_to=None) -> np.ndarray:
        """[value (if ``value``), gradient]; with ``curvature_to`` (a function of the
        block and its curvature f''(margins)), that is called too (the Hessian's update)."""
        u = self.times(theta)
        parts = [self.transposed_times(self.loss.derivative(u, *self.args))]
        if value:
            parts.insert(0, [self.loss.value(u, *self.args).sum()])
        if curvature_to is not None:
            curvature_to(self, self.loss.second_derivative(u, *self.args))
        return np.concatenate(parts)


class GramSum:
    """A running sum of A_b^T A_b over row blocks A_b = [diag(r) X_b, s] (s: an optional
    last column), kept as the upper triangle that BLAS's symmetric rank-k update (dsyrk)
    adds each block to in place.

    Each block's weighted copy, with its last column, is written into one scratch array
    in the block's own layout (no new array per block: in dask's workers every large new
    array is a fresh mapping whose pages fault on first touch), and the d x d sum is
    symmetrized once, at the end. Against a d x d product per block plus the
    intercept's matrix-vector product, summed block by block: 0.068-0.081 s against
    0.076-0.086 s for the value, gradient and Hessian of a 125,000 x 100 chunk (medians
    of 15 interleaved runs, either layout, with and without the intercept).
    """

    def __init__(self, rows: int, d: int):
        self.scratch = np.empty(max(rows, 1) * d)
        self.upper = np.zeros((d, d), order="F")
        self.d = d

    def add(self, xb: np.ndarray, root: np.ndarray, last: np.ndarray | None = None) -> None:
        from scipy.linalg.blas import dsyrk

        m, p = xb.shape
        if m == 0:
            return
        if self.scratch.size < m * self.d:
            self.scratch = np.empty(m * self.d)
        columns = xb.strides[0] < xb.strides[1]  # column-major block (Parquet chunks)
        flat = self.scratch[: m * self.d]
        weighted = flat.reshape((m, self.d), order="F" if columns else "C")
        np.multiply(xb, root[:, None], out=weighted[:, :p])
        if last is not None:
            weighted[:, p] = last
        # A^T A from the F-ordered A itself (trans=1), or as B B^T for B = A^T, which is
        # F-ordered when A is row-major (trans=0): no copy either way
        a, trans = (weighted, 1) if columns else (weighted.T, 0)
        self.upper = dsyrk(1.0, a, beta=1.0, c=self.upper, trans=trans, overwrite_c=1)

    def result(self) -> np.ndarray:
        """The symmetric sum (a new d x d array)."""
        return np.triu(self.upper) + np.triu(self.upper, 1).T


#: rows per block of a chunk's kernels. A 4,096 x 100 float64 block (3.2 MB) stays in the
#: cache between the sweeps over it (row norms, margins, gradient, the Hessian's weighted
#: copy), and the temporaries stay small: dask's workers set MALLOC_TRIM_THRESHOLD_, so
#: every array above 128 KiB is a fresh mapping whose pages fault on first touch.
#: Measured in dask workers on 10^7 x 100 Parquet rows (125,000-row chunks): a gradient
#: pass 5.2-5.9 s in 4,096- or 8,192-row blocks, 6.3-6.7 s in 32,768 rows or whole chunks.
BLOCK_ROWS = 4096


class RowScales:
    """The :func:`chunk_scales` of a chunk held in memory, filled by the first pass over it.

    That pass computes each block's scales from the block it reads anyway and keeps them
    here, so that keeping them costs no read of the rows of its own.
    """

    def __init__(self, rows: int):
        self.values = np.empty((rows, 2))
        self.filled = False


def row_blocks(xb, yb, loss: GLMLoss | None, policy: RowPolicy, multiple: int = 1, scales=None):
    """The chunk as :class:`RowChunk` blocks of about :data:`BLOCK_ROWS` rows (a multiple of
    ``multiple``, so that every k-th row of each block is every k-th row of the chunk).

    ``scales``: the chunk's :func:`chunk_scales` if the source holds them, as an array or a
    :class:`RowScales` (filled by this pass if it is not yet); None: each block computes
    its own."""
    policy = as_policy(policy)
    xb = np.asarray(xb, dtype=np.float64)
    if xb.ndim != 2:
        raise ValueError(f"X must be two-dimensional, got a chunk of shape {xb.shape}")
    yb = np.asarray(yb).ravel()
    fill = isinstance(scales, RowScales) and not scales.filled
    held = scales.values if isinstance(scales, RowScales) else scales
    step = multiple * -(-BLOCK_ROWS // multiple)
    for start in range(0, max(xb.shape[0], 1), step):
        part = slice(start, start + step)
        if fill:
            held[part] = chunk_scales(xb[part], policy)
        yield RowChunk(xb[part], yb[part], loss, policy, None if held is None else held[part])
    if fill:
        scales.filled = True


def _hessian_sum(xb, stride: int, with_intercept: bool) -> tuple[float, GramSum]:
    """(rows / rows used in the whole chunk, one :class:`GramSum` for the blocks' updates:
    see :data:`BLOCK_ROWS`) for every ``stride``-th row."""
    scale = len(xb) / max(-(-len(xb) // stride), 1)
    return scale, GramSum(-(-BLOCK_ROWS // stride), np.shape(xb)[1] + with_intercept)


def chunk_value_grad(xb, yb, theta, loss, policy, hessian=0, value=True, scales=None):
    """[value (if ``value``), gradient, Hessian (row stride ``hessian``, if > 0) raveled]."""
    stride = max(1, int(hessian))
    blocks = row_blocks(xb, yb, loss, policy, stride, scales)
    if not hessian:
        return sum(block.value_grad(theta, value) for block in blocks)
    scale, gram = _hessian_sum(xb, stride, as_policy(policy).fit_intercept)

    def update(block, curvature):
        block.hessian(curvature, stride, scale, gram)

    head = sum(block.value_grad(theta, value, update) for block in blocks)
    return np.concatenate([head, gram.result().ravel()])


def chunk_hessian(xb, yb, theta, loss, policy, stride=1, scales=None):
    stride = max(1, int(stride))
    scale, gram = _hessian_sum(xb, stride, as_policy(policy).fit_intercept)
    for block in row_blocks(xb, yb, loss, policy, stride, scales):
        block.hessian(
            block.loss.second_derivative(block.times(theta), *block.args), stride, scale, gram
        )
    return gram.result().ravel()


def chunk_hvp(xb, yb, theta, v, loss, policy, scales=None):
    return sum(
        block.transposed_times(
            block.loss.second_derivative(block.times(theta), *block.args) * block.times(v)
        )
        for block in row_blocks(xb, yb, loss, policy, scales=scales)
    )


def chunk_clipped_sum(xb, yb, theta, loss, clip, policy, scales=None):
    """sum_i clip_C(grad l_i(theta)) over the chunk's transformed rows: DP-GD's gradient."""
    return sum(
        block.transposed_times(
            clipped_weights(
                block.times(theta), check_labels(loss, block.y), block.norms, loss, clip
            )
        )
        for block in row_blocks(xb, yb, None, policy, scales=scales)
    )


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


def sufficient_statistics(X, y) -> tuple[np.ndarray, np.ndarray, float, float]:
    """(X^T X, X^T y, max row norm, max |y|) of in-memory rows (numpy or scipy.sparse)."""
    y = np.asarray(y, dtype=np.float64)
    if y.ndim != 1 or y.shape[0] != X.shape[0]:
        raise ValueError(f"y must be one-dimensional with {X.shape[0]} entries, got {y.shape}")
    gram = X.T @ X
    gram = np.asarray(gram.toarray() if hasattr(gram, "toarray") else gram, dtype=np.float64)
    xty = np.asarray(X.T @ y, dtype=np.float64).reshape(X.shape[1])
    norms = row_norms(X)
    return gram, xty, float(norms.max(initial=0.0)), float(np.max(np.abs(y), initial=0.0))


def chunk_statistics(xb, yb, policy) -> np.ndarray:
    """[X^T X raveled, X^T y, max row norm, max |y|] of a chunk's transformed rows.

    Sums over chunks add; the last two entries combine by max (``maxima=2`` of the
    sources' ``reduce``). Rows under the identity policy are used as they are (they may
    be CSR); others get :func:`prepare_chunk`.
    """
    policy = as_policy(policy)
    yb = np.asarray(yb, dtype=np.float64).ravel()
    if not policy.is_identity:
        xb = prepare_chunk(xb, **policy.settings())
    gram, xty, max_norm, max_y = sufficient_statistics(xb, yb)
    return np.concatenate([gram.ravel(), xty, [max_norm, max_y]])


def split_statistics(total: np.ndarray, d: int) -> tuple[np.ndarray, np.ndarray, float, float]:
    """(X^T X, X^T y, max row norm, max |y|) from :func:`chunk_statistics`' layout."""
    gram = total[: d * d].reshape(d, d)
    return gram, total[d * d : d * d + d], float(total[-2]), float(total[-1])
