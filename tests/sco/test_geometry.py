"""Geometry of Su, Zhao & Wang (arXiv 2303.18047), Def. 3, Alg. 3/4/7: constants, mirror steps."""

import math

import numpy as np
import pytest
from scipy import optimize

from dpconvex.sco import (
    PNormMirrorMap,
    ball_mirror_step,
    dual_exponent,
    half_sq_norm_grad,
    lp_norm,
    lp_regularity,
    mirror_map,
    regularized_mirror_step,
)


@pytest.mark.parametrize(
    ("p", "d", "kappa", "r"),
    [(1.5, 100, 2.0, 3.0), (1.1, 1000, 10.0, 11.0)],
)
def test_kappa_when_r_equals_q(p, d, kappa, r):
    reg = lp_regularity(p, d)
    assert reg.q == pytest.approx(r)
    assert reg.r == pytest.approx(r)
    assert reg.kappa == pytest.approx(kappa)
    assert reg.kappa == pytest.approx(reg.kappa_paper)  # p >= 1 + 1/(2 ln d)
    assert reg.mirror_index == pytest.approx(p)


def test_kappa_small_p_matches_digest_values():
    reg = lp_regularity(1.05, 100)  # r = 2 ln d + 1 < q: kappa_safe > kappa_paper
    assert reg.kappa_paper == pytest.approx(9.2103, abs=1e-4)
    assert reg.q == pytest.approx(21.0)
    assert reg.r == pytest.approx(10.2103, abs=1e-4)
    assert reg.kappa_plus == pytest.approx(9.2103, abs=1e-4)
    assert reg.c_eq == pytest.approx(1.5896, abs=1e-4)
    assert reg.kappa == pytest.approx(14.6406, abs=1e-4)
    assert reg.mirror_index == pytest.approx(1.1086, abs=1e-4)
    # Def. 3's equivalence ||x||_q^2 <= ||x||_r^2 <= (kappa/kappa_plus) ||x||_q^2 holds
    x = np.random.default_rng(0).standard_normal((2000, 100))
    x[:10] = np.eye(100)[:10]
    x[10] = 1.0
    ratio = lp_norm(x, reg.r) ** 2 / lp_norm(x, reg.q) ** 2
    assert ratio.min() >= 1 - 1e-12
    assert ratio.max() <= reg.kappa / reg.kappa_plus * (1 + 1e-12)
    assert ratio.max() == pytest.approx(reg.c_eq, rel=1e-9)  # attained at x = ones


def test_p2_is_euclidean_and_bad_p_refused():
    reg = lp_regularity(2.0, 50)
    assert (reg.r, reg.kappa, reg.mirror_index) == (2.0, 1.0, 2.0)
    for p in (1.0, 2.5, float("nan")):
        with pytest.raises(ValueError, match="p must be"):
            lp_regularity(p, 10)
    assert dual_exponent(1.0) == math.inf and dual_exponent(math.inf) == 1.0


@pytest.mark.parametrize("s", [1.05, 1.3, 1.5, 2.0])
def test_mirror_map_conjugate_inverts_gradient(s):
    rng = np.random.default_rng(1)
    phi = PNormMirrorMap(s, 3.0)
    x = rng.standard_normal((50, 40)) * rng.exponential(1.0, (50, 1))
    back = phi.grad_conjugate(phi.grad(x))
    assert np.max(np.abs(back - x)) <= 1e-12 * np.max(np.abs(x))
    # Fenchel-Young equality at y = grad Phi(x): Phi(x) + Phi*(y) = <x, y>
    y = phi.grad(x)
    assert np.allclose(phi.value(x) + phi.conjugate(y), np.sum(x * y, axis=1), rtol=1e-10)
    assert np.all(half_sq_norm_grad(np.zeros(5), s) == 0)


def test_gradient_matches_finite_differences_and_large_index_is_finite():
    rng = np.random.default_rng(2)
    phi = PNormMirrorMap(1.4, 2.0)
    x = rng.standard_normal(7)
    num = optimize.approx_fprime(x, lambda z: float(phi.value(z)), 1e-7)
    assert np.allclose(phi.grad(x), num, atol=1e-5)
    g = half_sq_norm_grad(np.array([1e200, -3e199, 1e-200]), 40.0)  # conjugate of s ~ 1.026
    assert np.all(np.isfinite(g))


