"""Papernot-Steinke private random search."""

import math

import numpy as np
import pytest
from dp_accounting.rdp import rdp_privacy_accountant as dpa_rdp
from scipy import integrate
from scipy.stats import loguniform
from sklearn.datasets import make_classification

from dpconvex import DPLinearRegression, DPLogisticRegression, PrivateRandomSearch
from dpconvex.accounting import (
    DiscreteGaussianDpEvent,
    GaussianDpEvent,
    PrivacyAccountant,
    RandomChoiceDpEvent,
    RdpAccountant,
    RepeatAndSelectDpEvent,
    UnsupportedEventError,
)
from dpconvex.tuning import (
    PRIVACY_FREE_PARAMS,
    sample_number_of_runs,
    truncated_negative_binomial_gamma,
)
from dpconvex.tuning.runs import truncated_negative_binomial_mean
from dpconvex.tuning.search import NOTHING_SELECTED


@pytest.fixture(scope="module")
def data():
    return make_classification(
        n_samples=2000, n_features=8, n_informative=5, class_sep=1.5, random_state=0
    )


@pytest.mark.parametrize("shape", [0.0, 0.5, 1.0, 3.0])
def test_tnb_mean_matches_dp_accounting(shape):
    for gamma in [0.05, 0.2, 0.6]:
        ours = truncated_negative_binomial_mean(gamma, shape)
        theirs = dpa_rdp._truncated_negative_binomial_mean(gamma, shape)
        assert ours == pytest.approx(theirs, rel=1e-10)
    gamma = truncated_negative_binomial_gamma(8.0, shape)
    assert truncated_negative_binomial_mean(gamma, shape) == pytest.approx(8.0, rel=1e-9)


@pytest.mark.parametrize("shape", [math.inf, 0.0, 1.0, 2.0])
def test_number_of_runs_has_the_requested_mean(shape):
    rng = np.random.default_rng(0)
    draws = np.array([sample_number_of_runs(rng, 6.0, shape) for _ in range(40_000)])
    se = draws.std() / math.sqrt(draws.size)
    assert abs(draws.mean() - 6.0) < 5 * se
    if math.isfinite(shape):
        assert draws.min() >= 1  # truncated at 0


def test_random_choice_rdp_is_the_pointwise_max():
    a, b = GaussianDpEvent(1.0), GaussianDpEvent(3.0)
    orders = [1.5, 2, 5, 20]
    mix = RdpAccountant(orders).compose(RandomChoiceDpEvent([a, b])).rdp
    np.testing.assert_allclose(
        mix, np.maximum(RdpAccountant(orders).compose(a).rdp, RdpAccountant(orders).compose(b).rdp)
    )
    with pytest.raises(UnsupportedEventError):
        PrivacyAccountant("pld").compose(RandomChoiceDpEvent([a, b]))
    with pytest.raises(ValueError, match="non-empty"):
        RandomChoiceDpEvent([])


def test_mixture_renyi_divergence_is_below_the_max_by_quadrature():
    """Independent check of quasi-convexity: pick sigma 1 or 2 at random, add N(0, sigma^2)."""

    def density(x, shift):
        return 0.5 * sum(
            math.exp(-0.5 * ((x - shift) / s) ** 2) / (s * math.sqrt(2 * math.pi))
            for s in (1.0, 2.0)
        )

    for alpha in [1.5, 2.0, 4.0]:
        value = integrate.quad(
            lambda x, alpha=alpha: density(x, 1.0) ** alpha * density(x, 0.0) ** (1 - alpha),
            -40,
            40,
            limit=400,
        )[0]
        renyi = math.log(value) / (alpha - 1)
        assert renyi <= alpha / 2 + 1e-9  # max over the two Gaussians: alpha / (2 * 1^2)


