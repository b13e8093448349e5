"""diffprivlib's own pipeline on the raw-table stand-ins; prints JSON rows (one a line).

Run in the diffprivlib environment (README.md in this folder), then merge:

    python benchmarks/peers/bench_raw_tables_diffprivlib.py --seeds 5 > peers.json
    python benchmarks/bench_raw_tables.py --load peers.json

The same tables (benchmarks/raw_table_recipes.py: every variant, the same seeds) and
the same epsilon totals. diffprivlib is pure epsilon-DP and needs declared bounds for
every column, so it gets what its documentation asks for: the numeric columns in the
same public units as ours (log1p for money columns, missing -> the lower bound, yes -> 1,
anything else -> 0), clipped to public bounds and mapped onto [-1, 1] by those bounds
(a public map, no epsilon: diffprivlib's StandardScaler would spend part of epsilon on
means and variances), then its ``LogisticRegression`` (``data_norm`` = sqrt(d), the
largest row norm there) or ``LinearRegression`` (``bounds_X`` = [-1, 1]^d,
``bounds_y`` = the public price range) at the whole epsilon. The bounds are the
schema's declared ends and, where ours estimates one, the end of the public search
range (diffprivlib's pipeline has no private bound estimate; the data's min/max would
not be private). A second row per table, ``declared``, gives it the training rows'
min/max instead (not private, as ours of the same name).
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_var] = "1"

import argparse  # noqa: E402
import itertools  # noqa: E402
import json  # noqa: E402
import sys  # noqa: E402
import warnings  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402
from diffprivlib.accountant import BudgetAccountant  # noqa: E402
from diffprivlib.models import LinearRegression, LogisticRegression  # noqa: E402
from sklearn.metrics import r2_score  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from raw_table_recipes import (  # noqa: E402
    CREDIT_VARIANTS,
    HOUSE_PRICE_RANGE,
    HOUSE_VARIANTS,
    credit_table,
    declared_schema,
    house_table,
)

from dpconvex.preprocessing import Numeric  # noqa: E402


def public_bounds(schema) -> list[tuple[float, float]]:
    """Per column, the bounds diffprivlib is given: declared ends, else the search range's."""
    out = []
    for col in schema.columns:
        if isinstance(col, Numeric):
            lo, hi = col.bounds
            a, b = col.search_range or (lo, hi)
            lo, hi = (a if lo is None else lo), (b if hi is None else hi)
            out.append((float(col.forward(lo)), float(col.forward(hi))))
        else:
            out.append((0.0, 1.0))
    return out


def matrix(schema, X, bounds) -> np.ndarray:
    """Numbers in the schema's units (after its log), clipped; yes -> 1; missing -> low."""
    out = np.zeros(X.shape, dtype=np.float64)
    for j, col in enumerate(schema.columns):
        lo, hi = bounds[j]
        if isinstance(col, Numeric):
            vals = np.array(
                [
                    float(c)
                    if isinstance(c, float | int) or (isinstance(c, str) and c.strip())
                    else np.nan
                    for c in X[:, j]
                ],
                dtype=np.float64,
            )
            vals = np.where(np.isnan(vals), lo, col.forward(np.nan_to_num(vals, nan=0.0)))
            out[:, j] = np.clip(vals, lo, hi)
        else:
            out[:, j] = np.array([c == "yes" for c in X[:, j]], dtype=np.float64)
    return out


def scaled(X, bounds) -> np.ndarray:
    """The public map of each column's bounds onto [-1, 1] (no data read)."""
    lo = np.array([b[0] for b in bounds])
    hi = np.array([b[1] for b in bounds])
    return 2.0 * (X - lo) / (hi - lo) - 1.0


def fit_score(table, eps: float, seed: int, declared: bool = False) -> float:
    """One fit; ``declared``: bounds (and the target's) from the training rows' min/max,
    not private -- the counterpart of bench_raw_tables.py's ``declared`` recipe."""
    schema = declared_schema(table) if declared else table.schema
    bounds = public_bounds(schema)
    Xtr = scaled(matrix(schema, table.X_train, bounds), bounds)
    Xte = scaled(matrix(schema, table.X_test, bounds), bounds)
    d = Xtr.shape[1]
    acc = BudgetAccountant()
    if table.task == "classification":
        model = LogisticRegression(
            epsilon=eps, data_norm=float(np.sqrt(d)), random_state=seed, accountant=acc
        )
        model.fit(Xtr, table.y_train)
        return float(np.mean(model.predict(Xte) == table.y_test))
    y_range = (
        (float(table.y_train.min()), float(table.y_train.max()))
        if declared
        else (HOUSE_PRICE_RANGE)
    )
    model = LinearRegression(
        epsilon=eps,
        bounds_X=(-np.ones(d), np.ones(d)),
        bounds_y=y_range,
        random_state=seed,
        accountant=acc,
    )
    model.fit(Xtr, table.y_train)
    return float(r2_score(table.y_test, model.predict(Xte)))


def rows(seeds: int) -> list[dict]:
    out = []
    for kind, make, variants, eps_list in (
        ("credit", credit_table, CREDIT_VARIANTS, [1.0]),
        ("house", house_table, HOUSE_VARIANTS, [1.0, 4.0]),
    ):
        for variant in variants:
            tables = [make(variant, s) for s in range(seeds)]
            for eps, declared in itertools.product(eps_list, (False, True)):
                scores = [fit_score(t, eps, s, declared) for s, t in enumerate(tables)]
                out.append(
                    {
                        "table": tables[0].name,
                        "n": len(tables[0].y_train),
                        "metric": "accuracy" if kind == "credit" else "R2",
                        "recipe": "declared" if declared else "public bounds",
                        "library": "diffprivlib",
                        "epsilon": eps,
                        "median": float(np.median(scores)),
                        "scores": [round(x, 4) for x in scores],
                        "methods": ["objpert" if kind == "credit" else "functional"],
                    }
                )
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=5)
    args = parser.parse_args()
    warnings.simplefilter("ignore")
    for row in rows(args.seeds):
        print(json.dumps(row))


if __name__ == "__main__":
    main()
