"""DP-GD (full-batch noisy clipped gradient descent) for GLM losses: its plan and release.

Every step sums the clipped gradients of all rows and adds Gaussian noise z C: T
Gaussian mechanisms of sensitivity C, composed exactly (:func:`dpgd_event`).
:class:`DpgdPlan` calibrates z for T steps, with T and, for least squares, the clip
derived from public quantities (:func:`default_dpgd_steps`, :func:`default_dpgd_clip`).
The rows may live in memory or out of core (one pass per step).
"""

from __future__ import annotations

import math

import numpy as np
from dp_accounting.dp_event import DpEvent, GaussianDpEvent, SelfComposedDpEvent

from .. import _validation as v
from ..accounting import gaussian_noise_multiplier
from ..data.sources import as_rows
from ..losses import require_glm
from ..release import Release
from .gradient_runs import GradientPlan, dpsgd_runs
from .plan import PlanInputs

#: DP-GD's derived step count is kept in [DPGD_MIN_STEPS, DPGD_MAX_STEPS] (compute)
DPGD_MIN_STEPS, DPGD_MAX_STEPS = 100, 1000
#: DP-GD's default clip for least squares with Adam, as a fraction of the row bound R:
#: clip(CLIP_NOISE_SCALE / rho, MIN_CLIP_FRACTION, 1) (see :func:`default_dpgd_clip`)
CLIP_NOISE_SCALE, MIN_CLIP_FRACTION = 1.0 / 64.0, 1.0 / 8.0


def default_dpgd_clip(
    inputs: PlanInputs, noise_multiplier: float, optimizer: str, clip_setting: float | None
) -> float:
    """DP-GD's clip C for least squares with Adam when no clip is given (else as given).

    C = R clip(c / rho, 1/8, 1), with rho = z sqrt(d) / n the ratio of the norm of the
    noise on the mean gradient (z C sqrt(d) / n per step) to the largest clipped mean
    gradient (C), and c = 1/64; public, from n, d and the calibrated z.

    The estimators' default C is the largest gradient the loss can have on rows of norm R,
    capped at R; for least squares (f' unbounded) that is R, a residual of 1 on a
    full-norm row, while near a fit the residuals of targets scaled to [-1, 1] and most
    row norms are far smaller, so most of the noise z C is spent on slack. Two facts make
    a smaller C nearly free when the noise dominates (rho large):

    * Adam's step is invariant to a common scale of the gradient, so once every
      per-example gradient is clipped the update no longer depends on C (the normalized
      limit of Bu, Wang, Zha & Karypis, "Automatic clipping: differentially private deep
      learning made easier and stronger", arXiv 2206.07136, Sec. 3), while the noise
      shrinks with C.
    * Clipping the squared loss's gradient at C is gradient descent on a Huber loss of
      threshold C / ||x_i|| on the residual (the clipped loss of Song, Steinke, Thakkar &
      Thakurta, arXiv 2006.06783), a robust regression whose slope is consistent for
      symmetric errors.

    With skewed errors a fixed small C leaves a Huber bias that does not vanish as epsilon
    grows; C = R once rho <= c removes it: as epsilon grows, rho -> 0 and the default is
    the row-bound clip again (no floor). Constants measured on synthetic data only
    (``benchmarks/derive_small_n_regression.py``: n in {200, 400, 1000, 3000}, d in
    {5, 15, 30}, epsilon in {0.5, 1, 4, 16}, three row families, 12 fits per cell):
    fixed fractions R/2, R/4, R/8, R/16, R/32 raised R^2 over C = R by +0.19 / +0.28 /
    +0.31 / +0.32 / +0.32 on average, saturating at R/8; with skewed errors R/8 lost
    up to 0.011 at large n epsilon (n >= 1000, d = 5, epsilon >= 16), which this rule
    does not (c = 1/64: +0.31 on average, no cell below C = R in any family, epsilon up
    to 100).
    Privacy is unchanged: C is public and the Gaussian steps' event is in units of C.
    """
    unbounded = math.isinf(inputs.loss.derivative_bound)
    if clip_setting is not None or optimizer != "adam" or not unbounded:
        return inputs.clip
    rho = noise_multiplier * math.sqrt(inputs.d) / inputs.n
    return inputs.clip * min(1.0, max(MIN_CLIP_FRACTION, CLIP_NOISE_SCALE / rho))


