"""Accounting benchmark: dpconvex's objective-perturbation accounting next to dp_accounting.

Run:  python benchmarks/bench_accounting.py [--repeats N] [--calibration]

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
from search_runs import fit_counting_runs  # noqa: E402

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
    parser.add_argument(
        "--calibration",
        action="store_true",
        help="time cold and warm calibrations (DP-SGD, AMP) and the accounting share of a fit",
    )
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

    if args.calibration:
        calibration_tables(r)
        return
    print(
        f"dpconvex accounting benchmark | python {platform.python_version()} | "
        f"OMP_NUM_THREADS={os.environ['OMP_NUM_THREADS']} | repeats={r} (median)"
    )
    print(f"{'task':<54} {'seconds':>9} {'ratio':>7}  result")
    for name, secs, result, ratio in rows:
        shown = f"{ratio:7.2f}" if ratio is not None else " " * 7
        print(f"{name:<54} {secs:9.4f} {shown}  {result}")
    print("ratio: time / dp_accounting's 1000 self-compositions of a Gaussian PLD (same run)")


def _clear_caches() -> None:
    from dpconvex.accounting import accountants

    accountants._RESULTS.clear()
    accountants._COMPOSED.clear()
    accountants._BASE_PLDS.clear()


def _cold_warm(fn, repeats):
    """(median cold time, median warm time, result): caches cleared before each cold call."""
    cold, warm, result = [], [], None
    for _ in range(repeats):
        _clear_caches()
        start = time.perf_counter()
        result = fn()
        cold.append(time.perf_counter() - start)
        start = time.perf_counter()
        fn()
        warm.append(time.perf_counter() - start)
    return statistics.median(cold), statistics.median(warm), result


def calibration_tables(repeats: int) -> None:
    """Tables of the accounting issue: calibration speed, agreement, share of a fit."""
    from dp_accounting import mechanism_calibration

    from dpconvex import DPLogisticRegression
    from dpconvex.accounting import calibrators, dpsgd_event, dpsgd_noise_multiplier, pld_grid
    from dpconvex.datasets import load_adult
    from dpconvex.mechanisms.amp import default_sigma_out, default_tau

    X, _, y, _ = load_adult().split(test_size=0.2, seed=0)
    n = X.shape[0]
    q, delta, rtol = 256 / n, 1e-5, 2e-4
    print(
        f"dpconvex calibration benchmark | python {platform.python_version()} | "
        f"OMP_NUM_THREADS={os.environ['OMP_NUM_THREADS']} | repeats={repeats} (median) | "
        f"q = 256/{n}, delta = {delta:g}"
    )
    print("\nDP-SGD noise multiplier (PLD, grid 1e-4 * epsilon; the rtol of a fit, 2e-4)")
    head = (
        f"{'eps':>5} {'steps':>7} {'cold s':>8} {'warm s':>8} {'dp_acc s':>9} "
        f"{'z':>10} {'z/z_bracket-1':>14} {'z/z_dp_acc-1':>13}"
    )
    print(head)
    for eps in (0.1, 1.0, 8.0):
        for steps in (1000, 10_000, 100_000):
            cold, warm, z = _cold_warm(
                lambda e=eps, s=steps: dpsgd_noise_multiplier(e, delta, q, s, rtol=rtol), repeats
            )
            _clear_caches()
            saved = calibrators.MODEL_SEARCH_EVALUATIONS
            calibrators.MODEL_SEARCH_EVALUATIONS = 0  # the bracketing search alone
            try:
                z_bracket = dpsgd_noise_multiplier(eps, delta, q, steps, rtol=rtol)
            finally:
                calibrators.MODEL_SEARCH_EVALUATIONS = saved
            h = pld_grid(eps)
            start = time.perf_counter()
            z_dp = mechanism_calibration.calibrate_dp_mechanism(
                lambda h=h: pld_privacy_accountant.PLDAccountant(value_discretization_interval=h),
                lambda z, s=steps: dpsgd_event(z, q, s),
                eps,
                delta,
                mechanism_calibration.ExplicitBracketInterval(0.5 * z, 2.0 * z),
                tol=rtol * z,
            )
            t_dp = time.perf_counter() - start
            print(
                f"{eps:5g} {steps:7d} {cold:8.3f} {warm:8.4f} {t_dp:9.3f} {z:10.5f} "
                f"{z / z_bracket - 1:14.2e} {z / z_dp - 1:13.2e}"
            )
    print("z_bracket: the bracketing search of earlier releases, same accountant and tolerance;")
    print("dp_acc: dp_accounting's calibrate_dp_mechanism with its own PLD accountant, same grid")

    print("\nAMP parameters for Adult (default plan: tau = 1e-12 n L, derived sigma_out)")
    print(f"{'eps':>5} {'cold s':>8} {'warm s':>8} {'sigma':>10} {'lam':>8} {'epsilon':>12}")
    beta, lipschitz = 0.5, 2**0.5
    tau = default_tau(n, lipschitz)
    for eps in (0.1, 1.0, 8.0):
        so = default_sigma_out(tau, beta, eps, delta, 1)
        cold, warm, cal = _cold_warm(
            lambda e=eps, s=so: calibrators.amp_parameters(
                e, delta, accounting="pld", beta=beta, lipschitz=lipschitz, tau=tau, sigma_out=s
            ),
            repeats,
        )
        print(
            f"{eps:5g} {cold:8.3f} {warm:8.4f} {cal.sigma:10.5f} {cal.lam:8.4f} {cal.epsilon:12.9f}"
        )

    print("\nAccounting share of a DP-SGD fit on Adult (cold: caches cleared before each)")
    print(f"{'eps':>5} {'fit s':>7} {'accounting s':>13} {'share':>7} {'epsilon_':>12}")
    for eps in (0.1, 1.0, 8.0):
        fits, books = [], []
        for seed in range(repeats):
            _clear_caches()
            start = time.perf_counter()
            model = DPLogisticRegression(method="dpsgd", epsilon=eps, random_state=seed)
            model.fit(X, y)
            fits.append(time.perf_counter() - start)
            p = model.mechanism_params_
            _clear_caches()
            start = time.perf_counter()
            z = dpsgd_noise_multiplier(eps, delta, p["sampling_rate"], p["steps"], rtol=rtol)
            from dpconvex.accounting import PrivacyAccountant

            spent = (
                PrivacyAccountant(value_discretization_interval=pld_grid(eps))
                .compose(dpsgd_event(z, p["sampling_rate"], p["steps"]))
                .get_epsilon(delta)
            )
            books.append(time.perf_counter() - start)
        fit, book = statistics.median(fits), statistics.median(books)
        print(f"{eps:5g} {fit:7.3f} {book:13.3f} {book / fit:7.1%} {spent:12.9f}")
    print("accounting: a cold noise calibration plus the report of its epsilon, as a fit does")

    from scipy.stats import loguniform

    from dpconvex.tuning import PrivateRandomSearch

    print("\nPrivateRandomSearch over DP-SGD's learning rate on Adult, epsilon 1 (cold)")
    print(f"{'seed':>4} {'K':>3} {'search s':>9} {'K fits s':>9} {'ratio':>6} {'run eps':>9}")
    ratios = []
    for seed in range(repeats):
        _clear_caches()
        search = PrivateRandomSearch(
            DPLogisticRegression(method="dpsgd"),
            {"learning_rate": loguniform(1e-4, 1e-1)},
            epsilon=1.0,
            random_state=seed,
        )
        start = time.perf_counter()
        k = fit_counting_runs(search, X, y)
        t_search = time.perf_counter() - start
        n_train = X.shape[0] - int(round(search.validation_fraction * X.shape[0]))
        t_fits = 0.0
        for j in range(k):  # K untuned fits of the per-run budget on as many rows, cold
            _clear_caches()
            start = time.perf_counter()
            DPLogisticRegression(method="dpsgd", epsilon=search.run_epsilon_, random_state=j).fit(
                X[:n_train], y[:n_train]
            )
            t_fits += time.perf_counter() - start
        ratios.append(t_search / t_fits)
        print(
            f"{seed:4d} {k:3d} {t_search:9.2f} {t_fits:9.2f} {t_search / t_fits:6.2f} "
            f"{search.run_epsilon_:9.5f}"
        )
    print(f"median ratio {statistics.median(ratios):.2f}: search / K untuned fits")


if __name__ == "__main__":
    main()
