"""A declared public schema: how each raw column becomes features in [-1, 1].

A schema is written without looking at the data. Per column:

* ``Numeric(name, bounds=(lo, hi))``: public bounds in the column's own units; a bound
  given as ``None`` is estimated privately (a DP quantile, which costs epsilon) inside
  the public coarse ``search_range``. Choose that range from what you know without the
  data (units, the kind of quantity, a guess of its magnitude): it must contain the
  bulk of the values, and the estimate gets worse slowly (logarithmically) as the range
  grows, so prefer a generous range to one that may cut the data, e.g. [0, 1e7] for
  yearly incomes in dollars rather than [0, 1e5]. ``log="log1p"`` (values > -1) or
  ``log="log"`` with ``shift`` (values > -shift) for positive heavy-tailed columns:
  bounds and range stay in the column's own units, and clipping, estimation and
  scaling act on the logged value. Values outside the log's domain count as the
  lower bound.
* ``Categorical(name, categories=[...])``: one 0/1 column per declared category, plus
  an ``<other>`` column for any value not declared (never refused, never shown).
* ``missing``: ``"indicator"`` (default) fills a missing numeric value with the centre
  of its scaled range (0) and adds a 0/1 column saying it was missing (for categories:
  a ``<missing>`` column in the group); ``"refuse"`` raises an error naming the column.
  The default never fails on the data, so the output's columns and whether a fit
  succeeds depend on the schema alone; a refusal tells whoever sees it that the column
  has a missing value, which no epsilon prices.

:func:`schema_from_dict` reads the JSON form ``{"columns": [{"name": ..., "type":
"numeric" | "categorical", ...}, ...], "missing_values": ["", "?"]}``, bounded in size
and validated key by key (schema files may be hostile); :meth:`Schema.to_dict` writes it.
"""

from __future__ import annotations

import json
import math
import os
import re
from dataclasses import dataclass, field

#: Most columns a schema may declare.
MAX_COLUMNS = 10_000
#: Most categories one categorical column may declare.
MAX_CATEGORIES = 10_000
#: Most output features (columns after one-hot encoding and indicators).
MAX_FEATURES = 100_000
#: Longest column name, category or missing marker.
MAX_NAME_LENGTH = 200
#: Largest |value| of a declared bound or search range (keeps hi - lo finite in float64).
MAX_ABS_BOUND = 1e15
#: Largest schema file read, in bytes.
MAX_SCHEMA_BYTES = 4_000_000
#: Missing-value markers when a schema does not declare them (after stripping blanks).
DEFAULT_MISSING_VALUES = ("", "NA", "N/A", "NaN", "nan", "null", "None")

LOGS = (None, "log1p", "log")
MISSING_POLICIES = ("indicator", "refuse")
OTHER = "<other>"
MISSING = "<missing>"
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")


class SchemaError(ValueError):
    """A schema that cannot be used: one line naming the column and the key to fix."""


def _text(what: str, value: object) -> str:
    if not isinstance(value, str):
        raise SchemaError(f"{what} must be a string, got {type(value).__name__}")
    if len(value) > MAX_NAME_LENGTH or _CONTROL.search(value):
        raise SchemaError(
            f"{what} must have at most {MAX_NAME_LENGTH} characters and no control characters"
        )
    return value


