"""Empirical audit of DP-MBCD (the builder that issue 8 registers)."""

import numpy as np

from dpconvex.audit.core import audit_mechanism
from dpconvex.audit.mechanisms_bcd import AUDITS_BCD
from dpconvex.bcd import HiddenStateDpEvent, epsilon


def test_dp_mbcd_audit_lower_bound_below_claim():
    run, claimed, delta = AUDITS_BCD["dp-mbcd"](True)
    assert 0 < claimed < 10 and delta == 1e-5
    result = audit_mechanism("dp-mbcd", run, 2000, claimed_epsilon=claimed, delta=delta, seed=0)
    assert result.epsilon_lower_bound <= claimed
    # not vacuous: the distinguisher sees the added example, and would catch an
    # accountant that claimed the privacy of 300 times more noise
    assert result.epsilon_lower_bound > 0.2
    weaker = HiddenStateDpEvent(0.5, 1.0, 2, np.full((3, 2), 0.3 * 300), 1.0, 1 / 1.5)
    assert epsilon(weaker, delta) < result.epsilon_lower_bound
