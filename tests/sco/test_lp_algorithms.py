"""Algorithms 3 and 6 of Su, Zhao & Wang (arXiv 2303.18047): unconstrained l_p."""

import math

import numpy as np
import pytest
from dp_accounting.dp_event import GaussianDpEvent, SelfComposedDpEvent

import dpconvex.sco.mirror_descent as md_module
from dpconvex.accounting import PrivacyAccountant, gaussian_delta, gaussian_sigma
from dpconvex.sco import (
    GLMData,
    NormGaussianDpEvent,
    lp_norm,
    lp_regularity,
    mirror_map,
    noisy_mirror_descent,
    phased_dpsgd,
    regularized_mirror_step,
)
from dpconvex.sco.phased_sgd import sgd_pass_average

DELTA = 1e-5


def _data(n, d, q, seed=0, loss="logistic"):
    rng = np.random.default_rng(seed)
    X = rng.choice([-1.0, 1.0], (n, d)) / d ** (1 / q)
    w = np.zeros(d)
    w[:2] = [1.0, -0.5]
    if loss == "logistic":
        y = np.where(rng.random(n) < 1 / (1 + np.exp(-X @ w)), 1.0, -1.0)
    else:
        y = X @ w + 0.3 * rng.standard_normal(n)
    return X, y


def test_alg3_paper_sigma_identities():
    """sigma^2 / (64 kappa L^2 T / (n^2 eps^2)) = ln(2T/delta) ln(4/delta) (item 4, at delta/2)."""
    p, d, eps = 1.5, 8, 0.5
    X, y = _data(600, d, 3.0)
    out = {}
    for n, T in ((600, 20), (300, 20), (600, 40)):
        rel = noisy_mirror_descent(
            X[:n],
            y[:n],
            "logistic",
            p=p,
            epsilon=eps,
            delta=DELTA,
            row_bound=1.0,
            steps=T,
            calibration="paper",
            random_state=0,
        )
        kappa = rel.info["kappa"]
        ratio = rel.info["sigma"] ** 2 / (64 * kappa * 1.0 * T / (n**2 * eps**2))
        assert ratio == pytest.approx(math.log(2 * T / DELTA) * math.log(4 / DELTA))
        out[(n, T)] = rel.info["sigma"] ** 2
        assert rel.info["epsilon_pld"] <= eps
    assert out[(300, 20)] == pytest.approx(4 * out[(600, 20)])
    assert out[(600, 40)] / out[(600, 20)] == pytest.approx(
        2 * math.log(80 / DELTA) / math.log(40 / DELTA)
    )


def test_alg3_accountant_is_tighter_safe_and_priced_by_its_event():
    X, y = _data(2000, 8, 3.0)
    kw = dict(p=1.5, epsilon=0.5, delta=DELTA, row_bound=1.0, steps=30, random_state=1)
    paper = noisy_mirror_descent(X, y, "logistic", calibration="paper", **kw)
    acc = noisy_mirror_descent(X, y, "logistic", **kw)
    assert acc.info["sigma"] < 0.5 * paper.info["sigma"]
    assert isinstance(acc.event, SelfComposedDpEvent) and acc.event.count == 30
    inner = acc.event.event
    assert isinstance(inner, NormGaussianDpEvent)
    assert inner.sensitivity == pytest.approx(2 * 1.0 / 2000)  # 2L/n, replace-one (Thm 6)
    assert inner.kappa == lp_regularity(1.5, 8).kappa and inner.norm_index == 3.0
    h = acc.info["pld_interval"]
    assert (
        PrivacyAccountant("pld", value_discretization_interval=h)
        .compose(acc.event)
        .get_epsilon(DELTA)
        <= 0.5
    )
    # on the accountant's default (coarser, nested) grid: slightly larger, still close
    assert PrivacyAccountant("pld").compose(acc.event).get_epsilon(DELTA) <= 0.5 * 1.01
    # eps >= 1 is allowed through the accountant only
    big = noisy_mirror_descent(X, y, "logistic", p=1.5, epsilon=2.0, delta=DELTA, row_bound=1.0)
    assert big.info["epsilon"] <= 2.0
    with pytest.raises(ValueError, match="0 < epsilon < 1"):
        noisy_mirror_descent(
            X, y, "logistic", p=1.5, epsilon=2.0, delta=DELTA, row_bound=1.0, calibration="paper"
        )


