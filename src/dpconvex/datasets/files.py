"""Loaders for user files: CSV with a named target column."""

from __future__ import annotations

import csv
import math
from pathlib import Path

import numpy as np

from .base import Dataset


def load_csv(path: str | Path, target: str) -> Dataset:
    """Read a CSV file with a header row; ``target`` names the label column.

    Feature columns must be numeric (no category levels are read off the data:
    which levels occur is itself information about the records). Empty cells
    and non-numeric values are reported with their column and line.
    """
    path = Path(path)
    if not path.is_file():
        raise ValueError(f"no such data file: {path}")
    with path.open(newline="") as handle:
        reader = csv.reader(handle)
        try:
            header = [h.strip() for h in next(reader)]
        except StopIteration:
            raise ValueError(f"{path} is empty") from None
        if target not in header:
            raise ValueError(f"target column {target!r} not in {path.name} (columns: {header})")
        t = header.index(target)
        features, labels = [], []
        for line_no, row in enumerate(reader, start=2):
            if not row:
                continue
            if len(row) != len(header):
                raise ValueError(
                    f"{path.name}, line {line_no}: {len(row)} fields, expected {len(header)}"
                )
            values = []
            for j, cell in enumerate(row):
                if j == t:
                    continue
                try:
                    value = float(cell)
                except ValueError:
                    raise ValueError(
                        f"{path.name}, line {line_no}: column {header[j]!r} is not numeric "
                        f"({cell!r}); encode categorical columns before training"
                    ) from None
                if not math.isfinite(value):
                    raise ValueError(
                        f"{path.name}, line {line_no}: column {header[j]!r} is {cell!r}"
                    )
                values.append(value)
            features.append(values)
            labels.append(row[t].strip())
    if not labels:
        raise ValueError(f"{path} has no data rows")
    y = np.array(labels)
    try:
        y = y.astype(float)
    except ValueError:
        pass  # class labels stay strings
    names = [h for j, h in enumerate(header) if j != t]
    return Dataset(name=path.stem, X=np.array(features, dtype=float), y=y, feature_names=names)


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
