"""Derive PrivateRandomSearch's default settings on synthetic data (never on Adult).

Run:  python benchmarks/derive_tuning_defaults.py lr      [--seeds 3] [--save F.json]
      python benchmarks/derive_tuning_defaults.py search  [--seeds 3] [--save F.json]
      python benchmarks/derive_tuning_defaults.py plot    --load F.json --plot F.png

Two synthetic logistic problems (scikit-learn ``make_classification`` with fixed seeds,
distinct from Synthetic-L/H and from every benchmark data set):

* ``lr``: test accuracy of DP-SGD (Adam, the estimator's batch 256 and 60 epochs) against
  its learning rate, for the final run on all training rows at epsilon and for a tuning
  run on a Poisson subsample of rate q (same sampling rate, steps and noise: the batch
  scaled by q). Where the two curves peak gives the learning-rate transfer rule.
* ``search``: the released model's test accuracy of the subsampled search over
  ``learning_rate ~ loguniform(1e-4, 1e-1)`` for a grid of settings (subsample rate q,
  mean number of runs, score noise) at each epsilon.

BLAS threads are pinned to one (OMP_NUM_THREADS=1); configurations run in parallel
(joblib, --n-jobs).
"""

from __future__ import annotations

import os

os.environ.setdefault("OMP_NUM_THREADS", "1")

import argparse  # noqa: E402
import itertools  # noqa: E402
import json  # noqa: E402
import math  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402
from joblib import Parallel, delayed  # noqa: E402
from scipy.stats import loguniform  # noqa: E402
from search_runs import fit_counting_runs  # noqa: E402
from sklearn.datasets import make_classification  # noqa: E402

from dpconvex import DPLogisticRegression, PrivateRandomSearch  # noqa: E402

DATASETS = {
    # n_train + n_test rows, features, informative, label noise, class separation, seed
    "syn-a": dict(n_samples=45_000, n_features=50, n_informative=10, flip_y=0.15,
                  class_sep=1.0, random_state=7),
    "syn-b": dict(n_samples=25_000, n_features=100, n_informative=20, flip_y=0.1,
                  class_sep=0.8, random_state=11),
}  # fmt: skip
RATES = np.geomspace(1e-4, 1e-1, 10)
EPSILONS = (0.1, 0.3, 1.0, 3.0, 8.0)


def dataset(name: str):
    X, y = make_classification(**DATASETS[name])
    n_test = len(y) // 5
    return X[n_test:], X[:n_test], y[n_test:], y[:n_test]


def lr_point(name, eps, q, rate, seed):
    """Test accuracy of one DP-SGD run: all rows (q = 1) or a tuning run on a q-subsample."""
    Xtr, Xte, ytr, yte = dataset(name)
    rng = np.random.default_rng([seed, 99])
    est = DPLogisticRegression(method="dpsgd", epsilon=eps, learning_rate=rate, random_state=seed)
    public = None  # the public expected size a subsample run is calibrated for
    if q < 1:
        rows = rng.random(len(ytr)) < q
        public = round(q * len(ytr))
        est.set_params(batch_size=max(1, round(256 * q)))
        Xtr, ytr = Xtr[rows], ytr[rows]
    est.fit(Xtr, ytr, public_n=public)
    return dict(data=name, eps=eps, q=q, rate=rate, seed=seed, acc=est.score(Xte, yte))


