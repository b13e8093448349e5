"""No noise floor: as epsilon grows every method approaches the non-private model (issue 14 §6).

Small problems, several seeds: the mean error must not grow with epsilon (beyond the
run's noise) and at epsilon = 100 each method must be close to its non-private target.
"""

import warnings

import numpy as np
import pytest

from dpconvex import DPLinearRegression, DPLogisticRegression

EPSILONS = (0.3, 3.0, 100.0)
SEEDS = range(4)


@pytest.fixture(scope="module")
def classification():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(3000, 4))
    X /= np.linalg.norm(X, axis=1, keepdims=True)
    y = (X @ np.array([2.0, -1.0, 0.5, 0.0]) + 0.3 * rng.normal(size=3000) > 0).astype(int)
    return X[:2000], y[:2000], X[2000:], y[2000:]


@pytest.fixture(scope="module")
def regression():
    rng = np.random.default_rng(1)
    X = rng.uniform(-1, 1, size=(16000, 3)) / np.sqrt(3)
    y = np.clip(X @ np.array([1.0, -0.5, 0.8]) + 0.05 * rng.normal(size=16000), -1, 1)
    return X[:12000], y[:12000], X[12000:], y[12000:]


def _mean_score(make, data, eps):
    X, y, Xs, ys = data
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return float(np.mean([make(eps, s).fit(X, y).score(Xs, ys) for s in SEEDS]))


@pytest.mark.parametrize("method", ["amp", "output", "dpgd"])
def test_classifier_accuracy_follows_epsilon(classification, method):
    def make(eps, seed):
        return DPLogisticRegression(epsilon=eps, method=method, random_state=seed)

    scores = [_mean_score(make, classification, eps) for eps in EPSILONS]
    X, y, Xs, ys = classification
    from sklearn.linear_model import LogisticRegression

    reference = LogisticRegression(C=1e4).fit(X, y).score(Xs, ys)
    assert scores[0] <= scores[1] + 0.01 <= scores[2] + 0.02, scores
    assert scores[2] >= reference - 0.02, (scores, reference)


@pytest.mark.parametrize("method", ["adassp", "amp", "output", "dpgd"])
def test_regressor_r2_follows_epsilon(regression, method):
    def make(eps, seed):
        return DPLinearRegression(epsilon=eps, method=method, random_state=seed)

    scores = [_mean_score(make, regression, eps) for eps in EPSILONS]
    X, y, Xs, ys = regression
    A = np.column_stack([X, np.ones(len(X))])
    theta = np.linalg.lstsq(A, y, rcond=None)[0]
    reference = 1 - np.mean((np.column_stack([Xs, np.ones(len(Xs))]) @ theta - ys) ** 2) / np.var(
        ys
    )
    assert scores[0] <= scores[1] + 0.01 <= scores[2] + 0.02, scores
    assert scores[2] >= reference - 0.05, (scores, reference)


def test_amp_default_certificate_and_output_noise_are_derived(classification):
    """tau = 1e-12 n L is reached in float64; the output step costs ~1e-4 of the budget."""
    from dpconvex.accounting import ObjectivePerturbationDpEvent, PrivacyAccountant
    from dpconvex.mechanisms.amp import default_sigma_out, default_tau

    X, y, _, _ = classification
    model = DPLogisticRegression(epsilon=1.0, random_state=0).fit(X, y)
    p = model.mechanism_params_
    lipschitz = min(p["clip"], np.sqrt(2))  # logistic |f'| <= 1 on rows of norm sqrt(2)
    assert p["tau"] == pytest.approx(default_tau(len(X), lipschitz))
    assert p["tau"] < 1e-8 and p["sigma_out"] < 1e-4
    assert p["sigma_out"] == pytest.approx(default_sigma_out(p["tau"], p["beta"], 1.0, 1e-5, 1))
    # the same objective perturbation without the output step: nearly the same epsilon
    alone = ObjectivePerturbationDpEvent(p["sigma"], p["lam"], p["beta"], lipschitz)
    eps_alone = PrivacyAccountant("pld").compose(alone).get_epsilon(1e-5)
    assert model.epsilon_ <= 1.0
    assert eps_alone <= model.epsilon_ <= eps_alone * 1.01 + 1e-6
