"""Data-independent noise schedules o(k, j) of DP-MBCD (Chen & Liu, eq. 6 and App. D.2).

Source: Chen & Liu, arXiv 2407.08233.

Each returns a (epochs, n_batches) table fixed before the run; the per-coordinate
noise variance of step (k, j) is 2 * eta * o(k, j).
"""

from __future__ import annotations

import numpy as np

from .. import _validation as v


def _shape(epochs: int, n_batches: int) -> tuple[int, int]:
    return v.positive_int("epochs", epochs), v.positive_int("n_batches", n_batches)


def constant_noise(epochs: int, n_batches: int, level: float) -> np.ndarray:
    """o(k, j) = level (the paper's constant schedules, e.g. 0.005 for Madelon)."""
    k, m = _shape(epochs, n_batches)
    return np.full((k, m), v.positive("level", level))


def linear_decrease_noise(epochs: int, n_batches: int, final: float, step: float) -> np.ndarray:
    """o(k) = final + step * (K - 1 - k): the "D" schedule of Chen & Liu, App. D.2.

    The paper's decrease of 0.00025 per epoch down to o(K) = 0.002 is
    ``linear_decrease_noise(K, m, 0.002, 0.00025)``.
    """
    k, m = _shape(epochs, n_batches)
    final = v.positive("final", final)
    step = v.nonnegative("step", step)
    per_epoch = final + step * (k - 1 - np.arange(k))
    return np.repeat(per_epoch[:, None], m, axis=1)


def step_noise(
    epochs: int, n_batches: int, before: float, after: float, change_epoch: int
) -> np.ndarray:
    """o = before for epochs < change_epoch, after from then on (Figure 1's "phase" change)."""
    k, m = _shape(epochs, n_batches)
    before = v.positive("before", before)
    after = v.positive("after", after)
    if int(change_epoch) != change_epoch or change_epoch < 0:
        raise ValueError(f"change_epoch must be an integer >= 0, got {change_epoch}")
    per_epoch = np.where(np.arange(k) < change_epoch, before, after)
    return np.repeat(per_epoch[:, None], m, axis=1)
