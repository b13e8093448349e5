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


#: Where a table with text columns goes (the readers above read numeric matrices).
_TEXT_ROUTE = (
    "read_table and read_parquet read numeric matrices only: read a table with text columns with "
    "dpconvex.scale.data.read_frame and encode it by a declared schema "
    "(dpconvex.preprocessing.TableEncoder; command line: --schema)"
)


def _is_parquet(text: str) -> bool:
    return text.endswith(".parquet") or Path(text).is_dir()


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


def _checked_parquet(root: Path, target: str | None, features: list[str] | None, text=False):
    """(files, the first file's schema, feature columns, row counts) of the Parquet file
    or directory ``root``, after checking every file's footer against the first's (and
    the columns' types: numeric features, or with ``text``, numbers or text)."""
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
    if text:
        _check_frame_types(schema, first, features)
    else:
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
            f"{label}: feature columns must be numeric (integer, float or bool); not numeric: "
            f"{bad}; {_TEXT_ROUTE}"
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


def _parquet_table(
    file: tuple[str, str],
    rows: int,
    columns: list[str],
    numeric: bool = True,
    nulls=False,
    dictionary=None,
):
    """The ``columns`` of the Parquet file (path, name), checked: still a regular file, the
    rows its footer declares, no missing values (unless ``nulls``); the ``dictionary``
    columns read dictionary-encoded (each distinct text held once)."""
    import pyarrow.parquet as pq

    from .zarr_chunks import regular_file

    path, label = file
    if regular_file(path, label) is None:
        raise ValueError(f"{label} no longer exists")
    try:
        table = pq.read_table(path, columns=columns, read_dictionary=dictionary)
    except Exception as error:  # noqa: BLE001 - pyarrow's refusal of a hostile file
        raise ValueError(f"{label} cannot be read ({_brief(error)})") from None
    if table.num_rows != rows:
        raise ValueError(f"{label} holds {table.num_rows} rows; its footer declares {rows}")
    for name, column in zip(columns, table.columns, strict=True):
        if numeric and not _numeric(column.type):
            raise ValueError(f"{label}: column {name!r} reads as {column.type}, not numbers")
        if column.null_count and not nulls:
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


# -- raw tables (text and numbers) -------------------------------------------------------

#: Default bytes of CSV text per partition of :func:`read_frame`.
FRAME_BLOCKSIZE = 16 * 2**20
#: Largest CSV block :func:`read_frame` accepts as ``blocksize``.
MAX_FRAME_BLOCKSIZE = 2**28


