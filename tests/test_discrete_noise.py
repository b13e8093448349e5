"""Exact discrete samplers (CKS 2020 Alg. 1-3), snapped releases and their accounting."""

import math
from fractions import Fraction

import numpy as np
import pytest
from dp_accounting.dp_event import LaplaceDpEvent
from scipy import stats
from scipy.special import logsumexp

from dpconvex.accounting import (
    DiscreteGaussianDpEvent,
    DiscreteLaplaceScaleDpEvent,
    GaussianDpEvent,
    PrivacyAccountant,
    UnsupportedEventError,
    discrete_gaussian_loss_pmf,
    discrete_gaussian_rdp,
    discrete_laplace_rdp,
)
from dpconvex.discrete_noise import (
    _bernoulli_rational,
    _snap,
    bernoulli_exp,
    default_grid,
    discrete_gaussian,
    discrete_gaussian_logpmf,
    discrete_laplace,
    discrete_laplace_logpmf,
    gaussian_release_event,
    laplace_release_event,
    mitigated_gaussian_release,
    mitigated_laplace_release,
)

# -- helpers: exact pmfs and direct privacy computations ---------------------------------


def _chi2_pvalue(draws: np.ndarray, logpmf, min_expected: float = 20.0) -> float:
    """Chi-square goodness of fit against an exact pmf; cells with small expectation pooled."""
    n = draws.size
    lo, hi = int(draws.min()), int(draws.max())
    span = max(abs(lo), abs(hi)) + 1
    xs = np.arange(-span, span + 1)
    expected = n * np.exp(logpmf(xs))
    observed = np.bincount(draws - xs[0], minlength=xs.size)[: xs.size].astype(float)
    keep = expected >= min_expected
    obs = np.append(observed[keep], observed[~keep].sum())
    exp = np.append(expected[keep], n - expected[keep].sum())  # the rest of the mass
    if exp[-1] < min_expected:  # pool the remainder into the last kept cell
        obs[-2] += obs[-1]
        exp[-2] += exp[-1]
        obs, exp = obs[:-1], exp[:-1]
    return float(stats.chisquare(obs, exp).pvalue)


def _dg_pmf(sigma: float) -> tuple[np.ndarray, np.ndarray]:
    half = int(math.ceil(12 * sigma)) + 40
    x = np.arange(-half, half + 1)
    return x, np.exp(discrete_gaussian_logpmf(x, sigma))


def _exact_delta_1d(losses: np.ndarray, probs: np.ndarray, eps: float) -> float:
    """delta(eps) = E_P[(1 - e^(eps - L))_+] of a PLRV given by atoms."""
    gain = -np.expm1(np.minimum(eps - losses, 0.0))
    return float(np.sum(probs * gain))


def _dg_losses(sigma: float, k: int):
    x, p = _dg_pmf(sigma)
    return (k * k - 2.0 * k * x) / (2 * sigma**2), p


def _renyi_direct(logp: np.ndarray, logq: np.ndarray, alpha: float) -> float:
    return float(logsumexp(alpha * logp + (1 - alpha) * logq)) / (alpha - 1)


# -- samplers -------------------------------------------------------------------------------


@pytest.mark.parametrize("gamma", [0, Fraction(1, 3), 1, Fraction(7, 3), 5.5])
def test_bernoulli_exp_rate(gamma):
    rng = np.random.default_rng(10)
    n = 200_000
    draws = bernoulli_exp(gamma, n, rng)
    p = math.exp(-float(gamma))
    assert abs(draws.mean() - p) < 5 * math.sqrt(p * (1 - p) / n) + 1e-12


class _ScriptedWords:
    """A stand-in Generator whose 62-bit words are scripted (to hit the tie branch)."""

    def __init__(self, words):
        self.words = list(words)

    def integers(self, low, high, size=None, dtype=np.int64):
        if size is None:
            return self.words.pop(0)
        out = np.array(self.words[:size], dtype=np.int64)
        del self.words[:size]
        return out


