"""Tuning on a secret Poisson subsample (Koskela & Kulkarni 2023), priced by Zhu-Wang 2019.

Independent checks: the general subsampling bound recomputed term by term in exact
rational-free high precision (mpmath), its tightness at order 2 for the Gaussian, the
exact Renyi divergences of a whole subsampled search on a toy problem whose output laws
are known in closed form, and a Monte Carlo check that the implementation samples the
rows the analysis assumes.
"""

import math

import mpmath
import numpy as np
import pytest
from dp_accounting import dp_event as de
from scipy.stats import loguniform
from sklearn.datasets import make_classification

from dpconvex import DPLogisticRegression, PrivateRandomSearch
from dpconvex.accounting import (
    DiscreteGaussianDpEvent,
    PrivacyAccountant,
    RdpAccountant,
    tuned_event,
)
from dpconvex.accounting.subsampled_rdp import (
    poisson_subsampled_rdp_bound,
    subsampled_gaussian_rdp_int,
)
from dpconvex.tuning import search as search_module
from dpconvex.tuning.runs import truncated_negative_binomial_gamma


def zhu_wang(q, eps, a):
    """Zhu & Wang 2019 Thm 6 at integer order a, term by term in 50-digit arithmetic."""
    mpmath.mp.dps = 50
    q = mpmath.mpf(q)
    total = (1 - q) ** (a - 1) * (a * q - q + 1)
    total += mpmath.binomial(a, 2) * q**2 * (1 - q) ** (a - 2) * mpmath.e ** mpmath.mpf(eps(2))
    for ell in range(3, a + 1):
        total += (
            3
            * mpmath.binomial(a, ell)
            * q**ell
            * (1 - q) ** (a - ell)
            * mpmath.e ** ((ell - 1) * mpmath.mpf(eps(ell)))
        )
    return float(mpmath.log(total) / (a - 1))


@pytest.mark.parametrize("q", [1e-3, 0.05, 0.3, 0.9])
def test_general_subsampling_bound_matches_the_formula(q):
    inner = 0.3 * np.arange(2, 41) ** 0.8 + 0.05 * np.log(np.arange(2, 41))  # any RDP curve
    ours = poisson_subsampled_rdp_bound(q, inner)
    for a in (2, 3, 7, 20, 40):
        expected = min(zhu_wang(q, lambda k: inner[k - 2], a), inner[a - 2])
        assert ours[a - 2] == pytest.approx(expected, rel=1e-10)


@pytest.mark.parametrize("q, z", [(0.01, 0.8), (0.1, 2.0), (0.5, 1.0)])
def test_general_bound_is_tight_at_order_two_and_above_the_exact_gaussian(q, z):
    orders = np.arange(2, 65)
    exact = subsampled_gaussian_rdp_int(q, z, orders.astype(float))  # Mironov et al. 2019
    bound = poisson_subsampled_rdp_bound(q, orders / (2 * z * z))
    assert bound[0] == pytest.approx(exact[0], rel=1e-12)  # the same expression at a = 2
    assert np.all(bound >= exact * (1 - 1e-12))


def test_accountant_amplifies_any_event_by_the_general_bound():
    run = de.ComposedDpEvent([de.GaussianDpEvent(3.0), DiscreteGaussianDpEvent(20.0, 1.0, 1)])
    inner_event = tuned_event(run, 5.0, 1.0)
    ints = np.arange(2.0, 257.0)
    inner = RdpAccountant(ints).compose(inner_event).rdp
    orders = np.array([1.5, 2.0, 2.5, 7.0, 100.0, 256.0, 512.0])
    got = RdpAccountant(orders).compose(de.PoissonSampledDpEvent(0.1, inner_event)).rdp
    bound = poisson_subsampled_rdp_bound(0.1, inner)
    # Thm 2 minimizes over the orders it is given: the same grid as the accountant's
    unamplified = RdpAccountant(np.append(ints, 512.0)).compose(inner_event).rdp[-1]
    expected = [bound[0], bound[0], bound[1], bound[5], bound[98], bound[254], unamplified]
    np.testing.assert_allclose(got, expected, rtol=1e-12)
    with pytest.raises(Exception, match="(?i)support"):
        PrivacyAccountant("pld").compose(de.PoissonSampledDpEvent(0.1, inner_event))


