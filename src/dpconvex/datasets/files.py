"""Loaders for user files: CSV with a named target column, LIBSVM.

A data file may be careless or hostile; each problem is one ValueError naming the file
(and the line and column where there is one): a path that is not a regular file (a FIFO
is never opened: opening it blocks), text that is not UTF-8, a NUL byte, a line longer
than ``MAX_LINE`` bytes, a field longer than the csv module's limit, a header with an
empty or repeated name or more than ``MAX_COLUMNS`` columns, a row with another number
of fields, a class label longer than ``MAX_LABEL`` characters; a LIBSVM file with
feature indices beyond ``MAX_LIBSVM_FEATURES``. Messages name the file, the line and
the column, never a cell's content (a message may be copied into a log or an issue;
the line points the data owner to the cell). A number is what
``float`` reads from ASCII text without digit-group underscores: "١٢٣" (Arabic-Indic
digits) or "１２３" (full-width), which ``float`` accepts, are refused. Memory: the
feature matrix (8 bytes a value), one reference a row to the (shared) label strings,
then the label array; the text of one line at a time.
"""

from __future__ import annotations

import csv
import math
import os
import stat
from array import array
from pathlib import Path

import numpy as np

from .base import Dataset

#: cells read as a missing value (compared after stripping, case-insensitively)
MISSING_CELLS = frozenset({"", "na", "n/a", "nan", "null", "none", "?"})
#: longest line read, in bytes
MAX_LINE = 2**24
#: most columns a header may name
MAX_COLUMNS = 100_000
#: longest class label (labels that are not numbers), in characters
MAX_LABEL = 64
#: most features (the largest index) of a LIBSVM file
MAX_LIBSVM_FEATURES = 2**22
#: distinct cells of one column stored once each by :func:`load_csv_cells`
_MAX_SHARED = 100_000
_BOM = b"\xef\xbb\xbf"


class _Lines:
    """The decoded lines of a binary file, checked one by one; ``number`` counts them."""

    def __init__(self, handle, name: str):
        self.handle, self.name, self.number, self.last = handle, name, 0, ""

    def __iter__(self):
        return self

    def __next__(self) -> str:
        raw = self.handle.readline(MAX_LINE + 1)
        if not raw:
            raise StopIteration
        self.number += 1
        where = f"{self.name}, line {self.number}"
        if len(raw) > MAX_LINE:
            raise ValueError(f"{where} is longer than {MAX_LINE} bytes")
        if self.number == 1 and raw.startswith(_BOM):
            raw = raw[len(_BOM) :]
        if b"\0" in raw:
            raise ValueError(f"{where} holds a NUL byte: not a text (CSV) file")
        try:
            self.last = raw.decode("utf-8")
        except UnicodeDecodeError as error:
            raise ValueError(
                f"{where} is not UTF-8 text (byte {raw[error.start]:#04x} at position "
                f"{error.start}): save the file as UTF-8"
            ) from None
        return self.last


def _open_data(path: Path):
    """``path`` opened for binary reading if it is a regular file (checked before opening:
    a FIFO would block, a device may act)."""
    try:
        info = os.stat(path)
    except FileNotFoundError:
        raise ValueError(f"no such data file: {path}") from None
    except OSError as error:
        raise ValueError(f"cannot read data file {path}: {error.strerror}") from None
    if not stat.S_ISREG(info.st_mode):
        raise ValueError(f"data file {path} is not a regular file")
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except OSError as error:
        raise ValueError(f"cannot read data file {path}: {error.strerror}") from None
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise ValueError(f"data file {path} is not a regular file")
    return os.fdopen(fd, "rb")


def check_header(names: list[str], name: str) -> list[str]:
    """The stripped column names of a CSV header; refuse empty, repeated or too many."""
    header = [h.strip() for h in names]
    if len(header) > MAX_COLUMNS:
        raise ValueError(f"{name} has {len(header)} columns; at most {MAX_COLUMNS} are read")
    empty = [k + 1 for k, h in enumerate(header) if not h]
    if empty:
        raise ValueError(
            f"{name}: column {empty[0]} of the header has no name (a file written with its "
            "row index? write it without the index, or name every column)"
        )
    seen: set[str] = set()
    repeated = [h for h in header if h in seen or seen.add(h)]
    if repeated:
        shown = sorted(set(repeated))[:5]
        raise ValueError(f"{name}: the header names {shown} more than once; name each column once")
    return header


