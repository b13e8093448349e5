"""Sums of clipped per-example GLM gradients over the batches of many runs at once.

A kernel's ``gradients(theta, rng)`` takes the (runs, d) iterates of independent runs
and returns, per run r, sum_{i in B_r} clip_C(grad l_i(theta_r)) over its batch B_r:
every row (full batches, DP-GD) or a Poisson subsample drawn from ``rng`` inside the call
(:func:`~dpconvex.data.batches.poisson_batches`, DP-SGD). Per-example gradients of a GLM
are f'(x_i^T theta) x_i, so clipping is a per-example scalar
(:func:`~dpconvex.data.clipping.clipped_weights`) and a step is two matrix products;
the kernels differ only in how they lay out the products for dense, sparse and
out-of-core rows. :func:`batch_gradient_kernel` picks the fastest exact one.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from .._arrays import row_norms
from .batches import poisson_batches
from .clipping import clipped_weights
from .kernels import chunk_clipped_sum
from .sources import InMemoryRows


class _FullBatch:
    """Every run uses every row (DP-GD): two matrix products per step.

    The products are taken as (runs x d) times (d x n) and (runs x n) times (n x d): on
    1,600 x 2,001 dense rows and 25 runs, 10.3 ms per step against 19.8 ms for the same
    products as (n x d) times (d x runs) and (d x n) times (n x runs) (OpenBLAS, 1 thread).
    """

    def __init__(self, X, y, norms, loss, clip):
        self.X, self.loss, self.clip = X, loss, clip
        self.y, self.norms = np.ascontiguousarray(y), np.ascontiguousarray(norms)

    def margins(self, theta) -> np.ndarray:
        """x_i^T theta_r for every run r and row i, shape (runs, n)."""
        return np.asarray(self.X @ theta.T).T if sp.issparse(self.X) else theta @ self.X.T

    def sums(self, weights) -> np.ndarray:
        """sum_i weights[r, i] x_i for every run r, shape (runs, d)."""
        return np.asarray(self.X.T @ weights.T).T if sp.issparse(self.X) else weights @ self.X

    def gradients(self, theta, rng):
        weights = clipped_weights(self.margins(theta), self.y, self.norms, self.loss, self.clip)
        return self.sums(weights)


class _DenseAllRows(_FullBatch):
    """Poisson batches on dense X with a large rate: products over all rows, masked weights."""

    def __init__(self, X, y, norms, loss, clip, q):
        super().__init__(X, y, norms, loss, clip)
        self.q = q

    def gradients(self, theta, rng):
        n, runs = self.X.shape[0], theta.shape[0]
        rows, sizes = poisson_batches(rng, n, self.q, runs)
        owner = np.repeat(np.arange(runs), sizes)
        weights = np.zeros((runs, n))
        # (run, row) pairs are distinct: a run's batch holds each row at most once
        weights[owner, rows] = clipped_weights(
            self.margins(theta)[owner, rows],
            self.y.take(rows),
            self.norms.take(rows),
            self.loss,
            self.clip,
        )
        return self.sums(weights)


class _DenseGather(_DenseAllRows):
    """Poisson batches on dense X with a small rate: work on the gathered rows only."""

    def gradients(self, theta, rng):
        runs = theta.shape[0]
        rows, sizes = poisson_batches(rng, self.X.shape[0], self.q, runs)
        xb = self.X.take(rows, axis=0)  # the same rows as X[rows], gathered faster
        if runs == 1:  # two BLAS matrix-vector products
            w = clipped_weights(
                xb @ theta[0], self.y.take(rows), self.norms.take(rows), self.loss, self.clip
            )
            return (xb.T @ w)[None, :]
        owner = np.repeat(np.arange(runs), sizes)
        margins = np.einsum("ij,ij->i", xb, theta[owner])
        w = clipped_weights(margins, self.y.take(rows), self.norms.take(rows), self.loss, self.clip)
        indptr = np.concatenate([[0], np.cumsum(sizes)])
        select = sp.csr_matrix((w, np.arange(rows.size), indptr), shape=(runs, rows.size))
        return select @ xb


class _SparseRows(_DenseAllRows):
    """Poisson batches on CSR X: margins and sums over the non-zeros only."""

    def gradients(self, theta, rng):
        runs, d = theta.shape
        rows, sizes = poisson_batches(rng, self.X.shape[0], self.q, runs)
        sub = self.X[rows]
        per_row = np.diff(sub.indptr)
        # flat index (run, feature) of every stored entry of the gathered rows
        flat = np.repeat(np.repeat(np.arange(runs) * d, sizes), per_row) + sub.indices
        prod = sub.data * np.take(theta, flat)
        # reduceat over the rows that hold entries only: at an empty row it would return
        # the next row's first entry, and cut the row before short if the empty row is last
        filled = per_row > 0
        margins = np.zeros(rows.size)
        if prod.size:
            margins[filled] = np.add.reduceat(prod, sub.indptr[:-1][filled])
        w = clipped_weights(margins, self.y.take(rows), self.norms.take(rows), self.loss, self.clip)
        return _run_sums(flat, np.repeat(w, per_row) * sub.data, runs, d)


class _PaddedRows(_DenseAllRows):
    """Poisson batches on sparse X whose rows hold about as many non-zeros each (one-hot
    rows): every row's non-zeros in one fixed-width array of values and one of column
    indices (ELLPACK), shorter rows padded with zeros in column 0, so that a batch is two
    row gathers, a product and a bincount, with no per-row ragged bookkeeping (on Adult's
    36,178 x 105 rows, 13-14 non-zeros each, 25 runs at expected batch 256: 0.71 ms per
    step against 1.39 ms for :class:`_SparseRows`; one Figure 2 job of 2 trials took
    15.7-16.6 s instead of 20.3-20.4 s)."""

    #: used when no row holds more than this many times the mean number of non-zeros
    MAX_PADDING = 2.0

    def __init__(self, X, y, norms, loss, clip, q):
        super().__init__(X, y, norms, loss, clip, q)
        per_row = np.diff(X.indptr)
        width = max(int(per_row.max(initial=0)), 1)
        filled = np.arange(width) < per_row[:, None]
        self.values = np.zeros((X.shape[0], width))
        self.columns = np.zeros((X.shape[0], width), dtype=np.intp)
        self.values[filled] = X.data
        self.columns[filled] = X.indices

    @classmethod
    def fits(cls, X) -> bool:
        per_row = np.diff(X.indptr)
        return per_row.size > 0 and per_row.max() <= cls.MAX_PADDING * max(per_row.mean(), 1.0)

    def gradients(self, theta, rng):
        runs, d = theta.shape
        rows, sizes = poisson_batches(rng, self.X.shape[0], self.q, runs)
        values = self.values.take(rows, axis=0)
        flat = self.columns.take(rows, axis=0)  # then (run, column) as one flat index
        flat += np.repeat(np.arange(runs) * d, sizes)[:, None]
        margins = np.einsum("ij,ij->i", values, theta.take(flat))
        w = clipped_weights(margins, self.y.take(rows), self.norms.take(rows), self.loss, self.clip)
        values *= w[:, None]
        return _run_sums(flat.ravel(), values.ravel(), runs, d)


class _SourceFullBatch:
    """Full batches from any row source (e.g. out of core): one pass per run and step."""

    def __init__(self, source, loss, clip):
        self.source, self.loss, self.clip = source, loss, clip

    def gradients(self, theta, rng):
        return np.vstack([self._sum(np.asarray(t, dtype=np.float64)) for t in theta])

    def _sum(self, theta: np.ndarray) -> np.ndarray:
        """sum_i clip_C(grad l_i(theta)) over all rows: one pass of the source."""
        source = self.source
        args = (theta, self.loss, self.clip, source.policy)
        return source.reduce(chunk_clipped_sum, source.d, *args, scaled=True)


def batch_gradient_kernel(data, loss, clip: float, q: float | None, runs: int):
    """The fastest exact kernel for the data layout, the rate and the number of runs.

    ``q`` None: full batches (every row, every step); else Poisson batches of rate ``q``,
    which need rows in memory (a :class:`~dpconvex.data.sources.InMemoryRows`).
    """
    if not isinstance(data, InMemoryRows):
        if q is not None:
            raise ValueError(
                "Poisson-subsampled DP-SGD needs random access to rows; on out-of-core "
                'data use method="dpgd" (full batches) or "amp"'
            )
        return _SourceFullBatch(data, loss, clip)
    X, y, norms = data.X, data.y, row_norms(data.X)
    if q is None:
        return _FullBatch(X, y, norms, loss, clip)
    if sp.issparse(X) or (runs > 1 and X.size and np.count_nonzero(X) <= 0.3 * X.size):
        csr = sp.csr_matrix(X)
        kind = _PaddedRows if _PaddedRows.fits(csr) else _SparseRows
        return kind(csr, y, norms, loss, clip, q)
    if runs == 1:
        return _DenseGather(X, y, norms, loss, clip, q)
    if q >= 0.05:
        return _DenseAllRows(X, y, norms, loss, clip, q)
    return _DenseGather(X, y, norms, loss, clip, q)


def _run_sums(flat: np.ndarray, weights: np.ndarray, runs: int, d: int) -> np.ndarray:
    """The (runs, d) sums of ``weights`` at flat indices run * d + column (float64)."""
    sums = np.bincount(flat, weights=weights, minlength=runs * d)
    # (numpy's bincount returns integers when nothing is counted: an empty batch)
    return sums.astype(np.float64, copy=False).reshape(runs, d)