# -- the whole claim on a toy problem with exact output laws ----------------------------


def _discrete_gaussian_pmf(sigma, support, shift):
    w = [mpmath.exp(-(mpmath.mpf(s - shift) ** 2) / (2 * sigma**2)) for s in support]
    total = mpmath.fsum(w)
    return [x / total for x in w]


def _best_of_k_law(pmf, mean, shape):
    """Law of the largest of K i.i.d. draws (last entry: K = 0, nothing selected)."""
    mean = mpmath.mpf(mean)
    if math.isinf(shape):  # G(f) = E[f^K] = exp(mean (f - 1)), K ~ Poisson
        step = lambda b, m: mpmath.exp(mean * (b - 1)) * mpmath.expm1(mean * m)  # noqa: E731
        none = mpmath.exp(-mean)
    else:  # geometric, P(K = k) = g (1 - g)^(k - 1): G(f) = g f / (1 - (1 - g) f)
        g = mpmath.mpf(truncated_negative_binomial_gamma(float(mean), 1.0))
        step = lambda b, m: g * m / ((1 - (1 - g) * (b + m)) * (1 - (1 - g) * b))  # noqa: E731
        none = mpmath.mpf(0)
    law, below = [], mpmath.mpf(0)
    for mass in pmf:  # G(F(s)) - G(F(s - 1)), without cancellation
        law.append(step(below, mass))
        below += mass
    return law + [none]


def _renyi(p, r, a):
    terms = [x**a * y ** (1 - a) for x, y in zip(p, r, strict=True) if x > 0]
    return float(mpmath.log(mpmath.fsum(terms)) / (a - 1))


@pytest.mark.parametrize("shape", [math.inf, 1.0])
@pytest.mark.parametrize("q", [0.05, 0.3])
def test_subsampled_search_exact_divergence_is_below_the_priced_rdp(q, shape):
    """A count query searched on a Poisson(q) subsample, then answered on all rows.

    D has no row of value 1, D' = D plus one such row. Every tuning run releases its
    subsample's count plus discrete Gaussian noise (the run *is* its score) and the
    search releases the largest; the final run releases the full count plus noise. The
    tuning part of D' is the mixture (1 - q) T_0 + q T_1 (the added row in or out of
    the subsample); the two releases are independent given the data.
    """
    mpmath.mp.dps = 60
    sigma_run, sigma_final, mean = 2.0, 3.0, 4.0
    support = range(-45, 47)  # 15 sigma: the truncated tails weigh below 1e-48
    t0 = _best_of_k_law(_discrete_gaussian_pmf(sigma_run, support, 0), mean, shape)
    t1 = _best_of_k_law(_discrete_gaussian_pmf(sigma_run, support, 1), mean, shape)
    mix = [(1 - q) * a + q * b for a, b in zip(t0, t1, strict=True)]
    f0 = _discrete_gaussian_pmf(sigma_final, support, 0)
    f1 = _discrete_gaussian_pmf(sigma_final, support, 1)
    event = de.ComposedDpEvent(
        [
            de.PoissonSampledDpEvent(
                q, tuned_event(DiscreteGaussianDpEvent(sigma_run, 1, 1), mean, shape)
            ),
            DiscreteGaussianDpEvent(sigma_final, 1, 1),
        ]
    )
    orders = np.arange(2, 33)
    priced = RdpAccountant(orders.astype(float)).compose(event).rdp
    ratios = []
    for a, bound in zip(orders, priced, strict=True):
        add = _renyi(mix, t0, a) + _renyi(f1, f0, a)
        remove = _renyi(t0, mix, a) + _renyi(f0, f1, a)
        assert max(add, remove) <= bound * (1 + 1e-9)
        ratios.append(max(add, remove) / bound)
    assert max(ratios) > 0.2  # the bound is not vacuous on this problem


