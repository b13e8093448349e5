"""The random number of runs of Papernot-Steinke private selection (arXiv 2110.03620).

K ~ Poisson(mean) (shape = inf; their Thm 6), or a truncated negative binomial
with shape eta > 0 (Thm 2; eta = 1 is geometric) or the logarithmic distribution
(eta = 0), parametrized by its mean, as ``dp_accounting.RepeatAndSelectDpEvent`` is.
"""

from __future__ import annotations

import math

import numpy as np

from .. import _validation as v


def truncated_negative_binomial_mean(gamma: float, shape: float) -> float:
    """Mean of K with P(K = k) proportional to binom(k + eta - 1, k) (1 - gamma)^k, k >= 1.

    eta(1 - gamma) / (gamma (1 - gamma^eta)) for eta > 0; (1 - gamma)/(gamma log(1/gamma))
    for the logarithmic distribution (eta = 0).
    """
    if not 0 < gamma < 1:
        raise ValueError(f"gamma must be in (0, 1), got {gamma}")
    if shape == 0:
        return (1 - gamma) / (gamma * math.log(1 / gamma))
    return shape * (1 - gamma) / (gamma * -math.expm1(shape * math.log(gamma)))


def truncated_negative_binomial_gamma(mean: float, shape: float) -> float:
    """The gamma in (0, 1) whose truncated negative binomial (or logarithmic) has this mean."""
    mean = v.finite("mean", mean)
    if mean <= 1:
        raise ValueError(f"mean must be > 1 for a truncated negative binomial, got {mean}")
    lo, hi = 1e-12, 1 - 1e-12  # the mean falls from +inf to 1 as gamma goes from 0 to 1
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        if truncated_negative_binomial_mean(mid, shape) > mean:
            lo = mid
        else:
            hi = mid
    return 0.5 * (lo + hi)


def sample_number_of_runs(rng: np.random.Generator, mean: float, shape: float = math.inf) -> int:
    """Draw K: Poisson(mean) for shape = inf, else truncated negative binomial / logarithmic."""
    mean = v.positive("mean", mean)
    shape = float(shape)
    if math.isnan(shape) or shape < 0:
        raise ValueError(f"shape must be >= 0 (inf for Poisson), got {shape}")
    if math.isinf(shape):
        return int(rng.poisson(mean))
    if mean == 1:
        return 1
    gamma = truncated_negative_binomial_gamma(mean, shape)
    if shape == 0:
        return int(rng.logseries(1 - gamma))
    while True:  # condition a negative binomial on K >= 1
        k = int(rng.negative_binomial(shape, gamma))
        if k >= 1:
            return k
