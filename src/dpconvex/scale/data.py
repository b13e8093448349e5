"""Out-of-core inputs read with dask (Parquet/CSV tables, Zarr arrays); synthetic GLM chunks."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
from scipy.special import expit


def read_table(
    path: str | Path, target: str, *, test_size: float = 0.2, seed: int = 0, blocksize: str = "64MB"
):
    """((X_train, y_train), (X_test, y_test)) as dask arrays from Parquet or CSV files.

    ``path`` is a Parquet file or directory, or a CSV file or glob. Feature columns
    must be numeric. The split assigns rows at random with a fixed seed
    (dask's ``random_split``), a public, data-independent procedure.
    """
    import dask.dataframe as dd

    text = str(path)
    if text.endswith(".parquet") or Path(text).is_dir():
        df = dd.read_parquet(text)
    else:
        df = dd.read_csv(text, blocksize=blocksize)
    if target not in df.columns:
        raise ValueError(f"target column {target!r} not in {text} (columns: {list(df.columns)})")
    features = [c for c in df.columns if c != target]
    bad = [c for c in features if not np.issubdtype(df[c].dtype, np.number)]
    if bad:
        raise ValueError(f"feature columns must be numeric; not numeric: {bad}")
    if not 0 < test_size < 1:
        raise ValueError(f"test_size must be in (0, 1), got {test_size}")
    train, test = df.random_split([1 - test_size, test_size], random_state=seed)

    def arrays(part):
        X = part[features].to_dask_array(lengths=True).astype(np.float64)
        return X, part[target].to_dask_array(lengths=True)

    return arrays(train), arrays(test)


def read_zarr(path: str | Path, x: str = "X", y: str | None = "y"):
    """(X, y) as dask arrays over the arrays ``x`` and ``y`` of a Zarr group (lazily).

    ``path`` is a Zarr store (a directory or URL) holding the feature matrix ``x``
    (n x d, numeric, chunked by rows) and the label or target vector ``y`` (n rows),
    for instance written by ``dask.array.to_zarr(X, path, component="X")`` and
    ``dask.array.to_zarr(y, path, component="y")``. Nothing is read but the metadata:
    the arrays keep their stored dtype (the fit converts each chunk to float64) and the
    dask chunks are the Zarr chunks along the rows, one chunk along the columns; ``y``
    is chunked like the rows of ``X``. ``y=None`` returns ``(X, None)`` (for
    prediction). Needs the ``zarr`` package (in the ``dask`` extra).

    Arrays in a local directory, chunked by rows only, stored plainly or with a
    standard compressor (what zarr and ``dask.array.to_zarr`` write by default), are
    read by one task per chunk that decodes the chunk's file straight into its array
    (:mod:`dpconvex.scale.zarr_chunks`: half the time of zarr's own reader on 10^6 x
    100 rows); any other layout is read by zarr.
    """

    text = str(path)
    X = _zarr_dask(text, x)
    if X.ndim != 2:
        raise ValueError(f"{text}/{x} must be two-dimensional, got shape {X.shape}")
    if not np.issubdtype(X.dtype, np.number) or np.issubdtype(X.dtype, np.complexfloating):
        raise ValueError(f"{text}/{x} must hold real numbers, got dtype {X.dtype}")
    X = X.rechunk({1: -1})
    if y is None:
        return X, None
    labels = _zarr_dask(text, y)
    if labels.ndim == 2 and labels.shape[1] == 1:
        labels = labels[:, 0]
    if labels.ndim != 1 or labels.shape[0] != X.shape[0]:
        raise ValueError(
            f"{text}/{y} must be a vector of {X.shape[0]} rows (as {text}/{x}), "
            f"got shape {labels.shape}"
        )
    return X, labels.rechunk((X.chunks[0],))


def _zarr_dask(text: str, component: str):
    """The zarr array ``component`` of the store at ``text`` as a dask array: read from its
    chunk files directly (:mod:`dpconvex.scale.zarr_chunks`) when the store is a local
    directory and the layout is covered, else by ``dask.array.from_zarr``."""
    import dask.array as da
    import zarr

    from .zarr_chunks import zarr_chunks

    if Path(text).is_dir():
        direct = zarr_chunks(zarr.open_array(text, path=component, mode="r"))
        if direct is not None:
            return direct.to_dask()
    return da.from_zarr(text, component=component)


def read_parquet(path: str | Path, target: str | None, features: list[str] | None = None):
    """(X, y) as dask arrays over Parquet files, one row chunk per file (lazily).

    ``path`` is a Parquet file or a directory of them (read in name order). Only the
    files' footers are read here: the chunk sizes come from their row counts, so no
    pass is spent finding them. Each chunk of ``X`` reads only the ``features`` columns
    of its file (default: every column but ``target``) into a float64 matrix, and
    each chunk of ``y`` only the ``target`` column, so a look at the labels reads a
    hundredth of the data, not all of it. ``target=None`` returns ``(X, None)``.
    Needs ``pyarrow`` (in the ``dask`` extra).
    """
    from functools import partial

    import dask.array as da
    import pyarrow.parquet as pq

    root = Path(path)
    if not root.exists():
        raise FileNotFoundError(f"no such Parquet file or directory: {root}")
    files = sorted(root.glob("*.parquet")) if root.is_dir() else [root]
    if not files:
        raise ValueError(f"no .parquet files in {root}")
    schema = pq.read_schema(files[0])
    if target is not None and target not in schema.names:
        raise ValueError(f"target column {target!r} not in {root} (columns: {schema.names})")
    features = [c for c in schema.names if c != target] if features is None else list(features)
    missing = [c for c in features if c not in schema.names]
    if missing:
        raise ValueError(f"feature columns {missing} not in {root} (columns: {schema.names})")
    bad = [c for c in features if not _numeric(schema.field(c).type)]
    if bad:
        raise ValueError(f"feature columns must be numeric; not numeric: {bad}")
    rows = tuple(pq.ParquetFile(f).metadata.num_rows for f in files)
    names = [str(f) for f in files]
    # one task per file, keyed by its row chunk (name, i, 0): a fit that reads the first
    # chunks first (dpconvex.scale.fit.cache_rows) can name them by their keys
    X = da.map_blocks(
        partial(_parquet_matrix, names, features),
        chunks=(rows, (len(features),)),
        dtype=np.float64,
        meta=np.empty((0, 0)),
    )
    if target is None:
        return X, None
    dtype = schema.field(target).type.to_pandas_dtype()
    y = da.map_blocks(
        partial(_parquet_column, names, target),
        chunks=(rows,),
        dtype=dtype,
        meta=np.empty(0, dtype),
    )
    return X, y


def _numeric(arrow_type) -> bool:
    import pyarrow.types as pt

    return pt.is_integer(arrow_type) or pt.is_floating(arrow_type) or pt.is_boolean(arrow_type)


def _parquet_matrix(paths: list[str], columns: list[str], block_id=None) -> np.ndarray:
    """The columns of file ``block_id[0]`` as an n x d float64 matrix (filled column by column)."""
    import pyarrow.parquet as pq

    table = pq.read_table(paths[block_id[0]], columns=columns)
    out = np.empty((len(columns), table.num_rows))
    for j, column in enumerate(table.columns):
        out[j] = column.to_numpy()
    return out.T


def _parquet_column(paths: list[str], column: str, block_id=None) -> np.ndarray:
    import pyarrow.parquet as pq

    return pq.read_table(paths[block_id[0]], columns=[column]).column(0).to_numpy()


def synthetic_glm(n: int, d: int, *, chunk_rows: int = 100_000, seed: int = 0):
    """(X, y) dask arrays of a logistic model, generated chunk by chunk (never whole).

    Rows x ~ N(0, I_d); labels y in {-1, +1} with P(y = 1) = sigmoid(3 x^T w / ||x||),
    w a fixed unit vector. Each chunk is regenerated from (seed, chunk index) whenever
    it is needed, so the data set is deterministic and only chunks ever exist.
    """
    import dask.array as da

    sizes = [chunk_rows] * (n // chunk_rows) + ([n % chunk_rows] if n % chunk_rows else [])
    w = np.random.default_rng(seed).normal(size=d)
    w /= np.linalg.norm(w)

    def make_x(block_info=None):
        loc = block_info[None]["chunk-location"][0]
        rows = block_info[None]["chunk-shape"][0]
        return np.random.default_rng([seed, loc]).normal(size=(rows, d))

    def make_y(xb, block_info=None):
        loc = block_info[None]["chunk-location"][0]
        prob = expit(3.0 * (xb @ w) / np.linalg.norm(xb, axis=1))
        return np.where(np.random.default_rng([seed, loc, 1]).random(len(xb)) < prob, 1, -1)

    X = da.map_blocks(make_x, chunks=(tuple(sizes), (d,)), dtype=np.float64)
    y = X.map_blocks(make_y, drop_axis=1, dtype=np.int64)
    return X, y


def local_client(scheduler: str | None = None, *, workers: int = 2, memory_limit: str = "1.5GiB"):
    """A dask.distributed Client: to ``scheduler`` if given, else a LocalCluster."""
    from dask.distributed import Client, LocalCluster

    if scheduler:
        return Client(scheduler)
    cluster = LocalCluster(
        n_workers=workers,
        threads_per_worker=1,
        memory_limit=memory_limit,
        dashboard_address=None,
        # no dashboard; the scheduler's small HTTP server on a free port, not 8787 (which
        # another cluster on the machine may hold: a warning, then a random port anyway)
        scheduler_kwargs={"dashboard_address": ":0"},
    )
    return Client(cluster)


def chunk_count(n: int, chunk_rows: int) -> int:
    return math.ceil(n / chunk_rows)
