"""Gaussian mechanism: profile vs quadrature and dp_accounting; calibration vs reference values."""

import math

import numpy as np
import pytest
from dp_accounting import dp_event, gaussian_mechanism
from dp_accounting.rdp import rdp_privacy_accountant
from scipy import integrate

from dpconvex.accounting import gaussian_delta, gaussian_epsilon, gaussian_rdp, gaussian_sigma


def _quadrature_delta(eps, sens, sigma):
    """E[1 - e^(eps - Y)]_+ with Y ~ N(mu, 2 mu), mu = sens^2 / 2 sigma^2 (the PLRV)."""
    mu = sens**2 / (2 * sigma**2)
    sd = math.sqrt(2 * mu)
    f = lambda y: (
        (1 - math.exp(eps - y))
        * math.exp(-0.5 * ((y - mu) / sd) ** 2)
        / (sd * math.sqrt(2 * math.pi))
    )
    return integrate.quad(f, eps, mu + 40 * sd, limit=200, epsabs=1e-14)[0]


def test_profile_matches_quadrature_on_random_grid_including_negative_eps():
    rng = np.random.default_rng(0)
    for _ in range(40):
        sens, sigma = rng.uniform(0.2, 3), rng.uniform(0.3, 10)
        eps = rng.uniform(-2, 4)
        expected = _quadrature_delta(eps, sens, sigma)
        assert gaussian_delta(eps, sens, sigma) == pytest.approx(expected, rel=1e-6, abs=1e-13)


def test_epsilon_matches_dp_accounting_analytic_gaussian():
    for sigma in [0.5, 1.0, 3.0, 10.0]:
        for delta in [1e-3, 1e-6, 1e-9]:
            ours = gaussian_epsilon(delta, 1.0, sigma)
            theirs = gaussian_mechanism.get_epsilon_gaussian(sigma, delta)
            assert ours == pytest.approx(theirs, abs=1e-8)
            assert ours >= theirs - 1e-12  # our inversion sits on the safe side


@pytest.mark.parametrize(("epsilon", "sigma"), [(1.0, 3.730632), (0.1, 30.749566), (8.0, 0.600229)])
def test_calibrated_sigma_matches_spec(epsilon, sigma):
    got = gaussian_sigma(epsilon, 1e-5)
    assert got == pytest.approx(sigma, abs=2e-6)
    assert gaussian_delta(epsilon, 1.0, got) <= 1e-5


def test_rdp_matches_dp_accounting():
    orders = [1.5, 2.0, 10.0, 64.0]
    acc = rdp_privacy_accountant.RdpAccountant(orders).compose(dp_event.GaussianDpEvent(2.0))
    np.testing.assert_allclose(gaussian_rdp(orders, 1.0, 2.0), acc.rdp, rtol=1e-12)


def test_vectorized_and_limits():
    eps = np.array([-np.inf, -1.0, 0.0, 1.0, np.inf])
    out = gaussian_delta(eps, 1.0, 1.0)
    assert out.shape == eps.shape
    assert out[0] == 1.0 and out[-1] == 0.0
    assert np.all(np.diff(out) <= 0)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"epsilon": 1.0, "sensitivity": 0.0, "sigma": 1.0}, "sensitivity"),
        ({"epsilon": 1.0, "sensitivity": 1.0, "sigma": -1.0}, "sigma"),
        ({"epsilon": float("nan"), "sensitivity": 1.0, "sigma": 1.0}, "epsilon"),
    ],
)
def test_bad_input_names_the_problem(kwargs, match):
    with pytest.raises(ValueError, match=match):
        gaussian_delta(**kwargs)


def test_bad_calibration_targets():
    with pytest.raises(ValueError, match="delta"):
        gaussian_sigma(1.0, 0.0)
    with pytest.raises(ValueError, match="epsilon"):
        gaussian_sigma(0.0, 1e-5)
