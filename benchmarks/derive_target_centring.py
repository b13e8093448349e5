"""Derive the default target range of a positive regression target of unknown scale.

    OMP_NUM_THREADS=1 python benchmarks/derive_target_centring.py [--seeds 5] [--quick]
        [--jsonl rows.jsonl]

The question: ``make_table_model(task="regression", y_search_range=(0, big))`` estimates
the target's range privately. Which rule turns a fixed budget of two exponential-
mechanism quantiles into the range the model clips and scales the targets by?

* ``ends w``: the earlier default, the quantiles (q, 1 - q) of the features' rule capped
  at 0.25 (``TargetBoundsRegressor._centred`` off), a target end weighing w feature ends;
* ``centred K w``: the private median m and lower quartile l, the range m +- K (m - l)
  cut at the search range's lower end (:func:`dpconvex.table_model.centred_target_bounds`);
* ``centred+features K w``: the same, and the feature whose two ends are estimated gets
  the range centred at its median too (``FEATURE_SPREAD`` = 3, on its log scale; without
  ``+features`` that feature keeps the two ends' rule);
* ``median w``: one quantile only (the median m at the whole target share, weight w
  for the one estimate) and the range (0, 2 m);
* ``.../quartile``: the spread u = m - l from the lower quartile l (the first centred
  rule); without it u is the private median of |x - m| (the current rule,
  :func:`dpconvex.preprocessing.quantile.private_centre`). Same event either way;
* ``share s`` (only with ``--shares``): the current rule with a fixed share s of epsilon
  for the bounds instead of the derived default share (:func:`dpconvex.preprocessing.
  default_share`), which was derived for the two ends' rule; run against the default.

Synthetic tables only (not the benchmark's stand-ins): the generator of
``derive_target_bounds.py`` (one lognormal feature in log with both ends estimated, four
declared [0, 1] features, three yes/no columns) with four target families, a scale s
unknown to the user (10^3 to 10^6) and the search range [0, 1000 s]:

* ``lognormal 0.2`` / ``lognormal 0.6``: y = s exp(signal + noise), noise sd 0.2 / 0.6
  (relative spread ~35 % / a heavy tail);
* ``level 3`` / ``level 8``: y = s (L + 0.6 z + 0.4 noise), z the standardized signal: a
  spread of ~24 % / ~9 % of the level (targets far from 0, where (0, 2 m) is too wide).

Grid: n in {300, 500, 1000}, total epsilon in {0.5, 1, 4} (delta 1e-5); test R^2 on 2,000
rows (below -1 counted as -1), median over seeds; a candidate's regret is the best
candidate's median minus its own, averaged over the cells.
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import itertools  # noqa: E402
import json  # noqa: E402
import warnings  # noqa: E402

import numpy as np  # noqa: E402
from sklearn.metrics import r2_score  # noqa: E402

import dpconvex.preprocessing.encoder as encoder  # noqa: E402
import dpconvex.preprocessing.quantile as quantile  # noqa: E402
import dpconvex.table_model as tm  # noqa: E402
from dpconvex import DPLinearRegression, make_table_model  # noqa: E402
from dpconvex._random import make_rng  # noqa: E402
from dpconvex.preprocessing import (  # noqa: E402
    Categorical,
    Numeric,
    Schema,
    TableEncoder,
    private_quantile,
    split_epsilon,
)

R2_FLOOR = -1.0
FAMILIES = {"lognormal 0.2": 0.2, "lognormal 0.6": 0.6, "level 3": -3.0, "level 8": -8.0}
CANDIDATES = (
    ("ends", 2.0),
    ("median", 1.0),
    ("centred/quartile", 3.0, 1.0),
    ("centred/quartile", 3.0, 2.0),
    ("centred/quartile", 4.0, 1.0),
    ("centred/quartile", 4.0, 2.0),
    ("centred+features/quartile", 3.0, 1.0),
    ("centred+features/quartile", 3.0, 2.0),
    ("centred+features", 3.0, 1.0),
    ("centred+features", 3.0, 2.0),
    ("centred+features", 4.0, 2.0),
)


def schema() -> Schema:
    cols = [Numeric("size", (None, None), search_range=(0.0, 1e8), log="log1p")]
    cols += [Numeric(f"u{k}", (0.0, 1.0)) for k in range(4)]
    cols += [Categorical(f"flag{k}", ("yes", "no")) for k in range(3)]
    return Schema(tuple(cols))


def table(n: int, seed: int, family: float):
    """Train and test cells and targets, and the public search range (see the doc)."""
    rng = np.random.default_rng([7, n, seed, int(abs(family) * 100) + 1000 * (family < 0)])
    total = n + 2000
    scale = 10 ** rng.uniform(3, 6)
    size = 1000 * rng.lognormal(0, 0.6, total)
    u = rng.random((total, 4))
    flags = rng.random((total, 3)) < 0.4
    b = rng.normal(0, 0.3, 4)
    signal = 0.4 * np.log(size / 1000) + u @ b + flags @ np.array([0.15, -0.1, 0.2])
    if family < 0:
        z = (signal - signal.mean()) / signal.std()
        y = scale * (-family + 0.6 * z + 0.4 * rng.standard_normal(total))
    else:
        y = scale * np.exp(signal + family * rng.standard_normal(total))
    X = np.empty((total, 8), dtype=object)
    X[:, 0] = size.round(0)
    X[:, 1:5] = u
    for k in range(3):
        X[:, 5 + k] = np.where(flags[:, k], "yes", "no")
    return X[:n], y[:n], X[n:], y[n:], (0.0, 1000 * scale)


def fit_pipeline(cand, Xtr, ytr, search, eps, seed):
    """``ends``/``centred``: make_table_model with the candidate's constants."""
    kind, _, statistic = cand[0].partition("/")
    if kind == "share":
        return make_table_model(
            schema(), n_samples=len(ytr), epsilon=eps, delta=1e-5, task="regression",
            y_search_range=search, random_state=seed, encoder_share=cand[1],
        ).fit(Xtr, ytr)  # fmt: skip
    tm.TARGET_WEIGHT = cand[-1]
    if kind != "ends":
        tm.TARGET_SPREAD = cand[1]
    centred, bounds = tm.TargetBoundsRegressor._centred, encoder._bounds
    quantile.SPREAD_STATISTIC = statistic or "deviation"
    try:
        if kind == "ends":
            tm.TargetBoundsRegressor._centred = lambda self, lower: False
        if kind != "centred+features":  # the features' two ends as before
            encoder._bounds = lambda *args, centred=False: bounds(*args, centred=False)
        pipe = make_table_model(
            schema(), n_samples=len(ytr), epsilon=eps, delta=1e-5, task="regression",
            y_search_range=search, random_state=seed,
        )  # fmt: skip
        return pipe.fit(Xtr, ytr)
    finally:
        tm.TargetBoundsRegressor._centred, encoder._bounds = centred, bounds
        quantile.SPREAD_STATISTIC = "deviation"


