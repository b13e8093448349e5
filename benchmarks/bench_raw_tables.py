"""From a raw table to a private model: table data x recipe x epsilon (issue 32's table).

    OMP_NUM_THREADS=1 python benchmarks/bench_raw_tables.py [--quick] [--seeds 5]
        [--tables credit house adult] [--load peers.json] [--json rows.json]

Recipes (all at a total epsilon, delta 1e-5, preprocessing included):

* ``default``: :func:`dpconvex.make_table_model` with the schema a user writes from public
  knowledge (bounds left open estimated privately; for the house price a generous public
  ``y_search_range`` in which the target's bounds are estimated).
* ``declared``: the same with every bound (and the target's) declared at the training
  rows' own min/max: not private, the reference for "bounds known".
* ``naive``: the issue's first try: raw units (missing -> 0, yes/no -> 1/0), the
  estimator's defaults (classifiers normalize rows; regression with a symmetric
  ``y_bound`` equal to the top of the public price range).
* ``non-private``: scikit-learn's LogisticRegression / LinearRegression on the
  ``declared`` encoding.

Synthetic tables come from ``benchmarks/raw_table_recipes.py`` (every variant, the given
seeds; the score is the median over seeds); Adult is the bundled raw rows through
``adult_schema`` (train on adult.data, test on adult.test). Peers' rows (JSON lines from
``benchmarks/peers/bench_raw_tables_diffprivlib.py``) are merged with ``--load``.
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import json  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
import warnings  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402
from sklearn.linear_model import LinearRegression, LogisticRegression  # noqa: E402
from sklearn.metrics import r2_score  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))

from raw_table_recipes import (  # noqa: E402
    CREDIT_VARIANTS,
    HOUSE_PRICE_RANGE,
    HOUSE_VARIANTS,
    RawTable,
    credit_table,
    declared_schema,
    house_table,
)

from dpconvex import DPLinearRegression, DPLogisticRegression, make_table_model  # noqa: E402
from dpconvex.preprocessing import Numeric, TableEncoder  # noqa: E402

DELTA = 1e-5


def score(table: RawTable, model, X_test) -> float:
    pred = model.predict(X_test)
    if table.task == "classification":
        return float(np.mean(pred == table.y_test))
    return float(r2_score(table.y_test, pred))


def fit_default(table: RawTable, eps: float, seed: int, **extra):
    kw = {}
    if table.task == "regression":
        kw = {"y_bounds": table.y_bounds, "y_search_range": table.y_search_range}
    kw.update(extra)
    pipe = make_table_model(
        table.schema,
        n_samples=len(table.y_train),
        epsilon=eps,
        delta=DELTA,
        task=table.task,
        random_state=seed,
        **kw,
    )
    pipe.fit(table.X_train, table.y_train)
    assert pipe.epsilon_ <= eps * (1 + 1e-9)
    return score(table, pipe, table.X_test), pipe


def fit_declared(table: RawTable, eps: float, seed: int):
    kw = {}
    if table.task == "regression":
        kw = {"y_bounds": (float(table.y_train.min()), float(table.y_train.max()))}
    pipe = make_table_model(
        declared_schema(table),
        n_samples=len(table.y_train),
        epsilon=eps,
        delta=DELTA,
        task=table.task,
        random_state=seed,
        **kw,
    )
    pipe.fit(table.X_train, table.y_train)
    return score(table, pipe, table.X_test), pipe


def raw_units(table: RawTable, X) -> np.ndarray:
    """The naive matrix: numbers as they are (missing -> 0), yes -> 1, anything else -> 0."""
    out = np.zeros(X.shape, dtype=np.float64)
    for j, col in enumerate(table.schema.columns):
        cells = X[:, j]
        if isinstance(col, Numeric):
            vals = np.array(
                [
                    float(c)
                    if isinstance(c, float | int)
                    or (isinstance(c, str) and c.strip() not in ("", "NA"))
                    else np.nan
                    for c in cells
                ],
                dtype=np.float64,
            )
            out[:, j] = np.nan_to_num(vals, nan=0.0)
        else:
            out[:, j] = np.array([c == "yes" for c in cells], dtype=np.float64)
    return out


def fit_naive(table: RawTable, eps: float, seed: int):
    Xtr, Xte = raw_units(table, table.X_train), raw_units(table, table.X_test)
    if table.task == "classification":
        model = DPLogisticRegression(epsilon=eps, delta=DELTA, random_state=seed)
    else:
        model = DPLinearRegression(
            epsilon=eps, delta=DELTA, y_bound=HOUSE_PRICE_RANGE[1], random_state=seed
        )
    model.fit(Xtr, table.y_train)
    return score(table, model, Xte), model


def fit_nonprivate(table: RawTable):
    enc = TableEncoder(declared_schema(table)).fit(table.X_train)
    est = (
        LogisticRegression(max_iter=5000)
        if table.task == "classification"
        else (LinearRegression())
    )
    est.fit(enc.transform(table.X_train), table.y_train)
    return score(table, est, enc.transform(table.X_test))


def synthetic_rows(kind: str, eps_list, seeds: int, recipes) -> list[dict]:
    make, variants = (
        (credit_table, CREDIT_VARIANTS) if kind == "credit" else (house_table, HOUSE_VARIANTS)
    )
    rows = []
    for variant in variants:
        tables = [make(variant, s) for s in range(seeds)]
        nonpriv = [fit_nonprivate(t) for t in tables]
        rows.append(_row(tables[0], "non-private", None, nonpriv, None))
        for eps in eps_list:
            for recipe in recipes:
                fit = {"default": fit_default, "declared": fit_declared, "naive": fit_naive}[recipe]
                scores, methods = [], set()
                for s, t in enumerate(tables):
                    sc, model = fit(t, eps, s)
                    scores.append(sc)
                    methods.add(_method(model))
                rows.append(_row(tables[0], recipe, eps, scores, sorted(methods)))
    return rows


def _method(model) -> str:
    last = model.steps[-1][1] if hasattr(model, "steps") else model
    return str(getattr(last, "method_", "?"))


def _row(table: RawTable, recipe: str, eps, scores, methods) -> dict:
    return {
        "table": table.name,
        "n": len(table.y_train),
        "metric": "accuracy" if table.task == "classification" else "R2",
        "recipe": recipe,
        "library": "dpconvex" if recipe != "non-private" else "scikit-learn",
        "epsilon": eps,
        "median": float(np.median(scores)),
        "scores": [round(x, 4) for x in scores],
        "methods": methods,
    }


def adult_rows(eps_list, seeds: int) -> list[dict]:
    from dpconvex.preprocessing import adult_schema, load_adult_raw

    rows = []
    for complete, estimate in ((True, False), (True, True), (False, False)):
        X, y, is_test = load_adult_raw(complete=complete)
        name = "adult (rows without '?')" if complete else "adult (all rows, '?' missing)"
        table = RawTable(
            name,
            X[~is_test],
            y[~is_test],
            X[is_test],
            y[is_test],
            adult_schema(estimate),
            "classification",
        )
        for eps in eps_list:
            scores, methods = [], set()
            for s in range(seeds):
                sc, model = fit_default(table, eps, s)
                scores.append(sc)
                methods.add(_method(model))
            recipe = "default (3 bounds estimated)" if estimate else "default (declared)"
            rows.append(_row(table, recipe, eps, scores, sorted(methods)))
    return rows


def markdown(rows: list[dict]) -> str:
    lines = [
        "| table | n | metric | recipe | library | epsilon | median | per seed | method |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        eps = "-" if r["epsilon"] is None else f"{r['epsilon']:g}"
        lines.append(
            f"| {r['table']} | {r['n']} | {r['metric']} | {r['recipe']} | {r['library']} | "
            f"{eps} | {r['median']:.3f} | {' '.join(f'{x:.3f}' for x in r['scores'])} | "
            f"{','.join(r['methods'] or [])} |"
        )
    return "\n".join(lines)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="2 seeds, default recipe only")
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument(
        "--tables", nargs="+", default=["credit", "house"], choices=["credit", "house", "adult"]
    )
    parser.add_argument("--recipes", nargs="+", default=["default", "declared", "naive"])
    parser.add_argument("--load", help="JSON lines of peers' rows to merge")
    parser.add_argument("--json", help="also write the rows as JSON lines here")
    args = parser.parse_args(argv)
    seeds = 2 if args.quick else args.seeds
    recipes = ["default"] if args.quick else args.recipes
    print(f"OMP_NUM_THREADS={os.environ.get('OMP_NUM_THREADS')}  seeds={seeds}")
    warnings.simplefilter("ignore")
    start = time.perf_counter()
    rows: list[dict] = []
    if "credit" in args.tables:
        rows += synthetic_rows("credit", [1.0], seeds, recipes)
    if "house" in args.tables:
        rows += synthetic_rows("house", [1.0, 4.0], seeds, recipes)
    if "adult" in args.tables:
        rows += adult_rows([1.0, 8.0], seeds)
    if args.load:
        rows += [json.loads(line) for line in Path(args.load).read_text().splitlines() if line]
    print(markdown(rows))
    print(f"total {time.perf_counter() - start:.0f} s")
    if args.json:
        Path(args.json).write_text("".join(json.dumps(r) + "\n" for r in rows))


if __name__ == "__main__":
    main()
