"""Derive ``method="auto"``: which method wins at which public sizes, on synthetic data only.

Run:  python benchmarks/derive_auto_method.py run  [--seeds 2] [--jobs 2] [--save F.jsonl]
      (appends to F.jsonl and skips the data sets already in it: a run can resume;
      the rule's grid: --max-cells 2e6, 90 cells per family; --families linear reruns
      one family, as after DP-GD's least-squares clip rule: 216 s with --jobs 2)
      python benchmarks/derive_auto_method.py rule --load F.jsonl
      python benchmarks/derive_auto_method.py adult [--seeds 3]

``run`` fits every method of the estimators with their defaults (nothing tuned) on two
synthetic families, for each n, d, epsilon (delta = 1e-5) and noise seed, and appends one
JSON line per (family, n, d, seed, method, epsilon) with the held-out score:

* ``logistic``: x ~ N(0, I_d) (the estimator normalizes rows), labels Bernoulli of
  sigmoid(2 <x, w> - 1) with w uniform on the unit sphere (Bayes accuracy about 80 %,
  classes about 65/35). Score: test accuracy; the constant baseline is the majority rate.
* ``linear``: x ~ N(0, I_d / (4 d)) clipped into the unit ball, y = clip(sqrt(d) <x, w>
  + 0.3 N(0, 1), -1, 1) (non-private R^2 about 0.7). Score: held-out R^2; the constant
  baseline is R^2 = 0.

The data sets are drawn from fixed seeds distinct from every other benchmark and from
Adult, which is kept for the check (``dpconvex demo``), never for the derivation.

``adult`` is the check, never used by the derivation: on the demo's Adult split it
prints the method auto picks at epsilon 0.1, 1 and 8 and its test accuracy beside AMP's.

``rule`` reads the lines back and prints, per family, the table of winners (mean over
seeds; a method within one standard error of the best counts as tied, ``=``), what
:func:`dpconvex.mechanisms.auto.choose_method` picks in each cell and its regret (best mean
minus the mean of the pick), the mean regret of "DP-GD when there are at least c
columns and the signal-to-noise ratio (:func:`dpconvex.mechanisms.auto.signal_to_noise`) is
below t, AMP otherwise" for c in {1, 15} and a range of t (how the thresholds were
chosen), and the cells where the best method is no better than the constant baseline
next to the ratio that predicts it.

BLAS threads are pinned to one; jobs (one data set each) run in ``--jobs`` processes.
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import itertools  # noqa: E402
import json  # noqa: E402
import math  # noqa: E402
import time  # noqa: E402
import warnings  # noqa: E402
from collections import defaultdict  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402
from joblib import Parallel, delayed  # noqa: E402
from sklearn.metrics import r2_score  # noqa: E402

from dpconvex import DPLinearRegression, DPLogisticRegression  # noqa: E402

DELTA = 1e-5
SIZES = (300, 1000, 3000, 10_000, 30_000, 100_000)
DIMS = (5, 30, 200)
EPSILONS = (0.1, 0.3, 1.0, 3.0, 10.0, 30.0)
METHODS = {
    "logistic": ("amp", "output", "dpgd", "dpsgd"),
    "linear": ("amp", "output", "dpgd", "dpsgd", "adassp"),
}
#: largest n x d of a job (DP-GD's 1000 full passes at 1e5 x 200 alone take minutes)
MAX_CELLS = 7_000_000
TEST_ROWS = 5000


def synthetic(family: str, n: int, d: int, seed: int):
    """(X_train, X_test, y_train, y_test) of a family, from a seed no other benchmark uses."""
    rng = np.random.default_rng([32, 7, seed, n, d, family == "linear"])
    w = rng.normal(size=d)
    w /= np.linalg.norm(w)
    X = rng.normal(size=(n + TEST_ROWS, d))
    if family == "logistic":
        p = 1.0 / (1.0 + np.exp(-(2.0 * X @ w - 1.0)))
        y = (rng.random(X.shape[0]) < p).astype(int)
    else:
        X /= 2.0 * math.sqrt(d)
        norms = np.maximum(1.0, np.linalg.norm(X, axis=1))
        X /= norms[:, None]
        y = np.clip(math.sqrt(d) * X @ w + 0.3 * rng.normal(size=X.shape[0]), -1.0, 1.0)
    return X[:n], X[n:], y[:n], y[n:]


def job(family: str, n: int, d: int, seed: int, epsilons) -> list[dict]:
    """Every method at every epsilon on one data set; one row per fit."""
    X, Xt, y, yt = synthetic(family, n, d, seed)
    if family == "logistic":
        baseline = max(np.mean(yt), 1 - np.mean(yt))
    else:
        baseline = 0.0
    rows = []
    for method, eps in itertools.product(METHODS[family], epsilons):
        start = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            if family == "logistic":
                model = DPLogisticRegression(eps, DELTA, method=method, random_state=seed)
                score = model.fit(X, y).score(Xt, yt)
            else:
                model = DPLinearRegression(eps, DELTA, method=method, random_state=seed)
                score = r2_score(yt, model.fit(X, y).predict(Xt))
        rows.append(
            dict(family=family, n=n, d=d, seed=seed, method=method, epsilon=eps,
                 score=float(score), baseline=float(baseline),
                 seconds=round(time.perf_counter() - start, 3))
        )  # fmt: skip
    return rows


def run(args) -> None:
    epsilons = [float(e) for e in args.epsilons.split(",")]
    jobs = [
        (f, n, d, s)
        for f in args.families.split(",")
        for n in SIZES
        for d in DIMS
        for s in range(args.seeds)
        if n * d <= args.max_cells
    ]
    out = Path(args.save)
    if out.exists():  # resume: data sets already in the file are not run again
        done = {(r["family"], r["n"], r["d"], r["seed"])
                for r in map(json.loads, out.read_text().splitlines()) if r}  # fmt: skip
        jobs = [j for j in jobs if j not in done]
    jobs.sort(key=lambda j: -j[1] * j[2])  # longest first
    print(f"{len(jobs)} data sets; OMP_NUM_THREADS=1; {args.jobs} processes -> {out}", flush=True)
    start = time.perf_counter()
    for rows in Parallel(n_jobs=args.jobs, return_as="generator_unordered")(
        delayed(job)(*j, epsilons) for j in jobs
    ):
        with out.open("a") as fh:
            fh.writelines(json.dumps(r) + "\n" for r in rows)
        r = rows[0]
        print(f"{r['family']} n={r['n']} d={r['d']} seed={r['seed']} "
              f"{sum(x['seconds'] for x in rows):.0f} s", flush=True)  # fmt: skip
    print(f"total {time.perf_counter() - start:.0f} s")


def _cells(rows):
    """{(family, n, d, eps): {method: [scores]}} and the baselines."""
    cells, base = defaultdict(lambda: defaultdict(list)), {}
    for r in rows:
        key = (r["family"], r["n"], r["d"], r["epsilon"])
        cells[key][r["method"]].append(r["score"])
        base.setdefault(key, []).append(r["baseline"])
    return cells, {k: float(np.mean(v)) for k, v in base.items()}


def _stats(scores):
    se = np.std(scores, ddof=1) / math.sqrt(len(scores)) if len(scores) > 1 else 0.0
    return float(np.mean(scores)), float(se)


def rule(args) -> None:
    from dpconvex.mechanisms.auto import choose_method, signal_to_noise

    rows = [json.loads(line) for line in Path(args.load).read_text().splitlines() if line]
    cells, base = _cells(rows)
    for family in ("logistic", "linear"):
        keys = sorted(k for k in cells if k[0] == family)
        if not keys:
            continue
        unit = "accuracy %" if family == "logistic" else "R^2"
        k = 100.0 if family == "logistic" else 1.0
        methods = METHODS[family]
        print(f"\n## {family} ({unit}, mean over seeds; * best, = within one s.e. of it)\n")
        print("| n | d | eps | " + " | ".join(methods) + " | constant | auto | regret | snr |")
        print("|" + "---|" * (len(methods) + 7))
        regrets = []
        task = "classification" if family == "logistic" else "regression"
        for key in keys:
            _, n, d, eps = key
            st = {m: _stats(cells[key][m]) for m in methods if m in cells[key]}
            best = max(st, key=lambda m: st[m][0])
            marks = {
                m: "*" if m == best else ("=" if st[m][0] + st[m][1] >= st[best][0] - st[best][1]
                                          else "")
                for m in st
            }  # fmt: skip
            # the estimators fit an intercept: d + 1 columns
            pick = choose_method(task, n, d + 1, eps, DELTA, methods=tuple(st))[0]
            regret = st[best][0] - st[pick][0]
            regrets.append(regret)
            snr = signal_to_noise(task, n, d + 1, eps, DELTA)
            cols = " | ".join(f"{k * st[m][0]:.2f}{marks[m]}" if m in st else "-" for m in methods)
            print(f"| {n} | {d} | {eps:g} | {cols} | {k * base[key]:.2f} | {pick} | "
                  f"{k * regret:.2f} | {snr:.3g} |")  # fmt: skip
        regrets = np.array(regrets) * k
        print(f"\nauto's regret over {len(regrets)} cells: mean {regrets.mean():.3f}, "
              f"median {np.median(regrets):.3f}, max {regrets.max():.3f}")  # fmt: skip
        wins = defaultdict(int)
        for key in keys:
            wins[max(cells[key], key=lambda m: np.mean(cells[key][m]))] += 1
        print("cells won: " + ", ".join(f"{m} {c}" for m, c in sorted(wins.items())))
        _threshold_scan(task, keys, cells, k)
        _constant_cells(family, keys, cells, base, k)


def _threshold_scan(task, keys, cells, k) -> None:
    """Mean regret of "DP-GD when columns >= c and n / (z d) < t, AMP otherwise"."""
    from dpconvex.mechanisms.auto import signal_to_noise

    means = {key: {m: float(np.mean(v)) for m, v in cells[key].items()} for key in keys}
    snrs = {key: signal_to_noise(task, key[1], key[2] + 1, key[3], DELTA) for key in keys}

    def regret(pick, c=1, t=math.inf) -> float:
        return k * float(np.mean([max(means[key].values()) - means[key][pick(key, c, t)]
                                  for key in keys]))  # fmt: skip

    def rule(key, c, t) -> str:
        return "dpgd" if key[2] + 1 >= c and snrs[key] < t else "amp"

    print(f"\nmean regret: AMP always {regret(lambda *_: 'amp'):.3f}, "
          f"DP-GD always {regret(lambda *_: 'dpgd'):.3f}; "
          "DP-GD when columns >= c and snr < t, AMP otherwise:")  # fmt: skip
    thresholds = (3, 10, 20, 30, 50, 70, 100, 150, 200, 300, 1000)
    print("| c \\ t | " + " | ".join(f"{t:g}" for t in thresholds) + " |")
    print("|" + "---|" * (len(thresholds) + 1))
    for c in (1, 15):
        cols = [regret(rule, c, t) for t in thresholds]
        print(f"| {c} | " + " | ".join(f"{r:.4f}" for r in cols) + " |")


def _constant_cells(family, keys, cells, base, k) -> None:
    """Cells where no method beats the constant baseline, against the predicted SNR."""
    from dpconvex.mechanisms.auto import CONSTANT_SNR, signal_to_noise

    task = "classification" if family == "logistic" else "regression"
    print("\nbest method no better than the constant (by more than 0.01 R^2 / 1 point):")
    margin = 0.01 if family == "linear" else 0.01
    lost, won = [], []
    for key in keys:
        _, n, d, eps = key
        best = max(np.mean(v) for v in cells[key].values())
        snr = signal_to_noise(task, n, d + 1, eps, DELTA)
        (lost if best - base[key] <= margin else won).append((snr, n, d, eps, k * best))
    for snr, n, d, eps, best in sorted(lost):
        print(f"  n={n} d={d} eps={eps:g}: best {best:.3f}, snr {snr:.3g}")
    below = [(best, base[k2]) for k2 in keys
             for best in [max(np.mean(v) for v in cells[k2].values())]
             if signal_to_noise(task, k2[1], k2[2] + 1, k2[3], DELTA) < CONSTANT_SNR]  # fmt: skip
    if below:
        gain = max(b - c for b, c in below)
        print(f"  {len(below)} cells below the warning's snr {CONSTANT_SNR:g}: the best method "
              f"beat the constant by at most {k * gain:.3f}")  # fmt: skip
    if won:
        snr, n, d, eps, best = min(won)
        print(f"  smallest snr where a method beat it: {snr:.3g} (n={n} d={d} eps={eps:g}, "
              f"best {best:.3f})")  # fmt: skip


def adult(args) -> None:
    """The check (not used by the derivation): auto's pick on Adult beside AMP's accuracy."""
    from dpconvex.datasets import load_adult

    X, Xt, y, yt = load_adult().split(0.2, seed=0)  # the demo's split
    print(f"Adult: {X.shape[0]} train / {Xt.shape[0]} test rows, {X.shape[1]} features; "
          f"delta {DELTA}; {args.seeds} seeds")  # fmt: skip
    print("| epsilon | auto picks | auto acc % | amp acc % | reason |")
    print("|---|---|---|---|---|")
    for eps in (0.1, 1.0, 8.0):
        acc = {}
        for method in ("auto", "amp"):
            scores = []
            for seed in range(args.seeds):
                model = DPLogisticRegression(eps, DELTA, method=method, random_state=seed)
                scores.append(100 * model.fit(X, y).score(Xt, yt))
            acc[method] = (np.mean(scores), model)
        auto = acc["auto"][1]
        print(f"| {eps:g} | {auto.method_} | {acc['auto'][0]:.2f} | {acc['amp'][0]:.2f} | "
              f"{auto.method_reason_} |", flush=True)  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("what", choices=("run", "rule", "adult"))
    parser.add_argument("--seeds", type=int, default=2)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--families", default="logistic,linear")
    parser.add_argument("--max-cells", type=float, default=MAX_CELLS,
                        help="skip data sets with n x d above this")  # fmt: skip
    parser.add_argument("--epsilons", default=",".join(f"{e:g}" for e in EPSILONS))
    parser.add_argument("--save", default="derive_auto_method.jsonl")
    parser.add_argument("--load", default="derive_auto_method.jsonl")
    args = parser.parse_args()
    {"run": run, "rule": rule, "adult": adult}[args.what](args)


if __name__ == "__main__":
    main()
