"""Audits: the machinery detects a broken mechanism; every real one stays below its claim."""

import math

import numpy as np
import pytest
from scipy import stats

from dpconvex.accounting import gaussian_epsilon, gaussian_sigma
from dpconvex.audit import (
    AUDITS,
    audit_mechanism,
    clopper_pearson_upper,
    epsilon_lower_bound,
    run_audit,
)


def test_clopper_pearson_upper_is_exact():
    for k, n in [(0, 50), (3, 100), (40, 60)]:
        up = clopper_pearson_upper(k, n, 0.95)
        assert stats.binom.cdf(k, n, up) == pytest.approx(0.05, abs=1e-9)
    assert clopper_pearson_upper(10, 10, 0.95) == 1.0


def test_epsilon_lower_bound_formula():
    assert epsilon_lower_bound(0.01, 0.5, 0.0) == pytest.approx(math.log(0.5 / 0.01))
    assert epsilon_lower_bound(0.5, 0.5, 0.0) == 0.0
    assert epsilon_lower_bound(0.0, 0.5, 0.0) == math.inf


def _gaussian_run(sigma):
    def run(use_z, rng):
        return (1.0 if use_z else 0.0) + rng.normal(0.0, sigma)

    return run


def test_audit_catches_a_mechanism_that_overclaims():
    """A Gaussian with sigma 0.5 (true eps at 1e-5 ~ 8.6) falsely claiming eps = 1."""
    run = _gaussian_run(0.5)
    result = audit_mechanism("broken", run, 20_000, claimed_epsilon=1.0, delta=1e-5, seed=0)
    assert result.epsilon_lower_bound > 1.0
    assert result.epsilon_lower_bound <= gaussian_epsilon(1e-5, 1.0, 0.5)  # never above truth


def test_audit_of_an_honest_gaussian_is_below_and_near_its_claim():
    sigma = gaussian_sigma(2.0, 1e-5)
    result = audit_mechanism(
        "gauss", _gaussian_run(sigma), 50_000, claimed_epsilon=2.0, delta=1e-5, seed=1
    )
    assert 0.5 < result.epsilon_lower_bound <= 2.0


@pytest.mark.parametrize("name", sorted(AUDITS))
def test_every_mechanism_stays_below_its_claim(name):
    result = run_audit(name, 1500, seed=0, fast=True)
    assert result.epsilon_lower_bound <= result.claimed_epsilon
    assert np.isfinite(result.claimed_epsilon) and result.runs == 3000
