"""Bad inputs, schedules, point-mass start, and per-example sensitivity of the case studies."""

import copy

import numpy as np
import pytest

from dpconvex.bcd import (
    BlockSpec,
    HiddenStateDpEvent,
    HiddenStateUnsoundError,
    LeastSquaresProblem,
    LiftedMlpProblem,
    MbcdProblem,
    NmfProblem,
    Prox,
    batch_count,
    calibrate_noise_scale,
    constant_noise,
    dp_mbcd,
    epsilon,
    linear_decrease_noise,
    secret_batches,
    sgd_mlp,
    sgd_nmf,
    step_noise,
)
from dpconvex.bcd.engine import _block_step


def _event(tau):
    return HiddenStateDpEvent(0.05, 1.0, 100, np.full((3, 5), tau), 0.98)


# -- calibration and pricing ----------------------------------------------------------------
@pytest.mark.parametrize(
    "eps, delta",
    [(0.0, 1e-5), (-1.0, 1e-5), (float("nan"), 1e-5), (float("inf"), 1e-5), (1.0, 0.0), (1.0, 1.0)],
)
def test_calibration_refuses_bad_targets(eps, delta):
    with pytest.raises(ValueError):
        calibrate_noise_scale(_event, eps, delta)


def test_calibration_is_safe_side_for_several_targets():
    for target in (0.1, 0.7, 3.0):
        tau = calibrate_noise_scale(_event, target, 1e-5)
        assert epsilon(_event(tau), 1e-5) <= target
        assert epsilon(_event(tau * (1 - 1e-4)), 1e-5) > target * (1 - 1e-3)


# -- schedules and batches --------------------------------------------------------------------
def test_schedules_shapes_values_and_validation():
    np.testing.assert_array_equal(constant_noise(2, 3, 0.1), np.full((2, 3), 0.1))
    d = linear_decrease_noise(4, 2, 0.002, 0.00025)  # the paper's "D": ends at 0.002
    np.testing.assert_allclose(d[:, 0], [0.00275, 0.0025, 0.00225, 0.002])
    assert np.all(d[:, 0] == d[:, 1])
    s = step_noise(5, 2, 0.01, 0.05, 3)
    np.testing.assert_array_equal(s[:, 0], [0.01, 0.01, 0.01, 0.05, 0.05])
    for bad in (
        lambda: constant_noise(0, 3, 0.1),
        lambda: constant_noise(2, 0, 0.1),
        lambda: constant_noise(2, 3, 0.0),
        lambda: constant_noise(2, 3, float("nan")),
        lambda: linear_decrease_noise(2, 3, 0.002, -1.0),
        lambda: step_noise(2, 3, 0.01, 0.05, -1),
        lambda: step_noise(2, 3, 0.01, 0.05, 1.5),
    ):
        with pytest.raises(ValueError):
            bad()


def test_batches_validation():
    rng = np.random.default_rng(0)
    with pytest.raises(ValueError):
        batch_count(-1, 10)
    with pytest.raises(ValueError):
        batch_count(10, 0)
    with pytest.raises(ValueError):
        secret_batches(rng, 10, 0)
    assert batch_count(0, 5) == 1 and batch_count(9, 5) == 2 and batch_count(10, 5) == 3
    # the same generator state gives the same secret batches (reproducible), others differ
    a = secret_batches(np.random.default_rng(3), 40, 7)
    b = secret_batches(np.random.default_rng(3), 40, 7)
    c = secret_batches(np.random.default_rng(4), 40, 7)
    assert all(np.array_equal(x, y) for x, y in zip(a, b, strict=True))
    assert not all(np.array_equal(x, y) for x, y in zip(a, c, strict=True))


