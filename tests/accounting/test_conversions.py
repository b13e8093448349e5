"""RDP -> (eps, delta) conversions, checked against dp_accounting and exact Gaussian profiles."""

import math

import numpy as np
import pytest
from dp_accounting.rdp import rdp_privacy_accountant as dpa_rdp
from hypothesis import given, settings
from hypothesis import strategies as st

from dpconvex.accounting import (
    delta_from_rdp,
    delta_from_rdp_curve,
    epsilon_from_rdp,
    epsilon_from_rdp_curve,
    gaussian_epsilon,
    gaussian_rdp,
)

ORDERS = np.array([1.5, 2, 3, 4, 6, 8, 12, 16, 24, 32, 64, 128, 256], dtype=float)


@settings(max_examples=50, deadline=None)
@given(sigma=st.floats(0.5, 50), delta=st.floats(1e-12, 1e-2), scale=st.floats(1, 50))
def test_improved_conversion_equals_dp_accounting(sigma, delta, scale):
    rdp = scale * ORDERS / (2 * sigma**2) + 0.1  # away from dp_accounting's KL shortcut
    ours, _ = epsilon_from_rdp(ORDERS, rdp, delta)
    theirs, _ = dpa_rdp.compute_epsilon(ORDERS, rdp, delta)
    assert ours == pytest.approx(theirs, rel=1e-12, abs=1e-12)
    eps = ours + 0.5
    ours_d, _ = delta_from_rdp(ORDERS, rdp, eps)
    theirs_d, _ = dpa_rdp.compute_delta(ORDERS, rdp, eps)
    assert ours_d == pytest.approx(theirs_d, rel=1e-9, abs=1e-300)


@settings(max_examples=50, deadline=None)
@given(sigma=st.floats(0.3, 30), delta=st.floats(1e-12, 1e-2))
def test_conversions_are_valid_and_ordered_for_the_gaussian(sigma, delta):
    """The exact Gaussian epsilon (analytic profile) <= improved <= standard conversion."""
    curve = lambda a: gaussian_rdp(a, 1.0, sigma)
    exact = gaussian_epsilon(delta, 1.0, sigma)
    improved = epsilon_from_rdp_curve(curve, delta)
    standard = epsilon_from_rdp_curve(curve, delta, "standard")
    assert exact <= improved + 1e-9
    assert improved <= standard + 1e-12
    # the standard conversion of the Gaussian has a closed form in alpha
    mu = 1 / (2 * sigma**2)
    closed = mu + 2 * math.sqrt(mu * math.log(1 / delta))
    alpha_star = 1 + math.sqrt(math.log(1 / delta) / mu)
    if 1.001 < alpha_star < 1e5:
        assert standard == pytest.approx(closed, rel=1e-7)


def test_delta_and_epsilon_forms_are_consistent():
    curve = lambda a: gaussian_rdp(a, 1.0, 3.0)
    for delta in [1e-3, 1e-6, 1e-10]:
        eps = epsilon_from_rdp_curve(curve, delta)
        assert delta_from_rdp_curve(curve, eps) == pytest.approx(delta, rel=1e-5)


def test_curve_refinement_never_worse_than_grid():
    curve = lambda a: gaussian_rdp(a, 1.0, 2.0)
    grid = np.linspace(1.5, 64, 200)
    assert epsilon_from_rdp_curve(curve, 1e-5) <= epsilon_from_rdp(grid, curve(grid), 1e-5)[0]


def test_orders_at_or_below_one_are_ignored_and_inputs_checked():
    eps, alpha = epsilon_from_rdp([1.0, 2.0], [0.0, 0.5], 1e-5)
    assert alpha == 2.0 and math.isfinite(eps)
    with pytest.raises(ValueError, match="same length"):
        epsilon_from_rdp([2.0, 3.0], [0.1], 1e-5)
    with pytest.raises(ValueError, match="conversion"):
        epsilon_from_rdp([2.0], [0.1], 1e-5, conversion="magic")
    with pytest.raises(ValueError, match="delta"):
        epsilon_from_rdp([2.0], [0.1], 0.0)