def default_dpgd_steps(n: int, d: int, epsilon: float, delta: float) -> int:
    """Steps T of full-batch DP-GD that balance optimization and privacy error.

    For noisy gradient descent on a convex L-Lipschitz loss with step eta, the
    excess risk after T steps is at most R^2 / (2 eta T) + eta (L^2 + d s^2) / 2,
    where s = z L / n is the noise on the mean gradient and z ~ sqrt(2 T log(1/delta))
    / epsilon is the noise multiplier of T composed Gaussian steps (Bassily, Smith &
    Thakurta 2014, §4). More steps help while the gradient term L^2 dominates the
    noise term d s^2, i.e. up to T* = n^2 epsilon^2 / (2 d log(1/delta)), which grows
    as epsilon^2: the release approaches the non-private optimum as epsilon grows.
    T is kept in [100, 1000]: the lower end because Adam's normalized steps need
    some hundreds of iterations to converge (measured: a synthetic regression with
    n = 4000, d = 5 gave R^2 0.60 / 0.86 / 0.93 at T = 60 / 300 / 1000 and epsilon
    0.1; Adult 76.9 % -> 81.6 % at epsilon 0.1 and 81.5 % -> 83.5 % at epsilon 8,
    from 60 to 1000 steps), the upper for compute (1000 full passes).
    """
    target = n * n * epsilon * epsilon / (2.0 * d * math.log(1.0 / delta))
    return int(min(DPGD_MAX_STEPS, max(DPGD_MIN_STEPS, math.ceil(target))))


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
    rows: int | None = None,
) -> Release:
    """DP-GD: ``steps`` full-batch noisy clipped gradient steps; each is a Gaussian mechanism.

    ``steps`` Gaussian mechanisms of sensitivity C and noise z C compose exactly
    into one of noise z / sqrt(steps). ``X`` may be a
    :class:`~dpconvex.data.sources.RowSource` (then ``y=None``): out of core,
    each step is one pass over the rows.
    """
    noise_multiplier = v.positive("noise_multiplier", noise_multiplier)
    steps = v.positive_int("steps", steps)
    data = as_rows(X, y, require_glm(loss), row_bound)
    theta = dpsgd_runs(
        data,
        None,
        loss,
        noise_multiplier=noise_multiplier,
        clip=clip,
        sampling_rate=None,
        steps=steps,
        learning_rates=learning_rate,
        optimizer=optimizer,
        lam=lam,
        row_bound=row_bound,
        rng=rng,
        rows=rows,
    )[0]
    info = {"n_iter": steps, "noise_multiplier": noise_multiplier, "passes": data.passes}
    return Release(theta, dpgd_event(noise_multiplier, steps), info)


class DpgdPlan(GradientPlan):
    """Noise multiplier for epochs x K full-batch Gaussian steps."""

    name = "dpgd"
    release = staticmethod(dpgd)
    dask = True

    def __init__(self, inputs: PlanInputs):
        super().__init__(inputs)
        epochs = self.setting("epochs")
        steps = (
            int(epochs)
            if epochs is not None
            else default_dpgd_steps(inputs.n, inputs.d, inputs.epsilon, inputs.delta)
        )
        z = gaussian_noise_multiplier(
            inputs.epsilon, inputs.delta, steps * inputs.k, accounting=inputs.accounting
        )
        clip = default_dpgd_clip(
            inputs, z, self.setting("optimizer"), inputs.settings.get("clip", inputs.clip)
        )
        self.params = {
            "noise_multiplier": z,
            "steps": steps,
            "clip": clip,
            "learning_rate": self.learning_rate,
            "lam": self.lam,
        }
        self.event = dpgd_event(z, steps)
