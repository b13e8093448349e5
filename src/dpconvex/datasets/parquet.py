"""Parquet files read into memory (pyarrow, installed with the ``dask`` extra).

The in-memory twin of :func:`dpconvex.scale.data.read_frame` for ``dpconvex fit`` without
``--dask``: only the declared columns and the target are read, after the file's footer
(column names and types) has been checked. Cells reach the schema's encoder as the same
text a CSV file would hold (missing values as empty cells), so both file kinds are parsed,
refused and encoded by one code path. Messages name the file, the column and the first
row (counting from 1), never a cell's value.

A small file can hold a huge table (compressed pages, one long text repeated through a
dictionary), so memory is bounded from the footer before anything is decoded: at most
:data:`MAX_CELLS` cells and :data:`MAX_DECODED_BYTES` decoded bytes for the columns read;
text columns stay dictionary-encoded while read, so a repeated text is held once.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from .base import Dataset
from .files import MAX_COLUMNS, MAX_LABEL, _number, check_header

#: the Arrow types read: numbers, text, booleans and all-missing columns
_KINDS = ("integer", "floating", "string", "boolean", "null")
#: file name endings read as Parquet (any other file is read as CSV)
PARQUET_SUFFIXES = (".parquet", ".pq")
#: most cells (rows x columns read) held in memory; larger tables: ``--dask``
MAX_CELLS = 20_000_000
#: most bytes the columns read may take once decompressed, by the footer
MAX_DECODED_BYTES = 2**31


def is_parquet(path: str | Path) -> bool:
    """Whether ``path`` names a Parquet file (by its ending: .parquet or .pq)."""
    return Path(path).suffix.lower() in PARQUET_SUFFIXES


def _pyarrow():
    try:
        import pyarrow.parquet as pq
    except ImportError:
        raise ValueError(
            "reading Parquet files needs pyarrow: pip install 'dpconvex[dask]' "
            "(or convert the file to CSV)"
        ) from None
    return pq


def _open(path: Path):
    pq = _pyarrow()
    try:
        handle = pq.ParquetFile(path)
        names = list(handle.schema_arrow.names)
    except Exception:  # noqa: BLE001 - pyarrow raises many kinds for a damaged file
        raise ValueError(f"{path.name} is not a readable Parquet file") from None
    if len(names) > MAX_COLUMNS:
        raise ValueError(f"{path.name} has {len(names)} columns; at most {MAX_COLUMNS} are read")
    check_header(names, path.name)
    return handle, names


def _kind(arrow_type) -> str | None:
    import pyarrow.types as pt

    if pt.is_dictionary(arrow_type):
        arrow_type = arrow_type.value_type
    checks = {
        "integer": pt.is_integer,
        "floating": pt.is_floating,
        "string": lambda t: pt.is_string(t) or pt.is_large_string(t),
        "boolean": pt.is_boolean,
        "null": pt.is_null,
    }
    return next((k for k in _KINDS if checks[k](arrow_type)), None)


def _read(path: Path, columns: list[str], target: str | None, opened=None) -> dict:
    """Column name -> object array of the column's values (None where missing)."""
    handle, names = opened or _open(path)
    wanted = list(columns) + ([] if target is None else [target])
    missing = [c for c in wanted if c not in names]
    if missing:
        raise ValueError(f"{path.name} has no column {missing[0]!r}")
    schema = handle.schema_arrow
    kinds = {name: _kind(schema.field(name).type) for name in wanted}
    for name, kind in kinds.items():
        if kind is None:
            raise ValueError(
                f"{path.name}: column {name!r} holds {schema.field(name).type}; only numbers, "
                "text and booleans are read"
            )
    _check_size(path, handle, wanted)
    texts = [name for name, kind in kinds.items() if kind == "string"]
    try:
        if texts:  # read text columns as dictionaries: a repeated text is decoded once
            handle = _pyarrow().ParquetFile(path, read_dictionary=texts)
        table = handle.read(columns=wanted)
    except Exception:  # noqa: BLE001
        raise ValueError(f"{path.name} is not a readable Parquet file") from None
    return {name: _values(table.column(name)) for name in wanted}


def _check_size(path: Path, handle, wanted: list[str]) -> None:
    """Refuse, from the footer, a table too large to hold in memory."""
    meta = handle.metadata
    cells = meta.num_rows * len(wanted)
    if cells > MAX_CELLS:
        raise ValueError(
            f"{path.name} has {meta.num_rows} rows: {cells} cells to read, more than the "
            f"{MAX_CELLS} read into memory; train out of core with --dask"
        )
    decoded = 0
    for g in range(meta.num_row_groups):
        group = meta.row_group(g)
        for j in range(group.num_columns):
            column = group.column(j)
            if column.path_in_schema in wanted:
                decoded += column.total_uncompressed_size
    if decoded > MAX_DECODED_BYTES:
        raise ValueError(
            f"{path.name}: the columns read take {decoded} bytes decompressed, more than the "
            f"{MAX_DECODED_BYTES} read into memory; train out of core with --dask"
        )


