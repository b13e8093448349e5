"""Private GLM posterior sampling: exact-target GDP by quadrature, plans, releases, refusals."""

import math

import numpy as np
import pytest
from scipy import integrate

from dpconvex.accounting import PrivacyAccountant, gaussian_delta
from dpconvex.losses import HuberLoss, LogisticLoss, SquaredLoss
from dpconvex.sampling import (
    ApproximateDpEvent,
    GLMPotential,
    exact_posterior_delta,
    plan_composition,
    plan_thesis,
    posterior_sample,
    ula,
)


def hockey_stick(logp, logq, grid, eps):
    """int (p - e^eps q)_+ for unnormalized log densities on a fine grid (trapezoid)."""

    def density(logf):
        f = np.exp(logf - logf.max())
        return f / integrate.trapezoid(f, grid)

    return integrate.trapezoid(np.maximum(density(logp) - math.exp(eps) * density(logq), 0), grid)


def test_exact_posterior_is_gdp_by_quadrature():
    # GLL22: F strongly convex, F' - F G-Lipschitz => sampling exp(-F) is (G/sqrt m)-GDP
    rng = np.random.default_rng(0)
    x = rng.uniform(-1, 1, 30)
    y = rng.choice([-1.0, 1.0], 30)
    beta, m, R = 3.0, 0.5, 1.0
    grid = np.linspace(-25, 25, 200_001)
    base = 0.5 * m * grid**2 + beta * np.sum(np.logaddexp(0, -np.outer(y * x, grid)), axis=0)
    pot = GLMPotential(LogisticLoss(), beta, m, R, 30)
    for x0, y0 in ((1.0, 1.0), (-0.7, 1.0)):
        extra = base + beta * np.logaddexp(0, -y0 * x0 * grid)
        for eps in (0.0, 1.0, 3.0):
            bound = exact_posterior_delta(eps, pot)
            assert hockey_stick(-base, -extra, grid, eps) <= bound + 1e-6
            assert hockey_stick(-extra, -base, grid, eps) <= bound + 1e-6
    # equality for a linear perturbation: N(0, 1/m) vs N(-G/m, 1/m)
    G = beta * R
    for eps in (0.0, 1.0, 3.0):
        got = hockey_stick(-0.5 * m * grid**2, -(0.5 * m * grid**2 + G * grid), grid, eps)
        assert got == pytest.approx(gaussian_delta(eps, 1.0, 1 / (G / math.sqrt(m))), abs=1e-7)


def test_ula_targets_the_posterior():
    rng = np.random.default_rng(1)
    n = 40
    X = np.column_stack([rng.uniform(-1, 1, n), np.ones(n)]) / math.sqrt(2)
    y = np.where(rng.random(n) < 0.7, 1.0, -1.0)
    pot = GLMPotential(LogisticLoss(), 1.0, 0.5, 1.0, n)
    eta = 0.1 / pot.smoothness
    chains = ula(lambda t: pot.gradient(X, y, t), np.zeros((2000, 2)), eta, 1500, rng)
    # the posterior mean of the second coordinate by 2-D quadrature
    g = np.linspace(-8, 8, 401)
    T1, T2 = np.meshgrid(g, g, indexing="ij")
    theta = np.stack([T1.ravel(), T2.ravel()], axis=1)
    u = theta @ X.T
    F = np.sum(np.logaddexp(0, -u * y), axis=1) + 0.25 * np.sum(theta**2, axis=1)
    w = np.exp(-(F - F.min()))
    mean = (w[:, None] * theta).sum(axis=0) / w.sum()
    np.testing.assert_allclose(chains.mean(axis=0), mean, atol=0.08)


