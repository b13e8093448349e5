"""The dask row source: raw row chunks transformed and reduced where they live."""

from __future__ import annotations

import numpy as np

from ..losses import GLMLoss
from .objective import RowSourceObjective
from .policy import RowPolicy
from .sources import InMemoryRows

#: a pass's per-chunk partial sums are sent to the client and added there when they take
#: at most this many bytes together (else they are added in a tree on the workers)
CLIENT_SUM_BYTES = 64 * 2**20


def is_dask_array(x) -> bool:
    """True for a dask array (without importing dask when it is not installed).

    Only arrays: a dask DataFrame or Series (no ``chunks``) is not one, and the
    estimators convert those first.
    """
    return (
        type(x).__module__.startswith("dask.")
        and hasattr(x, "to_delayed")
        and hasattr(x, "chunks")
    )


def first_chunks(X, m: int) -> int:
    """How many leading row chunks of ``X`` hold its rows 0..m-1 (0 for m <= 0)."""
    return int(np.searchsorted(np.cumsum(X.chunks[0]), m)) + 1 if m > 0 else 0


def _held_chunks(*arrays, count: int | None = None):
    """The dask.distributed futures of the first ``count`` (default: all) row chunks of
    each array, as one list per array, when every one of them is held in the workers
    (persisted, with a single column chunk); None otherwise."""
    try:
        from distributed import futures_of
    except ImportError:
        return None
    if any(a.ndim > 1 and len(a.chunks[1]) != 1 for a in arrays):
        return None
    held = {f.key: f for a in arrays for f in futures_of(a)}
    if not held:
        return None
    out = []
    for a in arrays:
        k = len(a.chunks[0]) if count is None else count
        keys = [(a.name, i, 0) if a.ndim > 1 else (a.name, i) for i in range(k)]
        if not all(key in held for key in keys):
            return None
        out.append([held[key] for key in keys])
    return out


def _held_head(X, y, m: int):
    """The first m rows of X and y, gathered from dask.distributed futures when their
    chunks are held in the workers (persisted); None otherwise."""
    k = first_chunks(X, m)
    held = _held_chunks(X, y, count=k)
    if held is None:
        return None
    from distributed import default_client

    blocks = default_client().gather(held[0] + held[1])
    return _first_rows(blocks[:k], blocks[k:], m)


def _first_rows(xs: list, ys: list, m: int):
    """The first m rows of the leading row chunks ``xs`` and label chunks ``ys``."""
    return (xs[0] if len(xs) == 1 else np.concatenate(xs))[:m], np.concatenate(ys)[:m]