def read_frame(path: str | Path, columns: list[str] | None = None, *, blocksize=FRAME_BLOCKSIZE):
    """A raw table as a lazy dask DataFrame: numbers as float64, text as strings.

    ``path`` is a Parquet file or a directory of them (one partition per file, in name
    order), or a CSV file or glob (partitions of about ``blocksize`` bytes of text, an
    int or a string such as ``"16MB"``). ``columns`` selects columns by name (default:
    all), for instance the schema's columns and the target. For
    :class:`~dpconvex.preprocessing.TableEncoder` and :func:`split_frame`.

    * Parquet: integer, float and bool columns (plain or dictionary-encoded) become
      float64 with NaN where missing; string columns stay text, as pandas categories
      (each distinct text held once per partition) with NaN where missing; any other
      type is refused naming the column. Every
      file's footer is checked against the first's before anything is read, as by
      :func:`read_parquet` (regular files inside the directory, the same columns and
      types), and a file is refused when its footer promises a partition of more than
      ``MAX_CHUNK_BYTES`` bytes (8 bytes per value, plus the text columns' uncompressed
      size, which bounds their distinct texts).
    * CSV: a CSV file has no types, so every cell is read as text, exactly as written
      (an empty field is the empty text): the encoder parses numbers and missing-value
      markers by the schema, by the same rules as for a table in memory. Every file must
      be a regular file whose checked header is the first file's; a partition is the
      lines that start in its block of bytes, and every line must hold the header's
      number of fields and be UTF-8 without NUL bytes. A block's first and last lines
      are searched for at most ``MAX_LINE`` bytes beyond its ends (a longer line there
      is refused), so a partition holds at most ``blocksize + 2 * MAX_LINE`` bytes. A
      quoted field spanning lines is read right inside a block, but not across a
      block's end: keep such files in Parquet, or give a blocksize above the file size.

    Nothing but footers and headers is read here; errors found while a partition is
    read name its file and say what to change, never a cell's content. Memory per
    partition: the CSV block and its cells, or one Parquet file's selected columns.
    """
    import dask.dataframe as dd

    text = str(path)
    wanted = _column_names(columns)
    size = _blocksize(blocksize)
    if _is_parquet(text):
        files, schema, names, rows = _checked_parquet(Path(text), None, wanted, text=True)
        kinds = tuple(
            "category" if _frame_kind(schema.field(c).type) == "text" else "number" for c in names
        )
        _check_frame_sizes(files, rows, names)
        parts = [(file, count) for file, count in zip(files, rows, strict=True)]
        reader = _ParquetPart(tuple(names), kinds)
    else:
        names, header = _csv_files(text)
        if wanted is not None:
            missing = [c for c in wanted if c not in header]
            if missing:
                raise ValueError(f"columns {missing} not in {text} (columns: {header})")
        parts = _csv_blocks(names, size)
        names, kinds = wanted or header, ("text",) * len(wanted or header)
        reader = _CsvPart(tuple(header), tuple(names))
    return dd.from_map(reader, parts, meta=_frame_meta(names, kinds), enforce_metadata=False)


def frame_target(frame, name: str, *, numeric: bool = False):
    """The column ``name`` of a dask DataFrame as the estimators' ``y`` (a dask Series).

    ``numeric=False``: the column as it is (class labels, text or numbers).
    ``numeric=True``: float64, each cell a finite number (a number as stored, or text
    written in ASCII digits, as the encoder reads numeric cells); a partition holding
    anything else (text, a missing value, an infinity) is refused when it is read, by
    the column's name, never by the cell. For a CSV target read by :func:`read_frame`,
    whose cells are text.
    """
    if not isinstance(name, str) or name not in [str(c) for c in frame.columns]:
        raise ValueError(f"the table has no column {str(name)[:200]!r}")
    column = frame[name]
    if not numeric:
        return column
    return column.map_partitions(_finite_numbers, name, meta=(name, "float64"))


def _finite_numbers(cells, name: str):
    """A pandas Series of cells as float64; ValueError naming the column otherwise."""
    import pandas as pd

    from ..preprocessing.columns import _number

    raw = cells.to_numpy()
    if raw.dtype.kind in "biuf":
        values = raw.astype(np.float64)
    else:
        values = np.array([_finite_or_nan(_number(c)) for c in raw], dtype=np.float64)
    if not np.all(np.isfinite(values)):
        raise ValueError(
            f"the target column {name!r} holds a value that is not a finite number (text, "
            "a missing value or an infinity); targets must be finite numbers"
        )
    return pd.Series(values, index=cells.index, name=cells.name)


def _finite_or_nan(x: float | None) -> float:
    return np.nan if x is None else x


def _column_names(columns) -> list[str] | None:
    if columns is None:
        return None
    if isinstance(columns, str) or not isinstance(columns, list | tuple):
        raise TypeError("columns must be a list of column names or None")
    names = list(columns)
    if not names or not all(isinstance(c, str) for c in names):
        raise ValueError("columns must be a non-empty list of column names (strings)")
    if len(set(names)) != len(names):
        raise ValueError("columns names a column more than once")
    return names


def _blocksize(blocksize) -> int:
    from dask.utils import parse_bytes

    try:
        size = parse_bytes(blocksize) if isinstance(blocksize, str) else blocksize
    except (ValueError, TypeError):
        size = None
    if isinstance(size, bool) or not isinstance(size, int) or not 1 <= size <= MAX_FRAME_BLOCKSIZE:
        raise ValueError(
            f"blocksize must be a number of bytes from 1 to {MAX_FRAME_BLOCKSIZE} (e.g. '16MB')"
        )
    return size


