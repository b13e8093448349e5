"""Langevin samplers (Ganesh's thesis, EECS-2022-53, ch. 3) on Gaussian targets vs closed forms."""

import math

import numpy as np
import pytest
from scipy import linalg

from dpconvex.sampling import (
    standardized,
    ula,
    ula_gaussian_variance,
    underdamped,
    underdamped_coefficients,
)

A = np.array([[2.0, 0.5], [0.5, 1.0]])
MEAN = np.array([1.0, -2.0])


def gaussian_grad(x):
    return (x - MEAN) @ A  # A symmetric


def test_ula_gaussian_mean_and_stationary_covariance_o12():
    rng = np.random.default_rng(0)
    eta = 0.05
    x = ula(gaussian_grad, np.tile(MEAN, (20_000, 1)), eta, 400, rng)
    np.testing.assert_allclose(x.mean(axis=0), MEAN, atol=0.02)
    stationary = np.linalg.inv(A) @ np.linalg.inv(np.eye(2) - eta * A / 2)  # A^-1 (I - eta A/2)^-1
    np.testing.assert_allclose(stationary, [[0.59775, -0.28538], [-0.28538, 1.16850]], atol=1e-5)
    np.testing.assert_allclose(np.cov(x.T), stationary, atol=0.03)
    assert not np.allclose(np.cov(x.T), np.linalg.inv(A), atol=0.015)  # the O(eta) bias is seen


@pytest.mark.parametrize("lam,eta", [(1.0, 0.1), (4.0, 0.05), (0.5, 0.2)])
def test_ula_overdispersion_matches_closed_form(lam, eta):
    # 1/(lam (1 - eta lam / 2)): the stationary variance of ULA on N(0, 1/lam)
    rng = np.random.default_rng(1)
    x = ula(lambda z: lam * z, np.zeros((40_000, 1)), eta, 300, rng)
    exact = ula_gaussian_variance(lam, eta, 300, 0.0)
    assert exact == pytest.approx(1 / (lam * (1 - eta * lam / 2)), rel=1e-6)
    assert np.var(x) == pytest.approx(float(exact), rel=0.03)


def test_ula_transient_variance_o13():
    rng = np.random.default_rng(2)
    lam, eta, steps = 2.0, 0.05, 7
    x = ula(lambda z: lam * z, np.zeros((100_000, 1)), eta, steps, rng)
    # independent recursion v_{t+1} = (1 - eta lam)^2 v_t + 2 eta
    v_t = 0.0
    for _ in range(steps):
        v_t = (1 - eta * lam) ** 2 * v_t + 2 * eta
    assert float(ula_gaussian_variance(lam, eta, steps, 0.0)) == pytest.approx(v_t, rel=1e-12)
    assert np.var(x) == pytest.approx(v_t, rel=0.02)


def test_underdamped_one_step_moments_o17():
    rng = np.random.default_rng(3)
    lam, h, gamma, mu = 2.0, 0.2, 2.0, 1.0
    n = 200_000
    x, v = underdamped(
        lambda z: lam * z, np.ones((n, 1)), h, 1, rng, gamma=gamma, mu=mu, v0=np.full((n, 1), 0.5)
    )
    c = underdamped_coefficients(h, gamma, mu)
    e = math.exp(-0.4)
    assert 1 + c["a"] * 0.5 - mu * c["b"] * lam == pytest.approx(1.047260, abs=1e-6)
    assert e * 0.5 - mu * c["a"] * lam == pytest.approx(0.005480, abs=1e-6)
    np.testing.assert_allclose(
        c["cov"], [[0.0079878, 0.0543444], [0.0543444, 0.5506710]], rtol=1e-5
    )
    assert x.mean() == pytest.approx(1.047260, abs=4 * math.sqrt(0.0079878 / n))
    assert v.mean() == pytest.approx(0.005480, abs=4 * math.sqrt(0.5506710 / n))
    np.testing.assert_allclose(np.cov(np.hstack([x, v]).T), c["cov"], rtol=0.02)


