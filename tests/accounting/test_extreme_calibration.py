"""Calibrations on extreme public arguments end, on the safe side (issue 31, item 9)."""

import math

import pytest

from dpconvex.accounting import PrivacyAccountant, dpsgd_event, pld_grid
from dpconvex.accounting import calibrators as cal
from dpconvex.accounting.calibration import calibrate


def test_limits_the_other_way_round_are_refused_not_looped_on():
    with pytest.raises(ValueError, match="floor <= ceiling"):
        calibrate(lambda x: 1.0 / x, 1.0, 1.0, 2.0, decreasing=True, floor=1e-6, ceiling=1e-9)


def test_an_expansion_stuck_at_a_limit_returns_the_boundary():
    # every x meets the target and the floor is reached by halving: the floor is returned
    assert calibrate(lambda x: 0.0, 1.0, 0.5, 1.0, decreasing=True, floor=0.25) == 0.25


def test_amp_with_a_tiny_gradient_bound_is_calibrated():
    """lipschitz 1e-12 made the sigma floor (1e-6) exceed its ceiling: an endless loop."""
    result = cal.amp_parameters(1.0, 1e-5, lipschitz=1e-12)
    assert result.epsilon <= 1.0
    assert 0 < result.sigma < 1e-9  # the noise scales with the gradient bound


def test_a_search_that_cannot_price_small_noise_returns_more_noise_never_less(monkeypatch):
    """Candidates beyond the search's grid cap count as missing the budget."""
    q, steps, eps, delta = 0.01, 1000, 1.0, 1e-5
    free = cal.dpsgd_noise_multiplier(eps, delta, q, steps)
    monkeypatch.setattr(cal, "SEARCH_GRID_POINTS", 30_000)  # below what free needs
    capped = cal.dpsgd_noise_multiplier(eps, delta, q, steps)
    assert capped >= free * (1 - 1e-9)
    accountant = PrivacyAccountant("pld", value_discretization_interval=pld_grid(eps))
    assert accountant.compose(dpsgd_event(capped, q, steps)).get_delta(eps) <= delta
    assert math.isfinite(capped)


def test_an_infinite_count_is_a_clear_error():
    from dpconvex import _validation as v

    with pytest.raises(ValueError, match="positive integer"):
        v.positive_int("steps", math.inf)  # int(inf) raises OverflowError
