"""Output-perturbation plan: a tau-certified regularized minimizer plus Gaussian noise."""

from __future__ import annotations

from dp_accounting.dp_event import GaussianDpEvent

from ..accounting import gaussian_noise_multiplier
from ..mechanisms import output_perturbation, output_sensitivity
from .amp import default_tau
from .base import Plan, PlanInputs


def default_lam(n: int, d: int, beta: float, gradient_bound: float, z: float) -> float:
    """lam = (2 n beta d z^2 (L + 2 tau)^2 / B^2)^(1/3) with B^2 = d: the minimizer of a bound.

    For theta_lam the minimizer of sum_i l_i + (lam/2)||theta||^2 and Gaussian output
    noise e of scale z (L + 2 tau) / lam per coordinate, the excess average loss over any
    comparator theta* with ||theta*|| <= B is at most
    lam B^2 / (2 n) (regularization bias) + beta d z^2 (L + 2 tau)^2 / (2 lam^2)
    (beta-smoothness; the linear term has mean 0), minimized at this lam. B is not known
    without looking at the data; B^2 = d (weights of order 1 per coordinate on rows of
    norm ~1) is the public convention. As epsilon grows z -> 0, so lam -> 0 like z^(2/3)
    and the noise like z^(1/3): the release tends to the unregularized minimizer (no
    floor). The previous rule, lam = sqrt(d) z (L + 2 tau), kept the noise norm near 1
    at every epsilon, a floor.
    """
    bound_sq = float(d)  # B^2, the comparator's squared norm (public convention)
    return (2.0 * n * beta * d * z * z * gradient_bound**2 / bound_sq) ** (1.0 / 3.0)


class OutputPlan(Plan):
    """Gaussian noise for sensitivity (L + 2 tau)/lam (seed 001), K-fold composed.

    lam defaults to :func:`default_lam`; the noise multiplier is calibrated with the
    accountant that reports the spend.
    """

    name = "output"
    dask = True

    def __init__(self, inputs: PlanInputs):
        super().__init__(inputs)
        eps, delta, k = inputs.epsilon, inputs.delta, inputs.k
        loss, bound, clip = inputs.loss, inputs.row_bound, inputs.clip
        lipschitz = min(clip, loss.derivative_bound * bound)
        tau = self.setting("tau")
        tau = default_tau(inputs.n, lipschitz) if tau is None else tau
        # calibrated with the accountant that reports the spend (not the analytic value)
        z = gaussian_noise_multiplier(eps, delta, k, accounting=inputs.accounting)
        lam = self.setting("lam")
        if lam is None:
            beta = loss.curvature * bound**2
            lam = default_lam(inputs.n, inputs.d, beta, lipschitz + 2 * tau, z)
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
