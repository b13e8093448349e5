"""Tight privacy profile and RDP of the Gaussian mechanism.

The Gaussian mechanism f(Z) + N(0, sigma^2 I) with l2-sensitivity ``sensitivity``
is the reference point for every other bound in this package: Lemma 3.4 of
Redberg, Koskela & Wang (arXiv 2401.00583) shows that objective perturbation can be
no more private than it.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike
from scipy.special import log_ndtr

from .. import _validation as v
from .calibration import smallest_epsilon
from .limits import bounded, bounded_ratio


def _ratio(sensitivity: float, sigma: float) -> float:
    """D / sigma, the Gaussian's signal-to-noise ratio, in the range accounting handles."""
    d, s = bounded("sensitivity", sensitivity), bounded("sigma", sigma)
    return bounded_ratio("sensitivity / sigma", d / s, "change sigma or the sensitivity")


def gaussian_delta(epsilon: ArrayLike, sensitivity: float, sigma: float) -> np.ndarray | float:
    """Exact privacy profile delta(epsilon) of the Gaussian mechanism.

    delta(eps) = Phi(-eps*sigma/D + D/(2 sigma)) - e^eps Phi(-eps*sigma/D - D/(2 sigma))
    (Redberg et al., eq. (B.1); Balle & Wang 2018, Thm 8). It equals
    E[1 - e^(eps - Y)]_+ with Y ~ N(D^2/2sigma^2, D^2/sigma^2), the privacy-loss
    random variable, and is therefore valid for every real epsilon, negative
    values included. Evaluated in log space so that tiny deltas keep their
    relative precision.
    """
    r = _ratio(sensitivity, sigma)
    eps = np.asarray(epsilon, dtype=float)
    if np.isnan(eps).any():
        raise ValueError("epsilon must not contain NaN")
    with np.errstate(over="ignore", invalid="ignore"):
        log_a = log_ndtr(-eps / r + r / 2)
        log_b = eps + log_ndtr(-eps / r - r / 2)
        delta = np.exp(log_a) * -np.expm1(np.minimum(log_b - log_a, 0.0))
    delta = np.where(log_a == -np.inf, 0.0, delta)  # so far out that both terms underflow
    delta = np.where(eps == np.inf, 0.0, np.where(eps == -np.inf, 1.0, delta))
    delta = np.clip(delta, 0.0, 1.0)
    return delta if delta.ndim else float(delta)


def gaussian_rdp(alpha: ArrayLike, sensitivity: float, sigma: float) -> np.ndarray | float:
    """RDP of the Gaussian mechanism: alpha * D^2 / (2 sigma^2) (Redberg et al., Thm B.1)."""
    r = _ratio(sensitivity, sigma)
    a = np.asarray(alpha, dtype=float)
    if (a < 1).any() or np.isnan(a).any():
        raise ValueError("alpha must be >= 1")
    with np.errstate(over="ignore"):
        out = a * (r * r / 2)
    return out if out.ndim else float(out)


def gaussian_epsilon(delta: float, sensitivity: float, sigma: float) -> float:
    """Smallest epsilon >= 0 with gaussian_delta(epsilon) <= delta (safe side).

    Inverse of :func:`gaussian_delta` (Redberg et al., eq. (B.1)), computed with
    :func:`dpconvex.accounting.calibration.smallest_epsilon`.
    """
    v.probability_open("delta", delta)
    _ratio(sensitivity, sigma)
    return smallest_epsilon(lambda e: gaussian_delta(e, sensitivity, sigma), delta)
