"""Seed-002 (DP-SCO) benchmark: run time of each algorithm and the noise each calibration needs.

Run:  python benchmarks/bench_sco.py [--n N] [--repeats R]

Prints one table: for every algorithm, the median wall time of a release (the
accountant's calibration is memoized after the first call, so the first call is
reported separately), and the noise the paper's calibration and the accountant's need
for the same (epsilon, delta). The rates themselves are measured by
``dpconvex reproduce sco-rates`` (:func:`dpconvex.experiments.sco_rates.reproduce_sco_rates`).
BLAS threads are pinned to 1 (set below, before numpy loads) and printed.
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import platform  # noqa: E402
import statistics  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402

from dpconvex.sco import (  # noqa: E402
    L1Ball,
    alg4_max_epsilon,
    approx_objective_perturbation,
    batched_truncated_mirror_descent,
    noisy_mirror_descent,
    phased_dpsgd,
    shuffled_truncated_mirror_descent,
)
from dpconvex.sco import privacy as _privacy  # noqa: E402

DELTA = 1e-5


def _problem(n: int, d: int, q: float, rng, kind: str):
    X = rng.choice([-1.0, 1.0], (n, d)) / d ** (1 / q)
    w = np.zeros(d)
    w[:2] = [0.5, -0.3]
    if kind == "logistic":
        return X, np.where(rng.random(n) < 1 / (1 + np.exp(-X @ w)), 1.0, -1.0)
    return X, X @ w + rng.standard_t(3, n)


def _algorithms(n: int):
    rng = np.random.default_rng(0)
    d = 10
    Xe, ye = _problem(n, d, 2.0, rng, "logistic")
    Xp, yp = _problem(n, d, 3.0, rng, "logistic")
    Xq, yq = _problem(n, d, 4 / 3, rng, "logistic")
    Xh, yh = _problem(n, d, 3.0, rng, "heavy")
    eps4 = 0.9 * alg4_max_epsilon(n, DELTA)
    common = dict(delta=DELTA, row_bound=1.0)
    return {
        "Alg 1 App-ObjP (l1 ball)": lambda cal, r: approx_objective_perturbation(
            Xe, ye, "logistic", L1Ball(d), epsilon=0.5, calibration=cal, random_state=r, **common
        ),
        "Alg 3 noisy mirror descent (p=1.5)": lambda cal, r: noisy_mirror_descent(
            Xp, yp, "logistic", p=1.5, epsilon=0.5, calibration=cal, random_state=r, **common
        ),
        "Alg 6 phased DP-SGD (p=4)": lambda cal, r: phased_dpsgd(
            Xq, yq, "logistic", p=4.0, epsilon=0.5, calibration=cal, random_state=r, **common
        ),
        "Alg 7 truncated batched MD": lambda cal, r: batched_truncated_mirror_descent(
            Xh, yh, p=1.5, radius=1.0, epsilon=0.5, calibration=cal, random_state=r, **common
        ),
        f"Alg 4 shuffled truncated MD (eps={eps4:.3g})": lambda cal, r: (
            shuffled_truncated_mirror_descent(
                Xh,
                yh,
                p=1.5,
                radius=1.0,
                epsilon=eps4,
                calibration=cal,
                random_state=r,
                **common,
            )
        ),
    }


def _noise(info: dict) -> float:
    for key in ("sigma1", "sigma", "noise_multiplier"):
        if key in info:
            return info[key]
    return float("nan")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=20000)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    print(
        f"dpconvex seed-002 benchmark: n={args.n}, d=10, delta={DELTA:g}, "
        f"OMP_NUM_THREADS={os.environ['OMP_NUM_THREADS']}, python {platform.python_version()}"
    )
    header = (
        f"{'algorithm':44s} {'first s':>8s} {'median s':>9s} "
        f"{'noise paper':>12s} {'noise accountant':>17s} {'ratio':>6s}"
    )
    print(header)
    for name, run in _algorithms(args.n).items():
        _privacy._CACHE.clear()
        t0 = time.perf_counter()
        acc = run("accountant", 0)
        first = time.perf_counter() - t0
        times = []
        for r in range(args.repeats):
            t0 = time.perf_counter()
            run("accountant", r + 1)
            times.append(time.perf_counter() - t0)
        paper = run("paper", 0)
        a, p = _noise(acc.info), _noise(paper.info)
        print(
            f"{name:44s} {first:8.3f} {statistics.median(times):9.3f} "
            f"{p:12.5g} {a:17.5g} {a / p:6.3f}"
        )


if __name__ == "__main__":
    main()
