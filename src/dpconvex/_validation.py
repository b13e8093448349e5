"""Argument checks shared by the whole package.

Every check raises ``ValueError`` whose message names the offending parameter,
so that a bad privacy parameter can never pass silently into a bound.
"""

from __future__ import annotations

import math
from numbers import Integral, Real


def _as_float(name: str, value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, Real):
        try:
            value = float(value)  # numpy scalars, strings from a CLI, ...
        except (TypeError, ValueError):
            raise ValueError(f"{name} must be a real number, got {value!r}") from None
    value = float(value)
    if math.isnan(value):
        raise ValueError(f"{name} must be a number, got NaN")
    return value


def finite(name: str, value: object) -> float:
    """Return ``value`` as a float; raise unless it is a finite real number."""
    value = _as_float(name, value)
    if not math.isfinite(value):
        raise ValueError(f"{name} must be finite, got {value}")
    return value


def positive(name: str, value: object) -> float:
    """Return ``value``; raise unless it is finite and > 0."""
    value = finite(name, value)
    if value <= 0:
        raise ValueError(f"{name} must be > 0, got {value}")
    return value


def nonnegative(name: str, value: object) -> float:
    """Return ``value``; raise unless it is finite and >= 0."""
    value = finite(name, value)
    if value < 0:
        raise ValueError(f"{name} must be >= 0, got {value}")
    return value


def probability_open(name: str, value: object) -> float:
    """Return ``value``; raise unless 0 < value < 1 (used for delta)."""
    value = finite(name, value)
    if not 0 < value < 1:
        raise ValueError(f"{name} must be in the open interval (0, 1), got {value}")
    return value


def sampling_rate(name: str, value: object) -> float:
    """Return ``value``; raise unless 0 < value <= 1."""
    value = finite(name, value)
    if not 0 < value <= 1:
        raise ValueError(f"{name} must be in (0, 1], got {value}")
    return value


def positive_int(name: str, value: object) -> int:
    """Return ``value`` as an int; raise unless it is an integer >= 1."""
    if isinstance(value, bool):
        raise ValueError(f"{name} must be a positive integer, got {value!r}")
    try:
        as_int = int(value)
    except (TypeError, ValueError, OverflowError):  # int(inf) overflows
        raise ValueError(f"{name} must be a positive integer, got {value!r}") from None
    if as_int != value or as_int < 1:
        raise ValueError(f"{name} must be a positive integer, got {value!r}")
    return as_int


def public_n(value: object) -> int | None:
    """Return the ``public_n`` of a fit as an int, or None; raise unless it is an integer >= 1.

    ``public_n`` is the public expected number of rows of a secret subsample that a fit
    is calibrated for (never the subsample's actual row count); a bool or a float is
    refused rather than rounded.
    """
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, Integral) or value < 1:
        raise ValueError(
            "public_n must be None or a positive integer (the public expected number of "
            f"rows the subsample was drawn for), got {value!r}"
        )
    return int(value)


def regularization_exceeds_smoothness(lam: object, beta: object) -> tuple[float, float]:
    """Return ``(lam, beta)``; raise unless lam > beta >= 0.

    Every objective-perturbation bound of Redberg, Koskela & Wang (arXiv 2401.00583,
    Thms 3.1, 3.2, 4.1) needs
    lambda > beta strictly: the Jacobian term -log(1 - beta/lambda) is infinite
    at lambda = beta and undefined below it.
    """
    beta = nonnegative("beta", beta)
    lam = positive("lam", lam)
    if lam <= beta:
        raise ValueError(
            f"lam must be > beta for objective perturbation (got lam={lam}, beta={beta}); "
            "the Jacobian term -log(1 - beta/lam) is undefined otherwise"
        )
    return lam, beta


def _column_label(j: int, names) -> str:
    return f"column {names[j]!r}" if names is not None else f"column {j}"


def _rows(count: int) -> str:
    return f"{count} row{'s' if count != 1 else ''}"


