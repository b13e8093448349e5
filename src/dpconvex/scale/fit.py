"""Glue between the estimators and the dask row source (no mechanism logic lives here)."""

from __future__ import annotations

import numpy as np

from .objective import DaskRows, check_dask_inputs, is_dask_array, prepare_chunk

__all__ = ["cache_rows", "check_dask_inputs", "dask_rows", "is_dask_array", "linear_scores"]

#: With ``dpconvex.cache-rows: auto`` (dask's config), a fit keeps the rows in memory when
#: they take at most this share of the memory the workers may use (all of it for the
#: local schedulers: the memory available to this process).
CACHE_SHARE = 0.25


def cache_rows(X, y):
    """(X, y), held in the workers' memory for the passes of one fit when they fit there.

    A fit reads its rows once per pass (4-6 passes for AMP); when the data are small
    enough, reading them once and keeping the chunks (``dask.persist``) makes the other
    passes run at memory speed. Controlled by the dask config key ``dpconvex.cache-rows``:
    ``"auto"`` (default: cache when the rows, as stored, take at most ``CACHE_SHARE`` of the
    workers' memory limits), ``True`` (always) or ``False`` (never: every pass reads the
    files). The cache lives as long as the fit; it changes no number the fit computes.
    """
    import dask

    setting = dask.config.get("dpconvex.cache-rows", "auto")
    if setting not in ("auto", True, False):
        raise ValueError(f"dpconvex.cache-rows must be 'auto', True or False, got {setting!r}")
    if setting is False or (setting == "auto" and X.nbytes + y.nbytes > CACHE_SHARE * _memory()):
        return X, y
    return dask.persist(X, y)


def _memory() -> float:
    """Bytes the workers may use: the sum of their memory limits, or what this process may."""
    import psutil

    try:
        from distributed import default_client

        workers = default_client().scheduler_info(n_workers=-1)["workers"].values()
    except (ImportError, ValueError):  # no distributed client: the local schedulers
        return float(psutil.virtual_memory().available)
    limits = [w.get("memory_limit") or psutil.virtual_memory().total for w in workers]
    return float(sum(limits))


def dask_rows(est, X, y) -> DaskRows:
    """The row source over dask rows ``X`` and labels ``y``, with ``est``'s row policy."""
    return DaskRows(
        X,
        y,
        row_norm=est.row_norm,
        row_bound=est.row_bound,
        fit_intercept=est.fit_intercept,
        intercept_scaling=est.intercept_scaling,
    )


def linear_scores(est, X):
    """Lazy decision scores of a fitted estimator on dask rows (same row transform)."""
    coef, intercept = np.atleast_2d(est.coef_), np.atleast_1d(est.intercept_)

    def block(xb):
        xt = (
            prepare_chunk(xb, est.row_norm, est.row_bound, False, 1.0)
            if est.row_norm != "error"
            else np.asarray(xb, dtype=np.float64)
        )
        return xt @ coef.T + intercept

    return X.rechunk({1: -1}).map_blocks(
        block, dtype=np.float64, chunks=(X.chunks[0], (coef.shape[0],))
    )