def test_bernoulli_tie_is_resolved_exactly():
    # p = 1/3: q = floor(2^62 / 3) and the remainder p 2^62 - q is again 1/3, so a tie
    # w == q must be settled by the next word against q (not by w < q, which says 0)
    q = (1 << 62) // 3
    assert _bernoulli_rational(np.array([1], dtype=object), 3, _ScriptedWords([q, 0]))[0]
    assert not _bernoulli_rational(np.array([1], dtype=object), 3, _ScriptedWords([q, q + 1]))[0]
    assert _bernoulli_rational(np.array([1], dtype=object), 3, _ScriptedWords([q - 1]))[0]
    assert not _bernoulli_rational(np.array([1], dtype=object), 3, _ScriptedWords([q + 1]))[0]


@pytest.mark.parametrize("scale", [0.5, 1, 3.0, 7.3, Fraction(5, 2)])
def test_discrete_laplace_matches_pmf(scale):
    rng = np.random.default_rng(11)
    draws = discrete_laplace(scale, 100_000, rng)
    assert draws.dtype == np.int64
    assert _chi2_pvalue(draws, lambda x: discrete_laplace_logpmf(x, float(scale))) > 1e-4
    var = 2 * math.exp(1 / float(scale)) / math.expm1(1 / float(scale)) ** 2
    assert abs(draws.var() / var - 1) < 0.05


@pytest.mark.parametrize("sigma", [0.4, 1.0, 3.7, Fraction(7, 2), 25.0])
def test_discrete_gaussian_matches_pmf(sigma):
    rng = np.random.default_rng(12)
    draws = discrete_gaussian(sigma, 100_000, rng)
    assert _chi2_pvalue(draws, lambda x: discrete_gaussian_logpmf(x, float(sigma))) > 1e-4


def test_chi_square_check_has_power():
    # the same test rejects a 5% error in sigma, and a continuous Gaussian rounded to Z
    rng = np.random.default_rng(13)
    draws = discrete_gaussian(3.7, 100_000, rng)
    assert _chi2_pvalue(draws, lambda x: discrete_gaussian_logpmf(x, 3.7 * 1.05)) < 1e-6
    rounded = np.rint(rng.normal(0, 0.6, 100_000)).astype(np.int64)
    assert _chi2_pvalue(rounded, lambda x: discrete_gaussian_logpmf(x, 0.6)) < 1e-6


@pytest.mark.parametrize("sigma", [1000.0, 1234.5678, 1e6])
def test_discrete_gaussian_variance_for_large_sigma(sigma):
    # Var N_Z(0, s^2) = s^2 (1 - O(s^2 e^(-2 pi^2 s^2))): indistinguishable from s^2 here
    rng = np.random.default_rng(14)
    draws = discrete_gaussian(sigma, 100_000, rng).astype(float)
    se = sigma**2 * math.sqrt(2.0 / draws.size)
    assert abs(draws.var() - sigma**2) < 5 * se
    assert abs(draws.mean()) < 5 * sigma / math.sqrt(draws.size)
    assert stats.kstest(draws / sigma, "norm").pvalue > 1e-3


def test_samplers_are_reproducible():
    # (speed is measured in benchmarks, not asserted in unit tests)
    rng = np.random.default_rng(15)
    a = discrete_gaussian(1234.5, 100_000, rng)
    discrete_laplace(1234.5, 100_000, rng)
    b = discrete_gaussian(1234.5, 100_000, np.random.default_rng(15))
    np.testing.assert_array_equal(a, b)
    assert isinstance(discrete_gaussian(2.0, None, rng), int)
    assert discrete_gaussian(2.0, (3, 4), rng).shape == (3, 4)
    assert discrete_laplace(2.0, 0, rng).shape == (0,)


# -- snapped releases -----------------------------------------------------------------------


def test_default_grid_is_the_largest_admissible_power_of_two():
    for delta, d, norm in [(1.0, 1, "l2"), (0.37, 1000, "l2"), (2.5, 7, "l1"), (1e-9, 3, "l2")]:
        g = default_grid(delta, d, norm)
        spread = math.sqrt(d) if norm == "l2" else d
        assert math.frexp(g)[0] == 0.5  # a power of two
        assert g * spread <= 1e-3 * delta < 2 * g * spread


