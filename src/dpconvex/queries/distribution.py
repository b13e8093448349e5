"""Exact facts about the Generalized Gaussian GG_p(sigma) and its maximum error.

GG_p(sigma) has density p / (2 sigma Gamma(1/p)) exp(-|x/sigma|^p) (Ganesh's
thesis, UC Berkeley EECS-2022-53, Def. 19; it is scipy's ``gennorm(beta=p, scale=sigma)``).
|X/sigma|^p ~ Gamma(1/p) (Fact 24 change of variables), which gives the CDF,
the moments E|X|^r = sigma^r Gamma((r+1)/p) / Gamma(1/p) (Fact 38) and the law
of the maximum of k i.i.d. coordinates used for the expected l_inf error.
Samples come from :func:`dpconvex.noise.generalized_gaussian`.
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import ArrayLike
from scipy import integrate, special

from .. import _validation as v

#: Largest exponent p accepted. GG_64(sigma) is already close to the uniform law on
#: [-sigma, sigma] (its density at 0.95 sigma is 0.96 times that at 0, at 1.05 sigma
#: 1e-10 times), so larger p change little, and |x / sigma|^p overflows for them.
MAX_P = 64.0


def check_p(p: object) -> float:
    """Return ``p`` as a float; raise unless 1 <= p <= MAX_P."""
    p = v.finite("p", p)
    if not 1 <= p <= MAX_P:
        raise ValueError(f"p must be between 1 and {MAX_P:g}, got {p:g}")
    return p


def gg_logpdf(x: ArrayLike, p: float, sigma: float) -> np.ndarray:
    """log density of GG_p(sigma) (Ganesh's thesis, Def. 19)."""
    p, sigma = check_p(p), v.positive("sigma", sigma)
    x = np.asarray(x, dtype=float)
    return math.log(p / (2.0 * sigma)) - special.gammaln(1.0 / p) - np.abs(x / sigma) ** p


def gg_cdf(x: ArrayLike, p: float, sigma: float) -> np.ndarray:
    """CDF of GG_p(sigma): 1/2 - sign(x)/2 * Q(1/p, |x/sigma|^p) mirrored (exact, any tail).

    For x < 0 it is Q(1/p, |x/sigma|^p)/2 with Q the regularized upper incomplete
    gamma, so deep left tails keep full relative precision.
    """
    p, sigma = check_p(p), v.positive("sigma", sigma)
    x = np.asarray(x, dtype=float)
    tail = 0.5 * special.gammaincc(1.0 / p, np.abs(x / sigma) ** p)
    return np.where(x < 0, tail, 1.0 - tail)


def gg_sf(x: ArrayLike, p: float, sigma: float) -> np.ndarray:
    """Survival function 1 - CDF, accurate in the right tail (symmetry of GG_p)."""
    return gg_cdf(-np.asarray(x, dtype=float), p, sigma)


def gg_abs_moment(r: float, p: float, sigma: float) -> float:
    """E|X|^r = sigma^r Gamma((r+1)/p) / Gamma(1/p) for X ~ GG_p(sigma) (thesis Fact 38)."""
    p, sigma = check_p(p), v.positive("sigma", sigma)
    r = v.nonnegative("r", r)
    return float(sigma**r * math.exp(special.gammaln((r + 1) / p) - special.gammaln(1 / p)))


def expected_max_abs(p: float, sigma: float, k: int) -> float:
    """E ||x||_inf for x with k i.i.d. GG_p(sigma) coordinates, by quadrature (exact law).

    E max_i |x_i| = sigma * int_0^inf [1 - (1 - Q(1/p, u^p))^k] du, since
    Pr[|x_i| > sigma u] = Q(1/p, u^p) (regularized upper incomplete gamma Q). The integrand
    is evaluated as -expm1(k log1p(-S)) and the integral split at (ln k + 1)^(1/p),
    where it turns from ~1 to a fast-decaying tail. p = 2 gives the expected
    maximum of k half-normals of standard deviation sigma / sqrt 2.
    """
    p, sigma = check_p(p), v.positive("sigma", sigma)
    k = v.positive_int("k", k)

    def integrand(u: float) -> float:
        s = special.gammaincc(1.0 / p, u**p)
        return -math.expm1(k * math.log1p(-s)) if s < 1 else 1.0

    knee = (math.log(k) + 1.0) ** (1.0 / p)
    head = integrate.quad(integrand, 0.0, knee, limit=200, epsabs=0, epsrel=1e-11)[0]
    tail = integrate.quad(integrand, knee, np.inf, limit=200, epsabs=0, epsrel=1e-11)[0]
    return sigma * (head + tail)


def gaussian_expected_max_abs(std: float, k: int) -> float:
    """E ||x||_inf for x ~ N(0, std^2 I_k): GG_2 with sigma = std * sqrt 2."""
    return expected_max_abs(2.0, math.sqrt(2.0) * v.positive("std", std), k)
