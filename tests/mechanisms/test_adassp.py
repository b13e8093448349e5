"""AdaSSP (Wang 2018, Algorithm 2): sensitivities, pricing, and no accuracy floor."""

import numpy as np
import pytest
from dp_accounting.dp_event import GaussianDpEvent

from dpconvex.accounting import PrivacyAccountant, gaussian_noise_multiplier
from dpconvex.mechanisms.adassp import adassp, adassp_event


def _data(n=4000, d=5, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d)) / np.sqrt(d)
    X /= np.maximum(1.0, np.linalg.norm(X, axis=1))[:, None]
    y = np.clip(X @ rng.normal(size=d) + 0.05 * rng.normal(size=n), -1, 1)
    return X, y


def test_sensitivities_stated_in_the_docstring_hold():
    """Adding a row x moves lambda_min by <= ||x||^2 and the upper triangle of the Gram
    matrix by <= ||x||^2 in l2 (an independent check on random data and rows)."""
    rng = np.random.default_rng(1)
    for _ in range(200):
        d = int(rng.integers(1, 8))
        X = rng.normal(size=(int(rng.integers(1, 20)), d)) * rng.uniform(0.1, 3)
        x = rng.normal(size=d) * rng.uniform(0.01, 3)
        before, after = X.T @ X, X.T @ X + np.outer(x, x)
        shift = np.linalg.eigvalsh(after)[0] - np.linalg.eigvalsh(before)[0]
        assert -1e-9 <= shift <= x @ x * (1 + 1e-9)
        upper = np.triu(after - before)
        assert np.linalg.norm(upper) <= x @ x * (1 + 1e-12)


def test_event_prices_three_gaussian_releases():
    z = gaussian_noise_multiplier(1.0, 1e-5, 3)
    eps = PrivacyAccountant("pld").compose(adassp_event(z)).get_epsilon(1e-5)
    assert eps <= 1.0 and eps > 0.99
    # three Gaussians of multiplier z are one Gaussian of multiplier z / sqrt(3)
    one = PrivacyAccountant("pld").compose(GaussianDpEvent(z / np.sqrt(3)))
    assert one.get_epsilon(1e-5) == pytest.approx(eps, rel=2e-3)


@pytest.mark.slow  # paper-scale (> 20 s here); CI runs -m slow as its own step
def test_accuracy_rises_with_epsilon_to_least_squares():
    X, y = _data()
    ols = np.linalg.lstsq(X, y, rcond=None)[0]

    def error(eps, seed):
        z = gaussian_noise_multiplier(eps, 1e-5, 3)
        rel = adassp(X, y, noise_multiplier=z, row_bound=1.0, y_bound=1.0, delta=1e-5,
                     rng=np.random.default_rng(seed))  # fmt: skip
        return np.linalg.norm(rel.theta - ols)

    errors = [np.mean([error(eps, s) for s in range(8)]) for eps in (0.3, 3.0, 100.0)]
    assert errors[0] > errors[1] > errors[2]
    assert errors[2] < 0.02 * np.linalg.norm(ols)


def test_refuses_rows_or_targets_outside_the_declared_bounds():
    X, y = _data(n=50)
    kw = {"noise_multiplier": 1.0, "delta": 1e-5, "rng": np.random.default_rng(0)}
    with pytest.raises(ValueError, match="declared bound"):
        adassp(2 * X + 1, y, row_bound=1.0, y_bound=1.0, **kw)
    with pytest.raises(ValueError, match="targets must be within"):
        adassp(X, 3 * y + 2, row_bound=1.0, y_bound=1.0, **kw)
    with pytest.raises(ValueError, match="one-dimensional"):
        adassp(X, y[:-1], row_bound=1.0, y_bound=1.0, **kw)