@pytest.mark.parametrize("d", [1, 4, 25])
def test_rounding_inflates_sensitivity_by_grid_sqrt_d(d):
    # worst case: one neighbour rounds down by almost g/2, the other up by almost g/2,
    # in every coordinate, with ||u - u'||_2 = Delta exactly achievable up to 2^-19 g
    g = 2.0**-3
    m = 7
    a = np.full(d, (0.5 - 2.0**-20) * g)
    b = np.full(d, (m + 0.5 + 2.0**-20) * g)
    delta = float(np.linalg.norm(b - a))
    w = _snap(b, g) - _snap(a, g)
    assert np.all(w == m + 1)
    event = gaussian_release_event(1.0, delta, d, grid=g)
    l2 = float(np.linalg.norm(w))
    assert l2 <= event.sensitivity  # the bound holds ...
    assert l2 > event.sensitivity - 1e-4  # ... and is attained: the inflation is needed
    assert l2 > delta / g  # the uninflated sensitivity would be violated
    l1_event = laplace_release_event(1.0, float(np.abs(b - a).sum()), d, grid=g)
    assert np.abs(w).sum() <= l1_event.sensitivity
    assert np.abs(w).sum() > np.abs(b - a).sum() / g


def test_mitigated_gaussian_release_is_on_the_lattice_with_the_right_noise():
    rng = np.random.default_rng(16)
    value = rng.normal(size=20_000)
    sigma, delta = 0.8, 1.0
    out = mitigated_gaussian_release(value, sigma, delta, rng)
    g = default_grid(delta, value.size)
    lattice = out / g
    np.testing.assert_array_equal(lattice, np.rint(lattice))  # exactly on g Z^d
    noise = lattice - np.rint(value / g)
    assert abs(noise.std() * g / sigma - 1) < 0.03
    assert abs(np.mean(out - value)) < 5 * sigma / math.sqrt(value.size)
    scalar = mitigated_gaussian_release(0.3, 1.0, 1.0, rng, grid=0.25)
    assert isinstance(scalar, float) and (scalar / 0.25).is_integer()


def test_mitigated_laplace_release_noise_law():
    rng = np.random.default_rng(17)
    value = np.linspace(-3, 3, 30_000).reshape(100, 300)
    b, g = 0.5, 2.0**-6
    out = mitigated_laplace_release(value, b, 1.0, rng, grid=g)
    assert out.shape == value.shape
    noise = (out / g - np.rint(value / g)).astype(np.int64).ravel()
    assert _chi2_pvalue(noise, lambda x: discrete_laplace_logpmf(x, b / g)) > 1e-4


# -- accounting -----------------------------------------------------------------------------


@pytest.mark.parametrize("sigma,k", [(0.7, 1), (3.0, 2), (10.0, 13), (1.2e5, 100_000)])
def test_discrete_gaussian_pld_upper_bounds_exact_delta(sigma, k):
    # CKS Thm 7: delta(eps) = E[(1 - e^(eps - L))_+], L = (k^2 - 2kX)/(2 s^2), X ~ N_Z(0, s^2);
    # the last case (sigma > 1e5) goes through the survival-function bound
    acc = PrivacyAccountant("pld").compose(DiscreteGaussianDpEvent(sigma, k + 0.9))
    losses, p = _dg_losses(sigma, k)
    for eps in (0.0, 0.3, 1.0, 2.5):
        exact = _exact_delta_1d(losses, p, eps)
        reported = acc.get_delta(eps)
        assert reported >= exact
        assert reported <= exact * 1.01 + 1e-4 * max(exact, 1e-12) + 1e-9


def test_discrete_gaussian_pld_is_not_the_continuous_one_at_small_sigma():
    # at sigma = 0.5, k = 1 the discrete pair is *less* private than the continuous
    # Gaussian (TV 0.787 vs 0.683): borrowing the continuous PLD would be wrong
    losses, p = _dg_losses(0.5, 1)
    tv = _exact_delta_1d(losses, p, 0.0)
    assert tv > 2 * stats.norm.cdf(1.0) - 1 + 0.1
    acc = PrivacyAccountant("pld").compose(DiscreteGaussianDpEvent(0.5, 1.0))
    assert acc.get_delta(0.0) >= tv - 1e-12  # exact here: the losses +-2 lie on the grid


def test_discrete_gaussian_pmf_loss_has_unit_mass_and_right_mean():
    pmf = discrete_gaussian_loss_pmf(5.0, 3.0, 1e-4)
    assert abs(pmf.probs.sum() + pmf.infinity_mass - 1) < 1e-12
    mean = float(np.dot(pmf.losses, pmf.probs))  # KL = k^2 / (2 s^2) (rounding adds <= h)
    assert 9 / 50 <= mean <= 9 / 50 + 1e-4


