"""Explicit Thm 42/52/65 constants and the privacy chain, against closed-form Gaussian cases.

The convergence terms of Thm 42 (Lemmas 53-59) and the discretization term are
checked on Gaussian targets, where every law is Gaussian and every Renyi
divergence has a closed form (Ganesh's thesis, EECS-2022-53, ch. 3).
"""

import math

import numpy as np
import pytest

from dpconvex.accounting import epsilon_from_rdp, gaussian_epsilon
from dpconvex.sampling import (
    MOVEMENT_CONSTANT,
    chain_epsilon,
    chain_links,
    link_epsilon,
    plan_thm42,
    thm42_renyi,
    thm52_renyi,
    thm65_max_step,
)


def renyi_gauss(alpha, a, b):
    """R_alpha(N(0, diag a) || N(0, diag b)) in closed form, summed over coordinates."""
    a, b = np.atleast_1d(a).astype(float), np.atleast_1d(b).astype(float)
    mix = alpha * b + (1 - alpha) * a
    if np.any(mix <= 0):
        return math.inf
    terms = ((1 - alpha) * np.log(a) + alpha * np.log(b) - np.log(mix)) / (2 * (alpha - 1))
    return float(terms.sum())


def test_chain_arithmetic_o19():
    eps, delta = 0.7, 1e-6
    total = chain_links([(eps, delta)] * 3)
    assert total[0] == pytest.approx(3 * eps)
    assert total[1] == pytest.approx((1 + math.exp(eps) + math.exp(2 * eps)) * delta)
    assert total[1] > 3 * delta  # the thesis's "3 delta" is the small-eps approximation


def test_thm52_condition_is_the_printed_one():
    tau, eta, k, M, c = 3.0, 1e-9, 5, 2.0, MOVEMENT_CONSTANT
    bound = thm52_renyi(4.0, tau, eta, k, M, c)
    # recompute: largest alpha' with c_1(alpha') < 2, then ln(19 a / sqrt(alpha'))/(a-1)
    A = 3 * tau * M**4 * c**2 * (k + 2 * math.log(tau / eta)) * eta / 4
    alpha_p = (1 + math.sqrt(1 + 4 * math.log(2) / A)) / 2
    assert alpha_p * (alpha_p - 1) * A == pytest.approx(math.log(2))
    a = alpha_p / 4 + 0.5
    assert bound == pytest.approx(math.log(19 * a / math.sqrt(alpha_p)) / (a - 1), rel=1e-9)
    assert thm52_renyi(4.0, tau, 10 * eta, k, M, c) > bound  # larger steps, weaker bound
    assert thm52_renyi(1e6, tau, eta, k, M, c) == math.inf  # order beyond alpha'/4 + 1/2


def test_thm52_refuses_steps_outside_lemma_50():
    with pytest.raises(ValueError, match="2/\\(M\\+1\\)"):
        thm52_renyi(2.0, 10.0, 0.9, 3, 4.0)
    with pytest.raises(ValueError, match="M"):
        thm42_renyi(2.0, 10.0, 1e-3, 3, 0.5)


@pytest.mark.parametrize(
    "alpha,eps,k,M", [(2.0, 1.0, 1, 1.5), (10.0, 0.5, 10, 2.0), (24.0, 0.25, 100, 10.0)]
)
def test_thm42_plan_meets_its_budget_and_is_astronomical(alpha, eps, k, M):
    plan = plan_thm42(alpha, eps, k, M)
    check = thm42_renyi(alpha, plan["tau"], plan["eta"], k, M)
    assert check["bound"] <= eps
    assert plan["steps"] == pytest.approx(plan["tau"] / plan["eta"], rel=1e-9)
    assert plan["steps"] > 1e7  # every constant explicit: Thm 42 is far from practical
    tighter = plan_thm42(alpha, eps / 2, k, M)
    assert tighter["steps"] > plan["steps"]


