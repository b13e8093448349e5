"""Add direction of Poisson-subsampled objective perturbation: the mixture pair (P, (1-q)P + qQ).

:func:`dpconvex.accounting.pld.poisson_subsample` offers, besides Zhu-Dong-Wang
Thm 11's (Q, qP + (1-q)Q), the pair (P, (1-q)P + qQ), valid because the ObjPert
pair of Redberg, Koskela & Wang (arXiv 2401.00583), App. D.3, dominates both
directions. Checked here against a Monte Carlo of an actual subsampled 1-D logistic
ObjPert, quadrature of the pair itself, the Thm 11 pair and the limit q -> 1.
"""

import math

import numpy as np
import pytest
from scipy import integrate
from scipy.special import expit

from dpconvex.accounting import (
    DominatingPair,
    ObjectivePerturbationDpEvent,
    PoissonSampledDpEvent,
    PrivacyAccountant,
)
from dpconvex.accounting import pld as our_pld

EPS = [0.0, 0.02, 0.05, 0.1, 0.3, 0.6]


def _add_delta(add, eps):
    return np.asarray(our_pld.to_pld(add).get_delta_for_epsilon(eps), dtype=float)


# -- (a) Monte Carlo of a concrete subsampled mechanism --------------------------------


def _logistic_objpert(points, theta, lam):
    """g_T(theta) = lam theta + sum_i x_i f'(x_i theta) and g_T' for f(u) = log(1 + e^-u)."""
    g = lam * theta
    dg = np.full_like(theta, lam)
    for x in points:
        g = g - x * expit(-x * theta)
        dg = dg + x * x * expit(x * theta) * expit(-x * theta)
    return g, dg


def _density(points, theta, lam, sigma):
    """Density of argmin sum f(x_i theta) + lam/2 theta^2 + b theta, b ~ N(0, sigma^2): b = -g_T."""
    g, dg = _logistic_objpert(points, theta, lam)
    return np.exp(-0.5 * (g / sigma) ** 2) / (sigma * math.sqrt(2 * math.pi)) * dg


def _sample(points, b, lam):
    """Solve g_T(theta) = -b by bisection (g_T is increasing, |g_T - lam theta| <= |T|)."""
    lo = (-np.abs(b) - len(points) - 1) / lam
    hi = (np.abs(b) + len(points) + 1) / lam
    for _ in range(70):
        mid = 0.5 * (lo + hi)
        up = _logistic_objpert(points, mid, lam)[0] > -b
        hi = np.where(up, mid, hi)
        lo = np.where(up, lo, mid)
    return 0.5 * (lo + hi)


@pytest.mark.parametrize("x_new", [1.0, -1.0])
def test_monte_carlo_of_subsampled_logistic_objpert_below_mixture_pair(x_new):
    # 1-D logistic regression (labels folded into x = +-1): |f'| <= 1 = L, f'' <= 1/4 = beta.
    # D = {1}, D' = D + {x_new}; Poisson subsampling with rate q. Add direction:
    # H(M(D) || M(D')) with M(D) = (1-q) p_{} + q p_{1} and
    # M(D') = (1-q)^2 p_{} + q(1-q)(p_{1} + p_{x}) + q^2 p_{1,x}, sampled from M(D).
    sigma, lam, beta, q = 1.0, 1.0, 0.25, 0.2
    rng = np.random.default_rng(14)
    n = 400_000
    inside = rng.random(n) < q
    b = rng.normal(0.0, sigma, n)
    theta = np.where(inside, _sample([1.0], b, lam), _sample([], b, lam))
    dens = {
        k: _density(pts, theta, lam, sigma)
        for k, pts in {"0": [], "1": [1.0], "x": [x_new], "1x": [1.0, x_new]}.items()
    }
    m_d = (1 - q) * dens["0"] + q * dens["1"]
    m_d2 = (1 - q) ** 2 * dens["0"] + q * (1 - q) * (dens["1"] + dens["x"]) + q**2 * dens["1x"]
    ratio = m_d2 / m_d
    base = our_pld.objpert_loss_pmf(sigma, lam, beta, 1.0)
    _, mixture = our_pld.poisson_subsample(base, q, "mixture")
    _, thm11 = our_pld.poisson_subsample(base, q, "thm11")
    bound, old = _add_delta(mixture, EPS), _add_delta(thm11, EPS)
    for eps, bnd, bnd_old in zip(EPS, bound, old, strict=True):
        samples = np.maximum(0.0, 1.0 - math.exp(eps) * ratio)
        mc, se = samples.mean(), samples.std() / math.sqrt(n)
        assert mc <= bnd + 4 * se + 1e-12, (eps, mc, bnd)
        assert mc <= bnd_old + 4 * se + 1e-12
    # the experiment sees a real privacy loss (it could exceed a wrong bound)
    assert np.maximum(0.0, 1.0 - ratio).mean() > 0.02


# -- (b) quadrature of the pair --------------------------------------------------------


