"""Exact noise samplers: moments, laws, limits.

GG_p of Ganesh's thesis (EECS-2022-53, Def. 19) and the l_r-norm Gaussian of Su, Zhao & Wang
(arXiv 2303.18047, Def. 4 / Lemma 3).
"""

import math

import numpy as np
import pytest
from scipy import special, stats

from dpconvex.noise import generalized_gaussian, lr_norm, norm_gaussian


@pytest.mark.parametrize("p", [1.0, 1.5, 2.0, 3.0, 8.0])
def test_generalized_gaussian_law_and_moments(p):
    rng = np.random.default_rng(0)
    sigma = 1.7
    x = generalized_gaussian(p, sigma, 200_000, rng)
    assert stats.kstest(x, stats.gennorm(beta=p, scale=sigma).cdf).pvalue > 1e-3
    for r in (1.0, 2.0):  # E|X|^r = sigma^r Gamma((r+1)/p) / Gamma(1/p)
        exact = sigma**r * special.gamma((r + 1) / p) / special.gamma(1 / p)
        se = np.std(np.abs(x) ** r) / math.sqrt(x.size)
        assert abs(np.mean(np.abs(x) ** r) - exact) < 5 * se


def test_p2_is_gaussian_with_half_variance_and_norm_law():
    rng = np.random.default_rng(1)
    x = generalized_gaussian(2.0, 2.0, 100_000, rng)
    assert stats.kstest(x, stats.norm(scale=2.0 / math.sqrt(2)).cdf).pvalue > 1e-3
    k, p, sigma = 7, 3.0, 0.5  # (||x||_p / sigma)^p ~ Gamma(k/p)
    z = generalized_gaussian(p, sigma, (50_000, k), rng)
    stat = (lr_norm(z, p) / sigma) ** p
    assert stats.kstest(stat, stats.gamma(k / p).cdf).pvalue > 1e-3


def test_norm_gaussian_reduces_to_gaussian_at_r2():
    rng = np.random.default_rng(2)
    z = norm_gaussian(5, 2.0, 1.3, rng, size=100_000)
    np.testing.assert_allclose(np.cov(z.T), 1.3**2 * np.eye(5), atol=0.03)
    assert stats.kstest(z[:, 0], stats.norm(scale=1.3).cdf).pvalue > 1e-3


@pytest.mark.parametrize("r", [1.5, 3.0, 7.0, math.inf])
def test_norm_gaussian_second_moment_is_d_sigma2(r):
    # E ||z||_r^2 = d sigma^2 exactly (radius sigma * chi_d) (Lemma 4's bound is tight)
    rng = np.random.default_rng(3)
    d, sigma = 6, 0.8
    z = norm_gaussian(d, r, sigma, rng, size=200_000)
    sq = lr_norm(z, r) ** 2
    assert abs(sq.mean() - d * sigma**2) < 5 * sq.std() / math.sqrt(sq.size)


def test_bad_arguments():
    rng = np.random.default_rng(4)
    with pytest.raises(ValueError, match="p must be"):
        generalized_gaussian(0.5, 1.0, 3, rng)
    with pytest.raises(ValueError, match="sigma"):
        generalized_gaussian(2.0, 0.0, 3, rng)
    with pytest.raises(ValueError, match="r must be"):
        norm_gaussian(3, 0.9, 1.0, rng)