@pytest.mark.parametrize("sigma,k", [(0.7, 1), (2.0, 3), (6.0, 5)])
def test_discrete_gaussian_rdp_against_direct_renyi(sigma, k):
    x, _ = _dg_pmf(sigma)
    logp = discrete_gaussian_logpmf(x, sigma)
    logq = discrete_gaussian_logpmf(x - k, sigma)
    for alpha in (1.5, 2.0, 3.0, 8.0):
        direct = _renyi_direct(logp, logq, alpha)
        ours = float(discrete_gaussian_rdp([alpha], sigma, k + 0.5)[0])
        assert ours >= direct - 1e-12
        if ((alpha - 1) * k).is_integer():  # CKS Prop. 5 is then an equality
            assert ours == pytest.approx(direct, rel=1e-9)
    # off the integers the bound is strict at small sigma (theta((alpha-1)k) < theta(0))
    if sigma < 1:
        assert float(discrete_gaussian_rdp([1.5], sigma, k)[0]) > _renyi_direct(logp, logq, 1.5)


def test_multivariate_discrete_gaussian_rdp_and_pld_refusal():
    sigma, w = 1.5, np.array([1, 2])
    x, _ = _dg_pmf(sigma)
    logp = discrete_gaussian_logpmf(x, sigma)
    for alpha in (2.0, 4.0):
        direct = sum(
            _renyi_direct(logp, discrete_gaussian_logpmf(x - wi, sigma), alpha) for wi in w
        )
        event = DiscreteGaussianDpEvent(sigma, math.sqrt(5.0), 2)
        ours = PrivacyAccountant("rdp", orders=[alpha]).compose(event).rdp()[0]
        assert ours >= direct - 1e-12
        assert ours == pytest.approx(alpha * 5 / (2 * sigma**2))
    event = DiscreteGaussianDpEvent(100.0, 100.0, 3)
    with pytest.raises(UnsupportedEventError, match="no provably valid PLD"):
        PrivacyAccountant("pld").compose(event)
    auto = PrivacyAccountant().compose(event).compose(GaussianDpEvent(1.0))
    assert auto.accounting_used == "rdp"
    rdp = PrivacyAccountant("rdp").compose(GaussianDpEvent(1.0), 2)
    assert auto.get_epsilon(1e-5) == pytest.approx(rdp.get_epsilon(1e-5), rel=1e-9)


def test_gaussian_release_event_matches_continuous_up_to_grid_cost():
    for z in (0.5, 1.0, 2.0, 5.0):
        event = gaussian_release_event(z, 1.0, 1)
        ours = PrivacyAccountant().compose(event).get_epsilon(1e-5)
        cont = PrivacyAccountant().compose(GaussianDpEvent(z)).get_epsilon(1e-5)
        inflated = PrivacyAccountant().compose(GaussianDpEvent(z / 1.001)).get_epsilon(1e-5)
        assert cont * (1 - 1e-3) <= ours <= inflated * (1 + 1e-3)


@pytest.mark.parametrize("b,k", [(1.0, 1), (0.7, 3), (5.0, 4)])
def test_discrete_laplace_pld_and_rdp_against_direct(b, k):
    half = int(60 * b) + 60 + k
    x = np.arange(-half, half + 1)
    logp = discrete_laplace_logpmf(x, b)
    logq = discrete_laplace_logpmf(x - k, b)
    losses, p = logp - logq, np.exp(logp)
    event = DiscreteLaplaceScaleDpEvent(b, k + 0.5)
    acc = PrivacyAccountant("pld").compose(event)
    for eps in (0.0, 0.2, k / b / 2):
        exact = _exact_delta_1d(losses, p, eps)
        assert exact <= acc.get_delta(eps) <= exact + 1e-3
    assert acc.get_delta(k / b + 1e-3) == pytest.approx(0.0, abs=1e-12)  # pure DP
    for alpha in (1.0, 2.0, 5.0):
        direct = float(np.dot(p, losses)) if alpha == 1 else _renyi_direct(logp, logq, alpha)
        assert float(discrete_laplace_rdp([alpha], event)[0]) == pytest.approx(direct, rel=1e-6)


