"""AMP plan: Algorithm 1 of seed 000 (approximate minima perturbation, clipped gradients)."""

from __future__ import annotations

from ..accounting import amp_parameters
from ..mechanisms import amp
from .base import Plan, PlanInputs


class AmpPlan(Plan):
    """(sigma, lam) from :func:`dpconvex.accounting.amp_parameters` for K compositions.

    beta = sup f'' R^2 and L = min(C, sup|f'| R) (seed 000 Thm 4.1); the certificate tau
    and the output noise sigma_out are the estimator's settings.
    """

    name = "amp"
    dask = True

    def __init__(self, inputs: PlanInputs):
        super().__init__(inputs)
        loss, bound, clip = inputs.loss, inputs.row_bound, inputs.clip
        beta = loss.curvature * bound**2
        lipschitz = min(clip, loss.derivative_bound * bound)
        tau, sigma_out = self.setting("tau"), self.setting("sigma_out")
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
