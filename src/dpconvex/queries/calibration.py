"""Calibrating the Generalized Gaussian mechanism, choosing p, and the comparison with Gaussian.

* :func:`gg_sigma` — smallest sigma making k GG_p(sigma) answers (epsilon, delta)-DP,
  through :func:`dpconvex.accounting.calibrate` on the exact PLD (or RDP) of
  :mod:`dpconvex.queries.privacy`: the epsilon the accountant reports for the
  returned sigma never exceeds the target.
* :func:`thesis_sigma` — the thesis's sufficient constant 185 sqrt(k p ln(1/delta))/eps
  (Ganesh's thesis, UC Berkeley EECS-2022-53, Lemma 30 / Thm 34; even p in [4, log k]);
  a documented loose bound only (about 150x the exact sigma), never used to calibrate.
* :func:`choose_p` — the p minimizing the exact expected maximum error
  E||x||_inf after exact calibration (thesis §2.6: larger p trades average for
  maximum error; the thesis's p = Theta(log log k) rounds to 4-6 at practical k).
* :func:`counting_summary` — what ``dpconvex counting`` prints.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

from scipy import special

from .. import _validation as v
from ..accounting import (
    PrivacyAccountant,
    calibrate,
    check_epsilon,
    gaussian_epsilon,
    gaussian_sigma,
)
from ..accounting import pld as _pld
from ..accounting.limits import check_count
from .distribution import check_p, expected_max_abs, gaussian_expected_max_abs
from .privacy import (
    MIN_PLD_DELTA,
    GeneralizedGaussianDpEvent,
    coordinate_grid_points,
    coordinate_loss_sd,
    gg_delta,
)

ACCOUNTINGS = ("pld", "rdp")
#: Candidate exponents searched by :func:`choose_p`.
DEFAULT_P_CANDIDATES = (1.0, 1.5, 2.0, 3.0, 4.0, 5.0, 6.0, 8.0, 10.0, 12.0, 16.0)


def _check(k, epsilon, delta) -> tuple[int, float, float]:
    """(k, epsilon, delta) checked: k a count, epsilon within the library's budgets."""
    if isinstance(k, float) and not math.isfinite(k):
        raise ValueError(f"k must be a positive integer, got {k}")
    return (
        check_count("k", k),
        check_epsilon(epsilon),
        v.probability_open("delta", delta),
    )


def gdp_sigma_guess(k: int, epsilon: float, delta: float, p: float) -> float:
    """Starting guess (brackets only): sigma whose central-limit mu-GDP meets (eps, delta).

    mu = sqrt(k I) with I the per-coordinate Fisher information; this
    is accurate to < 0.5% for k >= 1e4 but NOT conservative at small k, so it
    only places the search bracket.
    """
    mu = 1.0 / gaussian_sigma(epsilon, delta, 1.0)
    return coordinate_loss_sd(p, 1.0) * math.sqrt(k) / mu


def thesis_sigma(k: int, p: float, epsilon: float, delta: float) -> float:
    """sigma = 185 sqrt(k p ln(1/delta)) / epsilon (Ganesh's thesis, Lemma 30 / Thm 34) — loose.

    Proved only for even p with 4 <= p <= log k, epsilon <= O(1) and delta in
    [2^-O(k/p), 1/k]. Reported for comparison.
    """
    k, epsilon, delta = _check(k, epsilon, delta)
    p = check_p(p)
    return 185.0 * math.sqrt(k * p * math.log(1.0 / delta)) / epsilon


def gg_epsilon(
    delta: float,
    p: float,
    sigma: float,
    k: int,
    sensitivity: float = 1.0,
    accounting: str = "pld",
) -> float:
    """epsilon(delta) of the k-query GG mechanism, as the accountant reports it (upper bound)."""
    if accounting not in ACCOUNTINGS:
        raise ValueError(f"accounting must be one of {ACCOUNTINGS}, got {accounting!r}")
    event = GeneralizedGaussianDpEvent(p, sigma, k, sensitivity)
    return PrivacyAccountant(accounting).compose(event).get_epsilon(delta)


