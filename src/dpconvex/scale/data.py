"""Out-of-core inputs read with dask (Parquet/CSV tables, Zarr arrays); synthetic GLM chunks."""

from __future__ import annotations

import math
import os
from pathlib import Path

import numpy as np
from scipy.special import expit


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

    if not 0 < test_size < 1:
        raise ValueError(f"test_size must be in (0, 1), got {test_size}")
    text = str(path)
    if text.endswith(".parquet") or Path(text).is_dir():
        files, _, features, _ = _checked_parquet(Path(text), target, None)
        df = dd.read_parquet([f for f, _ in files], columns=[*features, target])
    else:
        names, header = _csv_files(text)
        if target not in header:
            raise ValueError(f"target column {target!r} not in {text} (columns: {header})")
        features = [c for c in header if c != target]
        dtypes = dict.fromkeys(features, "float64")
        df = dd.read_csv(names, blocksize=blocksize, dtype=dtypes)
    bad = [c for c in features if not np.issubdtype(df[c].dtype, np.number)]
    if bad:
        raise ValueError(f"{text}: feature columns must be numeric; not numeric: {bad}")
    train, test = df.random_split([1 - test_size, test_size], random_state=seed)

    def arrays(part):
        X = part[features].to_dask_array(lengths=True).astype(np.float64)
        return X, part[target].to_dask_array(lengths=True)

    try:  # the lengths are computed here: the files' cells are parsed
        return arrays(train), arrays(test)
    except ValueError as error:
        raise ValueError(f"{text}: {_brief(error).removeprefix('ValueError: ')}") from None


def _csv_files(text: str) -> tuple[list[str], list[str]]:
    """(the CSV files ``text`` names, as a path or a glob, their common header)."""
    import glob

    from ..datasets.files import csv_header

    names = sorted(glob.glob(text)) if glob.has_magic(text) else [text]
    if not names or not Path(names[0]).exists():
        raise FileNotFoundError(f"no such CSV file: {text}")
    header = csv_header(names[0])
    for name in names[1:]:
        other = csv_header(name)
        if other != header:
            raise ValueError(
                f"{Path(name).name}: its header differs from that of {Path(names[0]).name}; "
                "every file must hold the same columns in the same order"
            )
    return names, header


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


def read_parquet(path: str | Path, target: str | None, features: list[str] | None = None):
    """(X, y) as dask arrays over Parquet files, one row chunk per file (lazily).

    ``path`` is a Parquet file or a directory of them (read in name order). Only the
    files' footers are read here: the chunk sizes come from their row counts, so no
    pass is spent finding them, and every file's schema is checked against the first
    file's (the same columns with the same types; features numeric, the target numeric
    or text) before anything is read. Each chunk of ``X`` reads only the ``features``
    columns of its file (default: every column but ``target``) into a float64 matrix,
    and each chunk of ``y`` only the ``target`` column, so a look at the labels reads a
    hundredth of the data, not all of it. ``target=None`` returns ``(X, None)``.
    Files must be regular files (inside the directory, if one is given); a file whose
    rows differ from its footer's count, or with missing values (nulls), is refused
    when its chunk is read. Needs ``pyarrow`` (in the ``dask`` extra).
    """
    from functools import partial

    import dask.array as da

    files, schema, features, rows = _checked_parquet(Path(path), target, features)
    _check_parquet_rows(rows, files, len(features))
    # one task per file, keyed by its row chunk (name, i, 0): a fit that reads the first
    # chunks first (dpconvex.scale.fit.cache_rows) can name them by their keys
    X = da.map_blocks(
        partial(_parquet_matrix, files, rows, features),
        chunks=(rows, (len(features),)),
        dtype=np.float64,
        meta=np.empty((0, 0)),
    )
    if target is None:
        return X, None
    dtype = schema.field(target).type.to_pandas_dtype()
    y = da.map_blocks(
        partial(_parquet_column, files, rows, target),
        chunks=(rows,),
        dtype=dtype,
        meta=np.empty(0, dtype),
    )
    return X, y


def _checked_parquet(root: Path, target: str | None, features: list[str] | None):
    """(files, the first file's schema, feature columns, row counts) of the Parquet file
    or directory ``root``, after checking every file's footer against the first's."""
    files = _parquet_files(root)
    footers = [_parquet_footer(f, label) for f, label in files]
    schemas = [schema for schema, _ in footers]
    schema, first = schemas[0], files[0][1]
    if target is not None and target not in schema.names:
        raise ValueError(f"target column {target!r} not in {first} (columns: {schema.names})")
    features = [c for c in schema.names if c != target] if features is None else list(features)
    missing = [c for c in features if c not in schema.names]
    if missing:
        raise ValueError(f"feature columns {missing} not in {first} (columns: {schema.names})")
    _check_parquet_types(schema, first, features, target)
    for other, (_, label) in zip(schemas[1:], files[1:], strict=True):
        _same_schema(schema, other, first, label)
    return files, schema, features, tuple(rows for _, rows in footers)


