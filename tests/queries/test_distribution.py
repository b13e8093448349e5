"""GG_p(sigma) facts (Ganesh's thesis, Def. 19) vs scipy, closed forms and Monte Carlo."""

import math

import numpy as np
import pytest
from scipy import integrate, special, stats

from dpconvex.noise import generalized_gaussian
from dpconvex.queries import (
    expected_max_abs,
    gaussian_expected_max_abs,
    gg_abs_moment,
    gg_cdf,
    gg_logpdf,
    gg_sf,
)


@pytest.mark.parametrize("p", [1.0, 1.5, 2.0, 4.0, 9.0])
def test_cdf_and_density_match_scipy_gennorm(p):
    x = np.array([-40.0, -3.0, -0.2, 0.0, 0.7, 5.0, 40.0])
    ref = stats.gennorm(beta=p, scale=2.0)
    np.testing.assert_allclose(gg_cdf(x, p, 2.0), ref.cdf(x), rtol=1e-10, atol=1e-300)
    np.testing.assert_allclose(gg_sf(x, p, 2.0), ref.sf(x), rtol=1e-10, atol=1e-300)
    np.testing.assert_allclose(gg_logpdf(x, p, 2.0), ref.logpdf(x), rtol=1e-12)


def test_density_oracle_o4():
    pdf = np.exp(gg_logpdf(np.arange(-3, 4), 4.0, 2.0))
    np.testing.assert_allclose(pdf[3:], [0.27581566, 0.25910484, 0.10146691, 0.00174583], rtol=5e-6)
    np.testing.assert_allclose(pdf[:3], pdf[6:3:-1])  # symmetric


def test_moments_oracle_o3_and_laplace_o2():
    assert gg_abs_moment(2, 4.0, 1.0) == pytest.approx(0.3379891, rel=1e-6)
    assert gg_abs_moment(1, 4.0, 1.0) == pytest.approx(0.4888705, rel=1e-6)
    assert gg_abs_moment(3, 4.0, 1.0) == pytest.approx(1 / special.gamma(0.25), rel=1e-12)
    assert gg_abs_moment(2, 6.0, 1.0) == pytest.approx(0.3184249, rel=1e-6)
    assert gg_abs_moment(2, 8.0, 1.0) == pytest.approx(0.3146343, rel=1e-6)
    assert gg_abs_moment(1, 1.0, 2.5) == pytest.approx(2.5)  # Laplace: E|X| = sigma
    assert gg_abs_moment(2, 1.0, 2.5) == pytest.approx(2 * 2.5**2)  # Var = 2 sigma^2


def test_expected_max_p2_matches_half_normal_maximum():
    std, k = 3.0, 1000  # E max |N(0, std^2)| over k, from the normal CDF directly
    direct = integrate.quad(lambda t: 1 - (2 * stats.norm.cdf(t / std) - 1) ** k, 0, 50 * std)[0]
    assert gaussian_expected_max_abs(std, k) == pytest.approx(direct, rel=1e-8)
    assert expected_max_abs(2.0, std * math.sqrt(2), k) == pytest.approx(direct, rel=1e-8)


@pytest.mark.parametrize("p,k", [(1.0, 10), (4.0, 500), (7.0, 50)])
def test_expected_max_matches_monte_carlo(p, k):
    rng = np.random.default_rng(3)
    m = np.abs(generalized_gaussian(p, 1.3, (8_000, k), rng)).max(axis=1)
    assert abs(expected_max_abs(p, 1.3, k) - m.mean()) < 4 * m.std() / math.sqrt(m.size)


def test_k_equal_one_is_mean_absolute_value():
    assert expected_max_abs(3.0, 2.0, 1) == pytest.approx(gg_abs_moment(1, 3.0, 2.0), rel=1e-9)


@pytest.mark.parametrize("bad", [0.5, float("nan"), float("inf"), "x"])
def test_bad_p_is_refused(bad):
    with pytest.raises(ValueError, match="p"):
        gg_cdf(0.0, bad, 1.0)
    with pytest.raises(ValueError, match="p"):
        expected_max_abs(bad, 1.0, 10)


def test_bad_sigma_and_k_are_refused():
    with pytest.raises(ValueError, match="sigma"):
        expected_max_abs(2.0, 0.0, 10)
    with pytest.raises(ValueError, match="k"):
        expected_max_abs(2.0, 1.0, 0)