@pytest.mark.parametrize("alpha", [2.0, 5.0, 20.0])
def test_convergence_terms_bound_the_exact_gaussian_divergences(alpha):
    # f = sum lam_i x_i^2/2, lam in [1, M]: the continuous law from N(0, I) is Gaussian
    lam = np.linspace(1.0, 4.0, 10)
    M, k = 4.0, lam.size
    for tau in (0.5, 2.0, 8.0, 30.0):
        var = 1 / lam + (1 - 1 / lam) * np.exp(-2 * lam * tau)
        b = thm42_renyi(alpha, tau, 1e-9, k, M)
        assert renyi_gauss(2 * alpha, var, 1 / lam) <= b["convergence_forward"] + 1e-12
        assert renyi_gauss(2 * alpha, 1 / lam, var) <= b["convergence_backward"] + 1e-12


def test_lemma_53_59_and_contraction_instances_o15_o16():
    lam = np.linspace(1.0, 4.0, 10)
    M, k = 4.0, 10
    assert renyi_gauss(2.0, np.full(k, 1 / M), 1 / lam) == pytest.approx(1.26312, rel=1e-5)
    assert renyi_gauss(2.0, 1 / lam, np.ones(k)) == pytest.approx(2.12888, rel=1e-5)
    assert renyi_gauss(1.25, np.ones(k), 1 / lam) == pytest.approx(6.95603, rel=1e-5)
    rng = np.random.default_rng(0)
    for _ in range(100):
        lam = rng.uniform(1, M, k)
        for a in (1.5, 2.0, 5.0, 20.0):
            assert renyi_gauss(a, np.full(k, 1 / M), 1 / lam) <= k / 2 * math.log(M)
            assert renyi_gauss(a, 1 / lam, np.ones(k)) <= k * math.log(M)
        assert renyi_gauss(1 + 1 / M, np.ones(k), 1 / lam) <= k * M * math.log(M) / 2
    for a0 in (0.05, 0.2, 2.0):  # OU towards N(0,1): variance 1 + (a0 - 1) e^-2t
        for alpha in (1.5, 2.0, 30.0):
            for t in (0.01, 1.0, 5.0):
                vt = 1 + (a0 - 1) * math.exp(-2 * t)
                assert (
                    renyi_gauss(alpha, vt, 1.0)
                    <= math.exp(-2 * t / alpha) * renyi_gauss(alpha, a0, 1.0) + 1e-15
                )
    assert renyi_gauss(2.0, 1 + (0.2 - 1) * math.exp(-2.0), 1.0) == pytest.approx(
        0.0058956, rel=1e-4
    )


def test_discrete_vs_continuous_gaussian_below_thm52():
    # exact ULA law vs the continuous law at the same time: far below the worst-case bound
    lam, eta, steps = np.linspace(1.0, 4.0, 10), 1e-3, 2000
    tau = eta * steps
    disc = (1 - eta * lam) ** (2 * steps) + (1 - (1 - eta * lam) ** (2 * steps)) / (
        lam * (1 - eta * lam / 2)
    )
    cont = 1 / lam + (1 - 1 / lam) * np.exp(-2 * lam * tau)
    exact = max(renyi_gauss(4.0, disc, cont), renyi_gauss(4.0, cont, disc))
    assert exact < 1e-3  # ~eta^2 for Gaussian targets
    assert thm52_renyi(4.0, tau, 1e-12, 10, 4.0) > exact


def test_link_conversion_and_chain_are_valid():
    assert link_epsilon(0.1, 30.0, 1e-6) <= 0.1 + math.log(1e6) / 29  # improved <= Thm 14
    assert link_epsilon(0.1, 30.0, 1e-6) == pytest.approx(epsilon_from_rdp([30.0], [0.1], 1e-6)[0])
    mu, delta = 0.3, 1e-5
    eps = chain_epsilon(0.02, 40.0, mu, delta)
    assert eps > gaussian_epsilon(delta, 1.0, 1 / mu)  # cannot beat the exact mechanism
    assert chain_epsilon(0.01, 40.0, mu, delta) < eps  # a better sampler, a smaller epsilon


def test_thm65_step():
    eta = thm65_max_step(10.0, 2.0, 5, 3.0, gamma=2.0, mu=1.0)
    lhs = 3 * 1.0 * 2.0**2 * 5 * 10 * 9 * 3.0**2 * MOVEMENT_CONSTANT**2 * eta**2 / 4
    assert math.exp(lhs) < 2 and math.exp(lhs * 1.001) > 2 - 1e-3
    assert thm65_max_step(10.0, 1e-12, 5, 3.0, gamma=2.0, mu=1.0) == pytest.approx(2.0 / 3.0)
