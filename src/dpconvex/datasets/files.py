"""Loaders for user files: CSV with a named target column."""

from __future__ import annotations

import csv
import math
from pathlib import Path

import numpy as np

from .base import Dataset

#: cells read as a missing value (compared after stripping, case-insensitively)
MISSING_CELLS = frozenset({"", "na", "n/a", "nan", "null", "none", "?"})


def _read_csv(path: Path) -> tuple[list[str], list[tuple[int, list[str]]]]:
    """(header, [(line number, fields), ...]) of a CSV file; blank lines are skipped."""
    if not path.is_file():
        raise ValueError(f"no such data file: {path}")
    with path.open(newline="") as handle:
        reader = csv.reader(handle)
        try:
            header = [h.strip() for h in next(reader)]
        except StopIteration:
            raise ValueError(f"{path} is empty") from None
        rows = []
        for line_no, row in enumerate(reader, start=2):
            if not row:
                continue
            if len(row) != len(header):
                raise ValueError(
                    f"{path.name}, line {line_no}: {len(row)} fields, expected {len(header)}"
                )
            rows.append((line_no, row))
    if not rows:
        raise ValueError(f"{path} has no data rows")
    return header, rows


def _rows(count: int) -> str:
    return f"{count} row{'s' if count != 1 else ''}"


def _numeric_columns(name: str, header, rows, columns: list[int]) -> np.ndarray:
    """The float matrix of ``columns``; raise naming each column with missing or text cells.

    The whole file is read first, so that the error counts the affected rows.
    Missing values are reported before text, as they need a different fix.
    """
    X = np.empty((len(rows), len(columns)))
    missing: dict[int, list[int]] = {}
    text: dict[int, tuple[int, str, int]] = {}
    infinite: dict[int, tuple[int, str]] = {}
    for i, (line_no, row) in enumerate(rows):
        for k, j in enumerate(columns):
            cell = row[j].strip()
            if cell.lower() in MISSING_CELLS:
                missing.setdefault(j, []).append(line_no)
                continue
            try:
                value = float(cell)
            except ValueError:
                first = text.get(j)
                text[j] = (first[0], first[1], first[2] + 1) if first else (line_no, cell, 1)
                continue
            if not math.isfinite(value):
                infinite.setdefault(j, (line_no, cell))
            X[i, k] = value
    if missing:
        parts = [
            f"column {header[j]!r} ({_rows(len(lines))}, first on line {lines[0]})"
            for j, lines in missing.items()
        ]
        raise ValueError(
            f"{name} has missing values (empty or NA cells) in {'; '.join(parts)}. dpconvex "
            "does not fill them in: drop those rows or impute the values first"
        )
    if text:
        parts = [
            f"column {header[j]!r} holds text ({cell!r} on line {line}, {_rows(n)} in all)"
            for j, (line, cell, n) in text.items()
        ]
        raise ValueError(
            f"{name}: {'; '.join(parts)}. Feature columns must be numbers: encode categorical "
            "columns first (e.g. one column of 0/1 per category, with the categories chosen "
            "without looking at the data)"
        )
    if infinite:
        parts = [
            f"column {header[j]!r} is {cell!r} on line {line}"
            for j, (line, cell) in infinite.items()
        ]
        raise ValueError(f"{name}: {'; '.join(parts)}; feature values must be finite")
    return X


def load_csv(path: str | Path, target: str) -> Dataset:
    """Read a CSV file with a header row; ``target`` names the label column.

    Feature columns must be numeric (no category levels are read off the data:
    which levels occur is itself information about the records). Missing values
    (empty, NA, NaN, null, ?) and text are reported with their column, the number
    of affected rows and the first line.
    """
    path = Path(path)
    header, rows = _read_csv(path)
    if target not in header:
        raise ValueError(f"target column {target!r} not in {path.name} (columns: {header})")
    t = header.index(target)
    features = [j for j in range(len(header)) if j != t]
    X = _numeric_columns(path.name, header, rows, features)
    return Dataset(
        name=path.stem,
        X=X,
        y=_labels(path.name, target, rows, t),
        feature_names=[header[j] for j in features],
    )


def _labels(name: str, target: str, rows, t: int) -> np.ndarray:
    labels = [row[t].strip() for _, row in rows]
    empty = [
        line
        for (line, _), label in zip(rows, labels, strict=True)
        if label.lower() in MISSING_CELLS
    ]
    if empty:
        raise ValueError(
            f"{name} has missing labels in column {target!r} ({_rows(len(empty))}, first on "
            f"line {empty[0]}); drop those rows before training"
        )
    y = np.array(labels)
    try:
        y = y.astype(float)
    except ValueError:
        pass  # class labels stay strings
    return y


def load_csv_features(
    path: str | Path, feature_names: list[str], target: str | None = None
) -> tuple[np.ndarray, np.ndarray | None]:
    """(X, y) from a CSV file for a trained model: X holds ``feature_names`` in that order.

    Other columns are ignored; y is the ``target`` column, or None without one.
    """
    path = Path(path)
    header, rows = _read_csv(path)
    absent = [f for f in feature_names if f not in header]
    if absent:
        shown = absent[:5] + (["..."] if len(absent) > 5 else [])
        raise ValueError(
            f"{path.name} lacks {len(absent)} of the model's feature columns: {shown} "
            f"(columns of the file: {header[:10]}{' ...' if len(header) > 10 else ''})"
        )
    if target is not None and target not in header:
        raise ValueError(f"target column {target!r} not in {path.name} (columns: {header})")
    X = _numeric_columns(path.name, header, rows, [header.index(f) for f in feature_names])
    y = None if target is None else _labels(path.name, target, rows, header.index(target))
    return X, y


def load_libsvm(path: str | Path) -> Dataset:
    """Read a LIBSVM/svmlight file (labels first, then index:value pairs); X is sparse CSR."""
    from sklearn.datasets import load_svmlight_file

    path = Path(path)
    if not path.is_file():
        raise ValueError(f"no such data file: {path}")
    X, y = load_svmlight_file(str(path))
    return Dataset(
        name=path.stem, X=X.tocsr(), y=y, feature_names=[f"x{i}" for i in range(X.shape[1])]
    )
