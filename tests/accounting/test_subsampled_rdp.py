"""RDP of the subsampled Gaussian at integer orders, and the vectorized RDP-to-DP conversion."""

import math

import numpy as np
import pytest
from dp_accounting.rdp import rdp_privacy_accountant as dpa_rdp
from scipy import integrate, stats

from dpconvex.accounting import RdpAccountant, dpsgd_event, tuned_event
from dpconvex.accounting.accountants import DEFAULT_RDP_ORDERS, rdp_deltas
from dpconvex.accounting.subsampled_rdp import subsampled_gaussian_rdp_int


def _renyi_by_quadrature(q, z, alpha):
    """D_alpha((1-q) N(0,z^2) + q N(1,z^2) || N(0,z^2)) by numerical integration."""
    p0, p1 = stats.norm(0, z), stats.norm(1, z)

    def integrand(x):
        mixture = (1 - q) * p0.pdf(x) + q * p1.pdf(x)
        return p0.pdf(x) * (mixture / p0.pdf(x)) ** alpha

    span = 12 * z + alpha
    value, _ = integrate.quad(integrand, -span, span + 2, limit=400, epsrel=1e-12)
    return math.log(value) / (alpha - 1)


@pytest.mark.parametrize(("q", "z"), [(0.01, 1.0), (0.1, 2.0), (0.5, 3.0)])
def test_integer_orders_match_numerical_integration(q, z):
    for alpha in (2, 3, 5, 8):
        got = float(subsampled_gaussian_rdp_int(q, z, np.array([alpha]))[0])
        assert got == pytest.approx(_renyi_by_quadrature(q, z, alpha), rel=1e-8)


@pytest.mark.parametrize(("q", "z"), [(0.007, 10.0), (0.007, 0.8), (0.1, 0.5), (0.9, 0.3)])
def test_integer_orders_match_dp_accounting(q, z):
    orders = DEFAULT_RDP_ORDERS[(DEFAULT_RDP_ORDERS >= 2) & (DEFAULT_RDP_ORDERS % 1 == 0)]
    ours = subsampled_gaussian_rdp_int(q, z, orders)
    theirs = dpa_rdp._compute_rdp_poisson_subsampled_gaussian(q, z, orders)
    finite = np.isfinite(theirs)
    assert np.array_equal(np.isfinite(ours), finite)
    assert ours[finite] == pytest.approx(theirs[finite], rel=1e-9, abs=1e-15)


def test_accountant_curve_and_tuned_curve_match_dp_accounting():
    for event in (
        dpsgd_event(3.0, 0.01, 1000),
        tuned_event(dpsgd_event(10.0, 0.007, 8480), 10.0),
    ):
        ours = RdpAccountant().compose(event)
        theirs = dpa_rdp.RdpAccountant(list(DEFAULT_RDP_ORDERS)).compose(event)
        assert ours._rdp == pytest.approx(theirs._rdp, rel=1e-9)
        assert ours.get_epsilon(1e-5) == pytest.approx(theirs.get_epsilon(1e-5), rel=1e-9)


def test_vectorized_conversion_is_dp_accountings_order_by_order():
    rng = np.random.default_rng(0)
    orders = DEFAULT_RDP_ORDERS
    for _ in range(5):
        rdp = np.sort(rng.random(orders.size))[::-1][np.argsort(-orders)] * rng.uniform(0.01, 3)
        rdp[rng.integers(orders.size)] = np.inf  # an order that failed
        eps = rng.uniform(0, 5, 20)
        expected = [dpa_rdp.compute_delta(orders, rdp, e)[0] for e in eps]
        assert rdp_deltas(orders, rdp, eps) == pytest.approx(expected, rel=1e-12, abs=1e-300)


def test_bad_arguments_are_refused():
    with pytest.raises(ValueError, match="integer orders"):
        subsampled_gaussian_rdp_int(0.1, 1.0, np.array([2.5]))
    with pytest.raises(ValueError, match="0 < q < 1"):
        subsampled_gaussian_rdp_int(1.0, 1.0, np.array([2.0]))