def test_free_parameters_do_not_change_the_event_and_relevant_ones_do():
    amp = DPLogisticRegression()
    assert amp.set_params(solver="lbfgs", max_iter=5).privacy_event(
        1000, 5
    ) == DPLogisticRegression(solver="newton").privacy_event(1000, 5)
    sgd = DPLogisticRegression(method="dpsgd", accounting="rdp")
    assert sgd.set_params(learning_rate=1e-4, optimizer="sgd").privacy_event(
        1000, 5
    ) == DPLogisticRegression(method="dpsgd", accounting="rdp", learning_rate=0.1).privacy_event(
        1000, 5
    )
    assert DPLogisticRegression(lam=3.0).privacy_event(1000, 5) != DPLogisticRegression(
        lam=9.0
    ).privacy_event(1000, 5)
    assert PRIVACY_FREE_PARAMS == {"solver", "max_iter", "learning_rate", "optimizer"}


@pytest.mark.slow  # paper-scale (> 20 s here); CI runs -m slow as its own step
def test_search_spends_its_budget_honestly(data):
    X, y = data
    search = PrivateRandomSearch(
        DPLogisticRegression(),
        {"lam": [5.0, 20.0], "solver": ["newton", "lbfgs"]},
        epsilon=4.0,
        mu=4.0,
        random_state=3,
    ).fit(X, y)
    assert isinstance(search.dp_event_, RepeatAndSelectDpEvent)
    assert search.dp_event_.mean == 4.0
    assert search.epsilon_ <= 4.0
    assert search.epsilon_ == PrivacyAccountant("rdp").compose(search.dp_event_).get_epsilon(1e-5)
    assert search.run_epsilon_ < search.epsilon_  # tuning costs privacy
    assert search.best_params_["lam"] in (5.0, 20.0)
    assert search.score(X, y) > 0.7
    assert search.best_estimator_.epsilon_ <= search.run_epsilon_ * (1 + 1e-9)
    # the validation count gets exact integer noise (no floating-point leak) ...
    score_event = search._score_event()
    assert isinstance(score_event, DiscreteGaussianDpEvent) and score_event.dimension == 1
    # ... priced exactly as the continuous Gaussian it replaces (same RDP curve)
    orders = np.array([1.5, 2.0, 8.0, 64.0])
    assert np.allclose(
        RdpAccountant(orders).compose(score_event).rdp,
        RdpAccountant(orders).compose(GaussianDpEvent(search.settings_["score_noise"])).rdp,
    )


@pytest.mark.slow  # paper-scale (> 20 s here); CI runs -m slow as its own step
def test_public_scoring_costs_nothing_extra(data):
    X, y = data
    private = PrivateRandomSearch(
        DPLogisticRegression(method="dpgd", epochs=5),
        {"learning_rate": loguniform(1e-3, 1e-1)},
        epsilon=2.0,
        mu=3.0,
        random_state=1,
        run_epsilon=1.0,
    ).fit(X, y)
    public = PrivateRandomSearch(
        DPLogisticRegression(method="dpgd", epochs=5),
        {"learning_rate": loguniform(1e-3, 1e-1)},
        epsilon=2.0,
        mu=3.0,
        random_state=1,
        run_epsilon=1.0,
        scoring="public",
    ).fit(X, y, X_public=X[:200], y_public=y[:200])
    assert public.epsilon_ < private.epsilon_


def test_search_refuses_what_it_cannot_price(data):
    X, y = data
    with pytest.raises(ValueError, match="finite list"):
        PrivateRandomSearch(DPLogisticRegression(), {"lam": loguniform(1, 10)}).fit(X, y)
    with pytest.raises(ValueError, match="set by the search"):
        PrivateRandomSearch(DPLogisticRegression(), {"epsilon": [1.0, 2.0]}).fit(X, y)
    with pytest.raises(ValueError, match="not parameters"):
        PrivateRandomSearch(DPLogisticRegression(), {"alpha": [1.0]}).fit(X, y)
    with pytest.raises(ValueError, match="X_public"):
        PrivateRandomSearch(DPLogisticRegression(), {"solver": ["newton"]}, scoring="public").fit(
            X, y
        )
    with pytest.raises(ValueError, match="classifier"):
        PrivateRandomSearch(DPLinearRegression(), {"solver": ["newton"]}).fit(X, X[:, 0])
    with pytest.raises(ValueError, match="spend"):
        PrivateRandomSearch(
            DPLogisticRegression(), {"solver": ["newton"]}, epsilon=1.0, run_epsilon=1.0
        ).fit(X, y)
    with pytest.raises(ValueError, match="no per-run budget"):
        PrivateRandomSearch(DPLogisticRegression(), {"lam": [0.6]}, epsilon=0.3).fit(X, y)


