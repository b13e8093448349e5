"""Hidden-state accountant (Chen & Liu, arXiv 2407.08233, Thm 4.6): oracles, recursions, 1-D."""

import math

import numpy as np
import pytest
from scipy import integrate
from scipy.special import logsumexp

from dpconvex.accounting import GaussianDpEvent, PrivacyAccountant
from dpconvex.bcd import (
    HiddenStateDpEvent,
    MbcdCompositionDpEvent,
    calibrate_noise_scale,
    combine_compositions,
    composition_event,
    epsilon,
    mix_positions,
    stationary_position_bounds,
)
from dpconvex.bcd import hidden_state as hs
from dpconvex.experiments.mbcd import coupled_blocks_rdp

# Figure 1 constants of the paper: n = 2500, b = 100, m = 25, eta = 0.05, S = 1, L_F = 0.98
ETA, S, B, M, LF = 0.05, 1.0, 100, 25, 0.98


def fig1(K, level=0.01):
    return HiddenStateDpEvent(ETA, S, B, np.full((K, M), level), LF)


def literal_recursion(eta, sens, b, o, lf, lt, j0):
    """Step-by-step Lemma C.3 + Cor. 4.5 loop, written independently of the library."""
    K, m = o.shape
    inv_c, x = 0.0, 0.0
    for k in range(K):
        for j in range(m):
            if j == j0:
                x += eta * sens**2 / (4 * b**2 * o[k, j])
            elif inv_c > 0:
                x *= 1.0 / (1.0 + 2 * eta * o[k, j] / (lf**2 * inv_c))
            else:
                x = 0.0
            inv_c = (lf * lt) ** 2 * inv_c + 2 * eta * lt**2 * o[k, j]
    return x


def telescoped(eta, sens, b, o, lf, lt, j0):
    """Corrected eq. (9) with exponent -1: prod of c-ratios instead of the a's."""
    K, m = o.shape
    inv_c = hs.inverse_lsi_constants(eta, o, lf, lt)
    L2 = (lf * lt) ** 2

    def c(k, j):  # LSI constant before step (k, j); (k, m) is (k + 1, 0)
        t = k * m + j
        return math.inf if inv_c[t] == 0 else 1.0 / inv_c[t]

    total = 0.0
    for k in range(K):
        amount = eta * sens**2 / (4 * b**2 * o[k, j0])
        ratio = c(k, j0 + 1) / c(K - 1, m)
        for ep in range(k + 1, K):
            ratio *= c(ep, j0 + 1) / c(ep, j0)
        exponent = (m - 1) * (K - k) - j0
        total += amount / (ratio * (1.0 / L2) ** exponent)
    return total


# -- reference values computed independently of this code ------------------------------
def test_gaussian_injection_term():  # oracle 1
    o = np.array([[0.013]])
    delta, sigma2 = ETA * S / B, 2 * ETA * 0.013
    assert hs.injection_terms(ETA, S, B, o)[0, 0] == pytest.approx(delta**2 / (2 * sigma2))


def test_lsi_recursion_constant_schedule():  # oracle 2
    o = np.full((3, 4), 0.02)
    inv_c = hs.inverse_lsi_constants(ETA, o, LF)
    t = np.arange(inv_c.size)
    closed = 2 * ETA * 0.02 * (1 - LF ** (2 * t)) / (1 - LF**2)
    np.testing.assert_allclose(inv_c, closed, rtol=1e-12)
    assert np.all(np.diff(inv_c) > 0) and inv_c[-1] < 2 * ETA * 0.02 / (1 - LF**2)


def test_contraction_factors_closed_form():  # oracle 3
    o = np.full((2, 5), 0.01)
    log_a = hs.log_contractions(ETA, o, LF).ravel()
    assert log_a[0] == -np.inf
    t = np.arange(1, 10)
    closed = LF**2 * (1 - LF ** (2 * t)) / (1 - LF ** (2 * (t + 1)))
    np.testing.assert_allclose(np.exp(log_a[1:]), closed, rtol=1e-12)


def test_one_epoch_closed_forms():  # oracles 4, 5, 6
    x = fig1(1).position_bounds()
    assert 10 * x[0] == pytest.approx(2.95199487e-5, rel=1e-8)
    assert 10 * x[1] == pytest.approx(6.02570881e-5, rel=1e-8)
    A = ETA * S**2 / (4 * B**2 * 0.01)
    j0 = np.arange(M)
    closed = A * LF ** (2 * (M - 1 - j0)) * (1 - LF ** (2 * (j0 + 1))) / (1 - LF ** (2 * M))
    np.testing.assert_allclose(x, closed, rtol=1e-12)
    assert x[-1] == pytest.approx(A, rel=1e-12)  # injection at the very last step
    flat = hs.position_bounds(ETA, S, B, np.full((1, M), 0.01), 1.0)
    np.testing.assert_allclose(10 * flat[:3], [5e-5, 1e-4, 1.5e-4], rtol=1e-12)


