"""Glue between the estimators and the dask row source (no mechanism logic lives here)."""

from __future__ import annotations

import numpy as np

from .objective import DaskRows, check_dask_inputs, is_dask_array, prepare_chunk

__all__ = ["check_dask_inputs", "dask_rows", "is_dask_array", "linear_scores"]


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
