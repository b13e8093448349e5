"""Privacy of the building blocks of Su, Zhao & Wang (arXiv 2303.18047), each checked independently.

* the envelope pair of a set of (eps, delta) guarantees vs the closed-form worst-case pair
  and the Kairouz-Oh-Viswanath optimal composition formula;
* Lemma 3 (GG mechanism) vs the exact Gaussian profile (kappa = 1, r = 2) and vs a Monte
  Carlo estimate of the privacy profile of the l_r-norm GG mechanism;
* Lemma 1 (advanced composition) vs the optimal composition;
* the shuffle bound vs its small-eps0 asymptotics; Lemma 5 identities.
"""

import math

import numpy as np
import pytest
from scipy.special import comb

from dpconvex.accounting import GaussianDpEvent, PrivacyAccountant, gaussian_delta, kifer_epsilon
from dpconvex.accounting.pld import to_pld
from dpconvex.noise import lr_norm, norm_gaussian
from dpconvex.sco import (
    ConstrainedObjPertDpEvent,
    NormGaussianDpEvent,
    ShuffledNormGaussianDpEvent,
    advanced_composition_step,
    envelope_loss_pmf,
    gg_sigma,
    lemma3_delta,
    shuffle_epsilon,
)
from dpconvex.sco.events import _shuffle_epsilon_array


def _kov_delta(k: int, eps0: float, delta0: float, i: int) -> float:
    """Optimal k-fold composition of (eps0, delta0)-DP at eps = (k - 2i) eps0 (KOV15, Thm 3.3)."""
    acc = (
        sum(
            comb(k, j) * (math.exp((k - j) * eps0) - math.exp((k - 2 * i + j) * eps0))
            for j in range(i)
        )
        / (1 + math.exp(eps0)) ** k
    )
    return 1 - (1 - delta0) ** k * (1 - acc)


def test_envelope_of_one_pair_is_the_worst_case_pair():
    eps, delta, h = 0.5, 1e-3, 1e-4
    pmf = envelope_loss_pmf([eps], [delta], h)
    losses, probs = pmf.losses[pmf.probs > 0], pmf.probs[pmf.probs > 0]
    assert np.allclose(losses, [-eps, eps], atol=h)
    assert np.allclose(probs, [(1 - delta) / (1 + math.e**eps), (1 - delta) / (1 + math.e**-eps)])
    assert pmf.infinity_mass == pytest.approx(delta, rel=1e-9)