@pytest.mark.parametrize("lt", [0.9, 1.0])
def test_vectorized_equals_literal_loop_and_telescoped_form(lt):  # oracle 7
    rng = np.random.default_rng(7)
    for _ in range(6):
        K, m = rng.integers(1, 7), rng.integers(1, 7)
        o = rng.uniform(0.002, 0.05, size=(K, m))
        lf = rng.uniform(0.8, 1.0)
        fast = hs.position_bounds(ETA, S, B, o, lf, lt)
        for j0 in range(m):
            ref = literal_recursion(ETA, S, B, o, lf, lt, j0)
            assert fast[j0] == pytest.approx(ref, rel=1e-11, abs=1e-300)
            assert fast[j0] == pytest.approx(telescoped(ETA, S, B, o, lf, lt, j0), rel=1e-10)


def test_hidden_state_below_composition_everywhere():  # oracle 8
    rng = np.random.default_rng(8)
    orders = np.array([1.5, 2.0, 10.0, 100.0, 1e4])
    for _ in range(20):
        K, m = rng.integers(1, 9), rng.integers(1, 9)
        o = rng.uniform(1e-3, 0.1, size=(K, m))
        event = HiddenStateDpEvent(ETA, S, B, o, rng.uniform(0.5, 0.999))
        per = event.position_bounds()
        comp = hs.composition_position_bounds(ETA, S, B, o)
        assert np.all(per <= comp * (1 + 1e-12))
        assert np.all(event.rdp(orders) <= mix_positions(orders, comp) * (1 + 1e-12))
        assert np.all(event.rdp(orders) <= event.composition().rdp(orders) * (1 + 1e-12))
    o = np.full((5, 1), 0.01)  # m = 1: the differing example is in every step
    event = HiddenStateDpEvent(ETA, S, B, o, LF)
    assert event.rdp([10.0])[0] == pytest.approx(event.composition().rdp([10.0])[0], rel=1e-12)


def test_convergence_to_finite_limit():  # oracle 9
    values = [fig1(K).rdp([10.0])[0] for K in range(1, 21)]
    limit = mix_positions([10.0], stationary_position_bounds(ETA, S, B, 0.01, M, LF))[0]
    assert limit == pytest.approx(1.293794e-3, rel=1e-6)
    assert np.all(np.diff(values) >= -1e-18) and max(values) <= limit * (1 + 1e-12)
    assert abs(values[-1] - limit) / limit < 1e-6
    assert values[0] == pytest.approx(5.472920e-4, rel=1e-6)
    assert values[1] == pytest.approx(8.884590e-4, rel=1e-6)
    assert values[9] == pytest.approx(1.293160e-3, rel=1e-6)
    assert fig1(20).composition().rdp([10.0])[0] == pytest.approx(2.5e-2, rel=1e-12)


def test_no_convergence_without_contraction():  # oracle 10 (math only; the event refuses)
    for K, ref in ((10, 6.380407e-3), (20, 1.275700e-2), (50, 3.188897e-2)):
        x = hs.position_bounds(ETA, S, B, np.full((K, M), 0.01), 1.0)
        assert mix_positions([10.0], x)[0] == pytest.approx(ref, rel=1e-6)
    with pytest.raises(ValueError, match="composition"):
        HiddenStateDpEvent(ETA, S, B, np.full((3, M), 0.01), 1.0)


def test_scaling_and_adaptive_schedule():  # oracles 12, 13
    base = fig1(7).position_bounds()
    np.testing.assert_allclose(fig1(7, level=0.03).position_bounds(), base / 3, rtol=1e-12)
    for K, ref in ((12, 1.2937e-3), (13, 2.6824e-4), (14, 2.3125e-4), (20, 2.5817e-4)):
        o = np.where(np.arange(K)[:, None] < 12, 0.01, 0.05) * np.ones((K, M))
        assert HiddenStateDpEvent(ETA, S, B, o, LF).rdp([10.0])[0] == pytest.approx(ref, rel=1e-4)


def test_mixing_between_mean_and_max():  # oracle 14
    x = fig1(3).position_bounds()
    for alpha in (1.001, 2.0, 10.0, 1e3):
        mixed = mix_positions([alpha], x)[0]
        assert alpha * x.mean() <= mixed * (1 + 1e-12) <= alpha * x.max() * (1 + 1e-12)
    assert mix_positions([1.0 + 1e-9], x)[0] == pytest.approx(x.mean(), rel=1e-6)