# -- the implementation samples what the analysis assumes --------------------------------


class _Spy(DPLogisticRegression):
    """Records the rows it is fitted on (by the value of their first column)."""

    seen: list = []

    def fit(self, X, y, public_n=None):
        type(self).seen.append(np.asarray(X[:, 0]).copy())
        return super().fit(X, y, public_n=public_n)


def test_tuning_rows_are_a_poisson_subsample_and_the_final_model_sees_all():
    n = 3000
    X, y = make_classification(n_samples=n, n_features=4, random_state=0)
    X[:, 0] = np.arange(n)  # row ids
    q, tuning_hits, final_ok, runs = 0.3, np.zeros(n), 0, 0
    trials = 30
    for seed in range(trials):
        _Spy.seen = []
        PrivateRandomSearch(
            _Spy(method="dpsgd", epochs=1, row_norm="clip", row_bound=1e4),
            {"learning_rate": [0.01]},
            epsilon=8.0,
            strategy="subsample",
            subsample=q,
            mu=2.0,
            shape=1.0,  # geometric: K >= 1
            random_state=seed,
        ).fit(X, y)
        *tuning, final = _Spy.seen
        runs += len(tuning)
        final_ok += np.array_equal(np.sort(final), np.arange(n))
        first = np.zeros(n, dtype=bool)
        first[tuning[0].astype(int)] = True
        for other in tuning[1:]:  # every run of one search trains on the same rows
            assert np.array_equal(np.sort(other), np.sort(tuning[0]))
        tuning_hits += first
    assert final_ok == trials
    # a row is a tuning-training row with probability q (1 - validation share 0.2)
    p = q * 0.8
    freq = tuning_hits.mean() / trials
    assert abs(freq - p) < 4 * math.sqrt(p * (1 - p) / (n * trials))
    # rows are included independently: the count per search has the binomial spread
    assert runs / trials == pytest.approx(2.0, abs=0.8)  # geometric mean-2 number of runs


def test_subsample_search_on_adult_size_data_releases_only_what_is_priced():
    X, y = make_classification(n_samples=12_000, n_features=10, random_state=1)
    search = PrivateRandomSearch(
        DPLogisticRegression(method="dpsgd", epochs=2),
        {"learning_rate": loguniform(1e-3, 1e-1)},
        epsilon=1.0,
        strategy="subsample",
        subsample=0.2,
        random_state=0,
    ).fit(X, y)
    assert search.strategy_ == "subsample"
    assert isinstance(search.dp_event_, de.ComposedDpEvent)
    sampled, final = search.dp_event_.events
    assert isinstance(sampled, de.PoissonSampledDpEvent) and sampled.sampling_probability == 0.2
    assert final == search.best_estimator_.dp_event_
    assert search.epsilon_ <= 1.0
    assert search.epsilon_ == PrivacyAccountant("rdp").compose(search.dp_event_).get_epsilon(1e-5)
    assert search.best_estimator_.n_features_in_ == 10
    assert not hasattr(search, "subsample_size_")  # the subsample's size stays secret


# -- the defaults --------------------------------------------------------------------


def _feasible(epsilon, n, space, estimator):
    search = PrivateRandomSearch(estimator, space, epsilon=epsilon, random_state=0)
    search._cfg = search._configure(n, 20)
    run = search._calibrate_with_fallback()
    spent = PrivacyAccountant("rdp").compose(search._search_event(run)).get_epsilon(1e-5)
    return search._cfg, run, spent


FREE = {"learning_rate": loguniform(1e-4, 1e-1)}
PRICED = {"learning_rate": loguniform(1e-4, 1e-1), "lam": [1e-3, 1e-2]}


@pytest.mark.parametrize(
    "epsilon, n, space",
    [(0.01, 300, FREE), (0.05, 30_000, FREE), (1.0, 3_000, PRICED)],
)
def test_default_settings_meet_small_and_large_budgets(epsilon, n, space):
    cfg, run, spent = _feasible(epsilon, n, space, DPLogisticRegression(method="dpsgd"))
    assert 0 < run <= epsilon and spent <= epsilon


