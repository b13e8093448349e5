"""The shared noisy-gradient loop: draws in the sampler's then the step's order, events
built from the steps taken, the mean of the iterates."""

from __future__ import annotations

import numpy as np
import pytest

from dpconvex.optim.noisy_gradient import full_batches, noisy_gradient_run, shuffled_batches


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