def test_uniform_rate_bound_dominates():  # oracle 17
    r = LF**2
    A = ETA * S**2 / (4 * B**2 * 0.01)
    for K in (1, 3, 10):
        exact = fig1(K).position_bounds()
        for j0 in range(M):
            uniform = sum(A * r ** ((M - 1 - j0) + (M - 1) * (K - 1 - k)) for k in range(K))
            assert exact[j0] <= uniform * (1 + 1e-12)


def test_calibration_meets_target_on_the_safe_side():  # oracles 15, 16
    make = lambda tau: HiddenStateDpEvent(ETA, S, B, np.full((20, M), tau), LF)
    tau = calibrate_noise_scale(make, 1.0, 1e-5, conversion="standard")
    assert tau == pytest.approx(7.99e-5, rel=1e-2)
    assert epsilon(make(tau), 1e-5, conversion="standard") <= 1.0
    assert epsilon(make(tau * 0.99), 1e-5, conversion="standard") > 1.0
    assert epsilon(make(tau), 1e-4) < epsilon(make(tau), 1e-5)
    assert epsilon(make(2 * tau), 1e-5) < epsilon(make(tau), 1e-5)


# -- the accountant against an exact computation on a 1-D quadratic --------------------
def exact_one_dimensional(K, m, b, eta, lam, level, shift_y, prox):
    """Exact law of the last iterate of theta <- T((1 - eta lam g) theta + eta y/b + N(0, 2 eta o)).

    Objective (lam/2) theta^2 - theta * sum(y)/b, a quadratic; the neighbour adds one
    example with y = shift_y (gradient -y, |y| <= C) at position j0. The others have
    y = 0 and change nothing, so theta ~ N(0, V) without it and N(d_j0, V) with it.
    ``prox``: ridge in the prox (T = 1/(1 + eta lam)) or in the gradient.
    """
    L = 1.0 / (1.0 + eta * lam) if prox else 1.0 - eta * lam
    s = L if prox else 1.0  # the prox also scales the noise and the shift
    T = K * m
    var = sum(L ** (2 * (T - 1 - t)) * s**2 * 2 * eta * level for t in range(T))
    d = np.array(
        [
            sum(L ** (T - 1 - (k * m + j0)) * s * eta * shift_y / b for k in range(K))
            for j0 in range(m)
        ]
    )
    return d, var


@pytest.mark.parametrize("prox", [True, False])
@pytest.mark.parametrize("K", [1, 3, 10])
def test_accountant_bounds_exact_one_dimensional_rdp(K, prox):
    m, b, eta, lam, level, C = 4, 10, 0.1, 0.5, 0.02, 1.0
    d, var = exact_one_dimensional(K, m, b, eta, lam, level, C, prox)
    if prox:
        event = HiddenStateDpEvent(eta, C, b, np.full((K, m), level), 1.0, 1 / (1 + eta * lam))
    else:
        event = HiddenStateDpEvent(eta, C, b, np.full((K, m), level), 1 - eta * lam)
    bounds = event.position_bounds()
    exact_per_position = d**2 / (2 * var)  # RDP / alpha of N(d, V) vs N(0, V)
    assert np.all(exact_per_position <= bounds * (1 + 1e-12))
    # the bound is tight where it should be: one epoch, first position
    if K == 1:
        assert exact_per_position[0] == pytest.approx(bounds[0], rel=1e-10)
    sd = math.sqrt(var)
    log_mix = lambda x: logsumexp(-((x - d) ** 2) / (2 * var)) - math.log(m)  # uniform j0
    log_base = lambda x: -(x**2) / (2 * var)
    norm = math.sqrt(2 * math.pi * var)
    for alpha in (2.0, 5.0, 20.0):
        # exact Renyi divergences of the mixture over j0 against N(0, V), both directions
        reach = alpha * np.abs(d).max() + 30 * sd
        forward = integrate.quad(
            lambda x, a=alpha: math.exp(a * log_mix(x) + (1 - a) * log_base(x)) / norm,
            -reach,
            reach,
            points=[0.0, *d],
            limit=500,
            epsabs=0,
            epsrel=1e-11,
        )[0]
        backward = integrate.quad(
            lambda x, a=alpha: math.exp(a * log_base(x) + (1 - a) * log_mix(x)) / norm,
            -reach,
            reach,
            points=[0.0, *(-d)],
            limit=500,
            epsabs=0,
            epsrel=1e-11,
        )[0]
        exact = max(math.log(forward), math.log(backward)) / (alpha - 1)
        bound = event.rdp([alpha])[0]
        assert exact <= bound * (1 + 1e-9) + 1e-15
        # a sanity check that the quadrature sees the shift at all
        assert exact > 0.2 * alpha * exact_per_position.mean()