def _parquet_files(root: Path) -> list[tuple[str, str]]:
    """[(resolved path, name in messages), ...]: the file ``root`` or the ``*.parquet``
    files of the directory ``root`` in name order, each a regular file (in the directory)."""
    from .zarr_chunks import MAX_CHUNKS, regular_file

    if not root.exists():
        raise FileNotFoundError(f"no such Parquet file or directory: {root}")
    if not root.is_dir():
        real = regular_file(root, str(root))
        if real is None:
            raise FileNotFoundError(f"no such Parquet file or directory: {root}")
        return [(real, str(root))]
    inside = os.path.realpath(root)
    names = sorted(p.name for p in root.iterdir() if p.name.endswith(".parquet"))
    if not names:
        raise ValueError(f"no .parquet files in {root}")
    if len(names) > MAX_CHUNKS:
        raise ValueError(f"{root} holds {len(names)} Parquet files; at most {MAX_CHUNKS} are read")
    files = []
    for name in names:
        label = f"{root.name}/{name}"
        real = regular_file(root / name, label, inside)
        if real is None:
            raise ValueError(f"{label} is a link to nothing")
        files.append((real, label))
    return files


def _parquet_footer(path: str, label: str):
    """(arrow schema, row count) from a Parquet file's footer, reading no data."""
    import pyarrow.parquet as pq

    try:
        meta = pq.read_metadata(path)
        schema = meta.schema.to_arrow_schema()
    except Exception as error:  # noqa: BLE001 - pyarrow's refusal of a hostile footer
        raise ValueError(f"{label} is not a readable Parquet file ({_brief(error)})") from None
    duplicated = sorted({n for n in schema.names if schema.names.count(n) > 1})
    if duplicated:
        raise ValueError(f"{label} names columns {duplicated} more than once")
    return schema, meta.num_rows


def _check_parquet_types(schema, label: str, features: list[str], target: str | None) -> None:
    import pyarrow.types as pt

    bad = [f"{c} ({schema.field(c).type})" for c in features if not _numeric(schema.field(c).type)]
    if bad:
        raise ValueError(
            f"{label}: feature columns must be numeric (integer, float or bool); not numeric: {bad}"
        )
    if target is not None:
        kind = schema.field(target).type
        if not (_numeric(kind) or pt.is_string(kind) or pt.is_large_string(kind)):
            raise ValueError(
                f"{label}: the target column {target!r} is {kind}; labels must be numbers or text"
            )


def _same_schema(schema, other, first: str, label: str) -> None:
    """Refuse a file whose columns or their types differ from the first file's."""
    if set(other.names) != set(schema.names):
        missing = [c for c in schema.names if c not in other.names]
        extra = [c for c in other.names if c not in schema.names]
        raise ValueError(
            f"{label}: its columns differ from those of {first} (missing {missing}, "
            f"extra {extra}); every file must hold the same columns"
        )
    for name in schema.names:
        want, got = schema.field(name).type, other.field(name).type
        if not got.equals(want):
            raise ValueError(
                f"{label}: column {name!r} is {got}, but {want} in {first}; every file must "
                "give a column the same type"
            )


def _check_parquet_rows(rows, files, width: int) -> None:
    from .zarr_chunks import MAX_CHUNK_BYTES

    for count, (_, label) in zip(rows, files, strict=True):
        if count * max(width, 1) * 8 > MAX_CHUNK_BYTES:
            raise ValueError(
                f"{label} holds {count} rows of {width} features, read as one chunk of more "
                f"than {MAX_CHUNK_BYTES} bytes: split it into smaller files"
            )


def _numeric(arrow_type) -> bool:
    import pyarrow.types as pt

    if pt.is_dictionary(arrow_type):
        arrow_type = arrow_type.value_type
    return pt.is_integer(arrow_type) or pt.is_floating(arrow_type) or pt.is_boolean(arrow_type)


def _brief(error: BaseException) -> str:
    from .zarr_chunks import _brief as brief

    return brief(error)


def _parquet_table(file: tuple[str, str], rows: int, columns: list[str], numeric: bool = True):
    """The ``columns`` of the Parquet file (path, name), checked: still a regular file, the
    rows its footer declares, no missing values."""
    import pyarrow.parquet as pq

    from .zarr_chunks import regular_file

    path, label = file
    if regular_file(path, label) is None:
        raise ValueError(f"{label} no longer exists")
    try:
        table = pq.read_table(path, columns=columns)
    except Exception as error:  # noqa: BLE001 - pyarrow's refusal of a hostile file
        raise ValueError(f"{label} cannot be read ({_brief(error)})") from None
    if table.num_rows != rows:
        raise ValueError(f"{label} holds {table.num_rows} rows; its footer declares {rows}")
    for name, column in zip(columns, table.columns, strict=True):
        if numeric and not _numeric(column.type):
            raise ValueError(f"{label}: column {name!r} reads as {column.type}, not numbers")
        if column.null_count:
            raise ValueError(
                f"{label}: column {name!r} has missing values (nulls); drop those rows or "
                "impute the values first"
            )
    return table


def _parquet_matrix(files, rows, columns: list[str], block_id=None) -> np.ndarray:
    """The columns of file ``block_id[0]`` as an n x d float64 matrix (filled column by column)."""
    i = block_id[0]
    table = _parquet_table(files[i], rows[i], columns)
    out = np.empty((len(columns), table.num_rows))
    for j, column in enumerate(table.columns):
        out[j] = column.to_numpy()
    return out.T


def _parquet_column(files, rows, column: str, block_id=None) -> np.ndarray:
    i = block_id[0]
    return _parquet_table(files[i], rows[i], [column], numeric=False).column(0).to_numpy()


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
