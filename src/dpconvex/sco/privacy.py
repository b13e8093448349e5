"""Noise calibration for the algorithms of Su, Zhao & Wang: the paper's formulas and ours.

``calibration="paper"`` reproduces the recipes of Su, Zhao & Wang (arXiv 2303.18047),
taking the safe side where the paper prints inconsistent constants: Lemma 3 for the
Generalized Gaussian mechanism, Lemma 1 (advanced composition) across steps, basic
composition across the parts of a mechanism. ``calibration="accountant"`` keeps the
same per-mechanism lemmas but composes them by their privacy-loss distributions
(:mod:`dpconvex.sco.events`), and calibrates the noise with
:func:`dpconvex.accounting.calibrate`, which returns the safe side: the epsilon
reported for the returned noise never exceeds the target.
"""

from __future__ import annotations

import math
from collections.abc import Callable

from dp_accounting import dp_event

from .. import _validation as v
from ..accounting import PrivacyAccountant, calibrate

CALIBRATIONS = ("accountant", "paper")


def check_calibration(calibration: str) -> str:
    if calibration not in CALIBRATIONS:
        raise ValueError(f"calibration must be one of {CALIBRATIONS}, got {calibration!r}")
    return calibration


def check_privacy(epsilon: float, delta: float, calibration: str) -> tuple[float, float]:
    """Validate (epsilon, delta); the paper's calibrations are proved for 0 < epsilon < 1 only."""
    epsilon = v.positive("epsilon", epsilon)
    delta = v.probability_open("delta", delta)
    if check_calibration(calibration) == "paper" and epsilon >= 1:
        raise ValueError(
            f"the paper's calibration is proved for 0 < epsilon < 1 only; "
            f"got epsilon={epsilon}: use calibration='accountant'"
        )
    return epsilon, delta


def gg_sigma(epsilon: float, delta: float, sensitivity: float, kappa: float) -> float:
    """sigma = sqrt(2 kappa log(1/delta)) s / eps: the GG mechanism of Su et al., Lemma 3.

    (eps, delta)-DP for a query of ||.||_*-sensitivity s, noise GG_{||.||_+}(0, sigma^2),
    0 < eps < 1. With kappa = 1 and ||.||_+ = ||.||_2 this is a Gaussian mechanism;
    tests check it against the exact Gaussian profile.
    """
    epsilon = v.positive("epsilon", epsilon)
    if epsilon >= 1:
        raise ValueError(f"the Generalized Gaussian calibration needs epsilon < 1, got {epsilon}")
    delta = v.probability_open("delta", delta)
    return math.sqrt(2.0 * kappa * math.log(1.0 / delta)) * v.positive("s", sensitivity) / epsilon


def advanced_composition_step(epsilon: float, delta: float, steps: int) -> tuple[float, float]:
    """Per-step (eps', delta') whose ``steps``-fold composition is (epsilon, delta)-DP.

    Su et al., Lemma 1 (Dwork-Rothblum-Vadhan): eps' = eps / (2 sqrt(2T ln(2/d))) and
    delta' = d / T give (eps, 2d) in total (the lemma's delta is 2d, not d), so it is applied with
    d = delta / 2: eps' = eps / (2 sqrt(2T ln(4/delta))), delta' = delta / (2T).
    Needs 0 < epsilon < 1.
    """
    epsilon = v.positive("epsilon", epsilon)
    if epsilon >= 1:
        raise ValueError(f"advanced composition here needs epsilon < 1, got {epsilon}")
    delta = v.probability_open("delta", delta)
    steps = v.positive_int("steps", steps)
    return epsilon / (2.0 * math.sqrt(2.0 * steps * math.log(4.0 / delta))), delta / (2.0 * steps)


def pld_interval(epsilon: float, count: int = 1) -> float:
    """PLD grid step 1e-4 / k, k the smallest integer with h <= max(1e-6, eps / (200 count)).

    Pessimistic rounding adds at most ``count`` * h to epsilon. The grid is nested in the
    accountant's default 1e-4 grid, so pricing a released event on that (coarser) grid
    gives a slightly larger, still valid, epsilon; on ``info["pld_interval"]`` it gives
    the reported one.
    """
    target = max(1e-6, epsilon / (200.0 * count))
    return 1e-4 / max(1, math.ceil(1e-4 / target - 1e-9))


def pld_epsilon(event: dp_event.DpEvent, delta: float, count: int = 1, h: float = 1e-4) -> float:
    """Epsilon at ``delta`` of ``count`` compositions of ``event``, by PLD (an upper bound)."""
    acc = PrivacyAccountant("pld", value_discretization_interval=h)
    return acc.compose(event, count).get_epsilon(delta)


_CACHE: dict = {}
_CACHE_SIZE = 1024


def calibrate_noise(
    make_event: Callable[[float], dp_event.DpEvent],
    epsilon: float,
    delta: float,
    guess: float,
    *,
    count: int = 1,
    rtol: float = 1e-4,
    key: tuple | None = None,
) -> tuple[float, float]:
    """Smallest noise x with ``count``-fold ``make_event(x)`` (epsilon, delta)-DP by PLD.

    Returns (x, epsilon spent at delta). Safe side: :func:`calibrate` only returns a
    point it has checked (delta(epsilon) <= delta at x, equivalently epsilon(delta) <=
    epsilon for the monotone profile). ``key``: a tuple of the public parameters that
    determine ``make_event``; results are then memoized (they depend on nothing else).
    """
    memo = None if key is None else (key, epsilon, delta, count, rtol)
    if memo is not None and memo in _CACHE:
        return _CACHE[memo]
    h = pld_interval(epsilon, count)

    def delta_at(x: float) -> float:
        acc = PrivacyAccountant("pld", value_discretization_interval=h)
        return acc.compose(make_event(x), count).get_delta(epsilon)

    x = calibrate(delta_at, delta, 0.5 * guess, guess, decreasing=True, floor=1e-300, rtol=rtol)
    result = (x, pld_epsilon(make_event(x), delta, count, h))
    if memo is not None:
        if len(_CACHE) >= _CACHE_SIZE:
            _CACHE.clear()
        _CACHE[memo] = result
    return result
