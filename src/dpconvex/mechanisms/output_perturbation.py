"""Output perturbation of the regularized minimizer.

Sensitivity from Wang's lecture notes on objective perturbation (CS291A, UCSB, 2021).
"""

from __future__ import annotations

import math

import numpy as np
from dp_accounting.dp_event import GaussianDpEvent

from .. import _validation as v
from ..data.sources import as_rows
from ..losses import ClippedLoss, require_glm
from ..optim import solve
from ..release import Release
from ._checks import gradient_bound


def output_sensitivity(lipschitz: float, lam: float, tau: float) -> float:
    """l2-sensitivity (L + 2 tau)/lam of a tau-certified regularized minimizer.

    The exact minimizer of sum_i l_i + (lam/2)||theta||^2 moves by at most L/lam
    when one example is added or removed (lam-strong convexity; Wang's CS291A
    lecture notes, Output Perturbation, correcting their squared norm); a point with
    gradient norm <= tau lies within tau/lam of it, on each of the two datasets.
    """
    return (lipschitz + 2.0 * tau) / lam


def output_perturbation(
    X,
    y,
    loss,
    *,
    lam: float,
    sigma: float,
    tau: float,
    clip: float | None,
    row_bound: float,
    rng: np.random.Generator,
    solver: str = "auto",
    max_iter: int = 1000,
    batch_size: int | None = None,
) -> Release:
    """Release theta~ + N(0, sigma^2 I), theta~ a tau-certified minimizer of the regularized loss.

    Priced by a Gaussian mechanism of sensitivity (L + 2 tau)/lam
    (``GaussianDpEvent(sigma / sensitivity)``); the loss is clipped at L = min(C, sup|f'| R).
    The certified solve succeeds on every valid input (:func:`dpconvex.optim.solve`, whose
    provable phase needs the loss's curvature bound: a loss without one is refused here,
    before the solve); if it cannot (tau below float64's rounding of the gradient), nothing
    is released (:class:`dpconvex.optim.CertificateError`, a message without numbers).
    ``X`` may be a :class:`~dpconvex.data.sources.RowSource` (then ``y=None``).
    The release's ``info`` (iterations, gradient norm, solver, passes) depends on the
    data: a diagnostic for the data owner, not covered by the guarantee.
    """
    loss = require_glm(loss)
    lam = v.positive("lam", lam)
    sigma = v.positive("sigma", sigma)
    tau = v.positive("tau", tau)
    data = as_rows(X, y, loss, row_bound)
    lipschitz = gradient_bound(loss, clip, row_bound)
    if not math.isfinite(loss.curvature):
        raise ValueError(
            f"the {loss.name} loss declares no curvature bound (sup f''), which the certified "
            "solver needs; use a loss with one"
        )
    objective = data.objective(ClippedLoss(loss, lipschitz), lam)
    result = solve(objective, tau, method=solver, max_iter=max_iter, rng=rng, batch_size=batch_size)
    theta = result.theta + rng.normal(0.0, sigma, data.d)
    sensitivity = output_sensitivity(lipschitz, lam, tau)
    info = {
        "n_iter": result.n_iter,
        "grad_norm": result.grad_norm,
        "sigma": sigma,
        "lam": lam,
        "sensitivity": sensitivity,
        "passes": getattr(objective, "passes", 0),
    }
    return Release(theta, GaussianDpEvent(sigma / sensitivity), info)
