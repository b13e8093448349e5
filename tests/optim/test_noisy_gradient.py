"""The shared noisy-gradient loop: draws in the sampler's then the step's order, events
built from the steps taken, the mean of the iterates."""

from __future__ import annotations

import numpy as np
import pytest

from dpconvex.data.batch_gradients import batch_gradient_kernel
from dpconvex.data.sources import as_rows
from dpconvex.losses import LogisticLoss
from dpconvex.mechanisms import dpsgd_runs
from dpconvex.optim.noisy_gradient import (
    full_batches,
    noisy_gradient_run,
    numbered_steps,
    shuffled_batches,
)


def _step(theta, rows, rng):
    return theta - 0.1 * (0.0 if rows is None else float(np.sum(rows))) + rng.normal(size=2)


def test_shuffled_batches_interleave_permutations_and_noise_like_a_hand_written_loop():
    n, batches, epochs = 11, 3, 2
    run = noisy_gradient_run(
        np.zeros(2), shuffled_batches(n, batches, epochs), _step, lambda s: ("event", s),
        np.random.default_rng(4), average=True,
    )  # fmt: skip
    rng = np.random.default_rng(4)
    theta, states = np.zeros(2), []
    for _ in range(epochs):
        for rows in np.array_split(rng.permutation(n), batches):
            theta = _step(theta, rows, rng)
            states.append(theta)
    assert run.steps == batches * epochs and run.event == ("event", 6)
    np.testing.assert_array_equal(run.last, theta)
    np.testing.assert_allclose(run.mean, np.mean(states, axis=0), rtol=1e-15)


def test_full_batches_draw_nothing_but_the_noise():
    run = noisy_gradient_run(np.ones(2), full_batches(4), _step, None, np.random.default_rng(1))
    expected = np.ones(2) + np.random.default_rng(1).normal(size=(4, 2)).sum(axis=0)
    np.testing.assert_allclose(run.last, expected, rtol=1e-14)
    assert run.event is None and run.mean is None and run.steps == 4


def test_a_failing_step_stops_the_run():
    def diverge(theta, rows, rng):
        raise FloatingPointError("diverged")

    with pytest.raises(FloatingPointError, match="diverged"):
        noisy_gradient_run(np.zeros(1), full_batches(2), diverge, None, np.random.default_rng())


def test_numbered_steps_give_the_step_its_number_and_draw_nothing():
    seen = []

    def step(theta, t, rng):
        seen.append(t)
        return theta + rng.normal(size=2)

    run = noisy_gradient_run(np.zeros(2), numbered_steps(3), step, None, np.random.default_rng(2))
    assert seen == [1, 2, 3] and run.steps == 3
    np.testing.assert_array_equal(run.last, np.random.default_rng(2).normal(size=(3, 2)).sum(0))


def test_the_linear_core_runs_dp_sgd_in_the_shared_loop(monkeypatch):
    """dpsgd_runs goes through noisy_gradient_run and agrees with a hand-written Adam loop
    that draws each step's Poisson batches (in the kernel), then its noise."""
    import dpconvex.mechanisms.gradient_runs as gradient_runs

    calls = []
    real = gradient_runs.noisy_gradient_run
    monkeypatch.setattr(
        gradient_runs, "noisy_gradient_run", lambda *a, **k: calls.append(1) or real(*a, **k)
    )
    rng = np.random.default_rng(0)
    X = rng.normal(size=(200, 4)) / 2.0
    y = np.where(rng.random(200) < 0.5, 1.0, -1.0)
    lr, z = np.array([[0.05], [0.02]]), np.array([[1.0], [2.0]])  # two runs
    clip, q, steps, lam = 0.6, 0.2, 9, 0.01
    got = dpsgd_runs(
        X, y, "logistic", noise_multiplier=z.ravel(), clip=clip, sampling_rate=q, steps=steps,
        learning_rates=lr.ravel(), optimizer="adam", lam=lam, row_bound=10.0,
        rng=np.random.default_rng(5),
    )  # fmt: skip
    assert calls == [1]
    kernel = batch_gradient_kernel(as_rows(X, y, LogisticLoss(), 10.0), LogisticLoss(), clip, q, 2)
    rng = np.random.default_rng(5)
    theta, m, s = np.zeros((2, 4)), np.zeros((2, 4)), np.zeros((2, 4))
    for t in range(1, steps + 1):
        grad = kernel.gradients(theta, rng)
        grad += z * clip * rng.standard_normal((2, 4))
        grad *= 1.0 / (q * 200)
        grad += lam * theta
        m = 0.9 * m + (1 - 0.9) * grad
        s = 0.999 * s + (1 - 0.999) * grad * grad
        theta = theta - (lr / (1 - 0.9**t)) * m / (np.sqrt(s * (1.0 / (1 - 0.999**t))) + 1e-8)
    np.testing.assert_allclose(got, theta, rtol=1e-13)
