"""Accounting benchmark: dpconvex's objective-perturbation accounting next to dp_accounting.

Run:  python benchmarks/bench_accounting.py [--repeats N]

Prints one table: median wall time of each task over N repeats, the result it
computed, and, for the PLD composition, the ratio to dp_accounting's own
Gaussian PLD composition timed in the same run. BLAS threads are pinned to 1
(set below, before numpy loads) and the setting is printed with the figures.
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
from dp_accounting import dp_event  # noqa: E402
from dp_accounting.pld import pld_privacy_accountant  # noqa: E402

from dpconvex.accounting import (  # noqa: E402
    ObjectivePerturbationDpEvent,
    PrivacyAccountant,
    amp_parameters,
    objpert_delta,
    objpert_epsilon,
)

FIG4 = {"sigma": 8.0, "lam": 10.0, "beta": 1.0, "lipschitz": 1.0}


def timed(fn, repeats):
    times, result = [], None
    for _ in range(repeats):
        start = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times), result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    r = args.repeats

    eps_grid = np.linspace(-1.0, 3.0, 10_000)
    rows = []

    t, res = timed(lambda: objpert_delta(eps_grid, **FIG4), r)
    at_one = int(np.argmin(np.abs(eps_grid - 1.0)))
    rows.append(
        (
            "Thm 3.1 delta(eps), 10^4 eps values",
            t,
            f"delta({eps_grid[at_one]:.4f})={res[at_one]:.4e}",
            None,
        )
    )

    t, res = timed(lambda: objpert_epsilon(1e-5, **FIG4), r)
    rows.append(("Thm 3.1 eps(delta=1e-5) inversion", t, f"eps={res:.6f}", None))

    event = ObjectivePerturbationDpEvent(**FIG4)
    t_ours, res = timed(lambda: PrivacyAccountant("pld").compose(event, 1000).get_epsilon(1e-5), r)

    def gaussian_pld():
        acc = pld_privacy_accountant.PLDAccountant(value_discretization_interval=1e-4)
        return acc.compose(dp_event.GaussianDpEvent(8.0), 1000).get_epsilon(1e-5)

    def gaussian_pld_self_composed():
        # dp_accounting folds k Gaussians into one of noise sigma/sqrt(k); force a real
        # k-fold PLD composition by composing a PLD 1000 times through self_compose.
        acc = pld_privacy_accountant.PLDAccountant(value_discretization_interval=1e-4)
        ev = dp_event.PoissonSampledDpEvent(1.0, dp_event.GaussianDpEvent(8.0))
        return acc.compose(ev, 1000).get_epsilon(1e-5)

    t_g, res_g = timed(gaussian_pld, r)
    t_gs, res_gs = timed(gaussian_pld_self_composed, r)
    rows.append(
        ("ObjPert PLD, 1000-fold (sigma=8, lam=10)", t_ours, f"eps={res:.4f}", t_ours / t_gs)
    )
    rows.append(
        ("  dp_accounting Gaussian PLD, 1000 self-compositions", t_gs, f"eps={res_gs:.4f}", 1.0)
    )
    rows.append(
        ("  dp_accounting Gaussian PLD, closed-form 1000-fold", t_g, f"eps={res_g:.4f}", t_g / t_gs)
    )

    t, res = timed(lambda: PrivacyAccountant("rdp").compose(event, 1000).get_epsilon(1e-5), r)
    rows.append(("ObjPert RDP, 1000-fold (refined alpha)", t, f"eps={res:.4f}", None))

    for accounting in ("rdp", "pld"):
        t, res = timed(lambda a=accounting: amp_parameters(1.0, 1e-5, accounting=a), r)
        rows.append(
            (
                f"AMP calibration eps=1 ({accounting})",
                t,
                f"sigma={res.sigma:.4f} lam={res.lam:.4f}",
                None,
            )
        )

    print(
        f"dpconvex accounting benchmark | python {platform.python_version()} | "
        f"OMP_NUM_THREADS={os.environ['OMP_NUM_THREADS']} | repeats={r} (median)"
    )
    print(f"{'task':<54} {'seconds':>9} {'ratio':>7}  result")
    for name, secs, result, ratio in rows:
        shown = f"{ratio:7.2f}" if ratio is not None else " " * 7
        print(f"{name:<54} {secs:9.4f} {shown}  {result}")
    print("ratio: time / dp_accounting's 1000 self-compositions of a Gaussian PLD (same run)")


if __name__ == "__main__":
    main()
