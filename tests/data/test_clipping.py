"""The one per-example clipping factor, checked against per-example loops and the formulas
its callers used before they shared it (bit for bit on finite inputs)."""

import numpy as np
import pytest

from dpconvex.bcd import steps
from dpconvex.bcd.steps import clip_factors as block_clip_factors
from dpconvex.data.clipping import clip_factors, clipped_gradient_sum, clipped_weights
from dpconvex.data.policy import RowPolicy, as_policy, design_bound
from dpconvex.losses import HuberLoss, LogisticLoss
from dpconvex.public.pda_dpmd import clipped_gradient_sums


def _norms(rng, n=400):
    """Norms on both sides of the clip, exact zeros and tiny values included."""
    norms = np.exp(rng.uniform(-8, 4, size=n))
    norms[:5] = [0.0, 1e-310, 0.7, 0.7 * (1 + 2**-52), 1e300]
    return norms


def test_clip_factor_is_min_of_one_and_clip_over_norm_per_example():
    rng = np.random.default_rng(0)
    norms, clip = _norms(rng), 0.7
    got = clip_factors(norms, clip)
    expected = np.array([1.0 if g <= clip else clip / g for g in norms])
    np.testing.assert_array_equal(got, expected)
    assert np.all(got * norms <= clip * (1 + 1e-15))


@pytest.mark.parametrize("nan_factor", [1.0, 0.0, np.nan])
def test_non_finite_norms_get_the_callers_factor(nan_factor):
    got = clip_factors(np.array([np.inf, np.nan, 2.0]), 1.0, nan_factor=nan_factor)
    assert got[0] == 0.0 and got[2] == 0.5
    np.testing.assert_array_equal(got[1], nan_factor)


def test_the_shared_factor_equals_each_callers_former_formula_bit_for_bit():
    rng = np.random.default_rng(1)
    norms, clip = _norms(rng), 0.7
    # DP-SGD's and PDA-DPMD's former factor
    with np.errstate(divide="ignore", over="ignore"):
        former = np.where(norms > clip, clip / norms, 1.0)
    np.testing.assert_array_equal(clip_factors(norms, clip), former)
    # the heavy-tailed baseline's former factor (floored norms, NaN kept)
    floored = np.maximum(np.append(norms, np.nan), 1e-300)
    former = np.minimum(1.0, clip / floored)
    np.testing.assert_array_equal(clip_factors(floored, clip, nan_factor=np.nan), former)
    # DP-MBCD's former factor (0 for a non-finite norm)
    a = rng.normal(size=(50, 3)) * np.exp(rng.uniform(-5, 5, size=(50, 1)))
    b = rng.normal(size=(50, 4))
    a[0] = np.nan
    a[1, 0] = np.inf
    with np.errstate(invalid="ignore"):
        prod = steps._row_norms(a) * steps._row_norms(b)  # the block's own norms
    with np.errstate(divide="ignore", invalid="ignore"):
        former = np.where(prod <= clip, 1.0, np.where(np.isfinite(prod), clip / prod, 0.0))
    np.testing.assert_array_equal(block_clip_factors(a, b, clip), former)


def test_clipped_gradient_sum_is_the_sum_of_clipped_per_example_gradients():
    rng = np.random.default_rng(2)
    X, theta = rng.normal(size=(60, 4)), rng.normal(size=4)
    y = rng.uniform(-1, 1, size=60)
    loss, clip = HuberLoss(0.5), 0.3
    norms = np.linalg.norm(X, axis=1)
    expected = np.zeros(4)
    for x, t in zip(X, y, strict=True):
        g = loss.derivative(np.array([x @ theta]), np.array([t]))[0] * x
        expected += g * min(1.0, clip / max(np.linalg.norm(g), 1e-300))
    got = clipped_gradient_sum(X, y, norms, loss, theta, clip)
    np.testing.assert_allclose(got, expected, rtol=1e-12, atol=1e-15)


def test_pda_dpmd_runs_clip_each_run_at_its_own_threshold():
    rng = np.random.default_rng(3)
    X = rng.normal(size=(40, 3))
    y = np.where(rng.random(40) < 0.5, 1.0, -1.0)
    thetas, clips = rng.normal(size=(3, 2)), np.array([0.05, 5.0])
    norms = np.linalg.norm(X, axis=1)
    got = clipped_gradient_sums(X, y, LogisticLoss(), thetas, clips, norms)
    for b in range(2):
        w = clipped_weights(X @ thetas[:, b], y, norms, LogisticLoss(), clips[b])
        np.testing.assert_allclose(got[:, b], X.T @ w, rtol=1e-13)


def test_row_policy_is_frozen_and_bounds_the_transformed_rows():
    policy = RowPolicy("clip", 2.0, True, 1.5)
    with pytest.raises(AttributeError):
        policy.row_bound = 3.0
    assert policy.bound == design_bound("clip", 2.0, True, 1.5) == 2.5
    assert RowPolicy.identity(3.0).bound == 3.0 and RowPolicy.identity(3.0).is_identity
    assert as_policy({"row_norm": "normalize", "row_bound": 1.0, "fit_intercept": False}) == (
        RowPolicy("normalize", 1.0, False, 1.0)
    )
