"""Projections, Gaussian widths and the certified solver of Su, Zhao & Wang's Algorithms 1-2."""

import math

import numpy as np
import pytest
from scipy import optimize

from dpconvex.sco import (
    Box,
    CertificateError,
    L1Ball,
    L2Ball,
    Simplex,
    certified_minimize,
    make_set,
)


def _generic_projection(C, v):
    d = v.size
    if isinstance(C, L1Ball):
        # split w = a - b, a, b >= 0: a QP with a linear constraint
        fun = lambda ab: 0.5 * np.sum((ab[:d] - ab[d:] - v) ** 2)
        jac = lambda ab: np.concatenate([ab[:d] - ab[d:] - v, -(ab[:d] - ab[d:] - v)])
        cons = [{"type": "ineq", "fun": lambda ab: C.radius - ab.sum()}]
        res = optimize.minimize(
            fun,
            np.zeros(2 * d),
            jac=jac,
            bounds=[(0, None)] * (2 * d),
            constraints=cons,
            method="SLSQP",
            options={"ftol": 1e-15, "maxiter": 1000},
        )
        return res.x[:d] - res.x[d:]
    if isinstance(C, Simplex):
        cons = [{"type": "eq", "fun": lambda w: w.sum() - C.scale}]
        res = optimize.minimize(
            lambda w: 0.5 * np.sum((w - v) ** 2),
            np.full(d, C.scale / d),
            jac=lambda w: w - v,
            bounds=[(0, None)] * d,
            constraints=cons,
            method="SLSQP",
            options={"ftol": 1e-15, "maxiter": 1000},
        )
        return res.x
    raise AssertionError


@pytest.mark.parametrize("make", [lambda d: L1Ball(d, 1.3), lambda d: Simplex(d, 0.7)])
def test_sort_projections_match_generic_solver(make):
    rng = np.random.default_rng(0)
    for d in (2, 7, 20):
        C = make(d)
        for _ in range(5):
            v = 2 * rng.standard_normal(d)
            assert np.allclose(C.project(v), _generic_projection(C, v), atol=1e-6)


@pytest.mark.parametrize("C", [L2Ball(12, 0.8), L1Ball(12, 1.5), Simplex(12), Box(12, -0.5, 2.0)])
def test_projection_properties(C):
    """In C, idempotent, batched = row by row, and the obtuse-angle inequality."""
    rng = np.random.default_rng(1)
    V = 3 * rng.standard_normal((30, 12))
    P = C.project(V)
    assert np.allclose(P, np.array([C.project(v) for v in V]))
    assert np.allclose(C.project(P), P, atol=1e-12)
    assert all(C.contains(p) for p in P)
    W = C.project(3 * rng.standard_normal((30, 12)))  # points of C
    for v, p in zip(V, P, strict=True):
        assert np.all((W - p) @ (v - p) <= 1e-9)


@pytest.mark.parametrize(
    ("d", "l1", "simplex", "l2"),
    [(10, 1.88, 1.54, 3.08), (100, 2.75, 2.51, 9.97), (1000, 3.42, 3.24, 31.6)],
)
def test_gaussian_widths_match_digest_and_monte_carlo(d, l1, simplex, l2):
    """Reference values (Monte Carlo, +-1%) and an independent Monte Carlo here."""
    assert L1Ball(d).gaussian_width() == pytest.approx(l1, rel=0.015)
    assert Simplex(d).gaussian_width() == pytest.approx(simplex, rel=0.015)
    assert L2Ball(d).gaussian_width() == pytest.approx(l2, rel=0.015)
    xi = np.random.default_rng(2).standard_normal((4000, d))
    for C in (L1Ball(d), Simplex(d), L2Ball(d), Box(d)):
        mc = C.support(xi)
        assert C.gaussian_width() == pytest.approx(mc.mean(), abs=4 * mc.std() / 63)
    assert L1Ball(d).gaussian_width() <= math.sqrt(2 * math.log(2 * d))  # standard bound
    assert Simplex(d).gaussian_width() <= math.sqrt(2 * math.log(d))
    assert Box(d).gaussian_width() == pytest.approx(d * math.sqrt(2 / math.pi))