def _frame_kind(arrow_type) -> str:
    return "number" if _numeric(arrow_type) else "text"


def _is_text(arrow_type) -> bool:
    import pyarrow.types as pt

    if pt.is_dictionary(arrow_type):
        arrow_type = arrow_type.value_type
    return pt.is_string(arrow_type) or pt.is_large_string(arrow_type)


def _check_frame_types(schema, label: str, columns: list[str]) -> None:
    bad = [
        f"{c} ({schema.field(c).type})"
        for c in columns
        if not (_numeric(schema.field(c).type) or _is_text(schema.field(c).type))
    ]
    if bad:
        raise ValueError(
            f"{label}: columns must hold numbers (integer, float or bool) or text; not "
            f"read: {bad}; convert them when writing the file, or leave them out (columns=)"
        )


def _check_frame_sizes(files, rows, columns: list[str]) -> None:
    """Refuse a Parquet file whose footer promises a partition beyond MAX_CHUNK_BYTES."""
    import pyarrow.parquet as pq

    from .zarr_chunks import MAX_CHUNK_BYTES

    for (path, label), count in zip(files, rows, strict=True):
        try:
            meta = pq.read_metadata(path)
        except Exception as error:  # noqa: BLE001 - changed since its footer was read
            raise ValueError(f"{label} is not a readable Parquet file ({_brief(error)})") from None
        names = [meta.schema.column(j).path.split(".")[0] for j in range(meta.num_columns)]
        size = sum(
            meta.row_group(g).column(j).total_uncompressed_size
            for g in range(meta.num_row_groups)
            for j, name in enumerate(names)
            if name in columns
        )
        if count * max(len(columns), 1) * 8 + size > MAX_CHUNK_BYTES:
            raise ValueError(
                f"{label} holds {count} rows whose columns take more than {MAX_CHUNK_BYTES} "
                "bytes in memory, read as one partition: split it into smaller files"
            )


def _text_dtype():
    import pandas as pd

    return pd.Series([], dtype="str").dtype


def _frame_meta(names, kinds):
    """The empty frame dask takes as the partitions' metadata: "number" columns float64,
    "text" strings, "category" categories not known in advance."""
    import pandas as pd
    from dask.dataframe.utils import clear_known_categories

    dtypes = {"number": "float64", "text": _text_dtype()}
    meta = pd.DataFrame(
        {
            c: pd.Series([], dtype=dtypes.get(k, "category"))
            for c, k in zip(names, kinds, strict=True)
        }
    )
    return clear_known_categories(meta)


def _frame_of(table, names, kinds):
    """A pandas DataFrame of an arrow table: numbers float64, text as read (strings, or
    categories for dictionary-encoded text), NaN where missing."""
    import pyarrow as pa

    columns = []
    for column, kind in zip(table.columns, kinds, strict=True):
        if kind == "number":
            if pa.types.is_dictionary(column.type):
                column = column.cast(column.type.value_type)
            column = column.cast(pa.float64())
        columns.append(column)
    frame = pa.table(columns, names=list(names)).to_pandas()
    text = _text_dtype()
    for c, kind in zip(names, kinds, strict=True):
        if kind == "text" and frame[c].dtype != text and frame[c].dtype != "category":
            frame[c] = frame[c].astype(text)
    return frame


class _ParquetPart:
    """Reads one Parquet file (path, name) of read_frame into a partition."""

    def __init__(self, names: tuple, kinds: tuple):
        self.names, self.kinds = names, kinds

    def __call__(self, part):
        (path, label), rows = part
        text = [c for c, k in zip(self.names, self.kinds, strict=True) if k == "category"]
        table = _parquet_table(
            (path, label), rows, list(self.names), numeric=False, nulls=True, dictionary=text
        )
        for name, column, kind in zip(self.names, table.columns, self.kinds, strict=True):
            if not (_numeric(column.type) if kind == "number" else _is_text(column.type)):
                raise ValueError(
                    f"{label}: column {name!r} reads as {column.type}, not as its footer says"
                )
        return _frame_of(table, self.names, self.kinds)