def csv_header(path: str | Path) -> list[str]:
    """The checked header of a CSV file (see :func:`check_header`), reading one line."""
    path = Path(path)
    with _open_data(path) as handle:
        lines = _Lines(handle, path.name)
        try:
            first = next(csv.reader(lines, strict=True), None)
        except csv.Error as error:
            raise ValueError(f"{path.name}, line {lines.number}: {error}") from None
    if not first:
        raise ValueError(f"{path} is empty")
    return check_header(first, path.name)


def _too_long(line: str, header: list[str]) -> str:
    """Which column of ``line`` holds the field the csv module refused (a best guess)."""
    limit = csv.field_size_limit()
    for k, field in enumerate(line.split(",")):
        if len(field) > limit and k < len(header):
            return f"column {header[k]!r}: "
    return ""


class _Table:
    """The rows of a CSV file read into floats as they come, with what went wrong where."""

    def __init__(self, path: Path, wanted, target: str | None):
        self.path, self.name = path, path.name
        self.wanted, self.target = wanted, target
        self.values = array("d")
        self.labels: list[str] = []
        self.label_lines: list[int] = []
        self.missing: dict[int, list[int]] = {}  # column -> [count, first line]
        self.text: dict[int, list] = {}  # column -> [first line, cell, count]
        self.foreign: dict[int, tuple[int, str]] = {}  # non-ASCII digits
        self.infinite: dict[int, tuple[int, str]] = {}
        self.rows = 0

    def read(self) -> list[str]:
        """Read the file; its header."""
        with _open_data(self.path) as handle:
            lines = _Lines(handle, self.name)
            reader = csv.reader(lines, strict=True)
            header: list[str] = []
            try:
                header = self._header(next(reader, None))
                columns, t = self._columns(header)
                for record in reader:
                    if record:
                        self._row(record, len(header), lines.number, columns, t)
            except csv.Error as error:
                raise ValueError(
                    f"{self.name}, line {lines.number}: {_too_long(lines.last, header)}{error}"
                ) from None
        if not self.rows:
            raise ValueError(f"{self.path} has no data rows")
        return header

    def _header(self, record) -> list[str]:
        if not record:
            raise ValueError(f"{self.path} is empty")
        return check_header(record, self.name)

    def _columns(self, header: list[str]) -> tuple[list[int], int | None]:
        absent = [f for f in self.wanted(header) if f not in header]
        if absent:
            shown = absent[:5] + (["..."] if len(absent) > 5 else [])
            raise ValueError(
                f"{self.name} lacks {len(absent)} of the feature columns needed: {shown} "
                f"(columns of the file: {header[:10]}{' ...' if len(header) > 10 else ''})"
            )
        if self.target is not None and self.target not in header:
            raise ValueError(
                f"target column {self.target!r} not in {self.name} (columns: {header})"
            )
        t = None if self.target is None else header.index(self.target)
        return [header.index(f) for f in self.wanted(header)], t

    def _row(self, record, width: int, line: int, columns, t) -> None:
        if len(record) != width:
            raise ValueError(f"{self.name}, line {line}: {len(record)} fields, expected {width}")
        for j in columns:
            self.values.append(self._cell(record[j].strip(), j, line))
        if t is not None:
            label = record[t].strip()
            self.labels.append(label)
            self.label_lines.append(line)
        self.rows += 1

    def _cell(self, cell: str, j: int, line: int) -> float:
        if cell.lower() in MISSING_CELLS:
            entry = self.missing.setdefault(j, [0, line])
            entry[0] += 1
            return 0.0
        value = _number(cell)
        if value is None:
            if _foreign_number(cell):
                self.foreign.setdefault(j, (line, cell))
            else:
                entry = self.text.setdefault(j, [line, cell, 0])
                entry[2] += 1
            return 0.0
        if not math.isfinite(value):
            self.infinite.setdefault(j, (line, cell))
        return value

    def matrix(self, header: list[str]) -> np.ndarray:
        """The feature matrix; raise naming each column with missing, text or bad cells.

        Missing values are reported before text, as they need a different fix.
        """
        name = self.name
        if self.missing:
            parts = [
                f"column {header[j]!r} ({_rows(count)}, first on line {first})"
                for j, (count, first) in self.missing.items()
            ]
            raise ValueError(
                f"{name} has missing values (empty or NA cells) in {'; '.join(parts)}. "
                "Without a schema dpconvex does not fill them in: declare the columns in a "
                "schema (--schema; missing cells then get an indicator column), or drop "
                "those rows"
            )
        if self.foreign:
            parts = [
                f"column {header[j]!r} (first on line {line})"
                for j, (line, _cell) in self.foreign.items()
            ]
            raise ValueError(
                f"{name}: numbers written with digits other than 0-9 in {'; '.join(parts)}; "
                "write them with the ASCII digits 0-9"
            )
        if self.text:
            parts = [
                f"column {header[j]!r} holds text (first on line {line}, {_rows(n)} in all)"
                for j, (line, _cell, n) in self.text.items()
            ]
            raise ValueError(
                f"{name}: {'; '.join(parts)}. Without a schema, feature columns must be "
                "numbers: declare text columns as categorical in a schema (--schema; start "
                "from `dpconvex schema template`), or encode them first"
            )
        if self.infinite:
            parts = [
                f"column {header[j]!r} holds an infinite value (first on line {line})"
                for j, (line, _cell) in self.infinite.items()
            ]
            raise ValueError(f"{name}: {'; '.join(parts)}; feature values must be finite")
        width = len(self.values) // self.rows
        return np.frombuffer(self.values, dtype=np.float64).reshape(self.rows, width).copy()

    def label_array(self) -> np.ndarray:
        return _labels(self.name, self.target, self.labels, self.label_lines)

    def target_array(self, numeric: bool = False) -> np.ndarray:
        """Class labels (numbers if all are, else text), or with ``numeric`` float targets."""
        if not numeric:
            return self.label_array()
        return _numeric_targets(self.name, self.target, self.labels, self.label_lines)


