"""Derive the defaults for a regression target's privately estimated bounds.

    OMP_NUM_THREADS=1 python benchmarks/derive_target_bounds.py [--seeds 4] [--quick]

The question: when ``make_table_model`` estimates the target's bounds (``y_bounds``
not declared, a generous public ``y_search_range``), which quantile should each end
target (``TARGET_MAX_QUANTILE``, the cap on the features' rule), and how much of the
bounds' epsilon should a target end get against a feature end (``TARGET_WEIGHT``)?

Synthetic tables (not the benchmark's stand-ins): n rows, one positive lognormal
feature in log with both ends estimated, four bounded numeric features declared in
[0, 1], three yes/no columns; a positive target y = s exp(x.b + noise) with a scale s
unknown to the user (10^3 to 10^6) and the search range [0, 1000 s]. Grid: n in {300,
1000, 3000}, epsilon in {0.5, 1, 4}, cap in {0.05, 0.1, 0.25, 0.35}, weight in {1, 2,
4, 8}; score the test R^2 (2,000 test rows; below -1 counted as -1), median over seeds;
the regret of a candidate is the best candidate's median minus its own, averaged over
the (n, epsilon) cells.
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import itertools  # noqa: E402
import warnings  # noqa: E402

import numpy as np  # noqa: E402
from sklearn.metrics import r2_score  # noqa: E402

import dpconvex.table_model as tm  # noqa: E402
from dpconvex import make_table_model  # noqa: E402
from dpconvex.preprocessing import Categorical, Numeric, Schema  # noqa: E402

CAPS = (0.05, 0.1, 0.25, 0.35)
WEIGHTS = (1.0, 2.0, 4.0, 8.0)
#: R^2 below this counts as this (a constant predicts R^2 ~ 0; far worse only means
#: a bound landed far out, and a mean would be ruled by those)
R2_FLOOR = -1.0


def schema() -> Schema:
    cols = [Numeric("size", (None, None), search_range=(0.0, 1e8), log="log1p")]
    cols += [Numeric(f"u{k}", (0.0, 1.0)) for k in range(4)]
    cols += [Categorical(f"flag{k}", ("yes", "no")) for k in range(3)]
    return Schema(tuple(cols))


def table(n: int, seed: int):
    rng = np.random.default_rng([7, n, seed])
    total = n + 2000
    scale = 10 ** rng.uniform(3, 6)
    size = 1000 * rng.lognormal(0, 0.6, total)
    u = rng.random((total, 4))
    flags = rng.random((total, 3)) < 0.4
    b = rng.normal(0, 0.3, 4)
    log_y = 0.4 * np.log(size / 1000) + u @ b + flags @ np.array([0.15, -0.1, 0.2])
    y = scale * np.exp(log_y + 0.2 * rng.standard_normal(total))
    X = np.empty((total, 8), dtype=object)
    X[:, 0] = size.round(0)
    X[:, 1:5] = u
    for k in range(3):
        X[:, 5 + k] = np.where(flags[:, k], "yes", "no")
    return X[:n], y[:n], X[n:], y[n:], (0.0, 1000 * scale)


def r2(n, eps, seed, cap, weight) -> float:
    tm.TARGET_MAX_QUANTILE, tm.TARGET_WEIGHT = cap, weight
    Xtr, ytr, Xte, yte, search = table(n, seed)
    pipe = make_table_model(
        schema(),
        n_samples=n,
        epsilon=eps,
        delta=1e-5,
        task="regression",
        y_search_range=search,
        random_state=seed,
    )
    pipe.fit(Xtr, ytr)
    return float(r2_score(yte, pipe.predict(Xte)))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=4)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--caps", type=float, nargs="+", default=list(CAPS))
    parser.add_argument("--weights", type=float, nargs="+", default=list(WEIGHTS))
    args = parser.parse_args()
    warnings.simplefilter("ignore")
    ns, epss = ((300, 1000), (1.0,)) if args.quick else ((300, 1000, 3000), (0.5, 1.0, 4.0))
    cands = list(itertools.product(args.caps, args.weights))
    medians = {}
    print(f"OMP_NUM_THREADS={os.environ.get('OMP_NUM_THREADS')}")
    print("| n | eps | " + " | ".join(f"cap {c:g} w {w:g}" for c, w in cands) + " |")
    print("|---|---|" + "---|" * len(cands))
    for n, eps in itertools.product(ns, epss):
        row = []
        for c, w in cands:
            scores = [max(R2_FLOOR, r2(n, eps, s, c, w)) for s in range(args.seeds)]
            med = float(np.median(scores))
            medians[(n, eps, c, w)] = med
            row.append(med)
        print(f"| {n} | {eps:g} | " + " | ".join(f"{x:.3f}" for x in row) + " |", flush=True)
    print("\nmean regret (R^2) over the cells:")
    for c, w in cands:
        regret = np.mean(
            [
                max(medians[(n, e, c2, w2)] for c2, w2 in cands) - medians[(n, e, c, w)]
                for n, e in itertools.product(ns, epss)
            ]
        )
        print(f"cap {c:g} weight {w:g}: {regret:.4f}")


if __name__ == "__main__":
    main()