def gg_sigma(
    k: int,
    epsilon: float,
    delta: float,
    p: float,
    *,
    sensitivity: float = 1.0,
    accounting: str = "pld",
    rtol: float = 1e-7,
) -> float:
    """Smallest sigma such that k GG_p(sigma) answers are (epsilon, delta)-DP (safe side).

    PLD: delta(epsilon) of the pessimistic PLD (grid 1e-4, the accountant's
    default) is <= delta at the returned sigma, so ``PrivacyAccountant("pld")``
    reports epsilon <= the target. RDP: the RDP accountant's epsilon(delta) is <=
    epsilon. p = 2 gives the analytic Gaussian with std sigma / sqrt 2 and
    l2-sensitivity sqrt(k) * sensitivity.
    """
    k, epsilon, delta = _check(k, epsilon, delta)
    p = check_p(p)
    sensitivity = v.positive("sensitivity", sensitivity)
    if accounting not in ACCOUNTINGS:
        raise ValueError(f"accounting must be one of {ACCOUNTINGS}, got {accounting!r}")
    guess = sensitivity * gdp_sigma_guess(k, epsilon, delta, p)
    if accounting == "pld":
        if delta < MIN_PLD_DELTA:
            raise ValueError(
                f"delta={delta:g} is below {MIN_PLD_DELTA:g}, the smallest delta the exact "
                "(PLD) accounting of this mechanism calibrates for; use a larger delta, or "
                "accounting='rdp'"
            )

        def cost(sigma: float) -> float:
            return float(gg_delta(epsilon, p, sigma, k, sensitivity))

        target = delta
    else:

        def cost(sigma: float) -> float:
            return gg_epsilon(delta, p, sigma, k, sensitivity, "rdp")

        target = epsilon
    # the central-limit guess is within a small factor of the answer; the ceiling turns a
    # target no sigma meets into a CalibrationError instead of an endless expansion
    return calibrate(
        cost,
        target,
        0.9 * guess,
        1.2 * guess,
        decreasing=True,
        floor=1e-300,
        ceiling=1e6 * guess,
        rtol=rtol,
    )


@dataclass(frozen=True)
class GGCalibration:
    """A calibrated GG mechanism: its parameters, exact expected errors and achieved epsilon."""

    p: float
    sigma: float
    k: int
    epsilon: float
    delta: float
    expected_max_error: float
    expected_abs_error: float
    accounting: str

    @property
    def event(self) -> GeneralizedGaussianDpEvent:
        return GeneralizedGaussianDpEvent(self.p, self.sigma, self.k)


def calibrated(
    k: int, epsilon: float, delta: float, p: float, accounting: str = "pld", rtol: float = 1e-7
) -> GGCalibration:
    """Calibrate sigma for p and report the exact expected max / mean absolute error.

    Results are cached per (k, epsilon, delta, p, accounting, rtol): a PLD
    calibration costs ~10 delta evaluations (about 0.5-1 s each), and the
    result is an immutable function of public parameters only.
    """
    k, epsilon, delta = _check(k, epsilon, delta)
    return _calibrated(k, epsilon, delta, check_p(p), accounting, float(rtol))


@functools.lru_cache(maxsize=256)
def _calibrated(
    k: int, epsilon: float, delta: float, p: float, accounting: str, rtol: float
) -> GGCalibration:
    sigma = gg_sigma(k, epsilon, delta, p, accounting=accounting, rtol=rtol)
    mean_abs = sigma * math.exp(special.gammaln(2.0 / p) - special.gammaln(1.0 / p))
    return GGCalibration(
        p=float(p),
        sigma=sigma,
        k=int(k),
        epsilon=gg_epsilon(delta, p, sigma, k, accounting=accounting),
        delta=float(delta),
        expected_max_error=expected_max_abs(p, sigma, k),
        expected_abs_error=mean_abs,
        accounting=accounting,
    )


#: Largest per-coordinate PMF (points, at the central-limit sigma) that :func:`choose_p`
#: tries for p > 1: larger ones (large epsilon, few queries, large p) take minutes per
#: calibration. p = 1 has a closed-form loss and is always tried.
MAX_SEARCH_POINTS = 1e6


def _cheap_enough(k: int, epsilon: float, delta: float, p: float) -> bool:
    sigma = gdp_sigma_guess(k, epsilon, delta, p)
    limit = _pld.MAX_GRID_POINTS if p == 1.0 else MAX_SEARCH_POINTS
    return coordinate_grid_points(p, sigma, k) <= limit