class _CellTable(_Table):
    """The declared columns of a CSV file kept as text cells (for a schema's encoder).

    Repeated cells share one string per column (up to ``_MAX_SHARED`` distinct cells a
    column), so a categorical column costs a reference a row.
    """

    def __init__(self, path: Path, columns: list[str], target: str | None):
        super().__init__(path, lambda header: list(columns), target)
        self.cells: list[str] = []
        self.shared: dict[int, dict[str, str]] = {}

    def _row(self, record, width: int, line: int, columns, t) -> None:
        if len(record) != width:
            raise ValueError(f"{self.name}, line {line}: {len(record)} fields, expected {width}")
        for j in columns:
            cell = record[j]
            pool = self.shared.setdefault(j, {})
            self.cells.append(pool.get(cell, cell))
            if len(pool) < _MAX_SHARED:
                pool.setdefault(cell, cell)
        if t is not None:
            self.labels.append(record[t].strip())
            self.label_lines.append(line)
        self.rows += 1

    def cell_matrix(self, width: int) -> np.ndarray:
        out = np.empty(len(self.cells), dtype=object)
        out[:] = self.cells
        return out.reshape(self.rows, width)


def _number(cell: str) -> float | None:
    """The value of an ASCII decimal number (as ``float`` reads it), else None."""
    if not cell.isascii() or "_" in cell:
        return None
    try:
        return float(cell)
    except ValueError:
        return None


def _foreign_number(cell: str) -> bool:
    """A number ``float`` reads but written with non-ASCII digits or spaces."""
    if cell.isascii() or "_" in cell:
        return False
    try:
        float(cell)
    except ValueError:
        return False
    return True


def _rows(count: int) -> str:
    return f"{count} row{'s' if count != 1 else ''}"


def load_csv(path: str | Path, target: str, *, numeric_target: bool = False) -> Dataset:
    """Read a CSV file with a header row; ``target`` names the label column.

    Feature columns must be numeric (no category levels are read off the data:
    which levels occur is itself information about the records). Missing values
    (empty, NA, NaN, null, ?) and text are reported with their column, the number
    of affected rows and the first line; see the module's docstring for what else is
    refused. With ``numeric_target`` (regression), every target must be a finite number.
    """
    path = Path(path)
    table = _Table(path, lambda header: [h for h in header if h != target], target)
    header = table.read()
    features = [h for h in header if h != target]
    return Dataset(
        name=path.stem,
        X=table.matrix(header),
        y=table.target_array(numeric_target),
        feature_names=features,
    )


