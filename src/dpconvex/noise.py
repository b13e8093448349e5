"""Exact samplers for the noise distributions of the source papers (no data, only randomness).

* :func:`generalized_gaussian` — i.i.d. GG_p(sigma) coordinates, density
  p / (2 sigma Gamma(1/p)) exp(-|x/sigma|^p) (Ganesh's thesis, UC Berkeley EECS-2022-53, Def. 19;
  scipy's ``gennorm(beta=p, scale=sigma)``). p = 1 is Laplace(sigma); p = 2 is
  N(0, sigma^2 / 2). Sampled exactly as sigma * S * G^(1/p), G ~ Gamma(1/p), S = +-1.
* :func:`norm_gaussian` — density proportional to exp(-||z - mu||_r^2 / (2 sigma^2))
  (the "generalized Gaussian" of Su, Zhao & Wang, arXiv 2303.18047, Def. 4 / Lemma 3),
  sampled exactly by its
  polar decomposition: radius sigma * chi_d and, independently, a direction from the
  cone measure of the l_r sphere, realized as Y / ||Y||_r with Y_i i.i.d. GG_r(1)
  (Schechtman-Zinn). r = 2 gives N(mu, sigma^2 I).

Both draw from a numpy Generator; the usual floating-point caveats of continuous
noise (Mironov 2012) apply to every sampler in this package.
"""

from __future__ import annotations

import math

import numpy as np

from . import _validation as v


def generalized_gaussian(p: float, sigma: float, size, rng: np.random.Generator) -> np.ndarray:
    """i.i.d. GG_p(sigma) samples: density p/(2 sigma Gamma(1/p)) exp(-|x/sigma|^p), p >= 1.

    p = inf gives Uniform(-sigma, sigma) (the limit of the density).
    """
    p = float(p)
    if math.isnan(p) or p < 1:
        raise ValueError(f"p must be >= 1, got {p}")
    sigma = v.positive("sigma", sigma)
    sign = rng.choice(np.array([-1.0, 1.0]), size=size)
    if math.isinf(p):
        return sigma * sign * rng.random(size)
    return sigma * sign * rng.gamma(1.0 / p, 1.0, size=size) ** (1.0 / p)


def lr_norm(x: np.ndarray, r: float, axis: int = -1) -> np.ndarray:
    """The l_r norm along ``axis`` (r >= 1, inf allowed)."""
    if math.isinf(r):
        return np.max(np.abs(x), axis=axis)
    return np.sum(np.abs(x) ** r, axis=axis) ** (1.0 / r)


def norm_gaussian(
    d: int,
    r: float,
    sigma: float,
    rng: np.random.Generator,
    size: int | None = None,
    mean: np.ndarray | float = 0.0,
) -> np.ndarray:
    """Samples with density proportional to exp(-||z - mean||_r^2 / (2 sigma^2)) on R^d.

    Exact: radius sigma * chi_d times an independent direction from the cone measure of
    the unit l_r sphere (the mechanism of Su, Zhao & Wang, Lemma 3).
    Returns shape (d,) or (size, d).
    """
    d = v.positive_int("d", d)
    r = float(r)
    if math.isnan(r) or r < 1:
        raise ValueError(f"r must be >= 1, got {r}")
    sigma = v.positive("sigma", sigma)
    shape = (d,) if size is None else (int(size), d)
    y = generalized_gaussian(r, 1.0, shape, rng)
    direction = y / lr_norm(y, r)[..., None]
    radius = sigma * np.sqrt(rng.chisquare(d, size=None if size is None else (int(size), 1)))
    return np.asarray(mean) + radius * direction