# -- inter-block coupling: why the engine refuses the per-block sum --------------------
def test_per_block_sum_is_not_a_bound_for_coupled_blocks():
    settings = dict(step_size=0.05, coupling=0.4, batch_size=100, noise=0.01, alpha=10.0)
    exact_short, paper_short = coupled_blocks_rdp(5, 5, **settings)
    exact_long, paper_long = coupled_blocks_rdp(120, 5, **settings)
    assert exact_short < paper_short  # fine early on ...
    assert exact_long > 1.3 * paper_long  # ... but the per-block sum is violated
    exact_longer, paper_longer = coupled_blocks_rdp(240, 5, **settings)
    assert exact_longer > 1.8 * exact_long * 0.9  # grows ~linearly; the paper's stays flat
    assert paper_longer == pytest.approx(paper_long, rel=1e-3)


# -- events in the accountant ----------------------------------------------------------
def test_events_price_through_the_library_accountant():
    event = fig1(20)
    acc = PrivacyAccountant()
    acc.compose(event)
    assert acc.accounting_used == "rdp"
    assert np.isfinite(acc.get_epsilon(1e-5))
    comp = event.composition()
    mu = math.sqrt(max(comp.position_mu2))
    ours = PrivacyAccountant("pld").compose(comp).get_epsilon(1e-5)
    theirs = PrivacyAccountant("pld").compose(GaussianDpEvent(1 / mu)).get_epsilon(1e-5)
    assert ours == pytest.approx(theirs, rel=1e-3)
    # the hidden-state event composes with dp_accounting's events
    both = PrivacyAccountant().compose(event).compose(GaussianDpEvent(5.0))
    assert both.get_epsilon(1e-5) > acc.get_epsilon(1e-5)


def test_composition_of_blocks_sums_per_position():
    o = np.random.default_rng(3).uniform(0.01, 0.1, size=(4, 3))
    one = composition_event(ETA, S, B, o)
    two = combine_compositions([one, composition_event(ETA, 2 * S, B, o)])
    np.testing.assert_allclose(two.position_mu2, 5 * np.array(one.position_mu2))
    assert two.n_blocks == 2
    np.testing.assert_allclose(
        one.position_mu2, 2 * np.sum(ETA * S**2 / (4 * B**2 * o), axis=0), rtol=1e-12
    )


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"grad_lipschitz": 1.0}, "composition"),
        ({"grad_lipschitz": 1.2}, "<= 1"),
        ({"prox_lipschitz": 2.0}, "<= 1"),
        ({"step_size": 0.0}, "step_size"),
        ({"sensitivity": float("nan")}, "sensitivity"),
        ({"noise": [[0.01, -1.0]]}, "noise"),
        ({"noise": [[0.01, float("inf")]]}, "noise"),
        ({"noise": [0.01, 0.02]}, "noise"),
    ],
)
def test_event_validation(kwargs, match):
    args = {
        "step_size": ETA,
        "sensitivity": S,
        "batch_size": B,
        "noise": [[0.01, 0.02]],
        "grad_lipschitz": LF,
    }
    args.update(kwargs)
    with pytest.raises(ValueError, match=match):
        HiddenStateDpEvent(**args)


def test_composition_event_validation():
    with pytest.raises(ValueError):
        MbcdCompositionDpEvent(())
    with pytest.raises(ValueError):
        MbcdCompositionDpEvent((1.0, float("nan")))
    with pytest.raises(ValueError):
        combine_compositions([])


def test_position_mixing_matches_logsumexp_definition():
    x = np.array([1e-4, 3e-4, 2e-3])
    alpha = 7.0
    ref = logsumexp((alpha - 1) * alpha * x - math.log(3)) / (alpha - 1)
    assert mix_positions([alpha], x)[0] == pytest.approx(ref, rel=1e-12)


def test_paper_exponent_for_a_ridge_prox_is_not_a_bound():
    """The printed exponent -1/L_T^2 (Chen & Liu, Cor. 4.5) under-counts the exact 1-D loss."""
    m, b, eta, lam, level, C = 4, 10, 0.1, 0.5, 0.02, 1.0
    lt = 1 / (1 + eta * lam)
    d, var = exact_one_dimensional(1, m, b, eta, lam, level, C, prox=True)
    o = np.full((1, m), level)
    # one epoch, j0 = 0: the only contraction-relevant steps follow the injection
    x = eta * C**2 / (4 * b**2 * level)
    inv_c = 2 * eta * lt**2 * level  # before step 1
    paper = ours = x
    for j in range(1, m):
        q = 1 + 2 * eta * o[0, j] / inv_c
        paper *= q ** (-1 / lt**2)
        ours *= 1 / q
        inv_c = lt**2 * inv_c + 2 * eta * lt**2 * o[0, j]
    exact = d[0] ** 2 / (2 * var)
    assert paper < exact <= ours * (1 + 1e-12)