def _csv_blocks(names: list[str], blocksize: int) -> list[tuple]:
    """[(file, offset, length), ...]: every file cut into blocks of ``blocksize`` bytes."""
    from .zarr_chunks import MAX_CHUNKS

    blocks = []
    for name in names:
        size = os.stat(name).st_size
        blocks += [(name, offset, blocksize) for offset in range(0, max(size, 1), blocksize)]
        if len(blocks) > MAX_CHUNKS:
            raise ValueError(
                f"{name}: the CSV files make more than {MAX_CHUNKS} partitions of {blocksize} "
                "bytes; give a larger blocksize"
            )
    return blocks


class _CsvPart:
    """Reads the lines that start in one block of a CSV file into a partition of text."""

    def __init__(self, header: tuple, names: tuple):
        self.header, self.names = header, names

    def __call__(self, block):
        name, offset, length = block
        label = Path(name).name
        data = _csv_block(name, label, offset, length)
        return _frame_of(self._parse(data, label, offset), self.names, ("text",) * len(self.names))

    def _parse(self, data: bytes, label: str, offset: int):
        import io

        import pyarrow as pa
        import pyarrow.csv as pc

        if not data:  # no line starts in this block
            columns = [pa.array([], pa.large_string()) for _ in self.names]
            return pa.table(columns, names=list(self.names))
        where = f"{label} (the lines from byte {offset})"
        if b"\0" in data:
            raise ValueError(f"{where} hold a NUL byte: not a text (CSV) file")
        try:
            data.decode("utf-8")
        except UnicodeDecodeError:
            raise ValueError(f"{where} are not UTF-8 text: save the file as UTF-8") from None
        options = {
            "read_options": pc.ReadOptions(
                column_names=list(self.header), use_threads=False, block_size=len(data) + 1
            ),
            "parse_options": pc.ParseOptions(newlines_in_values=False),
            "convert_options": pc.ConvertOptions(
                column_types=dict.fromkeys(self.header, pa.large_string()),
                include_columns=list(self.names),
                strings_can_be_null=False,
                quoted_strings_can_be_null=False,
            ),
        }
        try:
            return pc.read_csv(io.BytesIO(data), **options)
        except (pa.ArrowInvalid, ValueError):  # its message quotes the line: not shown
            raise ValueError(
                f"{where}: a line does not split into the header's {len(self.header)} "
                "fields (or a quoted field spans lines, which this reader does not take)"
            ) from None


def _csv_block(name: str, label: str, offset: int, length: int) -> bytes:
    """The bytes of the lines of a CSV file that start in [offset, offset + length) (for
    offset 0, without the header line); every line searched for at most MAX_LINE bytes."""
    from ..datasets.files import MAX_LINE, _open_data

    with _open_data(Path(name)) as handle:
        # block 0 starts after the header line
        start = _line_start(handle, max(offset, 1), label, MAX_LINE)
        end = _line_start(handle, offset + length, label, MAX_LINE)
        if end <= start:
            return b""
        handle.seek(start)
        return handle.read(end - start)


def _line_start(handle, position: int, label: str, max_line: int) -> int:
    """The first line start at or after ``position`` (the file's end if none): the byte
    after the first newline in [position - 1, ...)."""
    handle.seek(position - 1)
    tail = handle.read(max_line + 1)
    if not tail:
        return handle.seek(0, os.SEEK_END)
    cut = tail.find(b"\n")
    if cut < 0:
        if len(tail) > max_line:
            raise ValueError(f"{label} holds a line longer than {max_line} bytes")
        return position - 1 + len(tail)
    return position + cut


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
