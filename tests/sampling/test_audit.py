"""Audit of private posterior sampling by ULA (issue 8 builder): empirical epsilon <= claim."""

from dpconvex.audit.core import audit_mechanism
from dpconvex.audit.mechanisms_ganesh import AUDITS_GANESH, EPSILON


def test_langevin_posterior_sampling_stays_below_its_claim():
    run, claimed, delta = AUDITS_GANESH["langevin"](True)
    assert claimed <= EPSILON  # calibrated on the safe side
    result = audit_mechanism("langevin", run, 2000, claimed_epsilon=claimed, delta=delta, seed=0)
    assert result.epsilon_lower_bound <= claimed
