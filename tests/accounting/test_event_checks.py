"""Events the PLD grid cannot hold are refused with their reason, not a dependency's crash."""

import pytest
from dp_accounting.dp_event import GaussianDpEvent

from dpconvex.accounting import PrivacyAccountant


def test_a_gaussian_too_narrow_for_the_pld_grid_is_refused_with_its_reason():
    """1e-5 noise at grid step 1e-4 would need ~1e14 grid points (dp_accounting tried)."""
    with pytest.raises(Exception, match="too small for PLD accounting"):
        PrivacyAccountant("pld").compose(GaussianDpEvent(1e-5)).get_epsilon(1e-5)
    # a noise multiplier inside the limit still composes (a huge but finite epsilon)
    spent = PrivacyAccountant("pld").compose(GaussianDpEvent(0.05)).get_epsilon(1e-5)
    assert 100 < spent < float("inf")


def test_the_options_of_a_random_choice_are_checked_like_any_child_event():
    """A zero-noise option inside a random choice once made a ledger's total infinite."""
    from dpconvex.accounting import RandomChoiceDpEvent
    from dpconvex.accounting.event_checks import validate_event

    good = RandomChoiceDpEvent([GaussianDpEvent(1.0), GaussianDpEvent(2.0)])
    assert validate_event(good) is good
    with pytest.raises(ValueError, match="noise_multiplier must be > 0"):
        validate_event(RandomChoiceDpEvent([GaussianDpEvent(1.0), GaussianDpEvent(0.0)]))
