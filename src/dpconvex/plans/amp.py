"""AMP plan: approximate minima perturbation with clipped gradients.

Algorithm 1 of Redberg, Koskela & Wang (arXiv 2401.00583).
"""

from __future__ import annotations

from ..accounting import AMP_DEFAULTS, amp_parameters, gaussian_sigma
from ..mechanisms import amp
from .base import Plan, PlanInputs

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