def _is_missing(cell) -> bool:
    if cell is None:
        return True
    if isinstance(cell, str):
        return cell.strip().lower() in {"", "na", "n/a", "nan", "null", "none"}
    try:
        return bool(math.isnan(cell))
    except (TypeError, ValueError):
        return False


def numeric_features(X, name: str = "X") -> bool:
    """Raise a ``ValueError`` naming the column when dense ``X`` holds text, missing or
    infinite values.

    Conversion is left to scikit-learn's checks, whose own messages ("could not convert
    string to float: 'a'", "Input X contains NaN") name neither the column nor the fix.
    Columns are named by their header when ``X`` is a data frame, else by their 0-based
    index. Sparse matrices, dask arrays and inputs of another shape pass through to those
    checks. Returns True when ``X`` is a dense array of numbers (not text) whose values
    are now known to be finite, so that scikit-learn need not read it again
    (``ensure_all_finite=False``); False when its checks must run.
    """
    import numpy as np
    import scipy.sparse as sp

    if X is None or sp.issparse(X) or hasattr(X, "dask"):
        return False
    names = None
    values = X
    if hasattr(X, "columns") and hasattr(X, "to_numpy"):  # a pandas data frame
        names = [str(c) for c in X.columns]
        values = X.to_numpy()
    try:
        arr = np.asarray(values)
    except (TypeError, ValueError):
        return False
    if arr.ndim != 2 or arr.size == 0:
        return False
    if arr.dtype.kind in "OUS":
        missing: dict[int, int] = {}
        text: dict[int, int] = {}  # column -> first row holding text
        for j in range(arr.shape[1]):
            column = arr[:, j]
            try:
                as_float = column.astype(np.float64)
            except (TypeError, ValueError):
                as_float = None
            if as_float is not None:
                n_nan = int(np.isnan(as_float).sum())
                if n_nan:
                    missing[j] = n_nan
                continue
            for i, cell in enumerate(column):
                if _is_missing(cell):
                    missing[j] = missing.get(j, 0) + 1
                    continue
                if not isinstance(cell, str | bytes):
                    continue  # other objects: scikit-learn's own TypeError names them
                try:
                    float(cell)
                except ValueError:
                    text.setdefault(j, i)
                    break
        if missing:
            _raise_missing(name, missing, names)
        if text:
            # the row, never the cell: an error message may be shown beyond the data owner
            parts = [f"{_column_label(j, names)} holds text (first in row {i})"
                     for j, i in text.items()]  # fmt: skip
            raise ValueError(
                f"{name}: {'; '.join(parts)}. Features must be numbers: declare the table's "
                "columns in a schema and encode it with dpconvex.TableEncoder (or "
                "dpconvex.make_table_model), or encode categorical columns first with "
                "categories chosen without looking at the data"
            )
        return False
    if arr.dtype.kind in "iub":  # integers and booleans are finite as float64 too
        return True
    # (the sum is finite exactly when every value is, unless finite values overflow it:
    # one read, no mask; scikit-learn's own check is the same read)
    if arr.dtype.kind in "fc" and not np.isfinite(np.sum(arr)):
        nan = np.isnan(arr)
        if nan.any():
            counts = nan.sum(axis=0)
            _raise_missing(name, {j: int(c) for j, c in enumerate(counts) if c}, names)
        inf = np.isinf(arr)
        if inf.any():
            counts = inf.sum(axis=0)
            parts = [
                f"{_column_label(j, names)} ({_rows(int(c))})" for j, c in enumerate(counts) if c
            ]
            raise ValueError(
                f"{name} has infinite values (infinity) in {'; '.join(parts)}. Features must be "
                "finite numbers: drop those rows or replace the values first"
            )
    # (a float wider than float64 may overflow when scikit-learn converts it)
    return arr.dtype.kind == "f" and arr.dtype.itemsize <= 8


def _raise_missing(name: str, missing: dict[int, int], names) -> None:
    parts = [f"{_column_label(j, names)} ({_rows(n)})" for j, n in missing.items()]
    raise ValueError(
        f"{name} has missing values (NaN or empty) in {'; '.join(parts)}. dpconvex does not "
        "fill them in: drop those rows or impute the values first"
    )
