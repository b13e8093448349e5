"""Counting-query benchmark: exact GG calibration time and the expected-max-error table.

Run:  python benchmarks/bench_counting.py [--epsilon E] [--delta D] [--max-k K] [--repeats N]

Prints two tables for k = 1e2 ... max-k (spec ganesh-thesis §2.6):

1. the exactly calibrated Generalized Gaussian mechanism at p = 4 and at the
   p chosen by :func:`dpconvex.queries.choose_p`, with its exact expected maximum
   error, next to the analytic Gaussian mechanism (ratio = GG / Gaussian), and
   the thesis's loose sigma = 185 sqrt(k p ln(1/delta)) / eps for comparison;
2. wall time of one PLD evaluation delta(eps), one calibration of sigma (PLD,
   safe side), one RDP calibration, and choose_p.

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

from dpconvex.accounting import gaussian_sigma  # noqa: E402
from dpconvex.queries import (  # noqa: E402
    calibrated,
    choose_p,
    gaussian_expected_max_abs,
    gg_delta,
    gg_sigma,
    thesis_sigma,
)
from dpconvex.queries import calibration as _calibration  # noqa: E402


def clear_calibration_cache() -> None:
    _calibration._calibrated.cache_clear()


def timed(fn, repeats: int):
    times, result = [], None
    for _ in range(repeats):
        start = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times), result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epsilon", type=float, default=1.0)
    parser.add_argument("--delta", type=float, default=1e-6)
    parser.add_argument("--max-k", type=int, default=1_000_000)
    parser.add_argument("--repeats", type=int, default=1)
    args = parser.parse_args()
    eps, delta = args.epsilon, args.delta
    ks = [k for k in (100, 1_000, 10_000, 100_000, 1_000_000) if k <= args.max_k]
    threads = {v: os.environ.get(v) for v in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS")}
    print(
        f"dpconvex counting benchmark: eps={eps}, delta={delta}; {platform.python_version()}, "
        f"{platform.machine()}, threads {threads}"
    )
    print()
    print("Expected max error E||x||_inf (exact calibration and quadrature), ratio = GG / Gaussian")
    header = (
        f"{'k':>9} {'Gauss std':>10} {'Gauss Emax':>11} | {'p=4 sigma':>10} "
        f"{'p=4 Emax':>10} {'ratio':>6} | {'best p':>6} {'sigma':>10} {'Emax':>10} "
        f"{'ratio':>6} {'eps spent':>10} | {'thesis sigma':>12}"
    )
    print(header)
    print("-" * len(header))
    timings = []
    for k in ks:
        g_std = gaussian_sigma(eps, delta, k**0.5)
        g_max = gaussian_expected_max_abs(g_std, k)
        p4 = calibrated(k, eps, delta, 4.0)
        clear_calibration_cache()  # time choose_p from scratch (calibrated() is cached)
        t_choose, (best, _) = timed(lambda k=k: choose_p(k, eps, delta), 1)
        print(
            f"{k:>9} {g_std:>10.2f} {g_max:>11.1f} | {p4.sigma:>10.2f} "
            f"{p4.expected_max_error:>10.1f} {p4.expected_max_error / g_max:>6.3f} | "
            f"{best.p:>6g} {best.sigma:>10.2f} {best.expected_max_error:>10.1f} "
            f"{best.expected_max_error / g_max:>6.3f} {best.epsilon:>10.7f} | "
            f"{thesis_sigma(k, 4.0, eps, delta):>12.0f}"
        )
        t_delta, _ = timed(lambda k=k, s=p4.sigma: gg_delta(eps, 4.0, s, k), args.repeats)
        t_cal, _ = timed(lambda k=k: gg_sigma(k, eps, delta, 4.0), args.repeats)
        t_rdp, _ = timed(lambda k=k: gg_sigma(k, eps, delta, 4.0, accounting="rdp"), 1)
        timings.append((k, t_delta, t_cal, t_rdp, t_choose))
    print()
    print("Wall time (seconds, median of repeats), p = 4")
    header = (
        f"{'k':>9} {'PLD delta(eps)':>15} {'calibrate (PLD)':>16} "
        f"{'calibrate (RDP)':>16} {'choose_p':>9}"
    )
    print(header)
    print("-" * len(header))
    for k, t_delta, t_cal, t_rdp, t_choose in timings:
        print(f"{k:>9} {t_delta:>15.3f} {t_cal:>16.2f} {t_rdp:>16.2f} {t_choose:>9.2f}")


if __name__ == "__main__":
    main()