class _MedianOnly:
    """The one-quantile candidate: encoder, then (0, 2 m) from a private median."""

    def __init__(self, weight, Xtr, ytr, search, eps, seed):
        sch, n = schema(), len(ytr)
        eps_b, eps_m = split_epsilon(eps, sch.n_estimated + 1, n)
        eps_x = eps_b * sch.n_estimated / (sch.n_estimated + weight)
        eps_y = eps_b - eps_x
        seeds = tm._child_seeds(seed, 3)
        self.enc = TableEncoder(sch, epsilon=eps_x, random_state=seeds[0])
        bounds = encoder._bounds
        encoder._bounds = lambda *args, centred=False: bounds(*args, centred=False)
        try:
            self.enc.fit(Xtr)
        finally:
            encoder._bounds = bounds
        lo, hi = search
        z = np.log1p(np.clip(ytr, lo, hi))
        med = float(np.expm1(private_quantile(z, 0.5, eps_y, np.log1p(lo), np.log1p(hi),
                                              make_rng(seeds[2]))))  # fmt: skip
        bounds = tm.widened_target_bounds(lo, min(hi, 2 * med - lo), lo, hi)
        self.model = DPLinearRegression(
            epsilon=eps_m, delta=1e-5, row_norm="clip", row_bound=sch.row_bound(),
            y_bounds=bounds, random_state=seeds[1],
        ).fit(self.enc.transform(Xtr), ytr)  # fmt: skip

    def predict(self, X):
        return self.model.predict(self.enc.transform(X))


def score(cand, n, eps, family, seed) -> float:
    Xtr, ytr, Xte, yte, search = table(n, seed, family)
    if cand[0] == "median":
        model = _MedianOnly(cand[1], Xtr, ytr, search, eps, seed)
    else:
        model = fit_pipeline(cand, Xtr, ytr, search, eps, seed)
    return max(R2_FLOOR, float(r2_score(yte, model.predict(Xte))))


