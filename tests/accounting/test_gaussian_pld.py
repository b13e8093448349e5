"""The numpy-built (subsampled) Gaussian PLD: dp_accounting's own PLD, and the true profile."""

import math

import numpy as np
import pytest
from dp_accounting.pld.privacy_loss_distribution import from_gaussian_mechanism
from scipy import integrate, stats

from dpconvex.accounting.gaussian import gaussian_delta
from dpconvex.accounting.gaussian_pld import gaussian_hockey_stick, gaussian_pld


def _dense(pmf):
    d = pmf.to_dense_pmf()
    return d._lower_loss, np.asarray(d._probs), d._infinity_mass


@pytest.mark.parametrize(
    ("sigma", "q", "h"),
    [
        (0.72, 0.00707, 8e-4),  # DP-SGD on Adult at epsilon 8
        (20.2, 0.00707, 1e-5),
        (1.0, 0.5, 1e-3),
        (5.0, 1.0, 1e-4),  # the plain Gaussian mechanism
        (30.0, 0.001, 1e-4),  # a handful of grid points: dp_accounting's sparse PMF
    ],
)
def test_same_pld_as_dp_accounting_bin_by_bin(sigma, q, h):
    ours = gaussian_pld(sigma, h, q)
    theirs = from_gaussian_mechanism(sigma, value_discretization_interval=h, sampling_prob=q)
    pairs = [(ours._pmf_remove, theirs._pmf_remove)]
    if q < 1:
        pairs.append((ours._pmf_add, theirs._pmf_add))
    for a, b in pairs:
        (la, pa, ia), (lb, pb, ib) = _dense(a), _dense(b)
        assert la == lb and pa.size == pb.size
        # float round-off of the same deltas, divided by e^h - 1 in the connect-the-dots masses
        assert np.max(np.abs(pa - pb)) < 1e-14 / h
        assert ia == pytest.approx(ib, abs=1e-18)


@pytest.mark.parametrize(
    ("sigma", "q", "h", "count"),
    [
        (0.72, 0.00707, 8e-4, 8480),  # DP-SGD on Adult at epsilon 8
        (2.55, 0.00707, 1e-4, 8480),
        (0.8, 0.1, 1e-3, 100),
        (30.0, 0.001, 1e-4, 10),
    ],
)
def test_composed_pld_agrees_with_dp_accountings_self_composition(sigma, q, h, count):
    ours = gaussian_pld(sigma, h, q, count, slack=1e-14)
    theirs = from_gaussian_mechanism(sigma, value_discretization_interval=h, sampling_prob=q)
    theirs = theirs.self_compose(count)
    for delta in (1e-5, 1e-7):
        assert ours.get_epsilon_for_delta(delta) == pytest.approx(
            theirs.get_epsilon_for_delta(delta), rel=1e-5
        )


@pytest.mark.parametrize(("sigma", "count", "h"), [(10.0, 1000, 1e-3), (3.0, 30, 1e-3)])
def test_k_fold_composition_upper_bounds_the_exact_gaussian(sigma, count, h):
    """k Gaussians of noise sigma are one of noise sigma / sqrt(k), whose delta(epsilon) is
    exact (Balle & Wang 2018, Thm 8): the composed PLD must never fall below it (a plain FFT
    power did, 0.5 % at delta 1e-12 and 18 % at 3e-15 for the first case) and stay close."""
    composed = gaussian_pld(sigma, h, 1.0, count, slack=1e-17)
    exact_sigma = sigma / math.sqrt(count)
    for target in (1e-6, 1e-9, 1e-12, 3e-15):
        eps = float(_exact_epsilon(target, exact_sigma))
        exact = gaussian_delta(eps, 1.0, exact_sigma)
        got = composed.get_delta_for_epsilon(eps)
        assert got >= exact
        if target >= 1e-12:  # below, the 1e-15 of truncated tails charged to infinity shows
            assert got <= exact * 1.01


def _exact_epsilon(delta, sigma):
    from dpconvex.accounting.gaussian import gaussian_epsilon

    return gaussian_epsilon(delta, 1.0, sigma)


@pytest.mark.parametrize("sigma", [0.5, 1.0, 3.0])
def test_unsampled_profile_is_the_analytic_gaussian(sigma):
    eps = np.linspace(-1.0, 6.0, 29)
    expected = gaussian_delta(eps, 1.0, sigma)  # Balle & Wang 2018, Thm 8
    assert gaussian_hockey_stick(eps, sigma) == pytest.approx(expected, rel=1e-9, abs=1e-15)


def _integrated(eps, sigma, q, remove):
    """The hockey-stick divergence by numerical integration of the two densities."""
    n0 = stats.norm(0.0, sigma)
    if remove:
        n1 = stats.norm(-1.0, sigma)
        upper = lambda x: (1 - q) * n0.pdf(x) + q * n1.pdf(x)
        lower = n0.pdf
    else:
        n1 = stats.norm(1.0, sigma)
        upper = n0.pdf
        lower = lambda x: (1 - q) * n0.pdf(x) + q * n1.pdf(x)
    f = lambda x: max(0.0, upper(x) - math.exp(eps) * lower(x))
    span = 12 * sigma + 2
    value, _ = integrate.quad(f, -span, span, limit=400, epsabs=1e-14, epsrel=1e-10)
    return value


@pytest.mark.parametrize("remove", [True, False])
@pytest.mark.parametrize(("sigma", "q"), [(0.7, 0.01), (1.0, 0.2), (2.0, 0.6)])
def test_subsampled_profile_matches_numerical_integration(sigma, q, remove):
    for eps in (-0.5, 0.0, 0.05, 0.5, 1.5, 3.0):
        expected = _integrated(eps, sigma, q, remove)
        got = float(gaussian_hockey_stick(np.array([eps]), sigma, q, remove)[0])
        assert got == pytest.approx(expected, rel=1e-6, abs=1e-12)


def test_bad_parameters_are_refused():
    for args in [(0.0, 1e-4, 0.5), (1.0, 0.0, 0.5), (1.0, 1e-4, 0.0), (1.0, 1e-4, 1.5)]:
        with pytest.raises(ValueError, match="sigma > 0"):
            gaussian_pld(*args)