def test_composition_plan_is_consistent():
    plan = plan_composition(5000, LogisticLoss(), 2.0, math.sqrt(2), 1.0, 1e-5)
    pot = plan["potential"]
    assert plan["eta"] <= 0.5 / pot.smoothness
    assert plan["eta"] * plan["steps"] == pytest.approx(plan["tau"]) and plan["tau"] == 2.5
    # each step: Gaussian mechanism of sensitivity eta G and noise sqrt(2 eta)
    z = math.sqrt(2 * plan["eta"]) / (plan["eta"] * pot.gradient_sensitivity)
    assert z == pytest.approx(plan["noise_multiplier"], rel=1e-9)
    assert PrivacyAccountant("pld").compose(plan["event"]).get_epsilon(1e-5) <= 1.0
    for n, eps in ((1, 1.0), (50, 0.5), (5000, 2.0)):  # strictly on the safe side, and tight
        plan = plan_composition(n, LogisticLoss(), 1.0, 1.0, eps, 1e-5)
        spent = PrivacyAccountant("pld").compose(plan["event"]).get_epsilon(1e-5)
        assert eps * (1 - 1e-6) < spent <= eps
    plan["beta"] = -1.0  # a copy: the cached plan is not altered
    assert plan_composition(5000, LogisticLoss(), 1.0, 1.0, 2.0, 1e-5)["beta"] > 0


def test_posterior_sample_release_and_accounting():
    rng = np.random.default_rng(2)
    X = rng.standard_normal((300, 3))
    y = np.where(X[:, 0] + 0.3 * rng.standard_normal(300) > 0, 1.0, -1.0)
    rel = posterior_sample(X, y, epsilon=2.0, delta=1e-5, lam=1.0, random_state=3)
    assert rel.theta.shape == (4,)  # with the intercept
    assert PrivacyAccountant("pld").compose(rel.event).get_epsilon(1e-5) <= 2.0
    assert rel.info["accounting"] == "composition"
    again = posterior_sample(X, y, epsilon=2.0, delta=1e-5, lam=1.0, random_state=3)
    np.testing.assert_array_equal(rel.theta, again.theta)
    Xn = np.column_stack([X / np.linalg.norm(X, axis=1, keepdims=True), np.ones(300)])
    assert np.mean(np.sign(Xn @ rel.theta) == y) > 0.6  # it learns the signal


def test_thesis_plan_chain_and_refusal():
    plan = plan_thesis(1000, 5, LogisticLoss(), 1.0, math.sqrt(2), 1.0, 1e-5)
    assert plan["chain_epsilon"] <= 1.0
    assert plan["mu"] == pytest.approx(
        (plan["potential"].gradient_sensitivity + 2e-9) / 1.0, rel=1e-6
    )
    assert plan["steps"] > 1e12
    X = np.random.default_rng(4).standard_normal((50, 2))
    y = np.where(X[:, 0] > 0, 1.0, -1.0)
    with pytest.raises(ValueError, match="max_steps"):
        posterior_sample(X, y, epsilon=1.0, delta=1e-5, accounting="thesis")
    event = ApproximateDpEvent(0.9, 1e-6)
    assert PrivacyAccountant("pld").compose(event).get_epsilon(1e-6) == pytest.approx(0.9, abs=2e-4)


def test_refusals():
    X = np.random.default_rng(5).standard_normal((20, 2))
    y = np.where(X[:, 0] > 0, 1.0, -1.0)
    with pytest.raises(ValueError, match="Lipschitz"):
        posterior_sample(X, X[:, 0], "squared", epsilon=1.0, delta=1e-5)
    with pytest.raises(ValueError, match="Lipschitz"):
        GLMPotential(SquaredLoss(), 1.0, 1.0, 1.0, 10)
    assert GLMPotential(HuberLoss(1.0), 1.0, 1.0, 1.0, 10).gradient_sensitivity == 1.0
    with pytest.raises(ValueError, match="lam"):
        posterior_sample(X, y, epsilon=1.0, delta=1e-5, lam=0.0)
    with pytest.raises(ValueError, match="-1, \\+1"):
        posterior_sample(X, np.abs(y) * 2, epsilon=1.0, delta=1e-5)
    with pytest.raises(ValueError, match="finite"):
        posterior_sample(np.full((20, 2), np.nan), y, epsilon=1.0, delta=1e-5)
    with pytest.raises(ValueError, match="delta"):
        posterior_sample(X, y, epsilon=1.0, delta=1.0)
    with pytest.raises(ValueError, match="step_fraction"):
        posterior_sample(X, y, epsilon=1.0, delta=1e-5, step_fraction=2.5)
    with pytest.raises(ValueError, match="accounting"):
        posterior_sample(X, y, epsilon=1.0, delta=1e-5, accounting="exact")
