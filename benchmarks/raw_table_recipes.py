"""Synthetic raw tables standing in for the two held-out kinds of issue 32.

Every table is drawn from an exact recipe below (no real data, nothing fitted to one
table); each recipe has variants (tail, missing rate, which column carries the signal,
number of rows) and every (variant, seed) pair gives a different table.

* :func:`credit_table` -- a ~1,000-row binary table like a credit-card application file:
  positive heavy-tailed money columns (lognormal or Pareto; monthly spending with many
  exact zeros, yearly income), counts (derogatory reports, active accounts, months at the
  address), yes/no text columns, missing cells ('' or NaN), and one or two informative
  columns. The label is 'yes' for about 77 % of the rows; a non-private logistic
  regression on the encoded columns scores about 0.95-0.98.
* :func:`house_table` -- a ~400-row regression table like house sales: lot size
  (lognormal square feet), bedrooms, bathrooms, stories, garage places and six yes/no
  columns (11 raw columns, 12 with a missing-value indicator), a positive heavy-tailed
  price in dollars (log-linear in the features with lognormal noise); a non-private
  least-squares fit on the encoded columns has R^2 about 0.6.

With each table comes the schema a user would write from public knowledge alone:
types, ``log1p`` for the money columns, 0 as the lower bound of quantities that cannot
be negative, every other bound left to estimate in a generous search range, and for the
price a generous public range. Test rows come from the same recipe and seed (2,000, to
measure the score precisely).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from dpconvex.preprocessing import Categorical, Numeric, Schema

#: Variants of the credit table: (name, settings).
CREDIT_VARIANTS = {
    "lognormal": {"tail": "lognormal", "missing": 0.02, "signal": "spending", "n": 1053},
    "pareto": {"tail": "pareto", "missing": 0.02, "signal": "spending", "n": 1053},
    "two-signals": {"tail": "lognormal", "missing": 0.05, "signal": "both", "n": 1053},
    "small": {"tail": "pareto", "missing": 0.0, "signal": "both", "n": 800},
    "large": {"tail": "lognormal", "missing": 0.05, "signal": "spending", "n": 1300},
}
#: Variants of the house table.
HOUSE_VARIANTS = {
    "base": {"noise": 0.16, "missing": 0.0, "n": 436},
    "noisier": {"noise": 0.19, "missing": 0.02, "n": 436},
    "smaller": {"noise": 0.16, "missing": 0.02, "n": 380},
    "larger": {"noise": 0.18, "missing": 0.0, "n": 500},
}
N_TEST = 2000


@dataclass
class RawTable:
    """Train and test cells (object arrays in schema order), labels, and the schema."""

    name: str
    X_train: np.ndarray
    y_train: np.ndarray
    X_test: np.ndarray
    y_test: np.ndarray
    schema: Schema
    task: str
    y_bounds: tuple | None = None  # a generous public range (regression)
    y_search_range: tuple | None = None


def _heavy(rng, size, tail: str, median: float) -> np.ndarray:
    """Positive heavy-tailed values of the given median: lognormal(sigma 1) or Pareto(1.5)."""
    if tail == "lognormal":
        return median * rng.lognormal(0.0, 1.0, size)
    # Pareto (Lomax) with shape 1.5: median = scale (2^(1/1.5) - 1)
    return median / (2 ** (1 / 1.5) - 1) * rng.pareto(1.5, size)


def _yes_no(rng, p) -> np.ndarray:
    return np.where(rng.random(np.shape(p)) < p, "yes", "no").astype(object)


def _blank(rng, col: np.ndarray, rate: float, marker) -> np.ndarray:
    col = col.astype(object)
    col[rng.random(col.shape[0]) < rate] = marker
    return col


def _credit_cells(rng, n: int, tail: str, missing: float, signal: str):
    card = rng.random(n) < 0.775
    income = _heavy(rng, n, tail, 30_000.0)  # yearly, dollars
    # monthly spending: exactly 0 for almost every refused applicant, heavy-tailed otherwise
    spends = np.where(card, rng.random(n) < 0.97, rng.random(n) < 0.03)
    spending = np.where(spends, _heavy(rng, n, tail, 120.0), 0.0)
    bad = 0.3 if signal == "spending" else 1.5  # reports: derogatory marks
    reports = rng.poisson(np.where(card, 0.2, 0.2 + bad))
    age = np.clip(18 + rng.gamma(4.0, 4.0, n), 18, 90).round(1)
    months = np.round(_heavy(rng, n, "lognormal", 30.0))
    active = rng.negative_binomial(2, 0.2, n)
    dependents = rng.binomial(6, 0.15, n)
    owner = _yes_no(rng, np.where(card, 0.45, 0.35))
    selfemp = _yes_no(rng, np.full(n, 0.07))
    majorcards = _yes_no(rng, np.where(card, 0.85, 0.75))
    cols = [
        reports.astype(float),
        _blank(rng, age, missing, np.nan),
        _blank(rng, income.round(0), missing, ""),
        spending.round(2),
        _blank(rng, owner, missing, ""),
        selfemp,
        dependents.astype(float),
        months,
        majorcards,
        active.astype(float),
    ]
    X = np.empty((n, len(cols)), dtype=object)
    for j, c in enumerate(cols):
        X[:, j] = c
    return X, card.astype(int)


def credit_schema() -> Schema:
    """What a user knows without the data: types, non-negative quantities, money in log."""

    def count(name, top):
        return Numeric(name, (0.0, None), search_range=(0.0, top))

    return Schema(
        (
            count("reports", 1e3),
            Numeric("age", (0.0, None), search_range=(0.0, 150.0)),
            Numeric("income", (0.0, None), search_range=(0.0, 1e8), log="log1p"),
            Numeric("spending", (0.0, None), search_range=(0.0, 1e7), log="log1p"),
            Categorical("owner", ("yes", "no")),
            Categorical("selfemp", ("yes", "no")),
            count("dependents", 100.0),
            count("months", 1e4),
            Categorical("majorcards", ("yes", "no")),
            count("active", 1e3),
        ),
        missing_values=("", "NA"),
    )


def credit_table(variant: str = "lognormal", seed: int = 0) -> RawTable:
    """A credit-card table of the given variant (see :data:`CREDIT_VARIANTS`)."""
    cfg = CREDIT_VARIANTS[variant]
    rng = np.random.default_rng([1, list(CREDIT_VARIANTS).index(variant), seed])
    X, y = _credit_cells(rng, cfg["n"] + N_TEST, cfg["tail"], cfg["missing"], cfg["signal"])
    n = cfg["n"]
    return RawTable(
        f"credit/{variant}", X[:n], y[:n], X[n:], y[n:], credit_schema(), "classification"
    )


def _house_cells(rng, n: int, noise: float, missing: float):
    lot = 5000.0 * rng.lognormal(0.0, 0.4, n)  # square feet
    bedrooms = np.clip(rng.poisson(2.0, n) + 1, 1, 6)
    bathrooms = np.clip(rng.poisson(0.3, n) + 1, 1, 4)
    stories = np.clip(rng.poisson(0.8, n) + 1, 1, 4)
    garage = rng.binomial(3, 0.23, n)
    flags = {
        "driveway": 0.86,
        "recroom": 0.18,
        "basement": 0.35,
        "gasheat": 0.05,
        "aircon": 0.32,
        "preferred": 0.23,
    }
    draws = {k: rng.random(n) < p for k, p in flags.items()}
    effects = {
        "driveway": 0.12,
        "recroom": 0.06,
        "basement": 0.09,
        "gasheat": 0.12,
        "aircon": 0.17,
        "preferred": 0.15,
    }
    log_price = (
        np.log(60_000.0)
        + 0.40 * np.log(lot / 5000.0)
        + 0.04 * (bedrooms - 3)
        + 0.15 * (bathrooms - 1)
        + 0.08 * (stories - 2)
        + 0.05 * garage
        + sum(effects[k] * draws[k] for k in flags)
        - 0.4
        + noise * rng.standard_normal(n)
    )
    price = np.round(np.exp(log_price), -2)
    cols = [
        _blank(rng, lot.round(0), missing, np.nan),
        bedrooms.astype(float),
        bathrooms.astype(float),
        stories.astype(float),
        garage.astype(float),
    ] + [_yes_no(rng, draws[k].astype(float)) for k in flags]
    X = np.empty((n, len(cols)), dtype=object)
    for j, c in enumerate(cols):
        X[:, j] = c
    return X, price


def house_schema() -> Schema:
    """Lot size in log with both ends estimated (a declared 0 would waste the scale
    after the log), counts with the ranges anyone knows of a house, yes/no columns."""
    yes_no = ("driveway", "recroom", "basement", "gasheat", "aircon", "preferred")
    return Schema(
        (
            Numeric("lotsize", (None, None), search_range=(0.0, 1e7), log="log1p"),
            Numeric("bedrooms", (0.0, 10.0)),
            Numeric("bathrooms", (0.0, 6.0)),
            Numeric("stories", (0.0, 5.0)),
            Numeric("garage", (0.0, 5.0)),
        )
        + tuple(Categorical(k, ("yes", "no")) for k in yes_no),
        missing_values=("", "NA"),
    )


#: A generous public range for a house price in dollars (what a user knows without data).
HOUSE_PRICE_RANGE = (0.0, 1e7)


def house_table(variant: str = "base", seed: int = 0) -> RawTable:
    """A house-price table of the given variant (see :data:`HOUSE_VARIANTS`)."""
    cfg = HOUSE_VARIANTS[variant]
    rng = np.random.default_rng([2, list(HOUSE_VARIANTS).index(variant), seed])
    X, y = _house_cells(rng, cfg["n"] + N_TEST, cfg["noise"], cfg["missing"])
    n = cfg["n"]
    return RawTable(
        f"house/{variant}",
        X[:n],
        y[:n],
        X[n:],
        y[n:],
        house_schema(),
        "regression",
        y_bounds=None,
        y_search_range=HOUSE_PRICE_RANGE,
    )


def declared_schema(table: RawTable) -> Schema:
    """The same schema with every estimated bound replaced by the training rows' own
    min/max (non-private: the 'bounds known exactly' reference)."""
    from dpconvex.preprocessing.columns import numeric_cells

    markers = frozenset(table.schema.missing_values)
    cols = []
    for j, col in enumerate(table.schema.columns):
        if isinstance(col, Numeric) and any(col.estimated):
            values = numeric_cells(table.X_train[:, j], col, markers)
            values = values[~np.isnan(values)]
            lo, hi = col.bounds
            lo = float(values.min()) if lo is None else lo
            hi = float(values.max()) if hi is None else hi
            if hi <= lo:
                hi = lo + 1.0
            col = Numeric(col.name, (lo, hi), log=col.log, shift=col.shift, missing=col.missing)
        cols.append(col)
    return Schema(tuple(cols), missing_values=table.schema.missing_values)