# -- data checks of the case studies -----------------------------------------------------------
def test_case_study_data_is_checked():
    M = np.random.default_rng(0).random((20, 6))
    with pytest.raises(ValueError, match="non-negative"):
        NmfProblem(-M, 2)
    with pytest.raises(ValueError, match="NaN"):
        NmfProblem(np.where(M > 0.5, np.nan, M), 2)
    with pytest.raises(ValueError):
        NmfProblem(M, 0)
    with pytest.raises(ValueError, match="2-dimensional"):
        NmfProblem(M[0], 2)
    X = np.random.default_rng(1).normal(size=(10, 3))
    with pytest.raises(ValueError, match="shape"):
        LiftedMlpProblem(X, np.zeros(9, dtype=int))
    with pytest.raises(ValueError, match=">= 0"):
        LiftedMlpProblem(X, -np.ones(10, dtype=int))
    with pytest.raises(ValueError, match="integer"):
        LiftedMlpProblem(X, np.full(10, 0.5))
    with pytest.raises(ValueError, match="infinity"):
        LiftedMlpProblem(np.where(X > 1, np.inf, X), np.zeros(10, dtype=int))
    with pytest.raises(ValueError):
        sgd_nmf(M, 2, batch_size=5, epochs=1, learning_rate=0.1, noise_multiplier=1.0)  # no clip
    with pytest.raises(ValueError):
        sgd_mlp(X, np.zeros(10, dtype=int), batch_size=5, epochs=1, learning_rate=-0.1)
    with pytest.raises(ValueError):
        BlockSpec("W", clip=0.0)
    with pytest.raises(ValueError):
        BlockSpec("W", clip=1.0, ridge=-1.0)


# -- point-mass start -------------------------------------------------------------------------
class RandomStart(MbcdProblem):
    """One strongly convex scalar block whose initialization is random."""

    has_hidden_blocks = False

    def __init__(self, n=20):
        self.n_examples = n
        self.y = np.linspace(-1, 1, n)
        self.blocks = (BlockSpec("t", clip=1.0, smoothness=0.0, prox=Prox(ridge=1.0)),)

    def init(self, rng):
        return {"t": rng.normal(size=(1, 1))}

    def gradient_factors(self, name, params, batch):
        return -self.y[batch][:, None], np.ones((batch.size, 1))


def test_random_start_is_refused_by_the_hidden_state_accountant():
    run = dict(batch_size=5, epochs=2, step_size=0.1, noise=0.01, random_state=0)
    with pytest.raises(HiddenStateUnsoundError, match="deterministic start"):
        dp_mbcd(RandomStart(), accountant="hidden-state", **run)
    rel = dp_mbcd(RandomStart(), accountant="composition", **run)  # composition is fine
    assert rel.info["hidden_state_event"] is not None  # data-free events are still built
    problem = LeastSquaresProblem(np.eye(3), np.ones(3), prox=Prox(ridge=1.0))
    rel = dp_mbcd(problem, accountant="hidden-state", **run)  # zero start: accepted
    assert isinstance(rel.event, HiddenStateDpEvent)


# -- Assumption 4.4 in the case studies: one added example moves a block step by <= eta C / b --
def _max_shift(problem, params, batch, extras, eta, b):
    shifts = []
    for blk in problem.blocks:
        for extra in extras:
            outs = []
            for idx in (batch, np.append(batch, extra)):
                run = copy.deepcopy(problem)  # both neighbours start from the same hidden state
                run.update_hidden(params, idx)
                outs.append(
                    _block_step(
                        run, blk, params, idx, eta, b, np.random.default_rng(1), 0.0, blk.clip
                    )
                )
            shifts.append(np.linalg.norm(outs[0] - outs[1]) / (eta * blk.sensitivity / b))
    return max(shifts)


def test_case_study_steps_respect_the_per_example_sensitivity():
    rng = np.random.default_rng(2)
    M = 5 * rng.random((30, 8))  # large rows: most per-example gradients are clipped
    nmf = NmfProblem(M, 3, clip=0.5, row_bound=3.0)
    params = nmf.init(np.random.default_rng(0))
    ratio = _max_shift(nmf, params, np.arange(10), range(10, 30), eta=0.3, b=12)
    assert 0.5 < ratio <= 1 + 1e-9  # tight (clipping is active) but never above the bound
    X = rng.normal(size=(30, 5))
    y = rng.integers(0, 3, size=30)
    for implicit in (False, True):
        mlp = LiftedMlpProblem(X, y, hidden=(6,), clip=0.05, implicit=implicit)
        params = mlp.init(np.random.default_rng(0))
        ratio = _max_shift(mlp, params, np.arange(10), range(10, 30), eta=0.5, b=12)
        assert 0.5 < ratio <= 1 + 1e-9
