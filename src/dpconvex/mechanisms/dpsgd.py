"""DP-SGD with Poisson subsampling and DP-GD (full batch) for GLM losses.

Per-example gradients of a GLM are f'(x_i^T theta) x_i, so their norms are
|f'| ||x_i|| and clipping is a per-example scalar: the whole step is two
matrix-vector products, vectorized in numpy. The update of Redberg, Koskela & Wang
(arXiv 2401.00583), §2, is

    theta <- theta - eta * (sum_{i in B} clip_C(grad l_i) + N(0, (z C)^2 I)) / (q n) [+ lam theta]

normalized by the expected batch size q n (as Opacus does; the dataset size n is
treated as public, as in every DP-SGD implementation); plain or Adam steps.
"""

from __future__ import annotations

import math

import numpy as np
import scipy.sparse as sp
from dp_accounting.dp_event import DpEvent, GaussianDpEvent, SelfComposedDpEvent

from .. import _validation as v
from .._arrays import row_norms
from ..accounting.events import dpsgd_event
from ..data.batches import poisson_batches
from ..data.clipping import clipped_weights
from ..data.kernels import chunk_clipped_sum
from ..data.sources import InMemoryRows, as_rows
from ..losses import require_glm
from ..release import Release

OPTIMIZERS = ("adam", "sgd")


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
        w = clipped_weights(
            margins, self.y.take(rows), self.norms.take(rows), self.loss, self.clip
        )
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
        w = clipped_weights(
            margins, self.y.take(rows), self.norms.take(rows), self.loss, self.clip
        )
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
        w = clipped_weights(
            margins, self.y.take(rows), self.norms.take(rows), self.loss, self.clip
        )
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


def _kernel(data, loss, clip, q, runs):
    """The fastest exact kernel for the data layout, the rate and the number of runs."""
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


def dpsgd_runs(
    X,
    y,
    loss,
    *,
    noise_multiplier,
    clip: float,
    sampling_rate: float | None,
    steps: int,
    learning_rates,
    optimizer: str,
    lam: float,
    row_bound: float,
    rng: np.random.Generator,
    rows: int | None = None,
) -> np.ndarray:
    """L independent DP-SGD runs at once; returns their last iterates, shape (L, d).

    ``learning_rates`` and ``noise_multiplier`` are scalars or length-L arrays (one
    value per run). Each run draws its own Poisson batches and its own noise, so
    each is exactly the mechanism priced by :func:`dpconvex.accounting.dpsgd_event`
    with its own noise multiplier (or, with ``sampling_rate=None``, full-batch
    DP-GD, :func:`dpgd_event`); the runs are independent, as Papernot-Steinke
    tuning requires. Running them together only shares the Python-level loop and
    the matrix products. ``X`` may be a :class:`~dpconvex.data.sources.RowSource`
    (then ``y=None``); out-of-core sources support full batches only.

    The noisy sum of clipped gradients is divided by ``sampling_rate * rows`` (the
    expected batch) before the step; ``rows`` is the public number of rows the plan was
    calibrated for (default: the rows given). A run on a secret subsample passes the
    public expected size, so that nothing in the update depends on the subsample's size.
    """
    if optimizer not in OPTIMIZERS:
        raise ValueError(f"optimizer must be one of {OPTIMIZERS}, got {optimizer!r}")
    loss = require_glm(loss)
    data = as_rows(X, y, loss, row_bound)
    v.nonnegative("lam", lam)
    clip = v.positive("clip", clip)
    rates = np.atleast_1d(np.asarray(learning_rates, dtype=np.float64))
    noise = np.broadcast_to(np.asarray(noise_multiplier, dtype=np.float64), rates.shape)
    for rate, z in zip(rates, noise, strict=True):
        v.positive("learning_rate", rate)
        v.positive("noise_multiplier", z)
    n, d = data.n, data.d
    runs = rates.size
    q = None if sampling_rate is None else v.sampling_rate("sampling_rate", sampling_rate)
    kernel = _kernel(data, loss, clip, q, runs)
    rows = n if rows is None else v.positive("rows", rows)
    scale = 1.0 / ((1.0 if q is None else q) * rows)
    noise_std = (noise * clip)[:, None]
    lr = rates[:, None]
    theta = np.zeros((runs, d))
    m = np.zeros((runs, d))
    s = np.zeros((runs, d))
    b1, b2, eps_adam = 0.9, 0.999, 1e-8
    for t in range(1, steps + 1):
        grad = kernel.gradients(theta, rng)
        grad += noise_std * rng.standard_normal((runs, d))
        grad *= scale
        if lam:
            grad += lam * theta
        if optimizer == "adam":  # in-place Adam (Kingma & Ba 2015)
            m *= b1
            m += (1 - b1) * grad
            s *= b2
            s += (1 - b2) * grad * grad
            denom = np.sqrt(s * (1.0 / (1 - b2**t)))
            denom += eps_adam
            theta -= (lr / (1 - b1**t)) * m / denom
        else:
            theta -= lr * grad
        if t % 64 == 0 or t == steps:
            if not np.all(np.isfinite(theta)):
                raise FloatingPointError(
                    "DP-SGD diverged (non-finite iterate); lower the learning rate"
                )
    return theta


