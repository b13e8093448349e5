"""``dpconvex predict --dask``: predictions for a table larger than memory, a partition at a time.

The file is read by :func:`dpconvex.scale.data.read_frame` (the reader of
``dpconvex fit --dask --schema``), only the model's columns and the target. Each
partition is read, checked and predicted where it is, by the model in memory, as the
in-memory path predicts a whole file: a model with a schema gets the raw cells, which
its encoder parses; a model without one gets its numeric feature columns by name. The
predictions are appended to the output file in row order, a few partitions at a time,
and the scores come from sums over the partitions (the target's spread by the pairwise
update of Chan, Golub & LeVeque 1983, "Algorithms for computing the sample variance"),
so memory is bounded by a few partitions, never the whole file. Prediction uses only
the released model: it costs no privacy.
"""

from __future__ import annotations

import math
import os
import tempfile
from pathlib import Path

import numpy as np

from .._arrays import jsonable

#: partitions read and predicted at once (memory: about this many partitions)
WINDOW = 4
#: bytes of CSV text per partition (a Parquet file is one partition)
BLOCKSIZE = 16 * 2**20


def predict_out_of_core(
    model,
    names: list[str],
    data: str,
    target: str | None,
    out: str,
    *,
    schema: bool,
    scheduler: str | None = None,
) -> dict:
    """Write ``model``'s predictions on the table ``data`` to the CSV file ``out`` (one
    column, ``prediction``) partition by partition; {"n_rows", scores with ``target``}."""
    try:
        import dask
    except ImportError:
        raise ValueError('--dask needs the optional extra: pip install "dpconvex[dask]"') from None
    from ..scale.data import read_frame

    final = model[-1] if hasattr(model, "steps") else model
    classes = getattr(final, "classes_", None)
    if target is not None and target in names:
        raise ValueError(f"the target column {target!r} is also a feature column of the model")
    frame = read_frame(data, [*names, *([] if target is None else [target])], blocksize=BLOCKSIZE)
    label = Path(data).name
    if not schema:
        _check_number_kinds(frame, names, label)
    task = _Partition(model, names, target, classes, schema, label)
    with _client(scheduler) as client, _Writer(out) as writer:
        totals = _Totals(regression=classes is None)
        parts = frame.to_delayed()
        for start in range(0, len(parts), WINDOW):
            batch = [dask.delayed(task)(p) for p in parts[start : start + WINDOW]]
            for predictions, stats in dask.compute(*batch, **({} if client else _THREADS)):
                writer.write(predictions)
                totals.add(stats)
        if totals.n == 0:
            raise ValueError(f"{data} has no data rows")
    return totals.summary()


_THREADS = {"scheduler": "threads"}


def _client(scheduler: str | None):
    """A dask.distributed Client to ``scheduler`` (a context), or a null context."""
    import contextlib

    if not scheduler:
        return contextlib.nullcontext(None)
    try:
        from dask.distributed import Client
    except ImportError:
        raise ValueError(
            '--scheduler needs dask.distributed: pip install "dpconvex[dask]"'
        ) from None
    return Client(scheduler)


def _check_number_kinds(frame, names: list[str], label: str) -> None:
    """Without a schema, a Parquet text column is refused before anything is read."""
    for name in names:
        if str(frame[name].dtype) == "category":
            raise _not_a_number(label, name)


def _not_a_number(label: str, name: str) -> ValueError:
    return ValueError(
        f"{label}: column {name!r} has a missing, non-numeric or non-finite value; give a "
        "schema (--schema) for text and missing values"
    )


class _Partition:
    """One partition -> (predictions, score sums): the model's input read as in memory."""

    def __init__(self, model, names, target, classes, schema: bool, label: str):
        self.model, self.names, self.target = model, list(names), target
        self.classes, self.schema, self.label = classes, schema, label

    def __call__(self, part) -> tuple[np.ndarray, tuple]:
        if len(part) == 0:  # a CSV block where no line starts
            return np.empty(0), ()
        rows = part[self.names] if self.schema else _numbers(part, self.names, self.label)
        predicted = self.model.predict(rows)
        if self.target is None:
            return predicted, (len(predicted),)
        if self.classes is None:
            truth = _regression_targets(part[self.target], self.target, self.label)
            residual = float(np.sum((truth - predicted) ** 2))
            mean = float(np.mean(truth))
            spread = float(np.sum((truth - mean) ** 2))
            return predicted, (len(truth), residual, mean, spread)
        truth = _class_labels(part[self.target], self.target, self.label, self.classes)
        return predicted, (len(truth), int(np.sum(predicted == truth)))


def _cells(column) -> list[str]:
    """A text column's cells, stripped (a missing Parquet cell as the empty text)."""
    return ["" if not isinstance(c, str) else c.strip() for c in column.to_numpy(dtype=object)]


def _numbers(part, names: list[str], label: str) -> np.ndarray:
    """The numeric feature columns of a partition as a float matrix, refused as in memory
    (missing, text, digits other than 0-9, infinite), naming the column, never the cell."""
    from ..datasets.files import MISSING_CELLS, _number

    X = np.empty((len(part), len(names)))
    for j, name in enumerate(names):
        column = part[name]
        if column.dtype.kind == "f":  # Parquet numbers (NaN where missing)
            X[:, j] = column.to_numpy()
            if not np.all(np.isfinite(X[:, j])):
                raise _not_a_number(label, name)
            continue
        for i, cell in enumerate(_cells(column)):
            value = None if cell.lower() in MISSING_CELLS else _number(cell)
            if value is None or not math.isfinite(value):
                raise ValueError(f"{label}: {_problem(cell, name)}")
            X[i, j] = value
    return X


