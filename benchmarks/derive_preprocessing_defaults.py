"""Derive the preprocessing defaults on synthetic tables, and measure Adult's raw path.

Run:  python benchmarks/derive_preprocessing_defaults.py [--grid wide|fine|share|default]
      [--reps 6] [--quick] [--no-adult | --adult-only] [--spread deviation|quartile]

The defaults were derived in three rounds: ``--grid wide`` (6 reps: fixed quantiles and
margins c from 5 to 40, shares 0.05 to 0.5), ``--grid fine --reps 4`` (c in 20, 40, 80;
fixed shares and the share rule aiming at q = 0.25) and ``--grid share --reps 4`` (the
share rule aiming at q = 0.1, 0.05, 0.02; the rule at 0.02 became the default).
``--grid default --reps 4 --spread quartile|deviation`` compares the two centred ranges
of columns with both ends open (the "library default" row runs the encoder at its
defaults, centred range included).

Part 1 (derivation). Synthetic tables only (nothing real is looked at): "heavy" (positive
lognormal, Pareto and zero-inflated money columns, log1p with a declared lower bound 0,
upper bound estimated in [0, 1e8]), "bounded" (normal columns of varied centre and
spread, both bounds estimated in [-1e4, 1e4]) and "mix" (three of each kind plus two
declared categorical columns). Labels follow a logistic model of the standardized
(logged) values. For each table size n, total epsilon, quantile recipe and share of the
total spent on bounds, a TableEncoder then DPLogisticRegression(method="amp",
row_norm="clip", row_bound=encoder.row_bound_, delta=1e-5) is fitted and scored on a
fresh sample of the same generator. "oracle" uses the non-private 1%/99% quantiles
and gives the whole epsilon to the model (an upper bound on what estimated bounds can
do). The summary ranks recipes by mean and worst regret against the best recipe of
each setting.

Part 2 (Adult). The bundled raw rows -> adult_schema -> DPLogisticRegression ("amp" and
"dpsgd") at total epsilon 1 and 8 (bounds included), on the public 80/20 split of
benchmarks/bench_adult.py (seed 0), mean over noise seeds; nothing is tuned on it.
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import itertools  # noqa: E402
import json  # noqa: E402
import warnings  # noqa: E402
from collections import defaultdict  # noqa: E402

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from dpconvex import DPLogisticRegression  # noqa: E402
from dpconvex.preprocessing import (  # noqa: E402
    TableEncoder,
    adult_schema,
    load_adult_raw,
    schema_from_dict,
    split_epsilon,
)
from dpconvex.preprocessing import quantile as quantile_module  # noqa: E402
from dpconvex.preprocessing.defaults import (  # noqa: E402
    MAX_QUANTILE,
    MAX_SHARE,
    MIN_SHARE,
    RANK_MARGIN,
)

HEAVY_RANGE, BOUNDED_RANGE = [0.0, 1e8], [-1e4, 1e4]
CATS = ["a", "b", "c", "d"]


def _heavy(rng, n, k):
    kind = k % 3
    if kind == 0:
        return rng.lognormal(8.0 + k, 1.5, n)
    if kind == 1:
        return (rng.pareto(1.5, n) + 1.0) * 1000.0
    return np.where(rng.random(n) < 0.8, 0.0, rng.lognormal(9.0, 1.0, n))


def _bounded(rng, n, k):
    return rng.normal(10.0 * (k + 1), 3.0 * (k + 1), n)


MIXES = {"heavy": (6, 0, 0), "bounded": (0, 6, 0), "mix": (3, 3, 2)}


def make_table(mix: str, n: int, rng) -> tuple[pd.DataFrame, np.ndarray]:
    n_heavy, n_bounded, n_cat = MIXES[mix]
    cols, feats = {}, []
    for k in range(n_heavy):
        x = _heavy(rng, n, k)
        cols[f"h{k}"] = x
        z = np.log1p(x)
        feats.append((z - z.mean()) / (z.std() + 1e-12))
    for k in range(n_bounded):
        x = _bounded(rng, n, k)
        cols[f"b{k}"] = x
        feats.append((x - 10.0 * (k + 1)) / (3.0 * (k + 1)))
    for k in range(n_cat):
        c = rng.integers(0, len(CATS), n)
        cols[f"c{k}"] = np.array(CATS, dtype=object)[c]
        feats.append(np.array([-1.0, -0.3, 0.3, 1.0])[c])
    w = np.array([(-1.0) ** j for j in range(len(feats))]) * 2.0 / np.sqrt(len(feats))
    logits = np.column_stack(feats) @ w
    y = (rng.random(n) < 1.0 / (1.0 + np.exp(-logits))).astype(int)
    return pd.DataFrame(cols), y


def make_schema(mix: str) -> dict:
    n_heavy, n_bounded, n_cat = MIXES[mix]
    cols = [
        {
            "name": f"h{k}",
            "type": "numeric",
            "bounds": [0, None],
            "search_range": HEAVY_RANGE,
            "log": "log1p",
        }
        for k in range(n_heavy)
    ]
    cols += [
        {"name": f"b{k}", "type": "numeric", "bounds": [None, None], "search_range": BOUNDED_RANGE}
        for k in range(n_bounded)
    ]
    cols += [{"name": f"c{k}", "type": "categorical", "categories": CATS} for k in range(n_cat)]
    return {"columns": cols}


def oracle_schema(mix: str, table: pd.DataFrame) -> dict:
    """Non-private: the training table's own 1%/99% quantiles, declared (an upper bound)."""
    schema = make_schema(mix)
    for col in schema["columns"]:
        if col["type"] == "numeric":
            x = table[col["name"]].to_numpy()
            lo, hi = np.quantile(x, [0.01, 0.99])
            col["bounds"] = [0.0 if col.get("log") else float(lo), float(max(hi, lo + 1e-9))]
            col.pop("search_range")
    return schema