def _run_sums(flat: np.ndarray, weights: np.ndarray, runs: int, d: int) -> np.ndarray:
    """The (runs, d) sums of ``weights`` at flat indices run * d + column (float64)."""
    sums = np.bincount(flat, weights=weights, minlength=runs * d)
    # (numpy's bincount returns integers when nothing is counted: an empty batch)
    return sums.astype(np.float64, copy=False).reshape(runs, d)


def dpsgd(
    X,
    y,
    loss,
    *,
    noise_multiplier: float,
    clip: float,
    sampling_rate: float,
    steps: int,
    learning_rate: float,
    row_bound: float,
    rng: np.random.Generator,
    optimizer: str = "adam",
    lam: float = 0.0,
    rows: int | None = None,
) -> Release:
    """DP-SGD: ``steps`` noisy clipped steps on Poisson subsamples of rate ``sampling_rate``.

    Each step is a Poisson-subsampled Gaussian mechanism of sensitivity C =
    ``clip`` and noise z C (add/remove neighbours); priced by
    :func:`dpconvex.accounting.dpsgd_event`. Every iterate could be released;
    only the last one is.
    """
    noise_multiplier = v.positive("noise_multiplier", noise_multiplier)
    q = v.sampling_rate("sampling_rate", sampling_rate)
    steps = v.positive_int("steps", steps)
    theta = dpsgd_runs(
        X,
        y,
        loss,
        noise_multiplier=noise_multiplier,
        clip=clip,
        sampling_rate=q,
        steps=steps,
        learning_rates=learning_rate,
        optimizer=optimizer,
        lam=lam,
        row_bound=row_bound,
        rng=rng,
        rows=rows,
    )[0]
    info = {"n_iter": steps, "noise_multiplier": noise_multiplier, "sampling_rate": q}
    return Release(theta, dpsgd_event(noise_multiplier, q, steps), info)


def dpgd_event(noise_multiplier: float, steps: int) -> DpEvent:
    """``steps`` full-batch Gaussian steps of sensitivity 1 (in units of the clip C)."""
    return SelfComposedDpEvent(GaussianDpEvent(noise_multiplier), steps)


def dpgd(
    X,
    y,
    loss,
    *,
    noise_multiplier: float,
    clip: float,
    steps: int,
    learning_rate: float,
    row_bound: float,
    rng: np.random.Generator,
    optimizer: str = "adam",
    lam: float = 0.0,
    rows: int | None = None,
) -> Release:
    """DP-GD: ``steps`` full-batch noisy clipped gradient steps; each is a Gaussian mechanism.

    ``steps`` Gaussian mechanisms of sensitivity C and noise z C compose exactly
    into one of noise z / sqrt(steps). ``X`` may be a
    :class:`~dpconvex.data.sources.RowSource` (then ``y=None``): out of core,
    each step is one pass over the rows.
    """
    noise_multiplier = v.positive("noise_multiplier", noise_multiplier)
    steps = v.positive_int("steps", steps)
    data = as_rows(X, y, require_glm(loss), row_bound)
    theta = dpsgd_runs(
        data,
        None,
        loss,
        noise_multiplier=noise_multiplier,
        clip=clip,
        sampling_rate=None,
        steps=steps,
        learning_rates=learning_rate,
        optimizer=optimizer,
        lam=lam,
        row_bound=row_bound,
        rng=rng,
        rows=rows,
    )[0]
    info = {"n_iter": steps, "noise_multiplier": noise_multiplier, "passes": data.passes}
    return Release(theta, dpgd_event(noise_multiplier, steps), info)


def steps_for_epochs(epochs: float, sampling_rate: float) -> int:
    """Number of steps of ``epochs`` passes at expected batch q n: ceil(epochs / q)."""
    return max(1, math.ceil(v.positive("epochs", epochs) / sampling_rate))