def test_support_is_attained_and_geometry_constants():
    rng = np.random.default_rng(3)
    for C in (L1Ball(9, 2.0), L2Ball(9, 2.0), Simplex(9, 2.0), Box(9, -1.0, 3.0)):
        v = rng.standard_normal(9)
        W = C.project(5 * rng.standard_normal((2000, 9)))
        assert np.max(W @ v) <= C.support(v) + 1e-12
        far = C.project(1e6 * v)  # the maximizer of <v, w> is the projection of a far point
        assert far @ v == pytest.approx(C.support(v), rel=1e-5)
    assert L1Ball(16).diameter == 2 and L2Ball(16).diameter == 2  # diameters, not radii
    assert L1Ball(16).inner_radius() == pytest.approx(0.25)
    assert make_set("box", 4, 2.0).diameter == pytest.approx(8.0)
    with pytest.raises(ValueError, match="unknown constraint set"):
        make_set("l3", 4)


@pytest.mark.parametrize("C", [L1Ball(8), L2Ball(8)])
def test_projection_contraction_remark_1(C):
    """||P - t||^2 <= <H, P - t> <= 2 sup_C |<H, w>| for t in C, P = Proj(t + H) (item 12)."""
    rng = np.random.default_rng(4)
    for _ in range(200):
        t = C.project(rng.standard_normal(8))
        H = rng.standard_normal(8) * rng.exponential()
        P = C.project(t + H)
        assert np.sum((P - t) ** 2) <= H @ (P - t) + 1e-12
        assert H @ (P - t) <= 2 * C.support(H) + 1e-12


def _quadratic(d, rng, mu):
    A = rng.standard_normal((d, d))
    Q = A @ A.T / d + mu * np.eye(d)
    b = 3 * rng.standard_normal(d)
    return Q, b


@pytest.mark.parametrize("C", [L1Ball(6), L2Ball(6), Simplex(6), Box(6, -0.3, 0.3)])
def test_certified_gap_holds_against_a_long_solve(C):
    """J(theta) - min_C J <= alpha and ||theta - theta_1|| <= sqrt(2 alpha / mu) (item 15)."""
    rng = np.random.default_rng(5)
    mu = 0.05
    Q, b = _quadratic(6, rng, mu)
    L = float(np.linalg.eigvalsh(Q).max())
    J = lambda w: 0.5 * w @ Q @ w - b @ w
    grad = lambda w: Q @ w - b
    for alpha in (1e-4, 1e-9):
        cert = certified_minimize(
            grad, C.project, np.zeros(6), smoothness=L, strong_convexity=mu, accuracy=alpha
        )
        ref = certified_minimize(
            grad,
            C.project,
            cert.theta,
            smoothness=L,
            strong_convexity=mu,
            accuracy=1e-22,
            check_every=1,
        ).theta
        assert C.contains(cert.theta)
        assert J(cert.theta) - J(ref) <= alpha
        assert cert.gap_bound <= alpha
        assert np.linalg.norm(cert.theta - ref) <= math.sqrt(2 * alpha / mu) + 1e-9


def test_solver_refuses_without_certificate():
    rng = np.random.default_rng(6)
    Q, b = _quadratic(5, rng, 1e-3)
    with pytest.raises(CertificateError, match="nothing is released"):
        certified_minimize(
            lambda w: Q @ w - b,
            L2Ball(5, 10.0).project,
            np.zeros(5),
            smoothness=float(np.linalg.eigvalsh(Q).max()),
            strong_convexity=1e-3,
            accuracy=1e-14,
            max_iter=3,
        )
    with pytest.raises(ValueError, match="cannot exceed"):
        certified_minimize(
            lambda w: w,
            L2Ball(2).project,
            np.zeros(2),
            smoothness=1.0,
            strong_convexity=2.0,
            accuracy=1.0,
        )