def _mixture_hockey(pair, q, eps):
    """H_{e^eps}(P || (1-q)P + qQ) by quadrature (Q's atom sits where P = 0: no term)."""
    a = math.exp(eps)

    def f(x):
        return max(0.0, pair.p_pdf(x) - a * ((1 - q) * pair.p_pdf(x) + q * pair.q_pdf(x)))

    return integrate.quad(f, 0, 40 * pair.sigma, limit=400, epsabs=1e-14)[0]


@pytest.mark.parametrize(
    ("sigma", "lam", "beta", "q"),
    [(1.5, 2.0, 0.5, 0.05), (4.0, 20.0, 1.0, 0.3), (0.7, 3.0, 1, 0.01)],
)
def test_mixture_add_pair_matches_quadrature(sigma, lam, beta, q):
    pair = DominatingPair(sigma=sigma, lam=lam, beta=beta, lipschitz=1.0)
    eps = [0.0, 0.25 * q, 0.5 * q, 0.9 * q]
    exact = np.array([_mixture_hockey(pair, q, e) for e in eps])
    errors = []
    for h in [1e-4, 1e-5]:
        base = our_pld.objpert_loss_pmf(sigma, lam, beta, 1.0, h)
        _, add = our_pld.poisson_subsample(base, q, "mixture")
        assert add.infinity_mass == 0.0
        assert add.losses.max() <= -math.log1p(-q) + h  # bounded by -log(1-q), rounded up
        got = _add_delta(add, eps)
        assert np.all(got >= exact * (1 - 1e-6) - 1e-12)  # pessimistic
        errors.append(got / exact - 1)
    # losses span only [0, -log(1-q)], so the grid error is visible at h = 1e-4 near
    # the top; it is O(h): ten times finer, ten times smaller
    assert np.all(errors[1] < 1e-2)
    assert np.all(errors[1] <= 0.15 * errors[0] + 1e-9)


# -- (c) against Thm 11's add pair -----------------------------------------------------


def test_mixture_pair_no_looser_than_thm11_for_one_run():
    # epsilon(delta) of the add direction of one run, over a grid. (At epsilon = 0 both
    # pairs give q TV(P, Q) exactly; the mixture's losses span only [0, -log(1-q)], a few
    # grid steps when q is small, so its discretized delta(0) can be above Thm 11's: the
    # accountant reports the smaller of the two, see the next test.)
    for sigma in [0.5, 1.0, 4.0, 16.0]:
        for lam in [1.5, 10.0, 100.0]:
            for q in [0.001, 0.01, 0.1, 0.5]:
                base = our_pld.objpert_loss_pmf(sigma, lam, 1.0, 1.0)
                _, mixture = our_pld.poisson_subsample(base, q, "mixture")
                _, thm11 = our_pld.poisson_subsample(base, q, "thm11")
                for delta in [1e-3, 1e-5, 1e-7]:
                    new = our_pld.to_pld(mixture).get_epsilon_for_delta(delta)
                    old = our_pld.to_pld(thm11).get_epsilon_for_delta(delta)
                    assert new <= old + 1e-12, (sigma, lam, q, delta)


def test_accountant_reports_the_smaller_of_the_two_valid_bounds():
    event = PoissonSampledDpEvent(0.01, ObjectivePerturbationDpEvent(16.0, 100.0, 1.0, 1.0))
    for count, mixture_wins in [(1, True), (300, False)]:
        acc = PrivacyAccountant("pld").compose(event, count)
        thm11, mixture = (a.get_epsilon(1e-5) for a in acc._plds(1e-9))
        assert acc.get_epsilon(1e-5) == min(thm11, mixture)
        assert (mixture < thm11) is mixture_wins  # neither pair is always the tighter one
        delta = acc.get_delta(0.5 * min(thm11, mixture))
        assert delta == min(a.get_delta(0.5 * min(thm11, mixture)) for a in acc._plds(1e-9))
    # the floor -log(1-q) of Thm 11 is gone for one run: several times tighter
    acc = PrivacyAccountant("pld").compose(event)
    thm11, mixture = (a.get_epsilon(1e-5) for a in acc._plds(1e-9))
    assert thm11 >= 0.9 * -math.log1p(-0.01)
    assert thm11 / mixture > 3


def test_unsubsampled_ledger_builds_one_pld():
    acc = PrivacyAccountant("pld").compose(ObjectivePerturbationDpEvent(4.0, 10.0, 1.0, 1.0), 3)
    assert len(acc._plds()) == 1


# -- (d) limiting case -----------------------------------------------------------------


def test_mixture_pair_at_q_near_one_is_the_unsubsampled_pair():
    base = our_pld.objpert_loss_pmf(2.0, 5.0, 1.0, 1.0)
    _, add = our_pld.poisson_subsample(base, 1 - 1e-12, "mixture")
    eps = [0.0, 0.3, 0.8, 1.5]
    np.testing.assert_allclose(_add_delta(add, eps), _add_delta(base, eps), rtol=1e-3, atol=1e-10)
    assert our_pld.poisson_subsample(base, 1.0, "mixture") == (base, base)


def test_unknown_add_pair_refused():
    base = our_pld.objpert_loss_pmf(2.0, 5.0, 1.0, 1.0)
    with pytest.raises(ValueError, match="add_pair"):
        our_pld.poisson_subsample(base, 0.1, "swap")
