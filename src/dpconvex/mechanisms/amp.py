"""Approximate minima perturbation (AMP) with gradient clipping: its plan and its release.

Algorithm 1 of Redberg, Koskela & Wang (arXiv 2401.00583). :class:`AmpPlan` turns public
quantities into (sigma, lam, tau, sigma_out) and the event; :func:`amp` runs the release.
"""

from __future__ import annotations

import numpy as np

from .. import _validation as v
from ..accounting import AMP_DEFAULTS, amp_parameters, gaussian_sigma
from ..accounting.events import AmpDpEvent
from ..data.sources import as_rows
from ..losses import ClippedLoss, require_glm
from ..optim import solve
from ..release import Release
from ._checks import gradient_bound
from .plan import Plan, PlanInputs

#: the paper's classifier settings (Redberg et al. §5), for reproducing its experiments:
#: the calibrator's defaults, defined once there
PAPER_SETTINGS = {key: AMP_DEFAULTS[key] for key in ("tau", "sigma_out", "noise_factor")}
#: default certificate per row and unit gradient bound: tau = TAU_PER_ROW * n * L
TAU_PER_ROW = 1e-12
#: the output step's noise multiplier, in units of the whole budget's Gaussian scale
OUTPUT_NOISE_RATIO = 100.0


def default_tau(n: int, lipschitz: float) -> float:
    """The certificate tau = 1e-12 n L.

    The gradient of the n-row objective is a sum of n terms of norm <= L, so float64
    evaluates it to within about n u L (u = 1.1e-16); tau sits about 10^4 above that
    floor, which the solver's Newton polish reaches in a few steps (on Adult, n = 36,178:
    ||grad|| of 6e-13 against tau = 5e-8). tau enters the privacy only through the output
    step's sensitivity 2 tau / lam, so a tiny tau buys a tiny output noise (no floor).
    """
    return TAU_PER_ROW * max(1, n) * lipschitz


#: smallest certificate per row and unit gradient bound a plan accepts: the gradient of n
#: rows is computed in float64 to within about n u L (u = 1.1e-16; measured floors 2-4e-16
#: n L), so a tau below 1e-14 n L might not be reachable, and a certification that fails
#: after the charge would be a data-dependent event
MIN_TAU_PER_ROW = 1e-14


def certificate(tau: float | None, n: int, lipschitz: float) -> float:
    """The certificate tau: the default, or the given one if float64 can reach it.

    A given tau below ``MIN_TAU_PER_ROW * n * L`` is refused before anything is spent
    (n is the public number of rows the plan is calibrated for).
    """
    if tau is None:
        return default_tau(n, lipschitz)
    floor = MIN_TAU_PER_ROW * max(1, n) * lipschitz
    if tau < floor:
        raise ValueError(
            f"tau={tau:g} is below what the solver can certify in float64 on {n} rows "
            f"({floor:.3g} = 1e-14 x rows x gradient bound); leave tau unset or raise it"
        )
    return float(tau)


def default_sigma_out(tau: float, beta: float, epsilon: float, delta: float, k: int) -> float:
    """sigma_out = 2 tau z_out / beta, z_out = 100 x the budget's Gaussian noise scale.

    The output step is a Gaussian mechanism of sensitivity 2 tau / lam < 2 tau / beta
    (lam > beta always), so its noise multiplier is at least z_out: 100 times the
    noise a Gaussian mechanism needs for the whole (epsilon, delta) with K compositions,
    i.e. 1e-4 of the budget in Gaussian-DP terms. The objective-perturbation noise sigma
    is then calibrated with this output step included. sigma_out goes to 0 with tau and
    as epsilon grows.
    """
    if beta <= 0:
        raise ValueError("the default output noise needs a curved loss (beta > 0); give sigma_out")
    z_out = OUTPUT_NOISE_RATIO * gaussian_sigma(epsilon, delta, k**0.5)
    return 2.0 * tau * z_out / beta


class AmpPlan(Plan):
    """(sigma, lam) from :func:`dpconvex.accounting.amp_parameters` for K compositions.

    beta = sup f'' R^2 and L = min(C, sup|f'| R) (Redberg et al. Thm 4.1). The certificate
    tau and the output noise sigma_out are derived (:func:`default_tau`,
    :func:`default_sigma_out`) unless given; lam and sigma follow the paper's rule
    (noise factor f). As epsilon grows sigma and sigma_out go to 0 and lam to its
    floor beta (objective perturbation needs lam > beta), so the release converges to
    the lam ~ beta regularized optimum. ``PAPER_SETTINGS`` reproduces the paper.
    """

    name = "amp"
    dask = True
    # sum-form objective: the guarantee of fixed parameters holds for any number of rows
    size_free = True

    def __init__(self, inputs: PlanInputs):
        super().__init__(inputs)
        loss, bound, clip = inputs.loss, inputs.row_bound, inputs.clip
        beta = loss.curvature * bound**2
        lipschitz = min(clip, loss.derivative_bound * bound)
        tau = certificate(self.setting("tau"), inputs.n, lipschitz)
        sigma_out = self.setting("sigma_out")
        if sigma_out is None:
            sigma_out = default_sigma_out(tau, beta, inputs.epsilon, inputs.delta, inputs.k)
        cal = amp_parameters(
            inputs.epsilon,
            inputs.delta,
            accounting=inputs.accounting,
            beta=beta,
            lipschitz=lipschitz,
            tau=tau,
            sigma_out=sigma_out,
            noise_factor=self.setting("noise_factor"),
            lam=self.setting("lam"),
            compositions=inputs.k,
        )
        self._cal = cal
        self.params = {
            "sigma": cal.sigma,
            "lam": cal.lam,
            "beta": beta,
            "clip": clip,
            "tau": tau,
            "sigma_out": sigma_out,
        }
        self.event = cal.event

    def run(self, X, y, rng):
        p = self.params
        return amp(
            X,
            y,
            self.inputs.loss,
            lam=p["lam"],
            sigma=p["sigma"],
            tau=p["tau"],
            sigma_out=p["sigma_out"],
            clip=p["clip"],
            rng=rng,
            solver=self.setting("solver"),
            max_iter=self.setting("max_iter"),
            row_bound=self.inputs.row_bound,
        )


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
