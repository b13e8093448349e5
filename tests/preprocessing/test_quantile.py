"""The exponential-mechanism quantile: exact law, privacy ratio, limits and edge cases."""

import math

import numpy as np
import pytest
from scipy import stats

from dpconvex.accounting import PrivacyAccountant
from dpconvex.preprocessing.quantile import (
    interval_log_weights,
    private_quantile,
    quantile_event,
)


def brute_density(data, q, eps, a, b, t):
    """exp(eps u(t) / 2) / Z by counting at each t and integrating on a fine grid."""
    x = np.clip(np.asarray(data, dtype=float), a, b)

    def unnormalized(s):
        below = (x[None, :] < np.asarray(s)[:, None]).sum(axis=1)
        return np.exp(-0.5 * eps * np.abs(below - q * x.size))

    grid = np.linspace(a, b, 400_001)
    z = np.sum(unnormalized(0.5 * (grid[1:] + grid[:-1]))) * (grid[1] - grid[0])
    return unnormalized(t) / z


def code_density(data, q, eps, a, b, t):
    """The density the implementation samples from: interval weight / length."""
    edges, logw = interval_log_weights(np.asarray(data, float), q, eps, a, b)
    p = np.exp(logw - logw.max())
    p /= p.sum()
    k = np.clip(np.searchsorted(edges, t, side="right") - 1, 0, p.size - 1)
    lengths = np.diff(edges)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(lengths[k] > 0, p[k] / lengths[k], 0.0)


DATA = [0.1, 0.35, 0.35, 0.8, 1.7]  # a tie, and a value clipped to the range


def midpoints(data, a, b):
    edges = np.unique(np.concatenate(([a, b], np.clip(data, a, b))))
    return 0.5 * (edges[1:] + edges[:-1])


@pytest.mark.parametrize("q", [0.0, 0.3, 0.5, 1.0])
def test_code_density_matches_counting(q):
    t = midpoints(DATA, 0.0, 1.0)
    np.testing.assert_allclose(
        code_density(DATA, q, 2.0, 0.0, 1.0, t),
        brute_density(DATA, q, 2.0, 0.0, 1.0, t),
        rtol=1e-4,
    )


def test_sampler_follows_the_exact_density():
    a, b, q, eps = 0.0, 1.0, 0.4, 3.0
    rng = np.random.default_rng(0)
    draws = np.array([private_quantile(DATA, q, eps, a, b, rng) for _ in range(8_000)])
    # bins: every interval cut in two halves (checks the choice and the uniform point)
    edges = np.unique(np.concatenate(([a, b], np.clip(DATA, a, b))))
    bins = np.unique(np.concatenate((edges, 0.5 * (edges[1:] + edges[:-1]))))
    centres = 0.5 * (bins[1:] + bins[:-1])
    expected = brute_density(DATA, q, eps, a, b, centres) * np.diff(bins)
    assert expected.sum() == pytest.approx(1.0, abs=1e-4)
    counts, _ = np.histogram(draws, bins)
    chi2 = stats.chisquare(counts, expected / expected.sum() * counts.sum())
    assert chi2.pvalue > 1e-3


def _max_log_ratio(d1, d2, q, eps, a, b):
    t = np.unique(np.concatenate((midpoints(d1, a, b), midpoints(d2, a, b))))
    f1, f2 = code_density(d1, q, eps, a, b, t), code_density(d2, q, eps, a, b, t)
    return float(np.max(np.abs(np.log(f1) - np.log(f2))))


@pytest.mark.parametrize("q", [0.01, 0.5, 0.99])
@pytest.mark.parametrize("extra", [-5.0, 0.2, 0.5, 7.0])  # extreme rows clip to the range
def test_privacy_ratio_on_neighbours_at_most_e_eps(q, extra):
    eps, a, b = 0.7, 0.0, 1.0
    rng = np.random.default_rng(1)
    base = list(rng.random(12))
    ratios = [
        _max_log_ratio(base, [*base, extra], q, eps, a, b),  # add a row
        _max_log_ratio(base, base[1:], q, eps, a, b),  # remove a row
    ]
    assert max(ratios) <= eps * (1 + 1e-9)
    assert max(ratios) > 0.3 * eps  # the bound is nearly attained: the check has teeth


def test_large_epsilon_gives_the_empirical_quantile():
    rng = np.random.default_rng(2)
    data = rng.normal(size=201)
    srt = np.sort(data)
    for q in (0.1, 0.5, 0.9):
        out = private_quantile(data, q, 1e4, -10.0, 10.0, rng)
        k = int(round(q * data.size))
        assert srt[k - 1] <= out <= srt[k]


