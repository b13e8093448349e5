"""DP-SGD with Poisson subsampling and DP-GD (full batch) for GLM losses.

Per-example gradients of a GLM are f'(x_i^T theta) x_i, so their norms are
|f'| ||x_i|| and clipping is a per-example scalar: the whole step is two
matrix-vector products, vectorized in numpy. The update of seed 000 §2 is

    theta <- theta - eta * (sum_{i in B} clip_C(grad l_i) + N(0, (z C)^2 I)) / (q n) [+ lam theta]

normalized by the expected batch size q n (as Opacus does; the dataset size n is
treated as public, as in every DP-SGD implementation); plain or Adam steps.
"""

from __future__ import annotations

import math

import numpy as np
from dp_accounting.dp_event import DpEvent, GaussianDpEvent, SelfComposedDpEvent

from .. import _validation as v
from ..accounting.events import dpsgd_event
from ..losses import require_glm
from ._checks import check_labels, check_rows
from .release import Release
from .rows import row_norms

OPTIMIZERS = ("adam", "sgd")


def clipped_gradient_sum(xb, yb, norms_b, loss, theta: np.ndarray, clip: float) -> np.ndarray:
    """sum_i clip_C(f'(x_i^T theta; y_i) x_i), each per-example gradient scaled to norm <= C.

    For a GLM the gradient of example i is f'_i x_i with norm |f'_i| ||x_i||, so the
    clipping factor min(1, C / (|f'_i| ||x_i||)) is a scalar per row.
    """
    deriv = loss.derivative(xb @ theta, yb)
    gnorm = np.abs(deriv) * norms_b
    with np.errstate(divide="ignore", invalid="ignore"):
        factor = np.where(gnorm > clip, clip / gnorm, 1.0)
    return xb.T @ (deriv * factor)


def _run(
    X,
    y,
    loss,
    *,
    noise_multiplier: float,
    clip: float,
    sampling_rate: float | None,
    steps: int,
    learning_rate: float,
    optimizer: str,
    lam: float,
    row_bound: float,
    rng: np.random.Generator,
) -> np.ndarray:
    if optimizer not in OPTIMIZERS:
        raise ValueError(f"optimizer must be one of {OPTIMIZERS}, got {optimizer!r}")
    loss = require_glm(loss)
    check_rows(X, row_bound)
    y = check_labels(loss, y)
    v.nonnegative("lam", lam)
    learning_rate = v.positive("learning_rate", learning_rate)
    clip = v.positive("clip", clip)
    n, d = X.shape
    norms = row_norms(X)
    q = 1.0 if sampling_rate is None else sampling_rate
    scale = 1.0 / (q * n)
    noise_std = noise_multiplier * clip
    theta = np.zeros(d)
    m = np.zeros(d)
    s = np.zeros(d)
    b1, b2, eps_adam = 0.9, 0.999, 1e-8
    for t in range(1, steps + 1):
        if sampling_rate is None:
            rows = slice(None)
        else:
            rows = rng.choice(n, size=rng.binomial(n, q), replace=False)
        clipped = clipped_gradient_sum(X[rows], y[rows], norms[rows], loss, theta, clip)
        grad = (clipped + rng.normal(0.0, noise_std, d)) * scale + lam * theta
        if optimizer == "adam":
            m = b1 * m + (1 - b1) * grad
            s = b2 * s + (1 - b2) * grad**2
            step = (m / (1 - b1**t)) / (np.sqrt(s / (1 - b2**t)) + eps_adam)
        else:
            step = grad
        theta = theta - learning_rate * step
        if not np.all(np.isfinite(theta)):
            raise FloatingPointError(
                "DP-SGD diverged (non-finite iterate); lower the learning rate"
            )
    return theta


def dpsgd(
    X,
    y,
    loss,
    *,
    noise_multiplier: float,
    clip: float,
    sampling_rate: float,
    steps: int,
    learning_rate: float,
    row_bound: float,
    rng: np.random.Generator,
    optimizer: str = "adam",
    lam: float = 0.0,
) -> Release:
    """DP-SGD: ``steps`` noisy clipped steps on Poisson subsamples of rate ``sampling_rate``.

    Each step is a Poisson-subsampled Gaussian mechanism of sensitivity C =
    ``clip`` and noise z C (add/remove neighbours); priced by
    :func:`dpconvex.accounting.dpsgd_event`. Every iterate could be released;
    only the last one is.
    """
    noise_multiplier = v.positive("noise_multiplier", noise_multiplier)
    q = v.sampling_rate("sampling_rate", sampling_rate)
    steps = v.positive_int("steps", steps)
    theta = _run(
        X,
        y,
        loss,
        noise_multiplier=noise_multiplier,
        clip=clip,
        sampling_rate=q,
        steps=steps,
        learning_rate=learning_rate,
        optimizer=optimizer,
        lam=lam,
        row_bound=row_bound,
        rng=rng,
    )
    info = {"n_iter": steps, "noise_multiplier": noise_multiplier, "sampling_rate": q}
    return Release(theta, dpsgd_event(noise_multiplier, q, steps), info)


def dpgd_event(noise_multiplier: float, steps: int) -> DpEvent:
    """``steps`` full-batch Gaussian steps of sensitivity 1 (in units of the clip C)."""
    return SelfComposedDpEvent(GaussianDpEvent(noise_multiplier), steps)


def dpgd(
    X,
    y,
    loss,
    *,
    noise_multiplier: float,
    clip: float,
    steps: int,
    learning_rate: float,
    row_bound: float,
    rng: np.random.Generator,
    optimizer: str = "adam",
    lam: float = 0.0,
) -> Release:
    """DP-GD: ``steps`` full-batch noisy clipped gradient steps; each is a Gaussian mechanism.

    ``steps`` Gaussian mechanisms of sensitivity C and noise z C compose exactly
    into one of noise z / sqrt(steps).
    """
    noise_multiplier = v.positive("noise_multiplier", noise_multiplier)
    steps = v.positive_int("steps", steps)
    theta = _run(
        X,
        y,
        loss,
        noise_multiplier=noise_multiplier,
        clip=clip,
        sampling_rate=None,
        steps=steps,
        learning_rate=learning_rate,
        optimizer=optimizer,
        lam=lam,
        row_bound=row_bound,
        rng=rng,
    )
    info = {"n_iter": steps, "noise_multiplier": noise_multiplier}
    return Release(theta, dpgd_event(noise_multiplier, steps), info)


def steps_for_epochs(epochs: float, sampling_rate: float) -> int:
    """Number of steps of ``epochs`` passes at expected batch q n: ceil(epochs / q)."""
    return max(1, math.ceil(v.positive("epochs", epochs) / sampling_rate))
