"""The GG mechanism releases noisy counts with the event that prices them; bad input is refused."""

import math

import numpy as np
import pytest
from scipy import special

from dpconvex.accounting import PrivacyAccountant
from dpconvex.noise import generalized_gaussian
from dpconvex.queries import (
    GeneralizedGaussianDpEvent,
    answer_counting_queries,
    gg_delta,
    gg_logpdf,
    gg_mechanism,
)


def test_release_noise_law_and_event():
    answers = np.arange(2000, dtype=float)
    rel = gg_mechanism(answers, 1.0, 1e-6, p=4.0, random_state=0)
    assert isinstance(rel.event, GeneralizedGaussianDpEvent)
    assert rel.event.k == 2000 and rel.event.p == 4.0
    assert PrivacyAccountant("pld").compose(rel.event).get_epsilon(1e-6) <= 1.0
    noise = rel.theta - answers
    var = rel.info["sigma"] ** 2 * special.gamma(0.75) / special.gamma(0.25)  # Var GG_4
    assert np.var(noise) == pytest.approx(var, rel=0.1)
    again = gg_mechanism(answers, 1.0, 1e-6, p=4.0, random_state=0)
    np.testing.assert_array_equal(rel.theta, again.theta)  # seeded runs repeat
    fresh = gg_mechanism(answers, 1.0, 1e-6, p=4.0)
    assert not np.array_equal(rel.theta, fresh.theta)  # OS entropy by default


def test_choose_p_by_default_and_sensitivity_scales_noise():
    rel = gg_mechanism(np.zeros(1000), 1.0, 1e-6, random_state=1)
    assert rel.info["p"] == 4.0
    scaled = gg_mechanism(np.zeros(1000), 1.0, 1e-6, p=4.0, sensitivity=3.0, random_state=1)
    assert scaled.info["sigma"] == pytest.approx(3 * rel.info["sigma"], rel=1e-9)
    assert scaled.event.sensitivity == 3.0


def test_counting_queries_on_records_monte_carlo_delta():
    # neighbouring datasets differing in one all-ones row (the worst case): the
    # empirical privacy profile of the released answers stays below the accountant's
    rng = np.random.default_rng(4)
    k, n_runs = 50, 60_000
    records = rng.integers(0, 2, size=(30, k)).astype(float)
    neighbour = np.vstack([records, np.ones((1, k))])
    rel = answer_counting_queries(records, 1.0, 1e-3, p=3.0, random_state=5)
    p, sigma = rel.info["p"], rel.info["sigma"]
    a, b = records.sum(axis=0), neighbour.sum(axis=0)
    assert np.abs(rel.theta - a).max() < 20 * sigma
    y = a + generalized_gaussian(p, sigma, (n_runs, k), rng)  # outputs under D
    loss = (gg_logpdf(y - a, p, sigma) - gg_logpdf(y - b, p, sigma)).sum(axis=1)
    for eps in (0.3, 0.6):
        terms = np.maximum(0.0, -np.expm1(eps - loss))
        assert terms.mean() <= gg_delta(eps, p, sigma, k) + 4 * terms.std() / math.sqrt(n_runs)
        assert terms.mean() == pytest.approx(gg_delta(eps, p, sigma, k), rel=0.1)


@pytest.mark.parametrize(
    "answers,match",
    [
        (np.array([1.0, np.nan]), "finite"),
        (np.array([1.0, np.inf]), "finite"),
        (np.ones((2, 2)), "1-D"),
        (np.array([]), "1-D"),
    ],
)
def test_bad_answers_are_refused(answers, match):
    with pytest.raises(ValueError, match=match):
        gg_mechanism(answers, 1.0, 1e-6, p=2.0)


def test_bad_privacy_parameters_and_records_are_refused():
    with pytest.raises(ValueError, match="epsilon"):
        gg_mechanism(np.ones(3), -1.0, 1e-6, p=2.0)
    with pytest.raises(ValueError, match="delta"):
        gg_mechanism(np.ones(3), 1.0, 1.5, p=2.0)
    with pytest.raises(ValueError, match="sensitivity"):
        gg_mechanism(np.ones(3), 1.0, 1e-6, p=2.0, sensitivity=0.0)
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        answer_counting_queries(np.array([[0.5, 2.0]]), 1.0, 1e-6, p=2.0)
    with pytest.raises(ValueError, match="2-D"):
        answer_counting_queries(np.ones(4), 1.0, 1e-6, p=2.0)