GRIDS = {
    # round 1: the broad grid
    "wide": (
        [("fixed", q) for q in (0.01, 0.05, 0.1, 0.25)]
        + [("rule", c) for c in (5.0, 10.0, 20.0, 40.0)],
        (0.05, 0.1, 0.2, 0.3, 0.5),
    ),
    # round 2: around round 1's best (large margins, large shares) and the share rule
    "fine": ([("rule", c) for c in (20.0, 40.0, 80.0)], (0.1, 0.2, 0.3, 0.5, "auto")),
    # round 3: the share rule aiming at smaller quantiles
    "share": ([("rule", 40.0)], ("auto@0.1", "auto@0.05", "auto@0.02")),
    # the library default alone (with --spread: which centred range it uses)
    "default": ([], ()),
}


def recipe_name(recipe) -> str:
    kind, value = recipe
    return f"fixed q={value:g}" if kind == "fixed" else f"rule c={value:g}"


def quantiles_for(recipe, each: float, n: int):
    kind, value = recipe
    if kind == "fixed":
        return (value, 1.0 - value)
    q = min(MAX_QUANTILE, value / (each * n))
    return (q, 1.0 - q)


def share_for(share, recipe, total: float, m: int, n: int) -> float:
    """A fixed share, or "auto": enough for every bound to reach MAX_QUANTILE at margin c."""
    if not isinstance(share, str):
        return share
    target = float(share.partition("@")[2] or MAX_QUANTILE)  # "auto@0.05": reach q = 0.05
    c = recipe[1] if recipe[0] == "rule" else RANK_MARGIN
    return min(MAX_SHARE, max(MIN_SHARE, m * c / (target * n * total)))


def fit_score(schema, eps_enc, eps_model, quantiles, train, test, seed):
    enc = TableEncoder(schema, epsilon=eps_enc or None, quantiles=quantiles, random_state=seed)
    Z = enc.fit_transform(train[0])
    clf = DPLogisticRegression(
        epsilon=eps_model,
        delta=1e-5,
        method="amp",
        row_norm="clip",
        row_bound=enc.row_bound_,
        random_state=seed,
    )
    clf.fit(Z, train[1])
    return 100.0 * clf.score(enc.transform(test[0]), test[1])


def derive(reps: int, ns, epsilons, grid: str, out_path: str | None) -> dict:
    recipes, shares = GRIDS[grid]
    results = defaultdict(list)
    for mix, n, eps in itertools.product(MIXES, ns, epsilons):
        n_est = schema_from_dict(make_schema(mix)).n_estimated
        for rep in range(reps):
            rng = np.random.default_rng([n, rep, len(mix)])
            train, test = make_table(mix, n, rng), make_table(mix, 10_000, rng)
            key = (mix, n, eps, "oracle (non-private 1/99%)", 0.0)
            results[key].append(
                fit_score(oracle_schema(mix, train[0]), None, eps, None, train, test, rep)
            )
            for share, recipe in itertools.product(shares, recipes):
                s = share_for(share, recipe, eps, n_est, n)
                eps_enc, eps_model = split_epsilon(eps, n_est, share=s)
                qs = quantiles_for(recipe, eps_enc / n_est, n)
                acc = fit_score(make_schema(mix), eps_enc, eps_model, qs, train, test, rep)
                results[(mix, n, eps, recipe_name(recipe), share)].append(acc)
            # the library's defaults: its share, its quantiles, and with both ends open its
            # centred range while that clips less (quantiles=None)
            eps_enc, eps_model = split_epsilon(eps, n_est, n)
            acc = fit_score(make_schema(mix), eps_enc, eps_model, None, train, test, rep)
            results[(mix, n, eps, "library default", "auto")].append(acc)
        print(f"done {mix} n={n} eps={eps}", flush=True)
    means = {k: float(np.mean(v)) for k, v in results.items()}
    if out_path:
        with open(out_path, "w") as f:
            json.dump([[list(k), m] for k, m in means.items()], f)
    return means