@pytest.mark.parametrize(("k", "eps0", "delta0"), [(5, 0.3, 1e-4), (12, 0.1, 1e-6)])
def test_composed_envelope_equals_optimal_composition(k, eps0, delta0):
    pld = to_pld(envelope_loss_pmf([eps0], [delta0], 1e-4)).self_compose(k)
    for i in range(0, k // 2):
        eps = (k - 2 * i) * eps0
        exact = _kov_delta(k, eps0, delta0, i)
        assert pld.get_delta_for_epsilon(eps) == pytest.approx(exact, rel=1e-6, abs=1e-12)


def test_envelope_meets_every_given_guarantee():
    eps = np.array([0.05, 0.2, 0.4, 0.7, 0.95])
    delta = np.array([0.5, 0.1, 1e-3, 1e-6, 1e-9])
    h = 1e-4
    pld = to_pld(envelope_loss_pmf(eps, delta, h))
    for e, d in zip(eps, delta, strict=True):
        assert pld.get_delta_for_epsilon(e + h) <= d * (1 + 1e-9) + 1e-15  # float round-off
    # a guarantee weaker than the others adds nothing
    more = to_pld(envelope_loss_pmf(np.append(eps, 0.4), np.append(delta, 0.2), h))
    assert more.get_delta_for_epsilon(0.3) == pytest.approx(pld.get_delta_for_epsilon(0.3))


def test_envelope_of_a_gaussian_profile_is_never_more_private_than_the_gaussian():
    """Points sampled from the exact Gaussian profile: the envelope pair lies between the
    Gaussian (which meets all of them, so is at least as private) and each single point,
    and approaches the Gaussian as the grid refines."""
    sigma = 2.0
    prev = None
    for m in (8, 60, 400):
        eps = np.linspace(0.0, 3.0, m)
        delta = gaussian_delta(eps, 1.0, sigma)
        pld = to_pld(envelope_loss_pmf(eps, delta, 1e-5))
        grid = np.linspace(0.05, 2.9, 25)
        env = np.array([pld.get_delta_for_epsilon(e) for e in grid])
        exact = gaussian_delta(grid, 1.0, sigma)
        assert np.all(env >= exact * (1 - 1e-6))
        gap = np.max(env / exact)
        assert prev is None or gap <= prev
        prev = gap
    assert prev < 1.01


def test_lemma3_with_kappa_1_is_a_valid_gaussian_mechanism():
    """kappa = 1, ||.||_+ = ||.||_2: Lemma 3's sigma must satisfy the exact Gaussian profile."""
    for eps in (0.01, 0.1, 0.5, 0.9, 0.999):
        for delta in (1e-12, 1e-6, 1e-3, 0.1, 0.5, 0.9):
            sigma = gg_sigma(eps, delta, 1.0, 1.0)
            assert gaussian_delta(eps, 1.0, sigma) <= delta
    with pytest.raises(ValueError, match="epsilon < 1"):
        gg_sigma(1.0, 1e-5, 1.0, 1.0)


def test_gaussian_norm_gaussian_event_is_priced_exactly():
    e = NormGaussianDpEvent(3.0, 0.5, 1.0, 2.0)
    ours = PrivacyAccountant("pld").compose(e, 7).get_epsilon(1e-6)
    ref = PrivacyAccountant("pld").compose(GaussianDpEvent(6.0), 7).get_epsilon(1e-6)
    assert ours == pytest.approx(ref, rel=1e-3)


@pytest.mark.parametrize(("d", "r", "kappa"), [(10, 5.0, 4.0), (3, 3.0, 2.0), (40, 11.0, 10.0)])
def test_lemma3_profile_dominates_monte_carlo_profile(d, r, kappa):
    """delta_MC(eps) = E[1 - e^(eps - L)]_+ of the l_r GG mechanism <= Lemma 3's delta(eps).

    L = (||z - D||_r^2 - ||z||_r^2) / (2 sigma^2), z ~ GG(0, sigma^2), for shifts D of
    ||D||_q = 1 along an axis, the diagonal and random directions (q = r here). sigma is
    small enough that delta is estimable (Lemma 3 at (0.5, 0.3)).
    """
    rng = np.random.default_rng(0)
    sigma = gg_sigma(0.5, 0.3, 1.0, kappa)
    z = norm_gaussian(d, r, sigma, rng, size=100_000)
    shifts = [np.eye(d)[0], np.ones(d)]
    shifts += [rng.standard_normal(d) for _ in range(3)]
    eps = np.array([0.05, 0.2, 0.5, 0.8])
    bound = lemma3_delta(eps, sigma, 1.0, kappa)
    for D in shifts:
        D = D / lr_norm(D, r)
        L = (lr_norm(z - D, r) ** 2 - lr_norm(z, r) ** 2) / (2 * sigma**2)
        assert abs(np.mean(np.exp(-L)) - 1) < 0.02  # sanity: E_P[Q/P] = 1
        mc = np.mean(np.maximum(0.0, 1 - np.exp(eps[:, None] - L[None, :])), axis=1)
        assert np.all(mc <= bound + 3e-3)


@pytest.mark.parametrize("steps", [1, 10, 100])
@pytest.mark.parametrize("eps", [0.1, 0.5, 0.9])
def test_advanced_composition_step_is_valid(steps, eps):
    """Lemma 1 at delta/2 must give (eps, delta) under the optimal composition."""
    delta = 1e-5
    e1, d1 = advanced_composition_step(eps, delta, steps)
    pld = to_pld(envelope_loss_pmf([e1], [d1], 1e-5)).self_compose(steps)
    assert pld.get_epsilon_for_delta(delta) <= eps


def test_lemma5_event_identities():
    L, eps, delta = 2.0, 0.4, 1e-6
    sigma = math.sqrt(32 * L**2 * math.log(1 / delta)) / eps  # Alg. 5
    n, beta, rank = 1000, 0.25, 2
    lam = rank * beta / (2 * eps * n)
    e = ConstrainedObjPertDpEvent(sigma, lam, beta, L, rank, n)
    assert e.min_epsilon == pytest.approx(eps)
    es, ds = e.guarantees()
    assert es.min() >= eps
    assert PrivacyAccountant("pld").compose(e).get_delta(eps + 1e-4) <= delta * (1 + 1e-9)
    # below min_epsilon only what (eps, delta)-DP itself implies (worst-case pair)
    low = 0.99 * eps
    implied = delta + (1 - delta) * (math.exp(eps) - math.exp(low)) / (1 + math.exp(eps))
    got = PrivacyAccountant("pld").compose(e).get_delta(low)
    assert implied * (1 - 1e-3) <= got <= implied * 1.05
    assert ConstrainedObjPertDpEvent(1.0, 0.0, 0.0, 1.0, 0, 10).min_epsilon == 0.0
    assert ConstrainedObjPertDpEvent(1.0, 0.0, 1.0, 1.0, 2, 10).min_epsilon == math.inf


@pytest.mark.parametrize("delta", [1e-8, 1e-5, 1e-2])
@pytest.mark.parametrize("eps", [0.05, 0.3, 0.9])
def test_lemma5_noise_is_at_least_kifer_et_al(eps, delta):
    """Alg. 5's sigma^2 = 32 L^2 log(1/delta)/eps^2 with lam = r beta/(2 eps n) (r = 2) meets
    Kifer et al.'s objective-perturbation theorem as implemented from Redberg et al. (Thm 2.8), in
    that paper's scaling (objective n L^ + (Lambda/2)||w||^2 + <b, w>, Lambda = 2 n lam)."""
    L, beta, n = 1.5, 0.25, 1000
    sigma = math.sqrt(32 * L**2 * math.log(1 / delta)) / eps
    Lambda = 2 * n * (2 * beta / (2 * eps * n))
    assert kifer_epsilon(delta, sigma=sigma, lam=Lambda, beta=beta, lipschitz=L) <= eps + 1e-12


def test_shuffle_bound_asymptotics_and_validity():
    n, delta = 10**6, 1e-6
    for e0 in (1e-3, 1e-2):
        # eps ~ 4 eps0 sqrt(log(4/delta)/n) as eps0 -> 0 and n -> inf (FMT21)
        big = 10**10
        approx = 4 * e0 * math.sqrt(math.log(4 / delta) / big)
        assert shuffle_epsilon(big, e0, delta) == pytest.approx(approx, rel=0.01)
    values = [shuffle_epsilon(n, e0, delta) for e0 in (0.1, 0.5, 1.0, 2.0)]
    assert values == sorted(values) and values[-1] < 2.0
    assert shuffle_epsilon(10 * n, 1.0, delta) < shuffle_epsilon(n, 1.0, delta)
    assert shuffle_epsilon(100, 1.0, delta) == math.inf  # eps0 > log(n / (16 log(4/delta)))
    e0 = np.array([[0.01, 0.3, 5.0]])
    dh = np.array([[1e-8], [1e-3]])
    vec = _shuffle_epsilon_array(n, e0, dh)
    ref = [[shuffle_epsilon(n, a, b) for a in e0[0]] for b in dh[:, 0]]
    assert np.allclose(vec, ref)


def test_shuffled_event_is_at_least_as_private_as_one_report():
    e = ShuffledNormGaussianDpEvent(50.0, 2.0, 2.0, 3.0, 100_000)
    local = NormGaussianDpEvent(50.0, 2.0, 2.0, 3.0)
    shuffled_eps = PrivacyAccountant("pld").compose(e).get_epsilon(1e-6)
    local_eps = PrivacyAccountant("pld").compose(local).get_epsilon(1e-6)
    assert shuffled_eps < local_eps / 10


def test_events_validate_and_refuse_rdp():
    with pytest.raises(ValueError, match="sigma"):
        NormGaussianDpEvent(0.0, 1.0, 1.0)
    with pytest.raises(ValueError, match="kappa"):
        NormGaussianDpEvent(1.0, 1.0, 0.5)
    with pytest.raises(Exception, match="not support"):
        PrivacyAccountant("rdp").compose(NormGaussianDpEvent(1.0, 1.0, 2.0, 3.0))