def test_zero_runs_selects_nothing(data):
    """K = 0 (probability exp(-mu)) releases nothing; mu = 1 makes it likely."""
    X, y = data
    for seed in range(200):
        search = PrivateRandomSearch(
            DPLogisticRegression(),
            {"solver": ["newton"]},
            mu=1.0,
            shape=math.inf,  # Poisson: K = 0 is possible (the default geometric K is >= 1)
            epsilon=3.0,
            random_state=seed,
        )
        try:
            search.fit(X, y)
        except RuntimeError as err:
            assert str(err) == NOTHING_SELECTED and "number of runs was 0" in str(err)
            assert not hasattr(search, "best_estimator_")
            break
    else:
        pytest.fail("no seed produced K = 0")
    with pytest.raises(ValueError, match="mean number of runs"):
        PrivateRandomSearch(DPLogisticRegression(), {"solver": ["newton"]}, mu=0.5).fit(X, y)


def test_the_result_does_not_depend_on_n_jobs(data):
    X, y = data
    results = []
    for n_jobs in (1, 2):
        search = PrivateRandomSearch(
            DPLogisticRegression(method="dpsgd", epochs=2),
            {"learning_rate": loguniform(1e-3, 1e-1), "lam": [0.001, 0.01]},
            epsilon=2.0,
            mu=4.0,
            random_state=11,
            n_jobs=n_jobs,
        ).fit(X, y)
        results.append(search)
    one, two = results
    assert one.best_params_ == two.best_params_
    assert one.best_score_ == two.best_score_
    np.testing.assert_array_equal(one.best_estimator_.coef_, two.best_estimator_.coef_)
    assert one.epsilon_ == two.epsilon_ <= 2.0
    assert one.free_params_ == ["learning_rate"] and one.priced_params_ == ["lam"]
    with pytest.raises(ValueError, match="n_jobs"):
        PrivateRandomSearch(
            DPLogisticRegression(method="dpsgd"), {"learning_rate": [0.01]}, n_jobs=0
        ).fit(X, y)


def test_an_infeasible_search_names_what_binds_and_what_would_work(data):
    import re

    X, y = data
    space = {"learning_rate": loguniform(1e-3, 1e-1)}
    estimator = DPLogisticRegression(method="dpsgd", epochs=1)
    fixed = {"mu": 10.0, "shape": math.inf, "score_noise": 10.0}  # the former defaults
    with pytest.raises(ValueError, match="validation-score noise binds") as caught:
        PrivateRandomSearch(estimator, space, epsilon=0.2, random_state=0, **fixed).fit(X, y)
    message = str(caught.value)
    floor = float(re.search(r"smallest epsilon it can meet is ([0-9.e+-]+)", message).group(1))
    assert floor > 0.2
    needed = float(re.search(r"score_noise >= ([0-9.e+-]+)", message).group(1))
    fixed["score_noise"] = needed * 1.2
    search = PrivateRandomSearch(estimator, space, epsilon=0.2, random_state=0, **fixed).fit(
        X, y
    )  # the suggested setting is feasible
    assert search.epsilon_ <= 0.2
    with pytest.raises(ValueError, match="number of runs binds"):
        PrivateRandomSearch(
            estimator, space, epsilon=0.01, score_noise=1e6, mu=1e3, shape=math.inf, random_state=0
        ).fit(X, y)
