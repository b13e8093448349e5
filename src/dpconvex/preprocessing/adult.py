"""UCI Adult's raw columns through a public schema (category lists from adult.names).

:func:`adult_schema` declares every column from public knowledge only: the category
lists of the UCI documentation (adult.names, held by :mod:`dpconvex.datasets.adult`),
0 as the lower bound of quantities that cannot be negative, the top codes of the UCI
schema as upper bounds (age 90, hours-per-week 99; education-num counts the 16 levels
of education), never a minimum or maximum read from the rows; and for the money
columns and fnlwgt a declared lower bound of 0 and an upper bound either declared (the
UCI maxima 99999, 4356, 1490400) or left to estimate privately in a generous range.

They are scaled linearly by default, as in the library's fixed Adult features
(:func:`dpconvex.datasets.load_adult` divides them by the same maxima), which this
schema path reproduces. ``log_money=True`` takes log1p of the three instead (the
recipe for positive heavy-tailed columns in general); on Adult it costs accuracy,
because the informative split in capital gains is between large gains and the rest
(small gains, mostly below 50K incomes, land next to the large ones after a log):
non-private logistic regression trained on two thirds of adult.data and scored on the
other third, 83.91 % with log1p against 84.57 % linear.
:func:`load_adult_raw` returns the bundled rows as cells (text and numbers as in the
files, '?' kept, so the schema's missing-value policy applies) and the labels.
"""

from __future__ import annotations

import gzip
from importlib import resources

import numpy as np

from ..datasets import adult as _adult
from .schema import Categorical, Numeric, Schema

#: Search ranges (original units) for the Adult columns left to estimate privately.
_ADULT_SEARCH = {
    "fnlwgt": (0.0, 1e8),
    "capital-gain": (0.0, 1e7),
    "capital-loss": (0.0, 1e7),
}
#: Declared bounds: 0 for quantities that cannot be negative, the top codes of the UCI
#: schema (age 90, hours 99), and education-num's 16 documented levels (1 to 16).
_ADULT_BOUNDS = {"age": (0.0, 90.0), "education-num": (1.0, 16.0), "hours-per-week": (0.0, 99.0)}
_ADULT_MAX = {"fnlwgt": 1490400.0, "capital-gain": 99999.0, "capital-loss": 4356.0}


def adult_schema(estimate: bool = False, log_money: bool = False) -> Schema:
    """The public schema of Adult's 14 raw columns.

    ``estimate=False``: every bound declared (the UCI maxima; costs no epsilon).
    ``estimate=True``: the upper bounds of fnlwgt, capital-gain and capital-loss are
    estimated privately (3 quantile mechanisms) in the ranges of ``_ADULT_SEARCH``.
    ``log_money``: log1p of those three columns (default: linear, see the module doc).
    """
    log = "log1p" if log_money else None
    columns = []
    for name in _adult.COLUMNS:
        if name in _adult.CATEGORIES:
            columns.append(Categorical(name, tuple(_adult.CATEGORIES[name])))
        elif name in _ADULT_BOUNDS:
            columns.append(Numeric(name, bounds=_ADULT_BOUNDS[name]))
        elif estimate:
            columns.append(
                Numeric(name, (0.0, None), search_range=_ADULT_SEARCH[name], log=log)
            )
        else:
            columns.append(Numeric(name, (0.0, _ADULT_MAX[name]), log=log))
    return Schema(tuple(columns), missing_values=("?",))


def _raw(name: str, skip: int) -> list[list[str]]:
    with resources.files(_adult.__package__).joinpath("data", name).open("rb") as raw:
        text = gzip.decompress(raw.read()).decode("ascii")
    return [
        fields
        for line in text.splitlines()[skip:]
        if len(fields := [f.strip() for f in line.split(",")]) == 15
    ]


def load_adult_raw(complete: bool = True) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(X, y, is_test): the bundled rows as an object array of cells in schema order.

    ``complete=True`` keeps the 45,222 rows without '?' (the rows of
    :func:`dpconvex.datasets.load_adult`, in the same order); ``False`` keeps all
    48,842, whose '?' cells the schema reads as missing. ``is_test`` marks adult.test.
    """
    train, test = _raw("adult.data.gz", 0), _raw("adult.test.gz", 1)
    rows = train + test
    is_test = np.arange(len(rows)) >= len(train)
    if complete:
        keep = np.array(["?" not in r for r in rows])
        rows = [r for r, k in zip(rows, keep, strict=True) if k]
        is_test = is_test[keep]
    cells = np.array(rows, dtype=object).reshape(len(rows), 15)
    X = cells[:, :14].copy()
    for j, name in enumerate(_adult.COLUMNS):
        if name not in _adult.CATEGORIES:  # numbers as numbers ('?' stays text)
            X[:, j] = [x if x == "?" else float(x) for x in X[:, j]]
    y = np.char.startswith(cells[:, 14].astype(str), ">50K").astype(int)
    return X, y, is_test