def _solve_head(xs: list, ys: list, m: int, policy: RowPolicy, fn):
    """``fn`` of the in-memory source over the first m rows of the chunks ``xs``, ``ys``."""
    X, y = _first_rows(xs, ys, m)
    return fn(InMemoryRows.from_raw(X, y, None, **policy.settings()))


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
    """A row source (:class:`dpconvex.data.sources.RowSource`) over dask arrays.

    ``X`` (n x p, chunked by rows) and ``y`` hold *raw* rows; each chunk gets the row
    policy (``row_norm``, ``row_bound``) and the intercept column where it lives, so
    the rows the mechanism sees have norm at most ``design_bound(...)`` without the
    data being looked at. Every question a mechanism asks is one pass over the chunks
    (counted in ``passes``), written as a blockwise map fused with whatever produces
    the chunks (reading or generating them): each chunk is made, used and dropped
    inside one task, and only partial sums (d-vectors, or d x d for the Hessian)
    leave the worker. The kernels per chunk are the in-memory source's
    (:mod:`dpconvex.data.kernels`).
    """

    #: every evaluation reads the rows from where they are stored: solvers minimize passes
    passes_are_expensive = True

    def __init__(
        self,
        X,
        y,
        *,
        row_norm: str,
        row_bound: float,
        fit_intercept: bool,
        intercept_scaling: float = 1.0,
        scales=None,
    ):
        self.X, self.y = check_dask_inputs(X, y)
        if scales is not None and (
            scales.shape != (self.X.shape[0], 2) or scales.chunks[0] != self.X.chunks[0]
        ):
            raise ValueError("scales must be the rows' chunk_scales, chunked like X")
        #: the rows' :func:`~dpconvex.data.kernels.chunk_scales`, when a fit keeps
        #: them with the rows (:func:`dpconvex.scale.fit.cache_rows`); None: every pass
        #: computes them from the chunks it reads
        self.scales = scales
        self.n = int(self.X.shape[0])
        self.d = int(self.X.shape[1]) + int(bool(fit_intercept))
        self.policy = RowPolicy(row_norm, row_bound, fit_intercept, intercept_scaling)
        self.row_bound = self.policy.bound
        self.passes = 0

    @property
    def rows_held(self) -> bool:
        """Whether every row chunk is held in the workers' memory (a fit kept them there
        with their scales: :func:`dpconvex.scale.fit.cache_rows`), so that a pass reads no file."""
        return self.scales is not None and _held_chunks(self.X, self.y, self.scales) is not None

    def reduce(self, fn, width: int, *args, scaled: bool = False, maxima: int = 0) -> np.ndarray:
        """One pass: per-chunk partial sums of ``fn(xb, yb, *args)`` (``width`` numbers), added.

        ``scaled``: ``fn`` takes the chunk's row scales (``scales=``), given when the source
        holds them. ``maxima``: the last ``maxima`` numbers are combined by max, not added
        (then the parts are always combined here).
        """
        if maxima:
            return self._reduce_with_maxima(fn, width, args, maxima)
        import dask

        use_scales = scaled and self.scales is not None
        arrays = (self.X, self.y, self.scales) if use_scales else (self.X, self.y)

        def kernel(xb, yb, sb=None):  # one chunk's partial sums, as a 1 x width block
            extra = {"scales": sb} if use_scales else {}
            return np.asarray(fn(xb, yb, *args, **extra), dtype=np.float64).reshape(1, width)

        held = _held_chunks(*arrays)
        if held is not None:  # rows kept in the workers: one task per chunk, on its futures
            return self._reduce_held(kernel, width, held)
        nblocks = len(self.X.chunks[0])
        chunks = ((1,) * nblocks, (width,))
        others = (self.y[:, None], self.scales) if use_scales else (self.y[:, None],)
        parts = self.X.map_blocks(kernel, *others, dtype=np.float64, chunks=chunks)
        self.passes += 1
        if nblocks * width * 8 > CLIENT_SUM_BYTES:  # added up where the parts are
            return np.asarray(parts.sum(axis=0).compute(), dtype=np.float64)
        # added up here: one task per chunk and no reduction tree, which on 8 chunks held in
        # memory took 0.029 s per pass of scheduling instead of 0.054 s (medians of 15)
        blocks = dask.compute(*parts.to_delayed().ravel())
        return np.sum(blocks, axis=0, dtype=np.float64).reshape(width)

    def _reduce_held(self, kernel, width: int, held: list):
        """A pass over chunks held in the workers: ``client.map`` of the kernel on the
        chunks' futures, the parts added here (or on the workers, above
        ``CLIENT_SUM_BYTES``). Against a dask array graph (a blockwise map, a slice of
        the labels per chunk, the graph's optimization), a gradient pass over 8 held
        chunks of 125,000 x 100 rows took 0.078-0.092 s instead of 0.104-0.126 s."""
        from distributed import default_client

        client = default_client()
        self.passes += 1
        parts = client.map(kernel, *held, pure=False)
        if len(parts) * width * 8 > CLIENT_SUM_BYTES:  # added up where the parts are
            while len(parts) > 1:
                pairs = [parts[i : i + 2] for i in range(0, len(parts), 2)]
                parts = [client.submit(np.add.reduce, p, pure=False) for p in pairs]
            return np.asarray(parts[0].result(), dtype=np.float64).reshape(width)
        return np.sum(client.gather(parts), axis=0, dtype=np.float64).reshape(width)

    def objective(self, loss: GLMLoss, lam: float, b: np.ndarray | None = None):
        return RowSourceObjective(self, loss, lam, b)

    def subsample(self, m: int):
        """The first m rows (read from the first chunks, not a pass), as an in-memory source.

        When those chunks are held in the memory of dask.distributed workers (a fit keeps
        the rows there and reads the first chunks first, :func:`dpconvex.scale.fit.cache_rows`),
        they are fetched as they are stored: a task that sliced them would wait for a
        worker thread, behind the load of another chunk. (The solver's warm start does not
        fetch them: it is solved where they are, :meth:`on_subsample`.)
        """
        import dask

        m = min(m, self.n)
        held = _held_head(self.X, self.y, m)
        X, y = held if held is not None else dask.compute(self.X[:m], self.y[:m])
        return InMemoryRows.from_raw(X, y, None, **self.policy.settings())

    def on_subsample(self, m: int, fn):
        """``fn(self.subsample(m))``; when the first chunks are held in dask.distributed
        workers, as a task on the worker that holds them (ahead of any other task there).

        A fit keeps its rows in the workers and loads the first chunks first
        (:func:`dpconvex.scale.fit.cache_rows`); Newton's warm start, a solve on those rows,
        then runs where they are, while the other worker goes on loading. Fetching them
        instead (100 MB for 10^6 x 100 rows in 125,000-row chunks) took 0.3-0.4 s while
        the workers were loading, and the solve here competed with both workers for the
        cores.
        """
        m = min(m, self.n)
        k = first_chunks(self.X, m)
        held = _held_chunks(self.X, self.y, count=k)
        if held is None:
            return fn(self.subsample(m))
        from distributed import default_client

        task = default_client().submit(
            _solve_head, held[0], held[1], m, self.policy, fn, priority=100, pure=False
        )
        return task.result()

    def _reduce_with_maxima(self, fn, width: int, args: tuple, maxima: int) -> np.ndarray:
        """One pass, one delayed task per chunk, the parts combined here: the sums added,
        the last ``maxima`` numbers by max."""
        import dask
        from dask.delayed import delayed

        parts = [
            delayed(fn)(xb, yb, *args)
            for xb, yb in zip(self.X.to_delayed().ravel(), self.y.to_delayed().ravel(), strict=True)
        ]
        parts = np.vstack(dask.compute(*parts))
        self.passes += 1
        head = parts[:, : width - maxima].sum(axis=0)
        return np.concatenate([head, parts[:, width - maxima :].max(axis=0)])