@pytest.mark.slow
@pytest.mark.parametrize("epsilon", [0.01, 0.05, 0.1, 0.3, 1.0, 3.0, 8.0, 30.0])
@pytest.mark.parametrize("n", [200, 2_000, 20_000, 200_000])
@pytest.mark.parametrize("space", [FREE, PRICED], ids=["free", "priced"])
def test_default_settings_are_feasible_over_a_grid(epsilon, n, space):
    cfg, run, spent = _feasible(epsilon, n, space, DPLogisticRegression(method="dpsgd"))
    assert 0 < run <= epsilon and spent <= epsilon * (1 + 1e-9)
    if epsilon >= 1:  # large budgets go to the runs, not to the tuning's overhead
        assert run >= epsilon / 8


# -- the selection's epsilon against the theorems, computed independently ---------------


def _conversion(orders, rdp, delta):
    """Canonne-Kamath-Steinke 2020 (Prop. 12 of v4): the best order wins."""
    a = np.asarray(orders, dtype=float)
    return float(np.min(rdp + np.log1p(-1 / a) - (math.log(delta) + np.log(a)) / (a - 1)))


def _ps_thm6(orders, base, mu):
    """Papernot-Steinke Thm 6, delta_hat at eps_hat = log(1 + 1/(lambda - 1)) from the base."""
    out = []
    for lam, r in zip(orders, base, strict=True):
        eps_hat = math.log1p(1 / (lam - 1))
        # delta_hat(eps_hat) by the same conversion, order by order, best order wins
        log_d = [
            (a - 1) * (ra - eps_hat + math.log1p(-1 / a)) - math.log(a)
            for a, ra in zip(orders, base, strict=True)
        ]
        kl = [0.5 * math.log1p(-math.exp(-ra)) for ra in base]
        delta_hat = min(1.0, math.exp(min(min(log_d), min(kl))))
        out.append(r + mu * delta_hat + math.log(mu) / (lam - 1))
    return np.array(out)


def _ps_thm2(orders, base, mu, eta):
    """Papernot-Steinke Thm 2 (truncated negative binomial), best lambda_hat over the orders."""
    gamma = truncated_negative_binomial_gamma(mu, eta)
    out = []
    for lam, r in zip(orders, base, strict=True):
        extra = min(
            (1 + eta) * (1 - 1 / lh) * rh + (1 + eta) * math.log(1 / gamma) / lh
            for lh, rh in zip(orders, base, strict=True)
        )
        out.append(r + extra + math.log(mu) / (lam - 1))
    # RDP does not decrease with the order: a higher order's bound holds below it
    return np.minimum.accumulate(np.array(out)[::-1])[::-1]


@pytest.mark.parametrize("shape", [math.inf, 1.0, 2.0])
def test_search_epsilon_matches_papernot_steinke_and_zhu_wang_independently(shape):
    orders = np.arange(2.0, 257.0)
    sigma, score, mu, q, delta = 4.0, 30.0, 3.0, 0.08, 1e-5
    run = de.ComposedDpEvent([de.GaussianDpEvent(sigma), DiscreteGaussianDpEvent(score, 1, 1)])
    base = orders / (2 * sigma**2) + orders / (2 * score**2)
    if math.isinf(shape):
        tuned = _ps_thm6(orders, base, mu)
    else:
        tuned = _ps_thm2(orders, base, mu, shape)
    ours = RdpAccountant(orders).compose(tuned_event(run, mu, shape)).rdp
    np.testing.assert_allclose(ours, tuned, rtol=1e-6)
    # the subsampled search plus a final run: Zhu-Wang on the tuned curve, plus the run
    sub = np.array([zhu_wang(q, lambda k: tuned[k - 2], int(a)) for a in orders[:40]])
    sub = np.minimum(sub, tuned[:40])
    total = sub + orders[:40] / (2 * sigma**2)
    event = de.ComposedDpEvent(
        [de.PoissonSampledDpEvent(q, tuned_event(run, mu, shape)), de.GaussianDpEvent(sigma)]
    )
    ours = RdpAccountant(orders[:40]).compose(event).rdp
    np.testing.assert_allclose(ours, total, rtol=1e-6)
    assert _conversion(orders[:40], ours, delta) == pytest.approx(
        _conversion(orders[:40], total, delta), rel=1e-6
    )


