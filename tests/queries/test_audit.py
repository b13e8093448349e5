"""Audit of the Generalized Gaussian mechanism (issue 8 builder): empirical epsilon <= claim."""

import numpy as np
import pytest

from dpconvex.audit.core import audit_mechanism
from dpconvex.audit.mechanisms_ganesh import AUDITS_GANESH, DELTA
from dpconvex.queries import gg_release


def test_generalized_gaussian_stays_below_its_claim():
    run, claimed, delta = AUDITS_GANESH["generalized-gaussian"](True)
    assert delta == DELTA and 4.0 < claimed < 5.5  # the PLD accountant's epsilon for the run
    result = audit_mechanism("gg", run, 2000, claimed_epsilon=claimed, delta=delta, seed=0)
    assert 0.0 < result.epsilon_lower_bound <= claimed  # the likelihood-ratio test has power


def test_the_same_audit_catches_a_mechanism_with_too_little_noise():
    # positive control: a quarter of the noise, but the original claim
    _, claimed, delta = AUDITS_GANESH["generalized-gaussian"](True)
    p, k, sigma = 4.0, 100, 20.0 / 4

    def run(use_z, rng):
        y = gg_release(np.zeros(k) if use_z else np.ones(k), p, sigma, random_state=rng).theta
        return float(np.sum(np.abs(y - 1.0) ** p - np.abs(y) ** p) / sigma**p)

    result = audit_mechanism("broken", run, 2000, claimed_epsilon=claimed, delta=delta, seed=0)
    assert result.epsilon_lower_bound > claimed


def test_gg_release_prices_what_it_adds():
    rel = gg_release(np.zeros(5), 3.0, 2.0, sensitivity=0.5, random_state=0)
    assert rel.event.p == 3.0 and rel.event.sigma == 2.0 and rel.event.k == 5
    assert rel.event.sensitivity == 0.5
    with pytest.raises(ValueError, match="sigma"):
        gg_release(np.zeros(5), 3.0, 0.0)
    with pytest.raises(ValueError, match="p"):
        gg_release(np.zeros(5), 0.5, 1.0)
