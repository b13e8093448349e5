"""Glue between the estimators and the dask row source (no mechanism logic lives here)."""

from __future__ import annotations

import numpy as np

from ..data.dask_rows import DaskRows, check_dask_inputs, first_chunks, is_dask_array
from ..data.kernels import chunk_scales, prepare_chunk
from ..data.policy import RowPolicy

__all__ = [
    "cache_inputs",
    "cache_rows",
    "check_dask_inputs",
    "dask_rows",
    "frame_rows",
    "is_dask_array",
    "is_dask_frame",
    "keeps_rows",
    "linear_scores",
    "series_labels",
]

#: With ``dpconvex.cache-rows: auto`` (dask's config), a fit keeps the rows in memory when
#: they take at most this share of the memory the workers may use (all of it for the
#: local schedulers: the memory available to this process).
CACHE_SHARE = 0.25


def keeps_rows(X) -> bool:
    """Whether a fit holds the rows ``X`` and their labels in the workers' memory.

    A fit reads its rows once per pass (4-6 passes for AMP); when the data are small
    enough, reading them once and keeping the chunks (``dask.persist``) makes the other
    passes run at memory speed. Controlled by the dask config key ``dpconvex.cache-rows``:
    ``"auto"`` (default: keep them when the rows, as stored, and one float64 label per
    row take at most ``CACHE_SHARE`` of the workers' memory limits), ``True`` (always)
    or ``False`` (never: every pass reads the files). The cache lives as long as the
    fit; it changes no number the fit computes.
    """
    import dask

    setting = dask.config.get("dpconvex.cache-rows", "auto")
    if setting not in ("auto", True, False):
        raise ValueError(f"dpconvex.cache-rows must be 'auto', True or False, got {setting!r}")
    held = X.nbytes + 8 * X.shape[0]
    return setting is True or (setting == "auto" and held <= CACHE_SHARE * _memory())


def cache_inputs(X, y, first_rows: int = 0):
    """``(X, y)``, both held in the workers' memory when the fit keeps the rows
    (:func:`keeps_rows`); else as given.

    Both start loading here, at task priorities that let the label check (a pass over
    ``y`` alone, submitted next at dask's default priority 0) run before most of the
    rows load: the labels at priority 2, the chunks that hold the first ``first_rows``
    rows (read by Newton's warm start, see :func:`cache_rows`) at 1, the other chunks at
    -1. The rows thus load while the labels are checked; if the check refuses, they are
    dropped unused, and nothing has been computed from them.

    On a dask.distributed cluster, row block i of both (and so everything computed from
    it: the targets, the rows' scales, each pass's task) is placed on worker i mod W of
    the W workers (sorted by address; a loose restriction, so another worker takes it if
    that one is gone). Left to the scheduler, one worker of two often held 5 of 8 chunks,
    having taken the next chunk before the warm start was solved there, and then formed
    5 of the 8 Hessians: on 10^6 x 100 rows a fit took a median 1.51 and 1.58 s instead
    of 1.55 and 1.69 s from Zarr files, 1.49 and 1.60 s instead of 1.64 and 1.76 s from
    Parquet files (two runs of 8 fits each, alternating in one process; the slowest fit
    1.84-1.95 s instead of 1.92-2.77 s).
    """
    import dask

    if not keeps_rows(X):
        return X, y
    place = _round_robin()
    with dask.annotate(priority=2, **place):
        (y,) = dask.persist(y)
    with dask.annotate(priority=_first_chunks_first(X, first_rows, rest=-1), **place):
        (X,) = dask.persist(X)
    return X, y


def _first_chunks_first(X, first_rows: int, rest: int):
    """A task priority by key: 1 for the row chunks of ``X`` that hold its first
    ``first_rows`` rows, ``rest`` for the others."""
    head = first_chunks(X, first_rows)

    def priority(key) -> int:  # a chunk's key is (name, row block, column block)
        return 1 if _row_block(key) < head else rest

    return priority


def _round_robin() -> dict:
    """dask.annotate's arguments that put row block i on worker i mod W of a
    dask.distributed cluster (loosely); none without a distributed client."""
    workers = sorted(_workers() or ())
    if not workers:
        return {}

    def worker(key) -> list[str]:
        return [workers[_row_block(key) % len(workers)]]

    return {"workers": worker, "allow_other_workers": True}


def _row_block(key) -> int:
    """The row block of a dask chunk's key (name, row block, ...); 0 for any other key."""
    return key[1] if isinstance(key, tuple) and len(key) > 1 else 0