def test_no_run_on_the_subsample_trains_the_final_model_with_the_estimators_settings(
    monkeypatch,
):
    """K = 0 (Poisson runs): the final model keeps the estimator's own free settings."""
    monkeypatch.setattr(search_module, "sample_number_of_runs", lambda rng, mu, shape: 0)
    X, y = make_classification(n_samples=1500, n_features=5, random_state=2)
    search = PrivateRandomSearch(
        DPLogisticRegression(method="dpsgd", epochs=1),
        {"learning_rate": loguniform(1e-3, 1e-1)},
        epsilon=2.0,
        strategy="subsample",
        subsample=0.3,
        mu=1.0,
        shape=math.inf,  # Poisson: K = 0 with probability 1/e
        random_state=0,
    ).fit(X, y)
    assert search.tuned_params_ == {"learning_rate": None} == search.best_params_
    assert search.best_score_ is None
    assert search.best_estimator_.learning_rate is None  # the estimator's own default
    assert search.score(X, y) > 0.6 and search.epsilon_ <= 2.0


def test_default_share_keeps_the_estimators_free_settings_in_that_share_of_runs():
    X, y = make_classification(n_samples=4000, n_features=5, random_state=3)
    kept = total = 0
    for seed in range(6):
        search = PrivateRandomSearch(
            _Spy(method="dpsgd", epochs=1),
            {"learning_rate": loguniform(1e-3, 1e-1), "lam": [0.001, 0.01]},
            epsilon=4.0,
            strategy="subsample",
            subsample=0.3,
            mu=6.0,
            default_share=0.5,
            random_state=seed,
        )
        plans = []
        search._run_all = lambda p, *a, _seen=plans: (_seen.extend(p), ([], None))[1]  # record
        search.fit(X, y)
        for params, _, _ in plans:
            total += 1
            kept += params["learning_rate"] is None  # the estimator's own (default) rate
            assert params["lam"] in (0.001, 0.01)  # priced settings are always drawn
    assert total > 15 and 0.25 < kept / total < 0.75
    with pytest.raises(ValueError, match="default_share"):
        PrivateRandomSearch(
            DPLogisticRegression(method="dpsgd"), {"learning_rate": [0.01]}, default_share=1.0
        ).fit(X, y)


def test_subsample_search_gives_the_same_model_whatever_n_jobs():
    X, y = make_classification(n_samples=4000, n_features=6, random_state=5)
    fits = []
    for n_jobs in (1, 2):
        for seed in (0, 1):
            fits.append(
                PrivateRandomSearch(
                    DPLogisticRegression(method="dpsgd", epochs=2),
                    {"learning_rate": loguniform(1e-3, 1e-1)},
                    epsilon=2.0,
                    strategy="subsample",
                    subsample=0.3,
                    mu=4.0,
                    random_state=seed,
                    n_jobs=n_jobs,
                ).fit(X, y)
            )
    for one, two in zip(fits[:2], fits[2:], strict=True):
        assert one.best_params_ == two.best_params_ and one.best_score_ == two.best_score_
        np.testing.assert_array_equal(one.best_estimator_.coef_, two.best_estimator_.coef_)
        assert one.epsilon_ == two.epsilon_ <= 2.0


def test_a_subsample_too_small_for_the_tuning_runs_is_refused_from_public_sizes():
    X, y = make_classification(n_samples=600, n_features=4, random_state=0)
    with pytest.raises(ValueError, match="about 48 training rows"):
        PrivateRandomSearch(
            DPLogisticRegression(method="dpsgd"),
            {"learning_rate": [0.01]},
            strategy="subsample",
            subsample=0.1,
        ).fit(X, y)
