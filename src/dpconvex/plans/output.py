"""Output-perturbation plan: a tau-certified regularized minimizer plus Gaussian noise."""

from __future__ import annotations

import math

from dp_accounting.dp_event import GaussianDpEvent

from ..accounting import gaussian_noise_multiplier, gaussian_sigma
from ..mechanisms import output_perturbation, output_sensitivity
from .base import Plan, PlanInputs


class OutputPlan(Plan):
    """Gaussian noise for sensitivity (L + 2 tau)/lam (seed 001), K-fold composed.

    Default lam: sqrt(d) g (L + 2 tau), g the analytic Gaussian scale of K compositions
    at unit sensitivity, so that the expected norm of the output noise is about 1.
    """

    name = "output"
    dask = True

    def __init__(self, inputs: PlanInputs):
        super().__init__(inputs)
        eps, delta, k = inputs.epsilon, inputs.delta, inputs.k
        loss, bound, clip = inputs.loss, inputs.row_bound, inputs.clip
        tau = self.setting("tau")
        lipschitz = min(clip, loss.derivative_bound * bound)
        lam = self.setting("lam")
        if lam is None:
            gauss = gaussian_sigma(eps, delta, math.sqrt(k))  # K-fold Gaussian, unit sensitivity
            lam = math.sqrt(inputs.d) * gauss * (lipschitz + 2 * tau)
        # calibrated with the accountant that reports the spend (not the analytic value)
        z = gaussian_noise_multiplier(eps, delta, k, accounting=inputs.accounting)
        sensitivity = output_sensitivity(lipschitz, lam, tau)
        sigma = z * sensitivity
        self.params = {"sigma": sigma, "lam": lam, "clip": clip, "tau": tau}
        self.event = GaussianDpEvent(sigma / sensitivity)

    def run(self, X, y, rng):
        p = self.params
        return output_perturbation(
            X,
            y,
            self.inputs.loss,
            lam=p["lam"],
            sigma=p["sigma"],
            tau=p["tau"],
            clip=p["clip"],
            rng=rng,
            solver=self.setting("solver"),
            max_iter=self.setting("max_iter"),
            row_bound=self.inputs.row_bound,
        )