def choose_p(
    k: int,
    epsilon: float,
    delta: float,
    candidates=DEFAULT_P_CANDIDATES,
    *,
    accounting: str = "pld",
) -> tuple[GGCalibration, list[GGCalibration]]:
    """The candidate p with the smallest exact E||x||_inf after exact calibration.

    Local search over the sorted candidates: start at the candidate that is best
    under the central-limit sigma (:func:`gdp_sigma_guess`), calibrate it and its
    neighbours exactly, and move to a better neighbour until none is better.
    E max is unimodal in p in every case we computed, so this
    finds the best candidate with 3-5 calibrations; every value compared is
    exact. Depends only on (k, epsilon, delta): no data.
    With PLD accounting, candidates p > 1 whose per-query privacy-loss grid would exceed
    MAX_SEARCH_POINTS points are skipped (large epsilon with few queries), so that the
    search takes seconds to minutes, not hours.
    Returns (best, all exactly calibrated candidates, sorted by p).
    """
    k, epsilon, delta = _check(k, epsilon, delta)
    ps = sorted({check_p(p) for p in candidates})
    if not ps:
        raise ValueError("candidates must contain at least one p >= 1")
    if accounting == "pld":
        ps = [p for p in ps if _cheap_enough(k, epsilon, delta, p)]
        if not ps:
            raise ValueError(
                f"no exponent p can be calibrated exactly for k={k} at epsilon={epsilon:g}: "
                "the privacy loss of each query is too widely spread; use a smaller epsilon "
                "or more queries, or accounting='rdp'"
            )
    approx = [expected_max_abs(p, gdp_sigma_guess(k, epsilon, delta, p), k) for p in ps]
    exact: dict[int, GGCalibration] = {}

    def value(i: int) -> float:
        if i not in exact:
            exact[i] = calibrated(k, epsilon, delta, ps[i], accounting)
        return exact[i].expected_max_error

    i = min(range(len(ps)), key=approx.__getitem__)
    value(i)  # calibrated even when it has no neighbour to compare with
    while True:
        moves = [j for j in (i - 1, i + 1) if 0 <= j < len(ps) and value(j) < value(i)]
        if not moves:
            break
        i = min(moves, key=value)
    results = [exact[j] for j in sorted(exact)]
    return exact[i], results


def counting_summary(k: int, epsilon: float, delta: float, p: float | None = None) -> dict:
    """sigma, exact expected max error and achieved epsilon of the GG mechanism vs the Gaussian.

    ``p=None`` chooses p by :func:`choose_p`. The Gaussian mechanism is
    calibrated exactly (analytic Gaussian, l2-sensitivity sqrt k) and its
    expected max error computed by the same quadrature. Raises ValueError naming
    a bad parameter.
    """
    k, epsilon, delta = _check(k, epsilon, delta)
    if p is None:
        best, _ = choose_p(k, epsilon, delta)
    else:
        best = calibrated(k, epsilon, delta, check_p(p))
    g_std = gaussian_sigma(epsilon, delta, math.sqrt(k))
    g_max = gaussian_expected_max_abs(g_std, k)
    return {
        "k": k,
        "target_epsilon": epsilon,
        "delta": delta,
        "p": best.p,
        "sigma": best.sigma,
        "epsilon": best.epsilon,
        "expected_max_error": best.expected_max_error,
        "expected_abs_error": best.expected_abs_error,
        "gaussian_sigma": g_std,
        "gaussian_expected_max_error": g_max,
        "gaussian_epsilon": gaussian_epsilon(delta, math.sqrt(k), g_std),
        "ratio": best.expected_max_error / g_max,
        "thesis_sigma": thesis_sigma(k, best.p, epsilon, delta),
        "accounting": best.accounting,
    }


def format_counting_summary(summary: dict) -> str:
    """Human-readable lines for ``dpconvex counting`` from :func:`counting_summary`."""
    s = summary
    return "\n".join(
        [
            f"dpconvex counting: k={s['k']} queries, l_inf-sensitivity 1, "
            f"target epsilon={s['target_epsilon']:g}, delta={s['delta']:g}",
            f"{'mechanism':<34} {'noise scale':>12} {'E max error':>12} {'epsilon spent':>14}",
            f"{'Generalized Gaussian, p=' + format(s['p'], 'g'):<34} {s['sigma']:>12.4f} "
            f"{s['expected_max_error']:>12.2f} {s['epsilon']:>14.8f}",
            f"{'Gaussian (analytic, std)':<34} {s['gaussian_sigma']:>12.4f} "
            f"{s['gaussian_expected_max_error']:>12.2f} {s['gaussian_epsilon']:>14.8f}",
            f"ratio of expected max errors (GG / Gaussian): {s['ratio']:.4f}; the thesis's "
            f"sigma = 185 sqrt(k p ln(1/delta))/eps would be {s['thesis_sigma']:.1f}",
        ]
    )
