"""Reading raw cells: the declared columns of a table, parsed without showing a value.

Errors name the column and what to change; never a cell's value, its row, or a count
of rows (those are private).
"""

from __future__ import annotations

import math
import re
from numbers import Real

import numpy as np

from .schema import Categorical, Numeric, Schema, category_key

#: A number written in ASCII: digits, one point, an exponent (no inf, nan, or other digits).
_NUMBER = re.compile(r"[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?", re.ASCII)
_MAX_NUMBER_TEXT = 64
_MISSING_TYPES = ("NAType", "NaTType")
_MAX_SEEN = 100_000  # distinct cells remembered per column (memory bound)


def is_dask_table(X) -> bool:
    """True for a dask DataFrame (read partition by partition by the encoder)."""
    return (
        type(X).__module__.startswith("dask.")
        and hasattr(X, "to_delayed")
        and getattr(X, "ndim", 0) == 2
        and hasattr(X, "columns")
    )


def check_dask_table(X, schema: Schema) -> None:
    """Refuse a dask collection the encoder cannot read, or a dask DataFrame without the
    declared columns (checked on its metadata: nothing is read)."""
    if not is_dask_table(X):
        raise TypeError(
            "a dask collection given to the encoder must be a dask DataFrame with the "
            "schema's columns (e.g. from dpconvex.scale.data.read_frame)"
        )
    _frame_columns(X._meta, schema)


def table_columns(X, schema: Schema) -> list[np.ndarray]:
    """The cells of each declared column, in schema order (by name from a data frame)."""
    if hasattr(X, "dask"):
        raise TypeError("dask collections are read partition by partition (by the encoder)")
    if hasattr(X, "columns") and hasattr(X, "iloc"):
        return _frame_columns(X, schema)
    try:
        arr = X if isinstance(X, np.ndarray) else np.asarray(X, dtype=object)
    except (TypeError, ValueError):
        raise ValueError("X must be a pandas DataFrame or a 2-D table of cells") from None
    expected = len(schema.columns)
    if arr.ndim != 2 or arr.shape[1] != expected:
        raise ValueError(
            f"X must be a 2-D table with the schema's {expected} columns in its order; "
            f"got shape {arr.shape}"
        )
    return [arr[:, j] for j in range(expected)]


def _frame_columns(frame, schema: Schema, names=None) -> list[np.ndarray]:
    """The cells of the declared columns (of those named ``names``, default all)."""
    found = [str(c) for c in frame.columns]
    where: dict[str, int] = {}
    for j, name in enumerate(found):
        where[name] = -1 if name in where else j
    out = []
    for col in schema.columns:
        j = where.get(col.name)
        if j is None:
            raise ValueError(f"the table has no column {col.name!r} declared in the schema")
        if j < 0:
            raise ValueError(f"the table has two columns named {col.name!r}")
        if names is None or col.name in names:
            out.append(frame.iloc[:, j].to_numpy())
    return out


def frame_column(frame, schema: Schema, name: str) -> np.ndarray:
    """The cells of the declared column ``name`` of a pandas DataFrame."""
    (cells,) = _frame_columns(frame, schema, {name})
    return cells


def _is_missing(cell: object, markers: frozenset) -> bool:
    if cell is None or type(cell).__name__ in _MISSING_TYPES:
        return True
    if isinstance(cell, str):
        return cell.strip() in markers
    if isinstance(cell, float | np.floating):
        return bool(np.isnan(cell))
    return False


def _number(cell: object) -> float | None:
    """The cell as a float, or None if it is not a number (inf for an overflow)."""
    if isinstance(cell, str):
        text = cell.strip()
        if len(text) > _MAX_NUMBER_TEXT or not _NUMBER.fullmatch(text):
            return None
        return float(text)
    if isinstance(cell, bool | np.bool_ | Real) and not isinstance(cell, complex):
        try:
            return float(cell)
        except OverflowError:
            return math.inf
    return None


def numeric_cells(cells: np.ndarray, column: Numeric, markers: frozenset) -> np.ndarray:
    """The column as float64 with NaN where missing; refuses text and infinities."""
    if cells.dtype.kind in "biuf":
        values = cells.astype(np.float64)
    else:
        values = np.empty(cells.shape[0])
        for i, cell in enumerate(cells):
            if _is_missing(cell, markers):
                values[i] = np.nan
                continue
            x = _number(cell)
            if x is None:
                raise ValueError(
                    f"column {column.name!r} is declared numeric but holds a value that is not "
                    "a number written in ASCII digits; declare it categorical, or list that "
                    "marker in the schema's missing_values"
                )
            values[i] = x
    if np.isinf(values).any():
        raise ValueError(
            f"column {column.name!r} holds an infinite value; replace it by a finite number "
            "(values beyond the bounds are clipped to them)"
        )
    if column.missing == "refuse" and np.isnan(values).any():
        raise _refused(column.name)
    return values


def category_codes(cells: np.ndarray, column: Categorical, markers: frozenset) -> np.ndarray:
    """Index of each cell in the group's levels; -1 for an undeclared value without
    ``<other>`` (an all-zero group)."""
    index = {c: k for k, c in enumerate(column.categories)}
    other = len(column.categories) if column.other else -1
    missing = len(column.levels) - 1
    codes = np.empty(cells.shape[0], dtype=np.int64)
    seen: dict = {}  # (type, cell) -> code: each distinct cell is read once
    for i, cell in enumerate(cells):
        try:
            codes[i] = seen[(type(cell), cell)]
            continue
        except (KeyError, TypeError):
            pass
        if _is_missing(cell, markers):
            if column.missing == "refuse":
                raise _refused(column.name)
            code = missing
        elif isinstance(cell, str | bool | np.bool_ | int | float | np.integer | np.floating):
            key = category_key(cell.item() if isinstance(cell, np.generic) else cell)
            code = index.get(key, other)
        else:  # any other object is an undeclared value
            code = other
        codes[i] = code
        if len(seen) < _MAX_SEEN:
            try:
                seen[(type(cell), cell)] = code
            except TypeError:  # unhashable cells are read one by one
                pass
    return codes


def _refused(name: str) -> ValueError:
    return ValueError(
        f"column {name!r} has a missing value and the schema says missing='refuse'; use "
        "missing='indicator', or drop or fill those rows before fitting"
    )