def label(cand) -> str:
    return " ".join(f"{c:g}" if isinstance(c, float) else c for c in cand)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--jsonl", help="append each cell's scores to this file")
    parser.add_argument("--candidates", nargs="+", help="labels to run (default: all)")
    parser.add_argument("--report", help="only print the tables of a --jsonl file")
    parser.add_argument(
        "--shares", nargs="+", type=float, help="the default against these fixed shares"
    )
    args = parser.parse_args()
    if args.report:
        return report(args.report)
    chosen = [c for c in CANDIDATES if not args.candidates or label(c) in args.candidates]
    if args.shares:
        chosen = [("centred+features", 3.0, 2.0)] + [("share", s) for s in args.shares]
    warnings.simplefilter("ignore")
    ns, epss = ((300,), (1.0,)) if args.quick else ((300, 500, 1000), (0.5, 1.0, 4.0))
    defaults = (tm.TARGET_WEIGHT, tm.TARGET_SPREAD)
    medians = {}
    print(f"OMP_NUM_THREADS={os.environ.get('OMP_NUM_THREADS')}")
    print("| family | n | eps | " + " | ".join(map(label, chosen)) + " |")
    print("|---|---|---|" + "---|" * len(chosen))
    try:
        for (fam, family), n, eps in itertools.product(FAMILIES.items(), ns, epss):
            row = []
            for cand in chosen:
                scores = [score(cand, n, eps, family, s) for s in range(args.seeds)]
                medians[(fam, n, eps, cand)] = float(np.median(scores))
                row.append(medians[(fam, n, eps, cand)])
                if args.jsonl:
                    with open(args.jsonl, "a") as f:
                        f.write(
                            json.dumps(
                                {
                                    "family": fam,
                                    "n": n,
                                    "eps": eps,
                                    "candidate": label(cand),
                                    "r2": scores,
                                }
                            )
                            + "\n"
                        )
            print(f"| {fam} | {n} | {eps:g} | " + " | ".join(f"{x:.3f}" for x in row) + " |",
                  flush=True)  # fmt: skip
    finally:
        tm.TARGET_WEIGHT, tm.TARGET_SPREAD = defaults
    print_regrets({(f, n, e, label(c)): m for (f, n, e, c), m in medians.items()})


def _ordered(labels: set) -> list:
    """Candidate labels in CANDIDATES' order, then the others (``share s``) sorted."""
    order = [label(c) for c in CANDIDATES]
    return sorted(labels, key=lambda x: (order.index(x), "") if x in order else (len(order), x))


def print_regrets(medians: dict) -> None:
    """Mean regret of each candidate over the cells where every candidate ran."""
    labels = _ordered({k[3] for k in medians})
    cells = sorted({k[:3] for k in medians if all(k[:3] + (c,) in medians for c in labels)})

    def regret(cand, cs) -> float:
        return float(np.mean([max(medians[c + (k,)] for k in labels) - medians[c + (cand,)]
                              for c in cs]))  # fmt: skip

    print(f"\nmean regret (R^2) over {len(cells)} cells, and per family:")
    for cand in labels:
        per = "  ".join(
            f"{f}: {regret(cand, [c for c in cells if c[0] == f]):.3f}" for f in FAMILIES
        )
        mean = np.mean([medians[c + (cand,)] for c in cells])
        print(f"{cand}: regret {regret(cand, cells):.4f}, mean R^2 {mean:.3f}   ({per})")


def report(path: str) -> None:
    """The median table and the regrets of the rows of a ``--jsonl`` file."""
    with open(path) as f:
        rows = [json.loads(line) for line in f]
    medians = {(r["family"], r["n"], r["eps"], r["candidate"]): float(np.median(r["r2"]))
               for r in rows}  # fmt: skip
    labels = _ordered({k[3] for k in medians})
    print("| family | n | eps | " + " | ".join(labels) + " |")
    print("|---|---|---|" + "---|" * len(labels))
    order = list(FAMILIES)
    for cell in sorted({k[:3] for k in medians}, key=lambda c: (order.index(c[0]),) + c[1:]):
        vals = [medians.get(cell + (c,)) for c in labels]
        shown = " | ".join("" if v is None else f"{v:.3f}" for v in vals)
        print(f"| {cell[0]} | {cell[1]} | {cell[2]:g} | {shown} |")
    print_regrets(medians)


if __name__ == "__main__":
    main()
