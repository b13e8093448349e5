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