def _noiseless(monkeypatch):
    monkeypatch.setattr(
        md_module, "norm_gaussian", lambda d, r, sigma, rng, size=None, mean=0.0: np.zeros(d)
    )


def test_alg3_at_p2_is_euclidean_regularized_gd(monkeypatch):
    """p = 2: Gaussian event, and without noise the steps are w <- (beta w - grad)/(alpha+beta),
    averaged with weights ((2 beta + alpha)/(2 beta))^t (items 16, 21)."""
    X, y = _data(500, 5, 2.0)
    rel = noisy_mirror_descent(
        X,
        y,
        "logistic",
        p=2.0,
        epsilon=0.5,
        delta=DELTA,
        row_bound=1.0,
        steps=15,
        random_state=0,
    )
    assert rel.event.event.is_gaussian
    ref = PrivacyAccountant("pld").compose(
        GaussianDpEvent(rel.info["sigma"] / rel.event.event.sensitivity), 15
    )
    assert PrivacyAccountant("pld").compose(rel.event).get_epsilon(DELTA) == pytest.approx(
        ref.get_epsilon(DELTA), rel=2e-3
    )
    _noiseless(monkeypatch)
    rel = noisy_mirror_descent(
        X,
        y,
        "logistic",
        p=2.0,
        epsilon=0.5,
        delta=DELTA,
        row_bound=1.0,
        steps=15,
        regularization=0.05,
    )
    data = GLMData(X, y, "logistic", 1.0)
    beta, alpha = 0.25, 0.05
    w, num, den = np.zeros(5), np.zeros(5), 0.0
    for t in range(1, 16):
        w = (beta * w - data.grad(w)) / (alpha + beta)
        weight = ((2 * beta + alpha) / (2 * beta)) ** t
        num, den = num + weight * w, den + weight
    assert np.allclose(rel.theta, num / den, atol=1e-12)


def _regularized_minimizer(data, phi, beta, alpha, iters=3000):
    w = np.zeros(data.d)
    for _ in range(iters):
        w = regularized_mirror_step(phi, w, data.grad(w), beta, alpha)
    return w


def test_noiseless_contraction_in_bregman_divergence():
    """D_Phi(w*_a, w_{t+1}) <= beta/(alpha+beta) D_Phi(w*_a, w_t) without noise (item 16)."""
    p, d = 1.5, 6
    X, y = _data(400, d, 3.0, seed=2)
    data = GLMData(X, y, "logistic", 1.0, q=3.0)
    phi = mirror_map(lp_regularity(p, d))
    beta, alpha = 0.25, 0.05
    w_star = _regularized_minimizer(data, phi, beta, alpha)
    w = np.zeros(d)
    for _ in range(40):
        before = float(phi.bregman(w_star, w))
        w = regularized_mirror_step(phi, w, data.grad(w), beta, alpha)
        after = float(phi.bregman(w_star, w))
        assert after <= beta / (alpha + beta) * before + 1e-15


def test_regularized_minimizer_stability_lemma_13():
    """||w*_a(D) - w*_a(D')||_p <= 4L/(n alpha) for replace-one neighbours (item 17)."""
    p, d, n = 1.5, 5, 200
    X, y = _data(n, d, 3.0, seed=3)
    phi = mirror_map(lp_regularity(p, d))
    beta, alpha = 0.25, 0.02
    w1 = _regularized_minimizer(GLMData(X, y, "logistic", 1.0, q=3.0), phi, beta, alpha)
    X2, y2 = X.copy(), y.copy()
    X2[0] = -X[0]  # gradient f'(-<z,w>; y)(-z): the most different replacement
    w2 = _regularized_minimizer(GLMData(X2, y2, "logistic", 1.0, q=3.0), phi, beta, alpha)
    assert lp_norm(w1 - w2, p) <= 4 * 1.0 / (n * alpha)
    assert lp_norm(w1 - w2, p) > 0


def test_alg3_refusals_and_row_norm_is_dual():
    X, y = _data(300, 8, 3.0)
    kw = dict(epsilon=0.5, delta=DELTA, row_bound=1.0)
    with pytest.raises(ValueError, match="1 < p <= 2"):
        noisy_mirror_descent(X, y, "logistic", p=2.5, **kw)
    with pytest.raises(ValueError, match="beta > 0"):
        noisy_mirror_descent(X, np.ones(300), "linear", p=1.5, **kw)
    # rows with ||z||_3 = 1 but ||z||_2 = 8^(1/6) > 1 are accepted in l_1.5 geometry ...
    noisy_mirror_descent(X, y, "logistic", p=1.5, steps=3, **kw)
    # ... and refused in Euclidean geometry, where the bound is on ||z||_2
    with pytest.raises(ValueError, match="above the declared bound"):
        noisy_mirror_descent(X, y, "logistic", p=2.0, steps=3, **kw)


