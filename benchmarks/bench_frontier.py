"""Accuracy against epsilon for every method and data set: the privacy-utility frontier.

Run:  python benchmarks/bench_frontier.py [--seeds 10] [--epsilons 0.1,0.3,1,3,8,30,100]
                                          [--data adult,synthetic-l,regression] [--plots DIR]
                                          [--save ROWS.json] [--load ROWS.json,PEERS.json]

For each data set, method and epsilon (delta = 1e-5): mean and standard deviation over
``seeds`` noise seeds of test accuracy (classification) or held-out R^2 (regression), on
one fixed public split, with dpconvex's defaults (nothing tuned on private data); next
to the non-private model fitted on the same transformed rows (unit rows for the
classifiers, rows of norm <= 1 and targets in [-1, 1] for the regression family).

* adult: the demo's split (80/20, seed 0); methods amp, output, dpgd, dpsgd.
* synthetic-l: seed 000's Synthetic-L; the same methods.
* regression: x ~ N(0, I_d) scaled into the unit ball, y = <x, w> + 0.1 noise clipped to
  [-1, 1] with w uniform on the unit sphere; n in {4000, 16000}, d in {5, 10, 30}; methods
  amp (the default), adassp, output, dpgd, dpsgd.

Peer rows (diffprivlib, Opacus) come from the separate peer environment:
``benchmarks/peers/bench_frontier_peers.py`` writes them to JSON in the same row format;
``--load ours.json,peers.json`` prints and plots saved rows together (``--save`` writes
this run's rows). BLAS threads are pinned to 1 and printed. With --plots, one PNG per
data set (accuracy against epsilon, log x axis, one line per method and the non-private
level).
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import json  # noqa: E402
import time  # noqa: E402
import warnings  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402
from sklearn.linear_model import LinearRegression, LogisticRegression  # noqa: E402
from sklearn.metrics import r2_score  # noqa: E402

from dpconvex import ClippingWarning, DPLinearRegression, DPLogisticRegression  # noqa: E402
from dpconvex.datasets import load_adult, load_synthetic_l  # noqa: E402
from dpconvex.mechanisms import transform_rows  # noqa: E402

EPSILONS = (0.1, 0.3, 1.0, 3.0, 8.0, 30.0, 100.0)
DELTA = 1e-5


def regression_family(n: int, d: int, seed: int = 0):
    """A public synthetic regression set: (X_train, X_test, y_train, y_test), 25% held out."""
    rng = np.random.default_rng([seed, n, d])
    w = rng.normal(size=d)
    w /= np.linalg.norm(w)
    X = rng.normal(size=(n + n // 3, d))
    X /= np.sqrt(d) * 2.0  # most rows inside the unit ball
    X = transform_rows(X, "clip", 1.0)
    y = np.clip(X @ w * np.sqrt(d) + 0.1 * rng.normal(size=X.shape[0]), -1.0, 1.0)
    return X[:n], X[n:], y[:n], y[n:]


def classification_sets(names):
    out = {}
    if "adult" in names:
        data = load_adult()
        out["adult"] = data.split(0.2, seed=0)
    if "synthetic-l" in names:
        data = load_synthetic_l()
        out["synthetic-l"] = data.split(0.2, seed=0)
    return out


def run_classification(name, split, methods, epsilons, seeds):
    X_train, X_test, y_train, y_test = split
    Xn_train = transform_rows(X_train, "normalize", 1.0)
    Xn_test = transform_rows(X_test, "normalize", 1.0)
    reference = 100 * LogisticRegression(C=1e4, max_iter=5000).fit(Xn_train, y_train).score(
        Xn_test, y_test
    )
    rows = []
    for method in methods:
        for eps in epsilons:
            scores, start = [], time.perf_counter()
            for seed in range(seeds):
                model = DPLogisticRegression(
                    epsilon=eps, delta=DELTA, method=method, random_state=seed
                ).fit(X_train, y_train)
                assert model.epsilon_ <= eps * (1 + 1e-12)
                scores.append(100 * model.score(X_test, y_test))
            rows.append((name, method, eps, scores, reference, time.perf_counter() - start))
    return rows


def run_regression(n, d, methods, epsilons, seeds):
    X_train, X_test, y_train, y_test = regression_family(n, d)
    reference = r2_score(y_test, LinearRegression().fit(X_train, y_train).predict(X_test))
    name = f"regression n={n} d={d}"
    rows = []
    for method in methods:
        for eps in epsilons:
            scores, start = [], time.perf_counter()
            for seed in range(seeds):
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore", ClippingWarning)
                    model = DPLinearRegression(
                        epsilon=eps, delta=DELTA, method=method, random_state=seed
                    ).fit(X_train, y_train)
                assert model.epsilon_ <= eps * (1 + 1e-12)
                scores.append(r2_score(y_test, model.predict(X_test)))
            rows.append((name, method, eps, scores, reference, time.perf_counter() - start))
    return rows


def _stats(scores) -> tuple[float, float]:
    """(mean, sd with ddof 1) of per-seed scores, or of a saved summary {"mean", "sd"}."""
    if isinstance(scores, dict):
        return float(scores["mean"]), float(scores["sd"])
    sd = float(np.std(scores, ddof=1)) if len(scores) > 1 else 0.0
    return float(np.mean(scores)), sd


def print_table(rows, unit):
    print(f"\n| data | method | epsilon | {unit} mean | sd | non-private | gap | s |")
    print("|---|---|---|---|---|---|---|---|")
    for name, method, eps, scores, ref, seconds in rows:
        mean, sd = _stats(scores)
        digits = 2 if unit == "accuracy %" else 4
        print(
            f"| {name} | {method} | {eps:g} | {mean:.{digits}f} | {sd:.{digits}f} "
            f"| {ref:.{digits}f} | {mean - ref:+.{digits}f} | {seconds:.1f} |"
        )


def plot(rows, directory: Path, unit: str):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    directory.mkdir(parents=True, exist_ok=True)
    for name in dict.fromkeys(r[0] for r in rows):
        fig, ax = plt.subplots(figsize=(5.5, 3.6))
        group = [r for r in rows if r[0] == name]
        for method in dict.fromkeys(r[1] for r in group):
            pts = [r for r in group if r[1] == method]
            eps = [r[2] for r in pts]
            mean = [_stats(r[3])[0] for r in pts]
            sd = [_stats(r[3])[1] for r in pts]
            ax.errorbar(eps, mean, yerr=sd, marker="o", capsize=2, label=method)
        ax.axhline(group[0][4], color="k", ls="--", lw=1, label="non-private")
        ax.set_xscale("log")
        ax.set_xlabel("epsilon (delta = 1e-5)")
        ax.set_ylabel(unit)
        ax.set_title(name)
        low = min(_stats(r[3])[0] for r in group)
        top = 100.0 if unit == "accuracy %" else 1.0  # peers' wild runs must not flatten it
        ax.set_ylim(max(low, group[0][4] - (20 if unit == "accuracy %" else 0.5)), top)
        ax.legend(fontsize=7)
        fig.tight_layout()
        fig.savefig(directory / (name.replace(" ", "_").replace("=", "") + ".png"), dpi=110)
        plt.close(fig)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=10)
    parser.add_argument("--epsilons", default=",".join(f"{e:g}" for e in EPSILONS))
    parser.add_argument("--data", default="adult,synthetic-l,regression")
    parser.add_argument("--sizes", default="4000x5,16000x10,16000x30",
                        help="regression family: comma-separated n x d")  # fmt: skip
    parser.add_argument("--plots", help="directory for one PNG per data set")
    parser.add_argument("--save", help="write this run's rows to a JSON file")
    parser.add_argument("--load", help="comma-separated JSON row files to print and plot")
    args = parser.parse_args()
    if args.load:
        rows = [tuple(r) for f in args.load.split(",") for r in json.loads(Path(f).read_text())]
        for unit in ("accuracy %", "R^2"):
            part = sorted(
                (r for r in rows if r[6] == unit), key=lambda r: (r[0], r[1] != "amp", r[1], r[2])
            )
            if part:
                print_table([r[:6] for r in part], unit)
                if args.plots:
                    plot([r[:6] for r in part], Path(args.plots), unit)
        return
    epsilons = [float(e) for e in args.epsilons.split(",")]
    names = args.data.split(",")
    print(
        f"OMP_NUM_THREADS={os.environ['OMP_NUM_THREADS']}; delta={DELTA}; {args.seeds} seeds; "
        "defaults of every method (nothing tuned on private data)"
    )
    cls_rows = []
    for name, split in classification_sets(names).items():
        cls_rows += run_classification(
            name, split, ["amp", "output", "dpgd", "dpsgd"], epsilons, args.seeds
        )
    if cls_rows:
        print_table(cls_rows, "accuracy %")
    reg_rows = []
    if "regression" in names:
        for size in args.sizes.split(","):
            n, d = (int(x) for x in size.split("x"))
            reg_rows += run_regression(n, d, ["amp", "adassp", "output", "dpgd", "dpsgd"],
                                       epsilons, args.seeds)  # fmt: skip
        print_table(reg_rows, "R^2")
    if args.save:
        saved = [
            [*r[:3], [float(x) for x in r[3]], float(r[4]), r[5], unit]
            for rows, unit in ((cls_rows, "accuracy %"), (reg_rows, "R^2"))
            for r in rows
        ]
        Path(args.save).write_text(json.dumps(saved))
    if args.plots:
        if cls_rows:
            plot(cls_rows, Path(args.plots), "accuracy %")
        if reg_rows:
            plot(reg_rows, Path(args.plots), "R^2")


if __name__ == "__main__":
    main()