def _problem(cell: str, name: str) -> str:
    """What is wrong with a feature cell, in the in-memory reader's words (without it)."""
    from ..datasets.files import MISSING_CELLS, _foreign_number, _number

    if cell.lower() in MISSING_CELLS:
        return (
            f"missing values (empty or NA cells) in column {name!r}. Without a schema "
            "dpconvex does not fill them in: declare the columns in a schema (--schema), or "
            "drop those rows"
        )
    if _foreign_number(cell):
        return f"numbers written with digits other than 0-9 in column {name!r}"
    if _number(cell) is None:
        return (
            f"column {name!r} holds text. Without a schema, feature columns must be numbers: "
            "declare text columns as categorical in a schema (--schema), or encode them first"
        )
    return f"column {name!r} holds an infinite value; feature values must be finite"


def _regression_targets(column, target: str, label: str) -> np.ndarray:
    """Finite numbers, as the in-memory path reads a regression target."""
    from ..datasets.files import MISSING_CELLS, _number

    if column.dtype.kind == "f":
        values = column.to_numpy(dtype=np.float64)
        if np.isnan(values).any():
            raise ValueError(f"{label} has a missing target in column {target!r}; drop those rows")
    else:
        cells = _cells(column)
        if any(c.lower() in MISSING_CELLS for c in cells):
            raise ValueError(f"{label} has a missing target in column {target!r}; drop those rows")
        values = np.array([_number(c) for c in cells], dtype=np.float64)  # None -> NaN
    if not np.all(np.isfinite(values)):
        raise ValueError(
            f"{label}: the target in column {target!r} holds a value that is not a finite "
            "number written with the digits 0-9; a regression target must be numbers"
        )
    return values


def _class_labels(column, target: str, label: str, classes) -> np.ndarray:
    """The labels of a partition (numbers for a model with numeric classes, else text),
    refused when missing or outside the model's classes."""
    from ..datasets.files import MISSING_CELLS, _number

    if column.dtype.kind == "f":
        values = column.to_numpy(dtype=np.float64)
        missing = bool(np.isnan(values).any())
    else:
        cells = _cells(column)
        missing = any(c.lower() in MISSING_CELLS for c in cells)
        numeric = np.asarray(classes).dtype.kind in "biuf"
        values = np.array([_number(c) for c in cells] if numeric else cells, dtype=object)
    if missing:
        raise ValueError(f"{label} has missing labels in column {target!r}; drop those rows")
    check_target_classes(values, classes, label, target)
    return values


def check_target_classes(y, classes, label: str, target: str) -> None:
    """Refuse labels outside the model's (public) classes, naming them, never a label."""
    try:
        inside = np.isin(np.asarray(y), np.asarray(classes))
    except TypeError:
        inside = np.zeros(np.shape(y), dtype=bool)
    if not np.all(inside):
        shown = [jsonable(c) for c in classes]
        raise ValueError(
            f"{label}: the target column {target!r} holds labels outside the model's classes "
            f"{shown}; keep only the rows with one of these labels to score the model (or "
            "leave out --target)"
        )


class _Totals:
    """Sums over partitions: rows, correct predictions or (residual, mean, spread)."""

    def __init__(self, regression: bool):
        self.regression = regression
        self.n, self.correct, self.residual, self.mean, self.spread = 0, 0, 0.0, 0.0, 0.0
        self.scored = False

    def add(self, stats: tuple) -> None:
        if not stats:
            return
        if len(stats) == 1:
            self.n += stats[0]
            return
        self.scored = True
        if not self.regression:
            self.n, self.correct = self.n + stats[0], self.correct + stats[1]
            return
        k, residual, mean, spread = stats
        total = self.n + k
        delta = mean - self.mean  # Chan, Golub & LeVeque's pairwise update
        self.spread += spread + delta * delta * self.n * k / total
        self.mean += delta * k / total
        self.residual += residual
        self.n = total

    def summary(self) -> dict:
        out: dict = {"n_rows": self.n}
        if not self.scored:
            return out
        if not self.regression:
            return {**out, "accuracy": self.correct / self.n}
        r2 = 1.0 - self.residual / self.spread if self.spread > 0 else float("nan")
        return {**out, "r2": r2, "rmse": float(np.sqrt(self.residual / self.n))}


class _Writer:
    """The predictions CSV, written to a scratch file beside ``out`` and renamed onto it
    only when every partition has been predicted (a refused file leaves no output)."""

    def __init__(self, out: str):
        self.out = Path(out)

    def __enter__(self):
        handle, self.scratch = tempfile.mkstemp(dir=self.out.parent, prefix=".dpconvex-pred-")
        self.handle = os.fdopen(handle, "w")
        self.handle.write("prediction\n")
        return self

    def write(self, predictions) -> None:
        self.handle.write("".join(f"{jsonable(v)}\n" for v in predictions))

    def __exit__(self, kind, error, trace) -> None:
        self.handle.close()
        if kind is None:
            os.replace(self.scratch, self.out)
        else:
            os.unlink(self.scratch)
