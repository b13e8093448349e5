"""Thm 37 composition with explicit parameters: pricing pieces against closed forms, safe plan."""

import math

import numpy as np
import pytest
from scipy import stats

from dpconvex.accounting import PrivacyAccountant, SelfComposedDpEvent
from dpconvex.queries import (
    PureDpEvent,
    gg_sparse_vector,
    plan_sparse_vector,
    simulate_max_error,
    sparse_vector_event,
)


def kov_delta(eps0, c, eps):
    """delta(eps) of c-fold binary randomized response with eps0 (exact binomial sum)."""
    p = 1 / (1 + math.exp(-eps0))
    i = np.arange(c + 1)  # number of -eps0 outcomes
    loss = (c - 2 * i) * eps0
    w = stats.binom.pmf(i, c, 1 - p)
    return float(np.sum(w * np.maximum(0.0, -np.expm1(eps - loss))))


@pytest.mark.parametrize("eps0,c", [(0.3, 1), (0.1, 20), (0.05, 60)])
def test_pure_dp_event_is_randomized_response(eps0, c):
    acc = PrivacyAccountant("pld").compose(SelfComposedDpEvent(PureDpEvent(eps0), c))
    for eps in (0.0, 0.3, 0.8):
        exact = kov_delta(eps0, c, eps)
        assert exact - 1e-12 <= acc.get_delta(eps) <= kov_delta(eps0, c, eps - 1e-4 * c) + 1e-12
    rdp = PrivacyAccountant("rdp").compose(PureDpEvent(eps0)).rdp(np.array([1.5, 2.0, 50.0]))
    assert np.all(rdp <= eps0) and np.all(rdp > 0)  # pure DP bounds every Renyi divergence


def test_plan_meets_the_budget_and_parameters_are_explicit():
    plan = plan_sparse_vector(2000, 1.0, 1e-6, 4.0, cutoff=5, sv_fraction=0.1)
    assert plan.epsilon <= 1.0
    assert PrivacyAccountant("pld").compose(plan.event).get_epsilon(1e-6) <= 1.0
    sv_only = PrivacyAccountant("pld").compose(sparse_vector_event(5, *plan_scales(plan)))
    assert sv_only.get_epsilon(1e-7) <= 0.1 + 1e-9
    assert plan.query_scale == 2 * plan.threshold_scale
    assert plan.threshold > plan.sigma  # the tail of |x| above T holds ~cutoff/2 coordinates


def plan_scales(plan):
    return plan.threshold_scale, plan.query_scale, plan.numeric_scale


def test_mechanism_corrects_at_most_cutoff_coordinates():
    plan = plan_sparse_vector(2000, 1.0, 1e-6, 4.0, cutoff=5, sv_fraction=0.2)
    answers = np.linspace(0, 50, 2000)
    rel = gg_sparse_vector(answers, plan, random_state=0)
    assert rel.event == plan.event
    assert 0 <= rel.info["corrected"] <= 5
    errors = simulate_max_error(plan, 30, random_state=1)
    assert np.all(errors > 0) and np.isfinite(errors).all()
    with pytest.raises(ValueError, match="length"):
        gg_sparse_vector(answers[:-1], plan)
    with pytest.raises(ValueError, match="finite"):
        gg_sparse_vector(np.full(2000, np.nan), plan)


def test_plan_refuses_bad_parameters():
    with pytest.raises(ValueError, match="sv_fraction"):
        plan_sparse_vector(100, 1.0, 1e-6, sv_fraction=1.5)
    with pytest.raises(ValueError, match="cutoff"):
        plan_sparse_vector(100, 1.0, 1e-6, cutoff=0)
    with pytest.raises(ValueError, match="epsilon"):
        PureDpEvent(0.0)
