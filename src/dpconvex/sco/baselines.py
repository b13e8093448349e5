"""Plain DP-SGD with per-sample clipping: the baseline of the heavy-tailed benchmarks.

Euclidean geometry, no truncation: per-sample gradients are clipped to l2 norm <= C,
batches are disjoint blocks of a fresh random permutation each epoch, the batch mean
gets N(0, sigma^2 I) and the step is projected onto an l2 ball. Privacy under the
paper's replace-one neighbours: in every epoch each sample lies in one batch, whose
clipped mean has l2-sensitivity 2C/b (b the smallest batch), so an epoch is one
Gaussian mechanism (parallel composition) and E epochs are E adaptive compositions,
priced exactly by the accountant (``SelfComposedDpEvent(GaussianDpEvent(z), E)``).
"""

from __future__ import annotations

import math

import numpy as np
from dp_accounting.dp_event import GaussianDpEvent, SelfComposedDpEvent

from .. import _validation as v
from .._random import make_rng
from ..accounting import gaussian_sigma
from ..data.clipping import clip_factors
from ..optim.noisy_gradient import noisy_gradient_run, shuffled_batches
from ..release import Release
from .glm import GLMData
from .privacy import pld_epsilon


def clipped_dpsgd(
    X,
    y,
    loss,
    *,
    epsilon: float,
    delta: float,
    clip: float,
    radius: float,
    batch_size: int,
    epochs: int = 1,
    step_size: float = 0.1,
    random_state=None,
) -> Release:
    """DP-SGD with l2 clipping at ``clip``, projected onto {||w||_2 <= radius}.

    The noise multiplier z = sqrt(E) * (analytic-Gaussian sigma for (epsilon, delta) at
    sensitivity 1): E compositions of a Gaussian with multiplier z are exactly a
    Gaussian with multiplier z / sqrt(E). Returns the average of all iterates.
    ``row_bound`` is not needed: clipping bounds the sensitivity.
    """
    epsilon = v.positive("epsilon", epsilon)
    delta = v.probability_open("delta", delta)
    clip = v.positive("clip", clip)
    radius = v.positive("radius", radius)
    epochs = v.positive_int("epochs", epochs)
    data = GLMData(X, y, loss, row_bound=None)
    n, d = data.n, data.d
    batch_size = min(v.positive_int("batch_size", batch_size), n)
    T = max(1, n // batch_size)
    z = math.sqrt(epochs) * gaussian_sigma(epsilon, delta, 1.0)
    rng = make_rng(random_state)
    b_min = n // T
    sigma = z * 2.0 * clip / b_min

    def noisy_step(w, rows, rng):
        g = data.sample_gradients(w, rows)
        norms = np.linalg.norm(g, axis=1)
        g *= clip_factors(np.maximum(norms, 1e-300), clip, nan_factor=np.nan)[:, None]
        step = g.sum(axis=0) / rows.size + rng.normal(0.0, sigma, d)
        w = w - step_size * step
        nw = np.linalg.norm(w)
        if nw > radius:
            w *= radius / nw
        return w

    run = noisy_gradient_run(
        np.zeros(d),
        shuffled_batches(n, T, epochs),
        noisy_step,
        lambda steps: SelfComposedDpEvent(GaussianDpEvent(z), epochs),  # an epoch: one Gaussian
        rng,
        average=True,
    )
    info = {
        "algorithm": "DP-SGD with clipping (baseline)",
        "epsilon": pld_epsilon(run.event, delta),
        "delta": delta,
        "noise_multiplier": z,
        "sigma": sigma,
        "steps": run.steps,
    }
    return Release(run.mean, run.event, info)