def search_point(name, eps, q, mu, noise_factor, seed, share=0.0, shape=1.0):
    Xtr, Xte, ytr, yte = dataset(name)
    q = q if q is not None else min(0.5, max(0.02, 2500 / len(ytr)))
    val_rows = q * 0.2 * len(ytr)
    start = time.perf_counter()
    s = PrivateRandomSearch(
        DPLogisticRegression(method="dpsgd"),
        {"learning_rate": loguniform(1e-4, 1e-1)},
        epsilon=eps,
        strategy="subsample",
        subsample=q,
        mu=mu,
        shape=shape,
        default_share=share,
        score_noise=max(1.0, noise_factor * math.sqrt(val_rows)),
        random_state=seed,
    )
    try:
        k = fit_counting_runs(s, Xtr, ytr)
    except Exception as exc:  # noqa: BLE001 - recorded, the grid goes on
        return dict(data=name, eps=eps, q=q, mu=mu, nf=noise_factor, seed=seed, share=share,
                    shape=shape, error=str(exc))  # fmt: skip
    return dict(
        data=name, eps=eps, q=q, mu=mu, nf=noise_factor, seed=seed, share=share, shape=shape,
        acc=s.score(Xte, yte), run_eps=s.run_epsilon_, k=k,
        rate=s.best_params_.get("learning_rate"), seconds=time.perf_counter() - start,
    )  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("what", choices=("lr", "search", "search2", "plot"))
    parser.add_argument("--load", help="plot: the rows saved by a search run")
    parser.add_argument("--plot", help="plot: the figure to write")
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--n-jobs", type=int, default=2)
    parser.add_argument("--epsilons", default=",".join(map(str, EPSILONS)))
    parser.add_argument("--save")
    args = parser.parse_args()
    if args.what == "plot":
        with open(args.load) as handle:
            plot(json.load(handle), args.plot)
        return
    epsilons = [float(e) for e in args.epsilons.split(",")]
    seeds = range(args.seeds)
    if args.what == "lr":
        jobs = [
            delayed(lr_point)(name, eps, q, rate, seed)
            for name, eps, q, rate, seed in itertools.product(
                DATASETS, epsilons, (1.0, 0.05, 0.15), RATES, seeds
            )
        ]
    elif args.what == "search2":  # Poisson K, the default share, noise; q = 2,500 / n
        jobs = [
            delayed(search_point)(name, eps, None, mu, nf, seed, share, math.inf)
            for name, eps, mu, nf, share, seed in itertools.product(
                DATASETS, epsilons, (3.0, 6.0), (0.5, 1.0, 2.0), (0.0, 0.5), seeds
            )
        ]
    else:
        jobs = [
            delayed(search_point)(name, eps, q, mu, nf, seed)
            for name, eps, q, mu, nf, seed in itertools.product(
                DATASETS, epsilons, (0.05, 0.1, 0.2, 0.4), (3.0, 8.0), (0.5, 2.0), seeds
            )
        ]
    print(f"OMP_NUM_THREADS={os.environ['OMP_NUM_THREADS']}, {len(jobs)} runs, "
          f"n_jobs={args.n_jobs}", flush=True)  # fmt: skip
    start = time.perf_counter()
    rows = Parallel(n_jobs=args.n_jobs, verbose=5)(jobs)
    print(f"{time.perf_counter() - start:.0f} s")
    if args.save:
        with open(args.save, "w") as handle:
            json.dump(rows, handle, indent=0)
    summarize(args.what, rows)


def summarize(what: str, rows: list[dict]) -> None:
    import pandas as pd

    frame = pd.DataFrame(rows)
    if what == "lr":
        mean = frame.groupby(["data", "eps", "q", "rate"])["acc"].mean().reset_index()
        best = mean.loc[mean.groupby(["data", "eps", "q"])["acc"].idxmax()]
        print(best.to_string(index=False))
    else:
        ok = frame[frame.get("acc").notna()] if "acc" in frame else frame
        keys = ["data", "eps", "q", "mu", "nf"] + [k for k in ("share",) if k in ok]
        table = ok.groupby(keys)["acc"].mean().unstack(["nf"])
        print((100 * table).round(2).to_string())


def plot(rows: list[dict], path: str) -> None:
    """Accuracy of the released model against q, one panel per data set and epsilon."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import pandas as pd

    frame = pd.DataFrame([r for r in rows if r.get("acc") is not None])
    names, epsilons = sorted(frame["data"].unique()), sorted(frame["eps"].unique())
    fig, axes = plt.subplots(
        len(names), len(epsilons), figsize=(3 * len(epsilons), 2.6 * len(names)), squeeze=False
    )
    for i, name in enumerate(names):
        for j, eps in enumerate(epsilons):
            ax = axes[i][j]
            cell = frame[(frame["data"] == name) & (frame["eps"] == eps)]
            for (mu, nf), part in cell.groupby(["mu", "nf"]):
                mean = part.groupby("q")["acc"].mean() * 100
                ax.plot(
                    mean.index, mean.values, marker="o", label=f"mean runs {mu:g}, noise {nf:g}"
                )
            ax.set_xscale("log")
            ax.set_xticks(
                sorted(cell["q"].unique()), [f"{q:g}" for q in sorted(cell["q"].unique())]
            )
            ax.minorticks_off()
            ax.set_title(f"{name}, epsilon {eps:g}", fontsize=9)
            ax.set_xlabel("subsample rate q")
            if j == 0:
                ax.set_ylabel("test accuracy %")
    axes[0][0].legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


if __name__ == "__main__":
    main()
