"""AdaSSP plan: sufficient statistics with an adaptive ridge (Wang 2018), for least squares."""

from __future__ import annotations

from ..accounting import gaussian_noise_multiplier
from ..losses import SquaredLoss
from ..mechanisms.adassp import adassp, adassp_event
from .base import Plan, PlanInputs


class AdasspPlan(Plan):
    """One noise multiplier for AdaSSP's three Gaussian releases, composed to (eps, delta).

    Equal noise multipliers, the paper's equal split of the budget: on synthetic data
    (n = 12,000, d = 10) shifting budget from the eigenvalue release to the statistics
    changed R^2 by less than its seed-to-seed spread at epsilon 0.1, 1 and 8. Targets
    are scaled into [-1, 1] by the estimator, so the target bound is 1.
    """

    name = "adassp"
    dask = True

    def __init__(self, inputs: PlanInputs):
        super().__init__(inputs)
        if not isinstance(inputs.loss, SquaredLoss) or inputs.k != 1:
            raise ValueError('method="adassp" fits least squares only (DPLinearRegression)')
        z = gaussian_noise_multiplier(inputs.epsilon, inputs.delta, 3, accounting=inputs.accounting)
        self.params = {"noise_multiplier": z, "y_bound": 1.0, "row_bound": inputs.row_bound}
        self.event = adassp_event(z)

    def run(self, X, y, rng):
        return adassp(
            X,
            y,
            noise_multiplier=self.params["noise_multiplier"],
            row_bound=self.inputs.row_bound,
            y_bound=1.0,
            delta=self.inputs.delta,
            rng=rng,
        )