def _number(what: str, value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise SchemaError(f"{what} must be a number, got {type(value).__name__}")
    try:
        value = float(value)
    except OverflowError:  # an integer beyond float64
        value = math.inf
    if not math.isfinite(value) or abs(value) > MAX_ABS_BOUND:
        raise SchemaError(f"{what} must be a finite number of magnitude <= {MAX_ABS_BOUND:g}")
    return value


def _pair(what: str, value: object, allow_none: bool) -> tuple:
    if not isinstance(value, list | tuple) or len(value) != 2:
        raise SchemaError(f"{what} must be a pair [low, high]")
    out = tuple(
        None if (allow_none and x is None) else _number(f"{what}[{i}]", x)
        for i, x in enumerate(value)
    )
    if out[0] is not None and out[1] is not None and not out[0] < out[1]:
        raise SchemaError(f"{what} needs low < high")
    return out


def _policy(what: str, value: object) -> str:
    if value not in MISSING_POLICIES:
        raise SchemaError(f"{what} must be one of {list(MISSING_POLICIES)}")
    return value


@dataclass(frozen=True)
class Numeric:
    """A numeric column: public ``bounds`` (``None`` ends estimated in ``search_range``)."""

    name: str
    bounds: tuple = (None, None)
    search_range: tuple | None = None
    log: str | None = None
    shift: float = 0.0
    missing: str = "indicator"

    def __post_init__(self) -> None:
        what = f"column {self.name!r}"
        _text("a column name", self.name)
        object.__setattr__(self, "bounds", _pair(f"{what}: bounds", self.bounds, True))
        if self.log not in LOGS:
            raise SchemaError(f"{what}: log must be one of {list(LOGS)}")
        object.__setattr__(self, "shift", _number(f"{what}: shift", self.shift))
        if self.shift != 0.0 and self.log != "log":
            raise SchemaError(f"{what}: shift applies only with log='log'")
        _policy(f"{what}: missing", self.missing)
        if any(self.estimated):
            if self.search_range is None:
                raise SchemaError(
                    f"{what}: a bound left to estimate privately needs a public search_range "
                    "[low, high] (a generous range known without the data)"
                )
            rng = _pair(f"{what}: search_range", self.search_range, False)
            object.__setattr__(self, "search_range", rng)
        elif self.search_range is not None:
            raise SchemaError(f"{what}: search_range is only used when a bound is estimated")
        for key, pair in (("bounds", self.bounds), ("search_range", self.search_range)):
            for x in pair or ():
                if x is not None and not self._in_domain(x):
                    raise SchemaError(f"{what}: {key} must lie where {self.log} is defined")
        low, high = self.logged_range()
        if not (math.isfinite(low) and math.isfinite(high) and low < high):
            raise SchemaError(f"{what}: the bounds collapse after {self.log}; widen them")

    @property
    def estimated(self) -> tuple[bool, bool]:
        """Which ends (low, high) are estimated privately."""
        return tuple(b is None for b in self.bounds)

    def _in_domain(self, x: float) -> bool:
        if self.log == "log1p":
            return x > -1.0
        if self.log == "log":
            return x + self.shift > 0.0
        return True

    def forward(self, x):
        """The column's transform (identity, log1p or log(x + shift)); out of domain -> -inf."""
        import numpy as np

        x = np.asarray(x, dtype=np.float64)
        if self.log is None:
            return x
        arg = x + 1.0 if self.log == "log1p" else x + self.shift
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.where(arg > 0, np.log(np.where(arg > 0, arg, 1.0)), -np.inf)

    def logged_range(self) -> tuple[float, float]:
        """(low, high) of the declared ends, else of the search range, after the transform."""
        lo, hi = self.bounds
        a, b = self.search_range or (None, None)
        ends = (a if lo is None else lo, b if hi is None else hi)
        return tuple(float(self.forward(x)) for x in ends)

    def to_dict(self) -> dict:
        out = {"name": self.name, "type": "numeric", "bounds": list(self.bounds)}
        if self.search_range is not None:
            out["search_range"] = list(self.search_range)
        if self.log is not None:
            out["log"] = self.log
        if self.shift:
            out["shift"] = self.shift
        out["missing"] = self.missing
        return out


@dataclass(frozen=True)
class Categorical:
    """A categorical column: the declared ``categories``, then ``<other>`` (if ``other``)."""

    name: str
    categories: tuple = field(default_factory=tuple)
    other: bool = True
    missing: str = "indicator"

    def __post_init__(self) -> None:
        what = f"column {self.name!r}"
        _text("a column name", self.name)
        cats = self.categories
        if not isinstance(cats, list | tuple) or not 1 <= len(cats) <= MAX_CATEGORIES:
            raise SchemaError(f"{what}: categories must be a list of 1 to {MAX_CATEGORIES}")
        cats = tuple(category_key(_category(what, c)) for c in cats)
        if len(set(cats)) != len(cats):
            raise SchemaError(f"{what}: categories are declared twice")
        if OTHER in cats or MISSING in cats:
            raise SchemaError(f"{what}: {OTHER} and {MISSING} are reserved names")
        object.__setattr__(self, "categories", cats)
        if not isinstance(self.other, bool):
            raise SchemaError(f"{what}: other must be true or false")
        _policy(f"{what}: missing", self.missing)

    @property
    def levels(self) -> tuple[str, ...]:
        """The output columns of the group, in order."""
        extra = ((OTHER,) if self.other else ()) + (
            (MISSING,) if self.missing == "indicator" else ()
        )
        return self.categories + extra

    def to_dict(self) -> dict:
        return {
            "name": self.name,
            "type": "categorical",
            "categories": list(self.categories),
            "other": self.other,
            "missing": self.missing,
        }


def _category(what: str, value: object) -> object:
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        raise SchemaError(f"{what}: categories must be strings or numbers")
    if isinstance(value, str):
        _text(f"{what}: a category", value)
    elif not math.isfinite(value):
        raise SchemaError(f"{what}: categories must be finite numbers or strings")
    return value


def category_key(value: object) -> str:
    """The text a cell or a declared category is matched by (stripped; 3.0 -> '3')."""
    if isinstance(value, str):
        return value.strip()
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


@dataclass(frozen=True)
class Schema:
    """The declared columns, in order, and the markers read as missing values."""

    columns: tuple
    missing_values: tuple = DEFAULT_MISSING_VALUES

    def __post_init__(self) -> None:
        cols = self.columns
        if not isinstance(cols, list | tuple) or not 1 <= len(cols) <= MAX_COLUMNS:
            raise SchemaError(f"a schema declares 1 to {MAX_COLUMNS} columns")
        if not all(isinstance(c, Numeric | Categorical) for c in cols):
            raise SchemaError("schema columns must be Numeric or Categorical")
        names = [c.name for c in cols]
        if len(set(names)) != len(names):
            raise SchemaError("a column is declared twice")
        object.__setattr__(self, "columns", tuple(cols))
        markers = self.missing_values
        if not isinstance(markers, list | tuple) or len(markers) > 100:
            raise SchemaError("missing_values must be a list of at most 100 strings")
        markers = tuple(_text("a missing-value marker", m).strip() for m in markers)
        object.__setattr__(self, "missing_values", markers)
        if self.n_features > MAX_FEATURES:
            raise SchemaError(f"the schema makes more than {MAX_FEATURES} features")
        names = self.feature_names()
        if len(set(names)) != len(names):
            raise SchemaError("two output features get the same name; rename a column")

    @property
    def n_features(self) -> int:
        return sum(_width(c) for c in self.columns)

    @property
    def n_estimated(self) -> int:
        """How many bounds are estimated privately (each one quantile mechanism)."""
        return sum(sum(c.estimated) for c in self.columns if isinstance(c, Numeric))

    def row_bound(self) -> float:
        """sqrt(#numeric + #categorical groups): the largest norm an output row can have.

        A numeric value is in [-1, 1] and its missing indicator is 1 only when the value is
        the fill 0, so the pair adds at most 1 to the squared norm; a one-hot group adds
        at most 1. The bound is attained by a row with every numeric value at a bound and
        every category declared. (Summing squares <= 1 in float64 never rounds above
        their count, so computed norms never exceed it either.)
        """
        return math.sqrt(len(self.columns))

    def feature_names(self) -> list[str]:
        names: list[str] = []
        for c in self.columns:
            if isinstance(c, Numeric):
                names.append(c.name)
                if c.missing == "indicator":
                    names.append(f"{c.name}={MISSING}")
            else:
                names.extend(f"{c.name}={level}" for level in c.levels)
        return names

    def to_dict(self) -> dict:
        return {
            "columns": [c.to_dict() for c in self.columns],
            "missing_values": list(self.missing_values),
        }


def _width(c) -> int:
    if isinstance(c, Numeric):
        return 1 + int(c.missing == "indicator")
    return len(c.levels)


_NUMERIC_KEYS = {"name", "type", "bounds", "search_range", "log", "shift", "missing"}
_CATEGORICAL_KEYS = {"name", "type", "categories", "other", "missing"}


def _column_from_dict(i: int, entry: object):
    if not isinstance(entry, dict):
        raise SchemaError(f"columns[{i}] must be an object with a name and a type")
    kind = entry.get("type")
    keys = {"numeric": _NUMERIC_KEYS, "categorical": _CATEGORICAL_KEYS}.get(kind)
    if keys is None:
        raise SchemaError(f"columns[{i}]: type must be 'numeric' or 'categorical'")
    unknown = [k for k in entry if k not in keys]
    if unknown:
        shown = ", ".join(repr(str(k)[:40]) for k in unknown[:5])
        raise SchemaError(f"columns[{i}]: unknown key(s) {shown}; allowed: {sorted(keys)}")
    if "name" not in entry:
        raise SchemaError(f"columns[{i}] needs a name")
    kwargs = {k: val for k, val in entry.items() if k != "type"}
    if kind == "numeric":
        return Numeric(**kwargs)
    if "categories" not in kwargs:
        raise SchemaError(f"columns[{i}] ({kind}) needs its list of categories")
    return Categorical(**kwargs)


def schema_from_dict(spec: object) -> Schema:
    """A :class:`Schema` from its JSON-ready form; :class:`SchemaError` names what to fix."""
    if isinstance(spec, Schema):
        return spec
    if not isinstance(spec, dict):
        raise SchemaError("a schema is an object {'columns': [...]} or a Schema")
    unknown = [k for k in spec if k not in ("columns", "missing_values")]
    if unknown:
        raise SchemaError("a schema has only the keys 'columns' and 'missing_values'")
    columns = spec.get("columns")
    if not isinstance(columns, list) or not 1 <= len(columns) <= MAX_COLUMNS:
        raise SchemaError(f"'columns' must be a list of 1 to {MAX_COLUMNS} columns")
    parsed = tuple(_column_from_dict(i, c) for i, c in enumerate(columns))
    markers = spec.get("missing_values", DEFAULT_MISSING_VALUES)
    return Schema(parsed, markers)


def load_schema(path: str | os.PathLike) -> Schema:
    """Read a JSON schema file (at most :data:`MAX_SCHEMA_BYTES`); errors name the file."""
    path = os.fspath(path)
    try:
        if not os.path.isfile(path):
            raise SchemaError("not a regular file")
        with open(path, "rb") as f:
            raw = f.read(MAX_SCHEMA_BYTES + 1)
        if len(raw) > MAX_SCHEMA_BYTES:
            raise SchemaError(f"larger than {MAX_SCHEMA_BYTES} bytes")
        try:
            spec = json.loads(raw.decode("utf-8"), parse_constant=_no_constant)
        except RecursionError:
            raise SchemaError("nested too deeply") from None
        except ValueError as e:  # bad UTF-8 or JSON, integers of more than 4300 digits
            if isinstance(e, SchemaError):
                raise
            raise SchemaError(f"not valid UTF-8 JSON ({type(e).__name__})") from None
        return schema_from_dict(spec)
    except SchemaError as e:
        raise SchemaError(f"schema file {path!r}: {e}") from None
    except OSError as e:
        raise SchemaError(f"schema file {path!r}: cannot be read ({e.strerror})") from None


def _no_constant(name: str):
    raise SchemaError(f"{name} is not a number a schema may hold")