@pytest.mark.parametrize(("p", "d"), [(1.8, 200), (1.5, 30), (1.05, 100), (1.2, 1000)])
def test_mirror_map_is_1_strongly_convex_in_lp(p, d):
    """D_Phi(y, x) >= ||y - x||_p^2 / 2 pointwise, random and hard pairs."""
    reg = lp_regularity(p, d)
    phi = mirror_map(reg)
    rng = np.random.default_rng(3)
    x = rng.standard_normal((400, d))
    y = x + rng.standard_normal((400, d)) * rng.exponential(1.0, (400, 1))
    y[:50] = x[:50] + 1e-3 * rng.standard_normal((50, d))
    x[50:100] = 0.0
    ratio = phi.bregman(y, x) / (0.5 * lp_norm(y - x, p) ** 2)
    assert ratio.min() >= 1 - 1e-9


def test_paper_literal_index_is_not_strongly_convex():
    """The printed map (kappa/2)||x||_s^2 with s = kappa/(kappa-1) = 5 at p = 1.8 fails the
    same test (a ratio of 0.029 at d = 200)."""
    p, d = 1.8, 200
    kappa = 1 / (p - 1)
    s = kappa / (kappa - 1)
    rng = np.random.default_rng(4)
    x = rng.standard_normal((400, d))
    y = x + rng.standard_normal((400, d))
    value = lambda z: 0.5 * kappa * lp_norm(z, s) ** 2
    grad = kappa * half_sq_norm_grad(x, s)
    breg = value(y) - value(x) - np.sum(grad * (y - x), axis=1)
    assert (breg / (0.5 * lp_norm(y - x, p) ** 2)).min() < 0.1


@pytest.mark.parametrize("p", [1.3, 1.7, 2.0])
def test_regularized_step_matches_generic_solver(p):
    """Closed-form step of Alg. 3 eq. (1) vs BFGS."""
    d = 6
    phi = mirror_map(lp_regularity(p, d))
    rng = np.random.default_rng(5)
    w, c = rng.standard_normal(d), rng.standard_normal(d)
    beta, alpha = 0.7, 0.2

    def objective(v):
        return float(c @ (v - w) + beta * phi.bregman(v, w) + alpha * phi.value(v))

    ref = optimize.minimize(objective, w, method="BFGS", options={"gtol": 1e-11}).x
    step = regularized_mirror_step(phi, w, c, beta, alpha)
    assert np.allclose(step, ref, atol=1e-6)
    assert objective(step) <= objective(ref) + 1e-12
    if p == 2.0:  # a plain regularized gradient step
        assert np.allclose(step, (beta * w - c) / (alpha + beta), atol=1e-14)


@pytest.mark.parametrize("scale", [0.3, 5.0])
def test_ball_step_matches_slsqp(scale):
    """Constrained mirror step of Algs 4/7 on {||w||_s <= R} vs SLSQP."""
    d, p, R = 5, 1.5, 1.0
    phi = mirror_map(lp_regularity(p, d))
    rng = np.random.default_rng(6)
    w = rng.standard_normal(d)
    w *= 0.5 / lp_norm(w, phi.s)
    y, gamma = scale * rng.standard_normal(d), 2.0

    def objective(v):
        return float(y @ v + gamma * phi.bregman(v, w))

    cons = [{"type": "ineq", "fun": lambda v: R - lp_norm(v, phi.s)}]
    ref = optimize.minimize(
        objective, w, method="SLSQP", constraints=cons, options={"ftol": 1e-14, "maxiter": 500}
    ).x
    step = ball_mirror_step(phi, w, y, gamma, R)
    assert lp_norm(step, phi.s) <= R * (1 + 1e-12)
    assert np.allclose(step, ref, atol=1e-5)
    assert objective(step) <= objective(ref) + 1e-9
