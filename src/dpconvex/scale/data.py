"""Out-of-core inputs read with dask (Parquet/CSV tables, Zarr arrays); synthetic GLM chunks."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
from scipy.special import expit

from .frames import FRAME_BLOCKSIZE, MAX_FRAME_BLOCKSIZE, frame_target, read_frame
from .parquet import _TEXT_ROUTE, _brief, _checked_parquet, read_parquet
from .paths import _csv_files, _is_parquet

__all__ = [
    "FRAME_BLOCKSIZE",
    "MAX_FRAME_BLOCKSIZE",
    "chunk_count",
    "frame_target",
    "local_client",
    "read_frame",
    "read_parquet",
    "read_table",
    "read_zarr",
    "split_frame",
    "synthetic_glm",
]


def read_table(
    path: str | Path, target: str, *, test_size: float = 0.2, seed: int = 0, blocksize: str = "64MB"
):
    """((X_train, y_train), (X_test, y_test)) as dask arrays from Parquet or CSV files.

    ``path`` is a Parquet file or directory, or a CSV file or glob. Feature columns
    must be numeric. The split assigns rows at random with a fixed seed
    (dask's ``random_split``), a public, data-independent procedure. Before anything is
    read: Parquet files are checked as by :func:`read_parquet` (every file's schema);
    every CSV file must be a regular file whose header (checked as by
    :func:`dpconvex.datasets.load_csv`: UTF-8, no empty or repeated name) is the first
    file's; CSV feature columns are read as float64, so a cell that is not a number
    fails the read.
    """
    import dask.dataframe as dd

    _check_test_size(test_size)
    text = str(path)
    if _is_parquet(text):
        files, _, features, _ = _checked_parquet(Path(text), target, None)
        df = dd.read_parquet([f for f, _ in files], columns=[*features, target])
    else:
        names, header = _csv_files(text)
        if target not in header:
            raise ValueError(f"target column {target!r} not in {text} (columns: {header})")
        features = [c for c in header if c != target]
        dtypes = dict.fromkeys(features, "float64")
        try:  # dask parses a sample of the first file here
            df = dd.read_csv(names, blocksize=blocksize, dtype=dtypes)
        except ValueError:
            raise _csv_refusal(text, names, features, blocksize) from None
    bad = [c for c in features if not np.issubdtype(df[c].dtype, np.number)]
    if bad:
        raise ValueError(f"{text}: feature columns must be numeric; not numeric: {bad}")
    train, test = split_frame(df, test_size, seed)

    def arrays(part):
        X = part[features].to_dask_array(lengths=True).astype(np.float64)
        return X, part[target].to_dask_array(lengths=True)

    try:  # the lengths are computed here: the files' cells are parsed
        return arrays(train), arrays(test)
    except ValueError as error:
        if _is_parquet(text):
            raise ValueError(f"{text}: {_brief(error).removeprefix('ValueError: ')}") from None
        raise _csv_refusal(text, names, features, blocksize) from None


def _csv_refusal(text: str, names: list[str], features: list[str], blocksize) -> ValueError:
    """The error for CSV files whose features do not read as numbers: pandas' message
    quotes the cell, so it is not shown; the column is named instead (found by a second
    read, made only on this failure)."""
    column = _text_column(names, features, blocksize)
    if column is None:
        return ValueError(
            f"{text} cannot be read as a table of numbers (a line with another number of "
            "fields than the header, or a cell that is not a number)"
        )
    return ValueError(f"{text}: feature column {column!r} holds text; {_TEXT_ROUTE}")


def _check_test_size(test_size: float) -> float:
    if isinstance(test_size, bool) or not isinstance(test_size, int | float):
        raise TypeError(f"test_size must be a number in (0, 1), got {type(test_size).__name__}")
    if not 0 < test_size < 1:
        raise ValueError(f"test_size must be in (0, 1), got {test_size}")
    return float(test_size)


def split_frame(frame, test_size: float, seed: int):
    """(train, test): the rows of a dask DataFrame split at random by a public ``seed``.

    Each row goes to the test part with probability ``test_size``, drawn partition by
    partition from ``seed`` (dask's ``random_split``): a data-independent procedure, so
    the split costs no privacy, and the same seed on the same partitions gives the same
    split (:func:`read_table` splits this way). The parts are lazy; a column taken from a
    part (features, target) holds the same rows as every other column of that part.
    """
    _check_test_size(test_size)
    if isinstance(seed, bool) or not isinstance(seed, int | np.integer) or seed < 0:
        raise ValueError(f"seed must be an integer >= 0, got {seed!r}")
    if not hasattr(frame, "random_split") or not hasattr(frame, "columns"):
        raise TypeError(f"split_frame takes a dask DataFrame, got {type(frame).__name__}")
    train, test = frame.random_split([1 - test_size, test_size], random_state=int(seed))
    return train, test


def _text_column(names: list[str], features: list[str], blocksize) -> str | None:
    """The first feature column of the CSV files ``names`` holding a cell that is not a
    number (as pandas reads numbers), None if there is none."""
    import dask.dataframe as dd
    import pandas as pd

    def flags(part):
        return pd.Series(
            [
                bool((pd.to_numeric(part[c], errors="coerce").isna() & part[c].notna()).any())
                for c in features
            ]
        )

    try:
        frame = dd.read_csv(names, blocksize=blocksize, dtype=str, usecols=features)
        found = frame.map_partitions(flags, meta=(None, bool)).compute()
    except Exception:  # noqa: BLE001 - the diagnosis is best effort
        return None
    hits = np.asarray(found, dtype=bool).reshape(-1, len(features)).any(axis=0)
    return features[int(np.argmax(hits))] if hits.any() else None


def read_zarr(path: str | Path, x: str = "X", y: str | None = "y"):
    """(X, y) as dask arrays over the arrays ``x`` and ``y`` of a Zarr group (lazily).

    ``path`` is a Zarr store (a directory or URL) holding the feature matrix ``x``
    (n x d, numeric) and the label or target vector ``y`` (n numbers), for instance
    written by ``dask.array.to_zarr(X, path, component="X")`` and
    ``dask.array.to_zarr(y, path, component="y")``. Nothing is read but the metadata:
    the arrays keep their stored dtype (the fit converts each chunk to float64) and the
    dask chunks are the Zarr chunks (or shards) along the rows, one chunk along the
    columns; ``y`` is chunked like the rows of ``X``. ``y=None`` returns ``(X, None)``
    (for prediction). Needs the ``zarr`` package (in the ``dask`` extra).

    Arrays in a local directory are read by one task per row chunk that decodes the
    chunk files straight into its array (:mod:`dpconvex.scale.zarr_chunks`: half the
    time of zarr's own reader on 10^6 x 100 rows), with memory bounded by the declared
    shape; the store is checked first (regular files inside it, declared sizes within
    the module's bounds, codecs it reads) and refused naming the file otherwise. A
    URL's arrays are read by zarr after the same checks of their metadata.
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
    """The zarr array ``component`` of the store at ``text`` as a dask array: a local
    directory's chunks read from their files with bounded memory
    (:mod:`dpconvex.scale.zarr_chunks`), a URL's by zarr after the same checks of its
    declared sizes and codecs."""
    from .zarr_chunks import open_local, open_remote

    if "://" in text:
        return open_remote(text, component)
    path = Path(text)
    if not path.exists():
        raise FileNotFoundError(f"no such Zarr store: {text}")
    if not path.is_dir():
        raise ValueError(f"{text} is not a Zarr store (a directory)")
    return open_local(text, component).to_dask()


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
