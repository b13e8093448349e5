"""AMP, output perturbation and DP-GD on dask arrays; the same events as in memory."""

from __future__ import annotations

import numpy as np
from dp_accounting.dp_event import GaussianDpEvent

from .. import _validation as v
from ..accounting.events import AmpDpEvent
from ..losses import ClippedLoss, require_glm
from ..mechanisms._checks import gradient_bound
from ..mechanisms.dpsgd import OPTIMIZERS, dpgd_event
from ..mechanisms.output_perturbation import output_sensitivity
from ..mechanisms.release import Release
from ..mechanisms.rows import design_bound
from ..optim import solve
from .objective import DaskGLMObjective


def _rows(row_norm, row_bound, fit_intercept, intercept_scaling):
    return {
        "row_norm": row_norm,
        "row_bound": row_bound,
        "fit_intercept": fit_intercept,
        "intercept_scaling": intercept_scaling,
    }


def amp_dask(
    X,
    y,
    loss,
    *,
    lam,
    sigma,
    tau,
    sigma_out,
    clip,
    row_norm,
    row_bound,
    fit_intercept,
    intercept_scaling,
    rng,
    solver="auto",
    max_iter=1000,
) -> Release:
    """Algorithm 1 of seed 000 (AMP) on raw dask rows; see :func:`dpconvex.mechanisms.amp`.

    Rows get the declared policy per chunk, so the bound R of the augmented rows is
    known without looking at the data; beta = sup f'' R^2, L = min(C, sup|f'| R).
    """
    loss = require_glm(loss)
    sigma, sigma_out, tau = (
        v.positive(k, x) for k, x in (("sigma", sigma), ("sigma_out", sigma_out), ("tau", tau))
    )
    bound = design_bound(row_norm, row_bound, fit_intercept, intercept_scaling)
    beta = loss.curvature * bound**2
    lam, _ = v.regularization_exceeds_smoothness(lam, beta)
    lipschitz = gradient_bound(loss, clip, bound)
    obj = DaskGLMObjective(
        X,
        y,
        ClippedLoss(loss, clip),
        lam,
        None,
        **_rows(row_norm, row_bound, fit_intercept, intercept_scaling),
    )
    obj.b = rng.normal(0.0, sigma, obj.d)
    result = solve(obj, tau, method=solver, max_iter=max_iter, rng=rng)
    theta = result.theta + rng.normal(0.0, sigma_out, obj.d)
    info = {
        "n_iter": result.n_iter,
        "grad_norm": result.grad_norm,
        "passes": obj.passes,
        "solver": "lbfgs" if solver == "auto" else solver,
    }
    return Release(theta, AmpDpEvent(sigma, lam, beta, lipschitz, tau, sigma_out), info)


def output_perturbation_dask(
    X,
    y,
    loss,
    *,
    lam,
    sigma,
    tau,
    clip,
    row_norm,
    row_bound,
    fit_intercept,
    intercept_scaling,
    rng,
    solver="auto",
    max_iter=1000,
) -> Release:
    """Output perturbation (seed 001) on dask rows; sensitivity (L + 2 tau)/lam as in memory."""
    loss = require_glm(loss)
    lam, sigma, tau = (v.positive(k, x) for k, x in (("lam", lam), ("sigma", sigma), ("tau", tau)))
    bound = design_bound(row_norm, row_bound, fit_intercept, intercept_scaling)
    lipschitz = gradient_bound(loss, clip, bound)
    obj = DaskGLMObjective(
        X,
        y,
        ClippedLoss(loss, lipschitz),
        lam,
        **_rows(row_norm, row_bound, fit_intercept, intercept_scaling),
    )
    result = solve(obj, tau, method=solver, max_iter=max_iter, rng=rng)
    theta = result.theta + rng.normal(0.0, sigma, obj.d)
    sensitivity = output_sensitivity(lipschitz, lam, tau)
    info = {"n_iter": result.n_iter, "grad_norm": result.grad_norm, "passes": obj.passes}
    return Release(theta, GaussianDpEvent(sigma / sensitivity), info)


def dpgd_dask(
    X,
    y,
    loss,
    *,
    noise_multiplier,
    clip,
    steps,
    learning_rate,
    optimizer,
    lam,
    row_norm,
    row_bound,
    fit_intercept,
    intercept_scaling,
    rng,
) -> Release:
    """Full-batch DP-GD on dask rows: one pass per step; the event of :func:`dpgd`."""
    loss = require_glm(loss)
    if optimizer not in OPTIMIZERS:
        raise ValueError(f"optimizer must be one of {OPTIMIZERS}, got {optimizer!r}")
    z = v.positive("noise_multiplier", noise_multiplier)
    steps = v.positive_int("steps", steps)
    lr = v.positive("learning_rate", learning_rate)
    clip = v.positive("clip", clip)
    obj = DaskGLMObjective(
        X, y, loss, 0.0, **_rows(row_norm, row_bound, fit_intercept, intercept_scaling)
    )
    theta, m, s = np.zeros(obj.d), np.zeros(obj.d), np.zeros(obj.d)
    scale = 1.0 / obj.n
    for t in range(1, steps + 1):
        grad = (obj.clipped_gradient_sum(theta, clip) + rng.normal(0.0, z * clip, obj.d)) * scale
        grad = grad + lam * theta
        if optimizer == "adam":
            m = 0.9 * m + 0.1 * grad
            s = 0.999 * s + 0.001 * grad**2
            theta = theta - lr * (m / (1 - 0.9**t)) / (np.sqrt(s / (1 - 0.999**t)) + 1e-8)
        else:
            theta = theta - lr * grad
    if not np.all(np.isfinite(theta)):
        raise FloatingPointError("DP-GD diverged (non-finite iterate); lower the learning rate")
    return Release(theta, dpgd_event(z, steps), {"n_iter": steps, "passes": obj.passes})