def summarize(means: dict) -> None:
    settings = sorted({k[:3] for k in means})
    print(
        f"\n{'mix':>8} {'n':>6} {'eps':>5} {'oracle':>7} {'best recipe (share)':>30} "
        f"{'acc':>6} {'library default':>15}"
    )
    regret = defaultdict(list)
    for s in settings:
        rows = {k[3:]: m for k, m in means.items() if k[:3] == s}
        oracle = rows[("oracle (non-private 1/99%)", 0.0)]
        cands = {k: m for k, m in rows.items() if not k[0].startswith("oracle")}
        best_k = max(cands, key=cands.get)
        best = cands[best_k]
        dflt = cands.get(("library default", "auto"), float("nan"))
        print(
            f"{s[0]:>8} {s[1]:>6} {s[2]:>5g} {oracle:>7.2f} "
            f"{best_k[0] + ' (' + str(best_k[1]) + ')':>30} {best:>6.2f} {dflt:>15.2f}"
        )
        for k, m in cands.items():
            regret[k].append(best - m)
    print(f"\n{'recipe':>16} {'share':>6} {'mean regret':>11} {'worst regret':>12}")
    ranked = sorted(regret, key=lambda k: np.mean(regret[k]))
    for k in ranked:
        r = regret[k]
        print(f"{k[0]:>16} {str(k[1]):>6} {np.mean(r):>11.2f} {np.max(r):>12.2f}")


def adult(seeds: int) -> None:
    X, y, _ = load_adult_raw()
    order = np.random.default_rng(0).permutation(len(y))
    n_test = int(round(0.2 * len(y)))
    train, test = order[: len(y) - n_test], order[len(y) - n_test :]
    print(f"\nAdult raw rows: {len(train)} train / {len(test)} test (bench_adult.py's split)")
    print(
        f"{'schema':>22} {'method':>6} {'eps':>4} {'encoder eps':>11} {'acc % mean':>10} "
        f"{'min':>6} {'max':>6}"
    )
    for estimate in (False, True):
        schema = adult_schema(estimate)
        for method, eps in itertools.product(("amp", "dpsgd"), (1.0, 8.0)):
            eps_enc, eps_model = split_epsilon(eps, schema.n_estimated, len(train))
            accs = []
            for seed in range(seeds):
                enc = TableEncoder(schema, epsilon=eps_enc or None, random_state=seed)
                Z = enc.fit_transform(X[train])
                clf = DPLogisticRegression(
                    epsilon=eps_model,
                    delta=1e-5,
                    method=method,
                    row_norm="clip",
                    row_bound=enc.row_bound_,
                    random_state=seed,
                ).fit(Z, y[train])
                accs.append(100.0 * clf.score(enc.transform(X[test]), y[test]))
            name = "estimated (3 bounds)" if estimate else "declared (UCI maxima)"
            print(
                f"{name:>22} {method:>6} {eps:>4g} {eps_enc:>11.3g} {np.mean(accs):>10.2f} "
                f"{min(accs):>6.2f} {max(accs):>6.2f}",
                flush=True,
            )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=6)
    parser.add_argument("--quick", action="store_true", help="2 reps, n=1000 only")
    parser.add_argument("--adult-only", action="store_true")
    parser.add_argument("--grid", choices=sorted(GRIDS), default="fine")
    parser.add_argument("--no-adult", action="store_true")
    parser.add_argument("--adult-seeds", type=int, default=5)
    parser.add_argument("--save", default=None, help="write the mean accuracies as JSON")
    parser.add_argument(
        "--spread",
        choices=("deviation", "quartile"),
        default="deviation",
        help="the centred range's spread: median |x - m| (default) or m - lower quartile",
    )
    args = parser.parse_args()
    warnings.simplefilter("ignore")
    quantile_module.SPREAD_STATISTIC = args.spread
    if not args.adult_only:
        ns = (1000,) if args.quick else (1000, 10_000)
        reps = 2 if args.quick else args.reps
        means = derive(reps, ns, (0.5, 1.0, 4.0, 16.0), args.grid, args.save)
        summarize(means)
    if not args.no_adult:
        adult(args.adult_seeds)


if __name__ == "__main__":
    main()