def test_discrete_laplace_is_not_priced_as_continuous_laplace():
    # b = k = 1: the discrete pair has TV 1/(1 + e^-1) (1 - e^-1) = 0.462 > 1 - e^-1/2
    losses = np.array([1.0, -1.0])
    p = np.array([1 / (1 + math.exp(-1)), math.exp(-1) / (1 + math.exp(-1))])
    tv = _exact_delta_1d(losses, p, 0.0)
    assert tv == pytest.approx(0.4621, abs=1e-4)
    cont = PrivacyAccountant("pld").compose(LaplaceDpEvent(1.0)).get_delta(0.0)
    assert cont < tv - 0.05  # dp_accounting's Laplace would understate ...
    ours = PrivacyAccountant("pld").compose(DiscreteLaplaceScaleDpEvent(1.0, 1.0)).get_delta(0.0)
    assert ours >= tv  # ... ours does not


def test_multivariate_discrete_laplace_is_bounded_by_randomized_response():
    b, w = 2.0, (1, 2)
    half = 200
    x = np.arange(-half, half + 1)
    logp = discrete_laplace_logpmf(x, b)
    # product PLRV: convolve the two coordinates' loss atoms
    loss_atoms = [(logp - discrete_laplace_logpmf(x - wi, b), np.exp(logp)) for wi in w]
    total_l = np.add.outer(loss_atoms[0][0], loss_atoms[1][0]).ravel()
    total_p = np.multiply.outer(loss_atoms[0][1], loss_atoms[1][1]).ravel()
    acc = PrivacyAccountant("pld").compose(DiscreteLaplaceScaleDpEvent(b, 3.0, 2))
    for eps in (0.0, 0.5, 1.0):
        assert acc.get_delta(eps) >= _exact_delta_1d(total_l, total_p, eps)
    assert acc.get_epsilon(1e-9) <= 1.5 + 1e-3
    event = laplace_release_event(0.5, 1.0, 10)
    assert PrivacyAccountant().compose(event).get_epsilon(1e-9) <= (1.0 + 1e-3) / 0.5 + 1e-3


# -- bad input ------------------------------------------------------------------------------


@pytest.mark.parametrize("bad", [0, -1.0, float("nan"), float("inf"), Fraction(-1, 2)])
def test_bad_noise_parameters(bad):
    rng = np.random.default_rng(18)
    with pytest.raises(ValueError, match="sigma"):
        discrete_gaussian(bad, 3, rng)
    with pytest.raises(ValueError, match="scale"):
        discrete_laplace(bad, 3, rng)
    with pytest.raises(ValueError, match="sigma"):
        discrete_gaussian(True, 3, rng)  # a bool is not a noise scale
    with pytest.raises(ValueError, match="sigma"):
        mitigated_gaussian_release(np.zeros(2), bad, 1.0, rng)
    with pytest.raises(ValueError, match="sensitivity"):
        mitigated_gaussian_release(np.zeros(2), 1.0, bad, rng)


def test_bad_release_inputs():
    rng = np.random.default_rng(19)
    for grid in (0.0, -0.25, float("nan"), 0.1, 3.0):
        with pytest.raises(ValueError, match="grid"):
            mitigated_gaussian_release(np.zeros(2), 1.0, 1.0, rng, grid=grid)
        with pytest.raises(ValueError, match="grid"):
            mitigated_laplace_release(np.zeros(2), 1.0, 1.0, rng, grid=grid)
    with pytest.raises(ValueError, match="finite"):
        mitigated_gaussian_release(np.array([0.0, np.nan]), 1.0, 1.0, rng)
    with pytest.raises(ValueError, match="coarser grid"):
        mitigated_gaussian_release(np.array([1e300]), 1.0, 1.0, rng)
    with pytest.raises(ValueError, match="size"):
        discrete_gaussian(1.0, -1, rng)
    with pytest.raises(ValueError, match="rng"):
        discrete_gaussian(1.0, 3)
    with pytest.raises(ValueError, match="sigma"):
        discrete_gaussian(2.0**61, 3, rng)
    with pytest.raises(ValueError, match="sigma"):
        DiscreteGaussianDpEvent(0.0, 1.0)
    with pytest.raises(ValueError, match="dimension"):
        DiscreteGaussianDpEvent(1.0, 1.0, 0)
    with pytest.raises(ValueError, match="scale"):
        DiscreteLaplaceScaleDpEvent(float("nan"), 1.0)