def cache_rows(X, targets, first_rows: int = 0, policy: RowPolicy | None = None):
    """``(X, targets, scales)``, held in the workers' memory for one fit when they fit there.

    See :func:`keeps_rows` for when. ``targets`` (labels as the mechanism reads them,
    computed from ``y``) are kept with the rows, so that no pass recomputes them; so are,
    given the row policy ``policy``, the rows' scales (each row's factor and norm,
    :func:`~dpconvex.data.kernels.chunk_scales`; 16 bytes per row), so that no
    pass recomputes the rows' norms (else ``scales`` is None). What belongs to the chunks
    that hold the first ``first_rows`` rows is computed before the rest (a higher task
    priority on dask.distributed), so that the solver's warm start, which reads only
    those rows (:meth:`~dpconvex.data.dask_rows.DaskRows.on_subsample`), runs while the
    rest load: their targets and scales, and their reads when the rows are not held yet
    (the estimators start the reads earlier, in :func:`cache_inputs`).
    """
    import dask

    if not keeps_rows(X):
        return X, list(targets), None
    extra = []
    if policy is not None:
        extra = [X.map_blocks(chunk_scales, policy, dtype=np.float64, chunks=(X.chunks[0], (2,)))]
    with dask.annotate(priority=_first_chunks_first(X, first_rows, rest=0)):
        X, *held = dask.persist(X, *extra, *targets)
    return X, held[len(extra) :], held[0] if extra else None


def _memory() -> float:
    """Bytes the workers may use: the sum of their memory limits, or what this process may."""
    import psutil

    workers = _workers()
    if workers is None:  # no distributed client: the local schedulers
        return float(psutil.virtual_memory().available)
    limits = [w.get("memory_limit") or psutil.virtual_memory().total for w in workers.values()]
    return float(sum(limits))


def _workers() -> dict | None:
    """The workers of the dask.distributed client (address: info), None without one."""
    try:
        from distributed import default_client

        return default_client().scheduler_info(n_workers=-1)["workers"]
    except (ImportError, ValueError):
        return None


def row_policy(est) -> RowPolicy:
    """``est``'s row policy and intercept, as the row kernels take them."""
    return RowPolicy(est.row_norm, est.row_bound, est.fit_intercept, est.intercept_scaling)


def dask_rows(est, X, y, scales=None) -> DaskRows:
    """The row source over dask rows ``X`` and labels ``y``, with ``est``'s row policy
    (and the rows' scales, when :func:`cache_rows` kept them)."""
    return DaskRows(X, y, **row_policy(est).settings(), scales=scales)


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


def is_dask_frame(x) -> bool:
    """True for a dask DataFrame or Series (without importing dask)."""
    return type(x).__module__.startswith("dask.") and hasattr(x, "to_dask_array")


def frame_rows(X):
    """A dask DataFrame of numeric columns as the row-chunked float64 dask array the
    dask path takes: one chunk per partition, one along the columns.

    Columns must be numeric (integer, float or bool, also pandas' nullable types, whose
    missing values become NaN and are refused by the fit): a column of another dtype
    is refused by name (its dtype is metadata; no value is read). The partitions'
    lengths are computed here (a pass over the rows): the number of rows is public, as
    everywhere in dpconvex.
    """
    import pandas as pd

    if X.ndim != 2:
        raise TypeError(
            "X must be a dask DataFrame (a dask Series is one column: use X.to_frame())"
        )
    for name, dtype in X.dtypes.items():
        if not (pd.api.types.is_numeric_dtype(dtype) or pd.api.types.is_bool_dtype(dtype)):
            raise ValueError(
                f"column {str(name)[:200]!r} of X is not numeric (dtype {dtype}): encode text "
                "and categorical columns first, e.g. with dpconvex.preprocessing.TableEncoder"
            )
    if len(X.columns) == 0:
        raise ValueError("X has no columns")
    return X.astype(np.float64).to_dask_array(lengths=True)


def series_labels(y):
    """A dask Series (or a one-column dask DataFrame) of labels or targets as a dask array
    (its chunk sizes are computed by :func:`check_dask_inputs`)."""
    if y.ndim == 2:
        if len(y.columns) != 1:
            raise ValueError(f"y must be one column, got a dask DataFrame of {len(y.columns)}")
        y = y[y.columns[0]]
    return y.to_dask_array()