def test_underdamped_step_is_the_limit_of_fine_euler():
    # the thesis's sub-step Euler scheme with frozen gradient, c = 400 sub-steps
    rng = np.random.default_rng(4)
    lam, h, gamma, mu, n, c = 1.5, 0.3, 2.0, 1.0, 50_000, 400
    x0, v0 = 0.7, -0.2
    g = lam * x0
    x, v = np.full(n, x0), np.full(n, v0)
    dt = h / c
    for _ in range(c):
        v = (
            (1 - gamma * dt) * v
            - mu * dt * g
            + math.sqrt(2 * gamma * mu * dt) * rng.standard_normal(n)
        )
        x = x + dt * v
    coef = underdamped_coefficients(h, gamma, mu)
    assert x.mean() == pytest.approx(x0 + coef["a"] * v0 - mu * coef["b"] * g, abs=2e-3)
    assert v.mean() == pytest.approx(coef["e1"] * v0 - mu * coef["a"] * g, abs=1e-2)
    np.testing.assert_allclose(np.cov(np.vstack([x, v])), coef["cov"], rtol=0.04)


@pytest.mark.parametrize(
    "lam,gamma,h,expected",
    [(1.0, 2.0, 0.1, 1.025619), (1.0, 2.0, 0.5, 1.139807), (4.0, 4.0, 0.1, 1.052450)],
)
def test_underdamped_stationary_bias_o18(lam, gamma, h, expected):
    # exact linear step on f = lam x^2/2: stationary covariance by the discrete Lyapunov equation
    c = underdamped_coefficients(h, gamma, 1.0)
    F = np.array([[1 - c["b"] * lam, c["a"]], [-c["a"] * lam, c["e1"]]])
    S = linalg.solve_discrete_lyapunov(F, c["cov"])
    assert S[0, 0] * lam == pytest.approx(expected, rel=1e-5)
    rng = np.random.default_rng(5)
    x, _ = underdamped(lambda z: lam * z, np.zeros((20_000, 1)), h, 400, rng, gamma=gamma)
    assert np.var(x) * lam == pytest.approx(S[0, 0] * lam, rel=0.04)


def test_standardized_sampling_recovers_mean_and_covariance():
    # f(x) = (x - m)^T A (x - m) / 2: m-strong convexity lambda_min(A); rescale, run, map back
    rng = np.random.default_rng(6)
    m = float(np.linalg.eigvalsh(A)[0])
    grad_g, to_x = standardized(gaussian_grad, MEAN, m)
    y = ula(grad_g, rng.standard_normal((6000, 2)), 0.02, 600, rng)
    x = to_x(y)
    np.testing.assert_allclose(x.mean(axis=0), MEAN, atol=0.02)
    np.testing.assert_allclose(np.cov(x.T), np.linalg.inv(A), atol=0.03)
    np.testing.assert_allclose(grad_g(np.zeros(2)), 0.0, atol=1e-12)  # minimum at 0


def test_samplers_refuse_bad_input():
    rng = np.random.default_rng(0)
    with pytest.raises(ValueError, match="step"):
        ula(gaussian_grad, MEAN, 0.0, 10, rng)
    with pytest.raises(ValueError, match="steps"):
        ula(gaussian_grad, MEAN, 0.1, 0, rng)
    with pytest.raises(ValueError, match="finite"):
        ula(gaussian_grad, np.array([np.nan, 0.0]), 0.1, 3, rng)
    with pytest.raises(ValueError, match="shape"):
        ula(lambda x: x[:1], MEAN, 0.1, 3, rng)
    with pytest.raises(ValueError, match="NaN or inf"), np.errstate(over="ignore"):
        ula(lambda x: 1e300 * x * x, np.array([1e10, 1.0]), 1.0, 50, rng)
    with pytest.raises(ValueError, match="gamma"):
        underdamped(gaussian_grad, MEAN, 0.1, 3, rng, gamma=-1.0)