def _labels(name: str, target: str, labels: list[str], lines: list[int]) -> np.ndarray:
    """Numbers if every label is one (finite), else the labels as text."""
    empty = [
        line for line, label in zip(lines, labels, strict=True) if label.lower() in MISSING_CELLS
    ]
    if empty:
        raise ValueError(
            f"{name} has missing labels in column {target!r} ({_rows(len(empty))}, first on "
            f"line {empty[0]}); drop those rows before training"
        )
    distinct = {label: None for label in labels}
    values = {label: _number(label) for label in distinct}
    if all(v is not None for v in values.values()):
        bad = [label for label, v in values.items() if not math.isfinite(v)]
        if bad:
            line = lines[labels.index(bad[0])]
            raise ValueError(
                f"{name}: the label in column {target!r} on line {line} is not finite; "
                "labels must be finite"
            )
        return np.array([values[label] for label in labels], dtype=np.float64)
    long = [label for label in distinct if len(label) > MAX_LABEL]
    if long:
        line = lines[labels.index(long[0])]
        raise ValueError(
            f"{name}: the label in column {target!r} on line {line} is longer than "
            f"{MAX_LABEL} characters; class labels must be short names (for a numeric "
            "target, fit a regression: --task regression)"
        )
    codes = {label: k for k, label in enumerate(distinct)}
    index = np.fromiter((codes[label] for label in labels), dtype=np.intp, count=len(labels))
    return np.array(list(distinct))[index]


def _numeric_targets(name: str, target: str, labels: list[str], lines: list[int]) -> np.ndarray:
    """Regression targets: every one a finite number written in ASCII digits."""
    out = np.empty(len(labels))
    for k, (label, line) in enumerate(zip(labels, lines, strict=True)):
        if label.lower() in MISSING_CELLS:
            raise ValueError(
                f"{name} has a missing target in column {target!r} (first on line {line}); "
                "drop the rows without a target before training"
            )
        value = _number(label)
        if value is None or not math.isfinite(value):
            raise ValueError(
                f"{name}: the target in column {target!r} on line {line} is not a finite "
                "number written with the digits 0-9; a regression target must be numbers"
            )
        out[k] = value
    return out


def load_csv_cells(
    path: str | Path,
    columns: list[str],
    target: str | None = None,
    *,
    numeric_target: bool = False,
) -> tuple[np.ndarray, np.ndarray | None]:
    """(cells, y): the named ``columns`` of a CSV file as text cells, in that order.

    For a declared schema's encoder (:class:`dpconvex.preprocessing.TableEncoder`), which
    parses the cells and handles missing values; other columns of the file are ignored.
    ``cells`` is an object array of strings (rows x columns). ``y`` is the ``target``
    column (see :func:`load_csv` for ``numeric_target``), or None without one. The
    file is checked as :func:`load_csv` checks it (see the module docstring).
    """
    path = Path(path)
    columns = list(columns)
    if target is not None and target in columns:
        raise ValueError(f"the target column {target!r} is also declared as a feature column")
    table = _CellTable(path, columns, target)
    table.read()
    cells = table.cell_matrix(len(columns))
    return cells, None if target is None else table.target_array(numeric_target)


def load_csv_features(
    path: str | Path, feature_names: list[str], target: str | None = None
) -> tuple[np.ndarray, np.ndarray | None]:
    """(X, y) from a CSV file for a trained model: X holds ``feature_names`` in that order.

    Other columns are ignored; y is the ``target`` column, or None without one.
    """
    path = Path(path)
    table = _Table(path, lambda header: list(feature_names), target)
    header = table.read()
    X = table.matrix(header)
    return X, None if target is None else table.label_array()


def load_libsvm(path: str | Path) -> Dataset:
    """Read a LIBSVM/svmlight file (labels first, then index:value pairs); X is sparse CSR."""
    from sklearn.datasets import load_svmlight_file

    path = Path(path)
    with _open_data(path) as handle:
        try:
            X, y = load_svmlight_file(handle)
        except (ValueError, TypeError, OverflowError, IndexError) as error:
            raise ValueError(f"{path.name} is not a LIBSVM file ({error})") from None
    if X.shape[1] > MAX_LIBSVM_FEATURES:
        raise ValueError(
            f"{path.name} has feature indices up to {X.shape[1]}; at most "
            f"{MAX_LIBSVM_FEATURES} features are read"
        )
    return Dataset(
        name=path.stem, X=X.tocsr(), y=y, feature_names=[f"x{i}" for i in range(X.shape[1])]
    )
