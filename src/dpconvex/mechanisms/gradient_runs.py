"""Independent noisy-gradient runs of DP-SGD or DP-GD on GLM losses, many at once.

What DP-SGD (:mod:`~dpconvex.mechanisms.dpsgd`) and DP-GD
(:mod:`~dpconvex.mechanisms.dpgd`) share: the loop :func:`dpsgd_runs`, the optimizers
and their default learning rates, and the base of their plans. The update of Redberg,
Koskela & Wang (arXiv 2401.00583), §2, is

    theta <- theta - eta * (sum_{i in B} clip_C(grad l_i) + N(0, (z C)^2 I)) / (q n) [+ lam theta]

normalized by the expected batch size q n (as Opacus does; the dataset size n is
treated as public, as in every DP-SGD implementation); plain or Adam steps. The batch
sums come from :mod:`dpconvex.data.batch_gradients`; the steps run in the noisy-gradient
loop every family shares (:func:`dpconvex.optim.noisy_gradient.noisy_gradient_run`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import ClassVar

import numpy as np

from .. import _validation as v
from ..data.batch_gradients import batch_gradient_kernel
from ..data.sources import as_rows
from ..losses import require_glm
from ..optim.noisy_gradient import noisy_gradient_run, numbered_steps
from ..release import Release
from .plan import Plan, PlanInputs

OPTIMIZERS = ("adam", "sgd")
#: default learning rates by optimizer (the DP-SGD settings of the experiments of
#: Redberg, Koskela & Wang, arXiv 2401.00583, §5)
DEFAULT_LEARNING_RATE = {"adam": 0.02, "sgd": 0.5}


def dpsgd_runs(
    X,
    y,
    loss,
    *,
    noise_multiplier,
    clip: float,
    sampling_rate: float | None,
    steps: int,
    learning_rates,
    optimizer: str,
    lam: float,
    row_bound: float,
    rng: np.random.Generator,
    rows: int | None = None,
) -> np.ndarray:
    """L independent DP-SGD runs at once; returns their last iterates, shape (L, d).

    ``learning_rates`` and ``noise_multiplier`` are scalars or length-L arrays (one
    value per run). Each run draws its own Poisson batches and its own noise, so
    each is exactly the mechanism priced by :func:`dpconvex.accounting.dpsgd_event`
    with its own noise multiplier (or, with ``sampling_rate=None``, full-batch
    DP-GD, :func:`~dpconvex.mechanisms.dpgd.dpgd_event`); the runs are independent, as
    Papernot-Steinke tuning requires. Running them together only shares the Python-level
    loop and the matrix products. ``X`` may be a :class:`~dpconvex.data.sources.RowSource`
    (then ``y=None``); out-of-core sources support full batches only.

    The noisy sum of clipped gradients is divided by ``sampling_rate * rows`` (the
    expected batch) before the step; ``rows`` is the public number of rows the plan was
    calibrated for (default: the rows given). A run on a secret subsample passes the
    public expected size, so that nothing in the update depends on the subsample's size.
    """
    if optimizer not in OPTIMIZERS:
        raise ValueError(f"optimizer must be one of {OPTIMIZERS}, got {optimizer!r}")
    loss = require_glm(loss)
    data = as_rows(X, y, loss, row_bound)
    v.nonnegative("lam", lam)
    clip = v.positive("clip", clip)
    rates = np.atleast_1d(np.asarray(learning_rates, dtype=np.float64))
    noise = np.broadcast_to(np.asarray(noise_multiplier, dtype=np.float64), rates.shape)
    for rate, z in zip(rates, noise, strict=True):
        v.positive("learning_rate", rate)
        v.positive("noise_multiplier", z)
    n, d = data.n, data.d
    runs = rates.size
    q = None if sampling_rate is None else v.sampling_rate("sampling_rate", sampling_rate)
    kernel = batch_gradient_kernel(data, loss, clip, q, runs)
    rows = n if rows is None else v.positive("rows", rows)
    scale = 1.0 / ((1.0 if q is None else q) * rows)
    noise_std = (noise * clip)[:, None]
    update = _optimizer_update(optimizer, rates[:, None])

    # every step draws its rows (inside the kernel), then its noise, from ``rng``
    def noisy_step(state, t, rng):
        theta = state[0]
        grad = kernel.gradients(theta, rng)
        grad += noise_std * rng.standard_normal((runs, d))
        grad *= scale
        if lam:
            grad += lam * theta
        update(state, grad, t)
        if (t % 64 == 0 or t == steps) and not np.all(np.isfinite(theta)):
            raise FloatingPointError(
                "DP-SGD diverged (non-finite iterate); lower the learning rate"
            )
        return state

    start = (np.zeros((runs, d)), np.zeros((runs, d)), np.zeros((runs, d)))  # theta, m, s
    return noisy_gradient_run(start, numbered_steps(steps), noisy_step, None, rng).last[0]


def _optimizer_update(optimizer: str, lr: np.ndarray):
    """``update((theta, m, s), grad, t)``: step t of plain gradient descent or of Adam
    (Kingma & Ba, "Adam: a method for stochastic optimization", arXiv 1412.6980,
    Algorithm 1, bias-corrected moments m and s), in place."""
    b1, b2, eps_adam = 0.9, 0.999, 1e-8

    def adam(state, grad, t):
        theta, m, s = state
        m *= b1
        m += (1 - b1) * grad
        s *= b2
        s += (1 - b2) * grad * grad
        denom = np.sqrt(s * (1.0 / (1 - b2**t)))
        denom += eps_adam
        theta -= (lr / (1 - b1**t)) * m / denom

    def sgd(state, grad, t):
        theta = state[0]
        theta -= lr * grad

    return adam if optimizer == "adam" else sgd


class GradientPlan(Plan):
    """What DP-SGD's and DP-GD's plans share: the learning rate, the ridge lam, the run.

    A subclass sets ``params`` to the keyword arguments of its ``release`` (the method's
    release function) beyond the loss, optimizer, generator, row bound and public n.
    """

    #: the method's release: ``release(X, y, loss, **params, optimizer=..., ...)``
    release: ClassVar[Callable[..., Release]]

    # the noisy sum is divided by the public n of the plan, not by the rows given
    size_free = True

    def __init__(self, inputs: PlanInputs):
        super().__init__(inputs)
        optimizer = self.setting("optimizer")
        self.learning_rate = self.setting("learning_rate") or DEFAULT_LEARNING_RATE[optimizer]
        lam = self.setting("lam")
        self.lam = 0.0 if lam is None else float(lam)

    def run(self, X, y, rng):
        return self.release(
            X,
            y,
            self.inputs.loss,
            **self.params,
            optimizer=self.setting("optimizer"),
            rng=rng,
            row_bound=self.inputs.row_bound,
            rows=self.inputs.n,
        )
