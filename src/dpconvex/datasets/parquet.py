"""Parquet files read into memory (pyarrow, installed with the ``dask`` extra).

The in-memory twin of :func:`dpconvex.scale.data.read_frame` for ``dpconvex fit`` without
``--dask``: only the declared columns and the target are read, after the file's footer
(column names and types) has been checked. Cells reach the schema's encoder as the same
text a CSV file would hold (missing values as empty cells), so both file kinds are parsed,
refused and encoded by one code path. Messages name the file, the column and the first
row (counting from 1), never a cell's value.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from .base import Dataset
from .files import MAX_COLUMNS, MAX_LABEL, _number, check_header

#: the Arrow types read: numbers, text, booleans and all-missing columns
_KINDS = ("integer", "floating", "string", "boolean", "null")


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


def _read(path: Path, columns: list[str], target: str | None) -> dict:
    handle, names = _open(path)
    wanted = list(columns) + ([] if target is None else [target])
    missing = [c for c in wanted if c not in names]
    if missing:
        raise ValueError(f"{path.name} has no column {missing[0]!r}")
    schema = handle.schema_arrow
    for name in wanted:
        if _kind(schema.field(name).type) is None:
            raise ValueError(
                f"{path.name}: column {name!r} holds {schema.field(name).type}; only numbers, "
                "text and booleans are read"
            )
    try:
        table = handle.read(columns=wanted)
    except Exception:  # noqa: BLE001
        raise ValueError(f"{path.name} is not a readable Parquet file") from None
    return {name: table.column(name).to_pylist() for name in wanted}


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
    _, names = _open(path)
    if target not in names:
        raise ValueError(f"{path.name} has no column {target!r}")
    features = [n for n in names if n != target]
    X, y = load_parquet_features(path, features, target, numeric_target=numeric_target)
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
    rows = len(data[feature_names[0]]) if feature_names else 0
    X = np.empty((rows, len(feature_names)))
    for j, name in enumerate(feature_names):
        column = data[name]
        bad = next((i for i, v in enumerate(column) if not _finite_number(v)), None)
        if bad is not None:
            raise ValueError(
                f"{path.name}: column {name!r} has a missing, non-numeric or non-finite value "
                f"(first in row {bad + 1}); give a schema (--schema) for text and missing values"
            )
        X[:, j] = column
    y = None if target is None else _target(path.name, target, data[target], numeric_target)
    return X, y


def _finite_number(value) -> bool:
    return (
        isinstance(value, (int, float))
        and not isinstance(value, bool)
        and math.isfinite(value)
    )


def _target(name: str, target: str, values: list, numeric: bool) -> np.ndarray:
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
