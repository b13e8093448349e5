"""Algorithms 4 and 7 of Su, Zhao & Wang (heavy-tailed gradients) and the DP-SGD baseline.

Su, Zhao & Wang (arXiv 2303.18047), §5.2 and Appendix B.6.
"""

import math

import numpy as np
import pytest
from dp_accounting.dp_event import GaussianDpEvent, SelfComposedDpEvent

import dpconvex.sco.heavy_tailed as ht
from dpconvex.accounting import PrivacyAccountant, gaussian_sigma
from dpconvex.sco import (
    ALG4_MAX_LOCAL_EPSILON,
    GLMData,
    NormGaussianDpEvent,
    ShuffledNormGaussianDpEvent,
    alg4_max_epsilon,
    ball_mirror_step,
    batched_truncated_mirror_descent,
    clipped_dpsgd,
    lp_norm,
    lp_regularity,
    mirror_map,
    shuffle_delta_cost,
    shuffle_epsilon,
    shuffled_truncated_mirror_descent,
)

DELTA = 1e-5


def _data(n, d=4, q=3.0, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.choice([-1.0, 1.0], (n, d))
    X[:, 0] = 1.0
    X /= d ** (1 / q)
    w = np.zeros(d)
    w[:2] = [0.4, -0.3]
    return X, X @ w + rng.standard_t(2.5, n)


def test_alg7_paper_sigma_identity_and_accountant():
    """sigma^2 |B|^2 eps^2 / (kappa (beta M + lam)^2 log(1/delta)) = 8 (item 7)."""
    X, y = _data(4000)
    kw = dict(p=1.5, radius=1.0, epsilon=0.6, delta=DELTA, row_bound=1.0, random_state=0)
    paper = batched_truncated_mirror_descent(X, y, calibration="paper", **kw)
    i = paper.info
    b = 4000 // i["steps"]
    ratio = (
        i["sigma"] ** 2 * b**2 * 0.6**2 / (i["kappa"] * i["threshold"] ** 2 * math.log(1 / DELTA))
    )
    assert ratio == pytest.approx(8.0)
    assert i["threshold"] == pytest.approx(1.0 * i["diameter"] + i["truncation"])  # beta M + lam
    assert i["truncation"] >= max(1.0, 1.0) * i["diameter"]  # Thm 16's n condition
    assert i["diameter"] == pytest.approx(2.0)
    acc = batched_truncated_mirror_descent(X, y, **kw)
    assert acc.info["sigma"] <= paper.info["sigma"] * 1.002  # same Lemma 3 family (grid)
    assert isinstance(acc.event, NormGaussianDpEvent)
    assert acc.event.sensitivity == pytest.approx(2 * i["threshold"] / b)
    h = acc.info["pld_interval"]
    pld = PrivacyAccountant("pld", value_discretization_interval=h).compose(acc.event)
    assert pld.get_epsilon(DELTA) <= 0.6
    assert lp_norm(acc.theta, 1.5) <= 1.0 + 1e-12


def test_truncation_bounds_and_batch_mean_sensitivity():
    """||g_x||_q <= beta M + lam after truncation; replacing one row moves the truncated
    batch mean by <= 2 (beta M + lam)/|B| (item 19)."""
    X, y = _data(50, seed=1)
    y[3] = 1e6  # a huge outlier is truncated to zero, not clipped
    data = GLMData(X, y, "squared", 1.0, q=3.0)
    w = np.array([0.2, -0.1, 0.3, 0.0])
    rows = np.arange(50)
    threshold = 3.0
    total, cut = ht._truncated_sum(data, w, rows, threshold, 3.0)
    g = data.sample_gradients(w, rows)
    kept = lp_norm(g, 3.0) <= threshold
    assert cut == int((~kept).sum()) and not kept[3]
    assert np.allclose(total, g[kept].sum(axis=0))
    rng = np.random.default_rng(2)
    for _ in range(20):
        X2, y2 = X.copy(), y.copy()
        j = rng.integers(50)
        X2[j] = rng.choice([-1.0, 1.0], 4) / 4 ** (1 / 3)
        y2[j] = rng.standard_t(1.5) * 10
        other, _ = ht._truncated_sum(GLMData(X2, y2, "squared", 1.0, q=3.0), w, rows, threshold, 3)
        assert lp_norm((total - other) / 50, 3.0) <= 2 * threshold / 50 + 1e-12


def test_iterates_stay_in_the_ball():
    phi = mirror_map(lp_regularity(1.5, 4))
    rng = np.random.default_rng(3)
    w = np.zeros(4)
    for _ in range(200):
        w = ball_mirror_step(phi, w, 50 * rng.standard_normal(4), 2.0, 0.7)
        assert lp_norm(w, phi.s) <= 0.7 * (1 + 1e-12)


def test_alg7_without_truncation_or_noise_is_minibatch_mirror_descent(monkeypatch):
    """lam -> inf and zero noise: one-pass mini-batch mirror descent, averaged (item 22)."""
    X, y = _data(600, seed=4)
    monkeypatch.setattr(
        ht, "norm_gaussian", lambda d, r, sigma, rng, size=None, mean=0.0: np.zeros(d)
    )
    rel = batched_truncated_mirror_descent(
        X,
        y,
        p=1.5,
        radius=1.0,
        epsilon=0.5,
        delta=DELTA,
        row_bound=1.0,
        steps=12,
        truncation=1e12,
        step_scale=3.0,
    )
    assert rel.info["truncated_fraction"] == 0
    data = GLMData(X, y, "squared", 1.0, q=3.0)
    phi = mirror_map(lp_regularity(1.5, 4))
    w, avg = np.zeros(4), np.zeros(4)
    for rows in np.array_split(np.arange(600), 12):
        w = ball_mirror_step(phi, w, data.sample_gradients(w, rows).mean(axis=0), 3.0, 1.0)
        avg += w
    assert np.allclose(rel.theta, avg / 12, atol=1e-12)


def test_alg4_range_and_refusal():
    n = 20000
    limit = alg4_max_epsilon(n, DELTA)
    assert limit == pytest.approx(shuffle_epsilon(n, 0.5, DELTA / 2))
    assert 0.05 < limit < 0.1  # eps = O(sqrt(log(n/delta)/n))
    assert alg4_max_epsilon(4 * n, DELTA) < limit
    assert alg4_max_epsilon(200, DELTA) == 0.0  # closed form invalid at eps0 = 1/2
    X, y = _data(n)
    with pytest.raises(ValueError, match="private only for epsilon"):
        shuffled_truncated_mirror_descent(
            X, y, p=1.5, radius=1.0, epsilon=1.1 * limit, delta=DELTA, row_bound=1.0
        )


def test_alg4_paper_recipe_identities_and_accountant():
    """delta/2 + (e^eps + 1)(1 + e^-eps0/2) n delta0 = delta; shuffle bound <= eps;
    sigma^2 = 8 kappa (beta M + lam)^2 log(1/delta0) / eps0^2 (the proof's recipe made explicit)."""
    n, eps = 20000, 0.04
    X, y = _data(n, seed=5)
    kw = dict(p=1.5, radius=1.0, epsilon=eps, delta=DELTA, row_bound=1.0, random_state=0)
    paper = shuffled_truncated_mirror_descent(X, y, calibration="paper", **kw)
    i = paper.info
    e0, d0 = i["local_epsilon_paper"], i["local_delta_paper"]
    assert 0 < e0 <= ALG4_MAX_LOCAL_EPSILON
    assert shuffle_epsilon(n, e0, DELTA / 2) <= eps
    assert shuffle_epsilon(n, min(1.001 * e0, 0.5), DELTA / 2) > eps or e0 == 0.5
    assert DELTA / 2 + shuffle_delta_cost(eps, e0, d0, n) == pytest.approx(DELTA)
    ratio = i["sigma"] ** 2 * e0**2 / (8 * i["kappa"] * i["threshold"] ** 2 * math.log(1 / d0))
    assert ratio == pytest.approx(1.0)
    # the event's PLD (guarantees on a grid, not at the paper's exact eps0) agrees
    assert i["epsilon_pld"] <= eps * 1.002
    acc = shuffled_truncated_mirror_descent(X, y, **kw)
    assert acc.info["sigma"] <= i["sigma"] * 1.002
    assert isinstance(acc.event, ShuffledNormGaussianDpEvent) and acc.event.n == n
    assert acc.event.sensitivity == pytest.approx(2 * i["threshold"])
    h = acc.info["pld_interval"]
    assert (
        PrivacyAccountant("pld", value_discretization_interval=h)
        .compose(acc.event)
        .get_epsilon(DELTA)
        <= eps
    )
    assert lp_norm(acc.theta, 1.5) <= 1 + 1e-12


def test_alg4_shuffles_with_fresh_randomness():
    X, y = _data(20000, seed=6)
    kw = dict(p=1.5, radius=1.0, epsilon=0.03, delta=DELTA, row_bound=1.0)
    a = shuffled_truncated_mirror_descent(X, y, random_state=1, **kw)
    b = shuffled_truncated_mirror_descent(X, y, random_state=1, **kw)
    c = shuffled_truncated_mirror_descent(X, y, **kw)
    assert np.array_equal(a.theta, b.theta) and not np.array_equal(a.theta, c.theta)


def test_heavy_tailed_refusals():
    X, y = _data(500)
    kw = dict(radius=1.0, epsilon=0.5, delta=DELTA, row_bound=1.0)
    with pytest.raises(ValueError, match="1 < p <= 2"):
        batched_truncated_mirror_descent(X, y, p=3.0, **kw)
    with pytest.raises(ValueError, match="epsilon < 1"):
        batched_truncated_mirror_descent(X, y, p=1.5, **{**kw, "epsilon": 1.5})
    with pytest.raises(ValueError, match="exceeds n"):
        batched_truncated_mirror_descent(X, y, p=1.5, steps=501, **kw)
    with pytest.raises(ValueError, match="above the declared bound"):
        batched_truncated_mirror_descent(3 * X, y, p=1.5, **kw)
    with pytest.raises(ValueError, match="radius"):
        batched_truncated_mirror_descent(X, y, p=1.5, **{**kw, "radius": 0.0})
    bad = y.copy()
    bad[0] = np.inf
    with pytest.raises(ValueError, match="NaN or infinity"):
        batched_truncated_mirror_descent(X, bad, p=1.5, **kw)


def test_dpsgd_baseline_privacy():
    X, y = _data(3000)
    rel = clipped_dpsgd(
        X,
        y,
        "squared",
        epsilon=0.5,
        delta=DELTA,
        clip=2.0,
        radius=1.0,
        batch_size=100,
        epochs=3,
        random_state=0,
    )
    assert isinstance(rel.event, SelfComposedDpEvent) and rel.event.count == 3
    assert rel.info["noise_multiplier"] == pytest.approx(math.sqrt(3) * gaussian_sigma(0.5, DELTA))
    assert rel.info["sigma"] == pytest.approx(rel.info["noise_multiplier"] * 2 * 2.0 / 100)
    assert rel.info["epsilon"] <= 0.5 + 1e-6
    ref = PrivacyAccountant("pld").compose(GaussianDpEvent(rel.info["noise_multiplier"]), 3)
    assert rel.info["epsilon"] == pytest.approx(ref.get_epsilon(DELTA))
    assert np.linalg.norm(rel.theta) <= 1.0 + 1e-12
