"""Private tuning of DP-SGD's learning rate against not tuning, and against dishonest tuning.

Run:  python benchmarks/bench_tuning.py [--data adult,synthetic-l] [--epsilons 0.1,1,8]
                                        [--seeds 3] [--n-jobs 1] [--workers 1]
                                        [--save ROWS.json]

For each data set and epsilon (delta = 1e-5), on one fixed public 80/20 split, over
``seeds`` noise seeds, the test accuracy (mean +- standard error) and the wall time
(median) of:

* untuned: ``DPLogisticRegression(method="dpsgd", epsilon=eps)`` with its defaults;
* search: ``PrivateRandomSearch`` over ``learning_rate ~ loguniform(1e-4, 1e-1)`` with
  every other argument at its default (selection by the noisy validation score, nothing
  public; on data this size the default strategy tunes on a secret subsample and trains
  the final model once on all rows, Koskela & Kulkarni 2023); a ``CalibrationError`` is
  counted and reported, not averaged;
* repeat: the same with ``strategy="repeat"`` (Papernot-Steinke repeat-and-select on
  all training rows, the model of the best run released; other settings at their
  defaults);
* dishonest: the same estimator at each of 8 learning rates (geometric, 1e-4 to 1e-1),
  each at the full epsilon, the rate with the best mean *test* accuracy over the seeds
  reported (what papers call tuning on the test set: its selection is not private).

BLAS threads are pinned to 1 (printed with the figures). ``--workers`` runs that many
seeds at once (joblib processes): the times are then those of a loaded machine.
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import json  # noqa: E402
import platform  # noqa: E402
import statistics  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402
from scipy.stats import loguniform  # noqa: E402
from search_runs import fit_counting_runs  # noqa: E402

from dpconvex import DPLogisticRegression  # noqa: E402
from dpconvex.accounting import CalibrationError  # noqa: E402
from dpconvex.datasets import load_adult, load_synthetic_l  # noqa: E402
from dpconvex.tuning import PrivateRandomSearch  # noqa: E402

DELTA = 1e-5
LOADERS = {"adult": load_adult, "synthetic-l": load_synthetic_l}
GRID = np.geomspace(1e-4, 1e-1, 8)


def _timed(fn):
    start = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - start


def run(name: str, eps: float, seed: int, n_jobs: int) -> list[dict]:
    X_train, X_test, y_train, y_test = LOADERS[name]().split(test_size=0.2, seed=0)
    rows = []
    model, t = _timed(
        lambda: DPLogisticRegression(
            method="dpsgd", epsilon=eps, delta=DELTA, random_state=seed
        ).fit(X_train, y_train)
    )
    rows.append(dict(data=name, eps=eps, seed=seed, method="untuned",
                     acc=float(model.score(X_test, y_test)), seconds=t))  # fmt: skip
    for method, extra in (("search", {}), ("repeat", {"strategy": "repeat"})):
        search = PrivateRandomSearch(
            DPLogisticRegression(method="dpsgd"),
            {"learning_rate": loguniform(1e-4, 1e-1)},
            epsilon=eps,
            delta=DELTA,
            random_state=seed,
            n_jobs=n_jobs,
            **extra,
        )
        try:
            k, t = _timed(lambda s=search: fit_counting_runs(s, X_train, y_train))
            rows.append(dict(data=name, eps=eps, seed=seed, method=method,
                             acc=float(search.score(X_test, y_test)), seconds=t,
                             runs=k, run_eps=search.run_epsilon_,
                             spent=search.epsilon_, strategy=search.strategy_,
                             rate=search.best_params_.get("learning_rate")))  # fmt: skip
        except CalibrationError as error:
            rows.append(dict(data=name, eps=eps, seed=seed, method=method, acc=None,
                             seconds=None, error=str(error)))  # fmt: skip
    for lr in GRID:
        model, t = _timed(
            lambda r=lr: DPLogisticRegression(
                method="dpsgd", epsilon=eps, delta=DELTA, learning_rate=float(r),
                random_state=seed,
            ).fit(X_train, y_train)
        )  # fmt: skip
        rows.append(dict(data=name, eps=eps, seed=seed, method=f"lr={lr:.2g}",
                         acc=float(model.score(X_test, y_test)), seconds=t))  # fmt: skip
    return rows


def _mean_se(values):
    values = [v for v in values if v is not None]
    if not values:
        return float("nan"), float("nan"), 0
    mean = float(np.mean(values))
    se = float(np.std(values, ddof=1) / np.sqrt(len(values))) if len(values) > 1 else 0.0
    return mean, se, len(values)


def table(rows: list[dict]) -> None:
    print(f"{'data':<12} {'eps':>5} {'method':<24} {'acc %':>15} {'ok':>4} {'seconds':>8}")
    for name in dict.fromkeys(r["data"] for r in rows):
        for eps in dict.fromkeys(r["eps"] for r in rows if r["data"] == name):
            cell = [r for r in rows if r["data"] == name and r["eps"] == eps]
            grid = {}
            for r in cell:
                if r["method"].startswith("lr="):
                    grid.setdefault(r["method"], []).append(r)
            best = max(grid.values(), key=lambda rs: np.mean([r["acc"] for r in rs]))
            picks = {
                "untuned": [r for r in cell if r["method"] == "untuned"],
                "search": [r for r in cell if r["method"] == "search"],
                "repeat": [r for r in cell if r["method"] == "repeat"],
                "dishonest": best,
            }
            for method, rs in picks.items():
                mean, se, ok = _mean_se([r["acc"] for r in rs])
                times = [r["seconds"] for r in rs if r["seconds"] is not None]
                secs = statistics.median(times) if times else float("nan")
                label = method if method != "dishonest" else f"dishonest ({rs[0]['method']})"
                print(
                    f"{name:<12} {eps:5g} {label:<24} {100 * mean:8.2f} +- {100 * se:4.2f} "
                    f"{ok:>4} {secs:8.2f}"
                )
            for method in ("search", "repeat"):
                errors = [r["error"] for r in cell if r["method"] == method and r.get("error")]
                if errors:
                    print(f"{'':<19}{method} refused ({len(errors)}x): {errors[0][:160]}...")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", default="adult")
    parser.add_argument("--epsilons", default="0.1,1,8")
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--n-jobs", type=int, default=1, help="PrivateRandomSearch's n_jobs")
    parser.add_argument("--workers", type=int, default=1, help="seeds run at once")
    parser.add_argument("--save")
    parser.add_argument("--load", help="print (and plot) rows saved by an earlier run")
    parser.add_argument("--plot", help="write a figure of accuracy against epsilon")
    args = parser.parse_args()
    if args.load:
        with open(args.load) as handle:
            rows = json.load(handle)
        table(rows)
        if args.plot:
            plot(rows, args.plot)
        return
    print(
        f"dpconvex tuning benchmark | python {platform.python_version()} | "
        f"OMP_NUM_THREADS={os.environ['OMP_NUM_THREADS']} | seeds={args.seeds} | "
        f"n_jobs={args.n_jobs} | workers={args.workers} | delta={DELTA:g}"
    )
    from joblib import Parallel, delayed

    jobs = [
        delayed(run)(name, eps, seed, args.n_jobs)
        for name in args.data.split(",")
        for eps in (float(e) for e in args.epsilons.split(","))
        for seed in range(args.seeds)
    ]
    rows = [r for out in Parallel(n_jobs=args.workers)(jobs) for r in out]
    table(rows)
    if args.save:
        with open(args.save, "w") as handle:
            json.dump(rows, handle, indent=1)
    if args.plot:
        plot(rows, args.plot)


def plot(rows: list[dict], path: str) -> None:
    """Mean test accuracy against epsilon, one panel per data set."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = list(dict.fromkeys(r["data"] for r in rows))
    fig, axes = plt.subplots(1, len(names), figsize=(5.2 * len(names), 3.8), squeeze=False)
    for ax, name in zip(axes[0], names, strict=True):
        epsilons = sorted({r["eps"] for r in rows if r["data"] == name})
        for method, style in (("untuned", "s--"), ("search", "o-"), ("repeat", "^:")):
            means = []
            for eps in epsilons:
                accs = [r["acc"] for r in rows if r["data"] == name and r["eps"] == eps
                        and r["method"] == method and r["acc"] is not None]  # fmt: skip
                means.append(100 * np.mean(accs) if accs else np.nan)
            label = {"search": "search, defaults (subsample)", "repeat": "repeat-and-select"}
            ax.semilogx(epsilons, means, style, label=label.get(method, method))
        best = []
        for eps in epsilons:
            grid = {}
            for r in rows:
                if r["data"] == name and r["eps"] == eps and r["method"].startswith("lr="):
                    grid.setdefault(r["method"], []).append(r["acc"])
            best.append(100 * max(np.mean(v) for v in grid.values()))
        ax.semilogx(epsilons, best, "k.", label="dishonest best rate (test set)")
        ax.set_title(name)
        ax.set_xlabel("epsilon (delta = 1e-5)")
        ax.set_ylabel("test accuracy %")
        ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


if __name__ == "__main__":
    main()
