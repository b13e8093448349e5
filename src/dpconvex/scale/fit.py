"""Glue between the estimators and the dask mechanisms."""

from __future__ import annotations

import numpy as np

from .mechanisms import amp_dask, dpgd_dask, output_perturbation_dask
from .objective import is_dask_array, prepare_chunk

DASK_METHODS = ("amp", "output", "dpgd", "adassp")


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


def dask_runner(est, params: dict):
    """The mechanism call of ``est``'s calibrated plan, on raw dask rows."""
    if est.method not in DASK_METHODS:
        raise ValueError(
            f"method={est.method!r} is not available on dask data; use one of {DASK_METHODS}"
        )
    loss = est._loss()
    rows = {
        "row_norm": est.row_norm,
        "row_bound": est.row_bound,
        "fit_intercept": est.fit_intercept,
        "intercept_scaling": est.intercept_scaling,
    }

    def run(X, y, rng):
        if est.method == "adassp":
            from ..mechanisms.adassp import adassp

            stats = dask_sufficient_statistics(X, y, rows)
            return adassp(
                None,
                None,
                noise_multiplier=params["noise_multiplier"],
                row_bound=params["row_bound"],
                y_bound=params["y_bound"],
                delta=float(est.delta),
                rng=rng,
                statistics=stats,
            )
        if est.method == "amp":
            return amp_dask(
                X,
                y,
                loss,
                lam=params["lam"],
                sigma=params["sigma"],
                tau=params["tau"],
                sigma_out=params["sigma_out"],
                clip=params["clip"],
                rng=rng,
                solver=est.solver,
                max_iter=est.max_iter,
                **rows,
            )
        if est.method == "output":
            return output_perturbation_dask(
                X,
                y,
                loss,
                lam=params["lam"],
                sigma=params["sigma"],
                tau=params["tau"],
                clip=params["clip"],
                rng=rng,
                solver=est.solver,
                max_iter=est.max_iter,
                **rows,
            )
        return dpgd_dask(
            X,
            y,
            loss,
            noise_multiplier=params["noise_multiplier"],
            clip=params["clip"],
            steps=params["steps"],
            learning_rate=params["learning_rate"],
            optimizer=est.optimizer,
            lam=params["lam"],
            rng=rng,
            **rows,
        )

    return run


def dask_sufficient_statistics(X, y, rows: dict):
    """AdaSSP's (X^T X, X^T y, max row norm, max |y|) of the transformed rows, chunk by chunk."""
    import dask
    from dask.delayed import delayed

    from ..mechanisms.adassp import sufficient_statistics

    def chunk(xb, yb):
        return sufficient_statistics(prepare_chunk(xb, **rows), np.asarray(yb, dtype=np.float64))

    parts = [
        delayed(chunk)(xb, yb)
        for xb, yb in zip(X.to_delayed().ravel(), y.to_delayed().ravel(), strict=True)
    ]
    parts = dask.compute(*parts)
    return (
        sum(p[0] for p in parts),
        sum(p[1] for p in parts),
        max(p[2] for p in parts),
        max(p[3] for p in parts),
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
