"""Approximate minima perturbation (AMP) with gradient clipping.

Algorithm 1 of Redberg, Koskela & Wang (arXiv 2401.00583).
"""

from __future__ import annotations

import numpy as np

from .. import _validation as v
from ..accounting.events import AmpDpEvent
from ..data.sources import as_rows
from ..losses import ClippedLoss, require_glm
from ..optim import solve
from ..release import Release
from ._checks import gradient_bound


def amp(
    X,
    y,
    loss,
    *,
    lam: float,
    sigma: float,
    tau: float,
    sigma_out: float,
    clip: float,
    row_bound: float,
    rng: np.random.Generator,
    solver: str = "auto",
    max_iter: int = 1000,
    batch_size: int | None = None,
) -> Release:
    """Run Algorithm 1 (Redberg et al. §4; Thm 4.1) on rows of norm <= ``row_bound``.

    1. b ~ N(0, sigma^2 I); 2. minimize sum_i l_L(theta; z_i) + (lam/2)||theta||^2
    + b^T theta, with l_L the loss clipped at L = min(C, sup|f'| R) (C = ``clip``: the
    gradient bound the event is priced with, so that no example's gradient exceeds it
    even on a row whose norm exceeds R by the rounding the row checks allow), until the
    float64 gradient norm of the full objective is <= ``tau``; 3. release
    theta~ + N(0, sigma_out^2 I). Step 2 certifies on
    every valid input (:func:`dpconvex.optim.solve`: ``max_iter`` bounds its fast phase,
    a provable phase follows); if it cannot (tau below float64's rounding of the
    gradient), nothing is released (:class:`dpconvex.optim.CertificateError`, whose
    message carries no number). ``X`` may be a
    :class:`~dpconvex.data.sources.RowSource` (in memory or out of core; then
    ``y=None``): the mechanism is the same whatever holds the rows. Priced by
    ``AmpDpEvent(sigma, lam, beta, L, tau, sigma_out)`` with beta = sup f'' R^2
    and L = min(C, sup|f'| R). Needs a GLM loss and lam > beta (else raises).
    The release's ``info`` (iterations, gradient norm, solver, passes) depends on the
    data: a diagnostic for the data owner, not covered by the guarantee.
    """
    loss = require_glm(loss)
    sigma = v.positive("sigma", sigma)
    sigma_out = v.positive("sigma_out", sigma_out)
    tau = v.positive("tau", tau)
    data = as_rows(X, y, loss, row_bound)
    beta = loss.curvature * row_bound**2
    lam, _ = v.regularization_exceeds_smoothness(lam, beta)
    lipschitz = gradient_bound(loss, clip, row_bound)
    d = data.d
    b = rng.normal(0.0, sigma, d)
    objective = data.objective(ClippedLoss(loss, lipschitz), lam, b)
    result = solve(objective, tau, method=solver, max_iter=max_iter, rng=rng, batch_size=batch_size)
    theta = result.theta + rng.normal(0.0, sigma_out, d)
    event = AmpDpEvent(sigma, lam, beta, lipschitz, tau, sigma_out)
    info = {
        "n_iter": result.n_iter,
        "grad_norm": result.grad_norm,
        "grad_evals": result.grad_evals,
        "solver": result.method,
        "passes": getattr(objective, "passes", 0),
        "sigma": sigma,
        "lam": lam,
    }
    return Release(theta, event, info)