def test_edge_cases():
    rng = np.random.default_rng(3)
    # n = 0: uniform on the range
    draws = [private_quantile([], 0.5, 1.0, -1.0, 3.0, rng) for _ in range(2000)]
    assert min(draws) >= -1.0 and max(draws) <= 3.0
    assert np.mean(draws) == pytest.approx(1.0, abs=0.1)
    # all equal, n = 1, values outside the range, a huge epsilon: no warning, in range
    with np.errstate(all="raise"):
        for data in ([2.0] * 50, [0.5], [1e300, -1e300], [5.0] * 3):
            for eps in (1e-3, 1.0, 1e6):
                out = private_quantile(data, 0.5, eps, 0.0, 4.0, rng)
                assert 0.0 <= out <= 4.0
    # all equal: every point below the values has rank 0, every point above rank n
    assert private_quantile([2.0] * 50, 0.0, 50.0, 0.0, 4.0, rng) <= 2.0
    assert private_quantile([2.0] * 50, 1.0, 50.0, 0.0, 4.0, rng) >= 2.0


@pytest.mark.parametrize(
    ("args", "match"),
    [
        (([1.0], 1.5, 1.0, 0.0, 1.0), "q must be in"),
        (([1.0], 0.5, 0.0, 0.0, 1.0), "epsilon must be > 0"),
        (([1.0], 0.5, 1.0, 1.0, 1.0), "lower < upper"),
        (([1.0], 0.5, 1.0, -1e308, 1e308), "lower < upper"),
        (([np.nan], 0.5, 1.0, 0.0, 1.0), "finite"),
    ],
)
def test_bad_arguments_are_clear_errors(args, match):
    with pytest.raises(ValueError, match=match):
        private_quantile(*args, np.random.default_rng(0))


def test_event_is_priced_as_pure_dp():
    eps = 0.4
    acc = PrivacyAccountant().compose(quantile_event(eps))
    # pure eps-DP: the accountant's epsilon at a tiny delta is eps (randomized response)
    assert acc.get_epsilon(1e-12) == pytest.approx(eps, abs=2e-3)
    assert acc.get_delta(eps + 2e-3) <= 1e-12
    # and at eps / 2 the delta of randomized response: (e^eps - e^(eps/2)) / (1 + e^eps)
    expected = (math.exp(eps) - math.exp(eps / 2)) / (1 + math.exp(eps))
    assert acc.get_delta(eps / 2) == pytest.approx(expected, rel=2e-2)


def test_private_centre_approaches_the_median_and_median_absolute_deviation():
    # limiting case: at a large epsilon both quantiles land next to the exact statistics,
    # on the identity scale and on a monotone one (log1p for a positive column)
    from dpconvex.preprocessing.quantile import private_centre

    x = np.random.default_rng(2).lognormal(3.0, 0.5, 2001)
    median = float(np.median(x))
    mad = float(np.median(np.abs(x - median)))
    rng = np.random.default_rng(3)
    for scale in [(lambda t: t, lambda t: t), (np.log1p, np.expm1)]:
        m, u = private_centre(x, 200.0, 0.0, 1e6, rng, scale)
        assert m == pytest.approx(median, rel=0.01)
        assert u == pytest.approx(mad, rel=0.03)


def _log_density(values, q, eps, lo, hi, t):
    """log of the exponential-mechanism quantile's output density at t (exact)."""
    edges, log_weights = interval_log_weights(np.asarray(values, float), q, eps, lo, hi)
    k = int(np.clip(np.searchsorted(edges, t, side="right") - 1, 0, len(edges) - 2))
    lengths = np.diff(edges)
    with np.errstate(divide="ignore"):
        log_z = np.logaddexp.reduce(log_weights)
    return log_weights[k] - np.log(lengths[k]) - log_z


def test_private_centre_is_two_epsilon_dp_on_neighbours():
    # the pair (m, u) has density p(m) p(u | m); on neighbouring columns (one row added,
    # at either end or inside) its log ratio stays within 2 epsilon at every output
    eps, lo, hi = 0.7, 0.0, 50.0
    x = np.random.default_rng(4).normal(20.0, 3.0, 40).clip(lo, hi)
    for extra in (0.0, 20.0, 50.0):
        y = np.append(x, extra)
        for m in np.linspace(0.5, 49.5, 23):
            for u in np.linspace(0.1, max(m - lo, hi - m) - 0.1, 17):
                width = max(m - lo, hi - m)
                p = _log_density(x, 0.5, eps, lo, hi, m)
                p += _log_density(np.abs(x - m), 0.5, eps, 0.0, width, u)
                p2 = _log_density(y, 0.5, eps, lo, hi, m)
                p2 += _log_density(np.abs(y - m), 0.5, eps, 0.0, width, u)
                assert abs(p - p2) <= 2 * eps + 1e-9
