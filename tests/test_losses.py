"""GLM losses and their clipped versions (Redberg, Koskela & Wang, arXiv 2401.00583, F.2/F.3)."""

import numpy as np
import pytest

from dpconvex.losses import (
    ClippedLoss,
    GLMLoss,
    HuberLoss,
    LogisticLoss,
    SmoothedHingeLoss,
    SquaredLoss,
    require_glm,
)

BASES = [LogisticLoss(), SquaredLoss(), HuberLoss(0.7), SmoothedHingeLoss()]


def _labels(loss, rng, n):
    return rng.choice([-1.0, 1.0], n) if loss.binary else rng.uniform(-1, 1, n)


@pytest.mark.parametrize("base", BASES, ids=lambda b: b.name)
@pytest.mark.parametrize("clip", [0.2, 0.8, 3.0])
def test_clipped_loss_is_c1_convex_and_gradient_bounded(base, clip):
    rng = np.random.default_rng(0)
    n = 400
    loss = ClippedLoss(base, clip)
    y = _labels(base, rng, n)
    norms = rng.uniform(0.1, 2.0, n)
    kappa = loss.kappa(norms)
    u = np.sort(rng.uniform(-8, 8, n))
    h = 1e-6
    numeric = (loss.value(u + h, y, kappa) - loss.value(u - h, y, kappa)) / (2 * h)
    deriv = loss.derivative(u, y, kappa)
    np.testing.assert_allclose(numeric, deriv, atol=1e-6)  # C^1 and consistent values
    assert np.all(np.abs(deriv) * norms <= clip * (1 + 1e-12))  # ||grad l_C|| <= C
    second = loss.second_derivative(u, y, kappa)
    assert np.all(second >= 0) and np.all(second <= base.curvature)  # convex, same beta
    # f_C' is non-decreasing in u for each fixed example (convexity)
    for i in range(0, n, 50):
        grid = np.linspace(-10, 10, 401)
        d = loss.derivative(grid, np.full_like(grid, y[i]), np.full_like(grid, kappa[i]))
        assert np.all(np.diff(d) >= -1e-12)


@pytest.mark.parametrize(
    "base", [LogisticLoss(), SmoothedHingeLoss(), HuberLoss(0.5)], ids=lambda b: b.name
)
def test_clipping_is_the_identity_when_c_covers_the_gradient(base):
    rng = np.random.default_rng(1)
    y = _labels(base, rng, 300)
    u = rng.uniform(-6, 6, 300)
    norms = rng.uniform(0.1, 1.0, 300)
    loss = ClippedLoss(base, base.derivative_bound * 1.0)  # C >= sup|f'| ||x||
    kappa = loss.kappa(norms)
    np.testing.assert_allclose(loss.value(u, y, kappa), base.value(u, y), rtol=1e-12)
    np.testing.assert_allclose(loss.derivative(u, y, kappa), base.derivative(u, y), rtol=1e-12)


def test_clipped_squared_loss_is_huber():
    rng = np.random.default_rng(2)
    y = rng.uniform(-1, 1, 500)
    u = rng.uniform(-5, 5, 500)
    for kappa in [0.1, 0.5, 2.0]:
        clipped = ClippedLoss(SquaredLoss(), kappa)  # rows of norm 1: kappa = C
        huber = HuberLoss(kappa)
        k = np.full(500, kappa)
        np.testing.assert_allclose(clipped.value(u, y, k), huber.value(u, y), rtol=1e-12)
        np.testing.assert_allclose(clipped.derivative(u, y, k), huber.derivative(u, y))


def test_logistic_breakpoint_matches_closed_form():
    # for kappa < 1 the margin breakpoint is m0 = log((1 - kappa)/kappa), and
    # f_C = -log(1 - kappa) + kappa (m0 - m) below it
    loss = ClippedLoss(LogisticLoss(), 0.3)
    kappa = np.array([0.3])
    m0 = np.log(0.7 / 0.3)
    for y in (1.0, -1.0):
        u = np.array([y * (m0 - 2.0)])
        expected = -np.log(1 - 0.3) + 0.3 * 2.0
        assert loss.value(u, np.array([y]), kappa)[0] == pytest.approx(expected, rel=1e-12)


def test_logistic_values_are_stable_for_large_margins():
    loss = LogisticLoss()
    u = np.array([-800.0, 800.0])
    y = np.array([1.0, 1.0])
    np.testing.assert_allclose(loss.value(u, y), [800.0, 0.0], atol=1e-12)


def test_only_glm_losses_are_accepted():
    assert isinstance(require_glm("logistic"), LogisticLoss)
    with pytest.raises(ValueError, match="unknown loss"):
        require_glm("hinge")
    with pytest.raises(TypeError, match="GLM"):
        require_glm(lambda theta, x, y: float(theta @ x))
    with pytest.raises(ValueError, match="clip"):
        ClippedLoss(LogisticLoss(), 0.0)
    with pytest.raises(ValueError, match="threshold"):
        HuberLoss(-1.0)
    assert issubclass(HuberLoss, GLMLoss)