def test_alg6_noise_is_a_valid_gaussian_mechanism():
    """sigma_i / (2 L eta_i) = 2 sqrt(log(1/delta))/eps is (eps, delta)-DP for delta <= 0.8 and
    eps <= 2 log(1/delta) (Lemma 14; item 6), checked on the exact Gaussian profile."""
    for delta in (1e-10, 1e-5, 1e-2, 0.3, 0.8):
        top = 2 * math.log(1 / delta)
        for eps in np.geomspace(1e-3, top, 25):
            z = 2 * math.sqrt(math.log(1 / delta)) / eps
            assert gaussian_delta(eps, 1.0, z) <= delta
            assert z >= math.sqrt(2 * math.log(1.25 / delta)) / eps  # classical form, item 6


def test_alg6_calibrations_and_event():
    X, y = _data(3000, 6, 4 / 3, loss="huber")
    kw = dict(p=4.0, epsilon=0.7, delta=DELTA, row_bound=1.0, random_state=0)
    paper = phased_dpsgd(X, y, "huber", calibration="paper", **kw)
    acc = phased_dpsgd(X, y, "huber", **kw)
    assert paper.info["noise_multiplier"] == pytest.approx(2 * math.sqrt(math.log(1 / DELTA)) / 0.7)
    assert acc.info["noise_multiplier"] == pytest.approx(gaussian_sigma(0.7, DELTA))
    assert acc.info["noise_multiplier"] < paper.info["noise_multiplier"]
    for rel in (paper, acc):
        assert isinstance(rel.event, GaussianDpEvent)
        assert PrivacyAccountant("pld").compose(rel.event).get_epsilon(DELTA) <= 0.7 + 1e-6
    eta = min(4 / math.sqrt(3000), 0.7 / (2 * math.sqrt(6 * math.log(1 / DELTA))))  # L = 1
    assert acc.info["step_size"] == pytest.approx(eta)
    assert acc.info["phases"] == math.ceil(math.log2(3000))
    assert acc.info["samples_used"] == sum(3000 // 2**i for i in range(1, 13))


def test_alg6_phase_sensitivity_premise():
    """Noiseless phase averages on neighbouring data differ by <= 2 L eta (item 18)."""
    rng = np.random.default_rng(4)
    X, y = _data(300, 5, 2.0, loss="huber")
    w0 = rng.standard_normal(5)
    eta = 1.0  # = 1/beta for Huber with ||z||_2 <= 1
    a = sgd_pass_average(GLMData(X, y, "huber", 1.0), np.arange(300), w0, eta)
    for j in (0, 150, 299):
        X2, y2 = X.copy(), y.copy()
        X2[j], y2[j] = -X[j], y[j] + 50.0
        b = sgd_pass_average(GLMData(X2, y2, "huber", 1.0), np.arange(300), w0, eta)
        assert np.linalg.norm(a - b) <= 2 * 1.0 * eta + 1e-12
        assert np.linalg.norm(a - b) > 0


def test_alg6_refusals():
    X, y = _data(500, 4, 2.0)
    with pytest.raises(ValueError, match="2 log"):
        phased_dpsgd(X, y, "logistic", epsilon=30.0, delta=DELTA, row_bound=1.0)
    with pytest.raises(ValueError, match="1/beta"):
        phased_dpsgd(X, y, "logistic", epsilon=0.5, delta=DELTA, row_bound=1.0, step_size=5.0)
    with pytest.raises(ValueError, match="p >= 2"):
        phased_dpsgd(X, y, "logistic", p=1.5, epsilon=0.5, delta=DELTA, row_bound=1.0)
    with pytest.raises(ValueError, match="0.8"):
        phased_dpsgd(X, y, "logistic", epsilon=0.1, delta=0.85, row_bound=1.0, calibration="paper")
    with pytest.raises(ValueError, match="not Lipschitz"):
        phased_dpsgd(X, y, "squared", epsilon=0.5, delta=DELTA, row_bound=1.0)