def _values(column) -> np.ndarray:
    """An Arrow column as an object array of Python values (None where missing); the
    values of a dictionary-encoded chunk are shared, not copied per row."""
    import pyarrow.types as pt

    parts = []
    for chunk in column.chunks:
        if pt.is_dictionary(chunk.type):
            size = len(chunk.dictionary)
            pool = np.empty(size + 1, dtype=object)
            pool[:size] = chunk.dictionary.to_pylist()
            pool[size] = None
            parts.append(pool[chunk.indices.fill_null(size).to_numpy(zero_copy_only=False)])
        else:
            values = np.empty(len(chunk), dtype=object)
            values[:] = chunk.to_pylist()
            parts.append(values)
    return np.concatenate(parts) if parts else np.empty(0, dtype=object)


def _text(value) -> str:
    """A cell as a CSV file would hold it: missing -> '', numbers exactly, booleans as words."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return repr(value)
    return str(value)


def load_parquet_cells(
    path: str | Path,
    columns: list[str],
    target: str | None = None,
    *,
    numeric_target: bool = False,
) -> tuple[np.ndarray, np.ndarray | None]:
    """(cells, y): the named ``columns`` of a Parquet file as text cells, in that order.

    The Parquet counterpart of :func:`dpconvex.datasets.files.load_csv_cells`: ``cells``
    is an object array of strings (rows x columns) for a schema's encoder; ``y`` is the
    ``target`` column (finite numbers with ``numeric_target``, else class labels), or
    None without one.
    """
    path = Path(path)
    columns = list(columns)
    if target is not None and target in columns:
        raise ValueError(f"the target column {target!r} is also declared as a feature column")
    data = _read(path, columns, target)
    rows = len(data[columns[0]]) if columns else 0
    cells = np.empty((rows, len(columns)), dtype=object)
    for j, name in enumerate(columns):
        pool: dict[str, str] = {}
        cells[:, j] = [pool.setdefault(t, t) for t in map(_text, data[name])]
    if target is None:
        return cells, None
    return cells, _target(path.name, target, data[target], numeric_target)


def load_parquet(path: str | Path, target: str, *, numeric_target: bool = False) -> Dataset:
    """Numeric feature columns and a target from a Parquet file (no schema).

    Every column other than ``target`` must hold numbers without missing values; as for
    CSV files, no category levels are read off the data.
    """
    path = Path(path)
    opened = _open(path)
    if target not in opened[1]:
        raise ValueError(f"{path.name} has no column {target!r}")
    features = [n for n in opened[1] if n != target]
    data = _read(path, features, target, opened)
    X = _numeric_matrix(path.name, data, features)
    y = _target(path.name, target, data[target], numeric_target)
    return Dataset(name=path.stem, X=X, y=y, feature_names=features)


def load_parquet_features(
    path: str | Path,
    feature_names: list[str],
    target: str | None = None,
    *,
    numeric_target: bool = False,
) -> tuple[np.ndarray, np.ndarray | None]:
    """(X, y) from a Parquet file: X holds the numeric ``feature_names`` in that order."""
    path = Path(path)
    data = _read(path, list(feature_names), target)
    X = _numeric_matrix(path.name, data, list(feature_names))
    y = None if target is None else _target(path.name, target, data[target], numeric_target)
    return X, y


def _numeric_matrix(name: str, data: dict, features: list[str]) -> np.ndarray:
    """The feature columns as a float matrix; every value a finite number."""
    rows = len(data[features[0]]) if features else 0
    X = np.empty((rows, len(features)))
    for j, feature in enumerate(features):
        column = data[feature]
        bad = next((i for i, v in enumerate(column) if not _finite_number(v)), None)
        if bad is not None:
            raise ValueError(
                f"{name}: column {feature!r} has a missing, non-numeric or non-finite value "
                f"(first in row {bad + 1}); give a schema (--schema) for text and missing values"
            )
        X[:, j] = column
    return X


def _finite_number(value) -> bool:
    return (
        isinstance(value, (int, float))
        and not isinstance(value, bool)
        and math.isfinite(value)
    )


def _target(name: str, target: str, values, numeric: bool) -> np.ndarray:
    """Regression targets (finite numbers) or class labels (numbers, or short text)."""
    if any(v is None for v in values):
        first = next(i for i, v in enumerate(values) if v is None) + 1
        raise ValueError(
            f"{name} has missing values in the target column {target!r} (first in row "
            f"{first}); drop those rows before training"
        )
    if all(_finite_number(v) for v in values):
        return np.asarray(values, dtype=np.float64)
    if numeric or any(isinstance(v, (int, float)) and not isinstance(v, bool) for v in values):
        first = next(i for i, v in enumerate(values) if not _finite_number(v)) + 1
        raise ValueError(
            f"{name}: the target in column {target!r} in row {first} is not a finite number"
        )
    labels = [_text(v).strip() for v in values]
    numbers = [_number(v) for v in dict.fromkeys(labels)]
    if all(v is not None and math.isfinite(v) for v in numbers):  # as a CSV file's labels
        return np.array([float(_number(v)) for v in labels], dtype=np.float64)
    long = next((i for i, v in enumerate(labels) if len(v) > MAX_LABEL), None)
    if long is not None:
        raise ValueError(
            f"{name}: the label in column {target!r} in row {long + 1} is longer than "
            f"{MAX_LABEL} characters; class labels must be short names"
        )
    return np.asarray(labels, dtype=object).astype(str)
