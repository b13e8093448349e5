"""AdaSSP: sufficient-statistics perturbation with an adaptive ridge (Wang, AISTATS 2018).

Yu-Xiang Wang, "Revisiting differentially private linear regression: optimal and
adaptive prediction & estimation in unbounded domain" (UAI 2018, arXiv:1803.02596),
Algorithm 2. Three Gaussian releases of the data, then post-processing:

1. lambda_min(X^T X) + s1 Z - s1 sqrt(log(6/delta)), floored at 0 (a lower confidence
   bound on the smallest eigenvalue of the Gram matrix);
2. X^T X + s2 E, E symmetric with i.i.d. N(0, 1) entries on and above the diagonal;
3. X^T y + s3 z, z ~ N(0, I);

and theta = (hat(X^T X) + lam I)^+ hat(X^T y) with the ridge
lam = max(0, sqrt(d log(2 d^2 / rho)) s2 - hat(lambda_min)), the noise matrix's
spectral norm bound at failure probability rho minus the (private) curvature the data
already has. As epsilon grows the three noise scales go to 0, lam goes to 0 and theta to
the least-squares solution: there is no floor.

Sensitivities under adding or removing one row x (||x|| <= B) with target |y| <= B_y:
lambda_min moves by at most ||x||^2 <= B^2 (Weyl: X^T X changes by the PSD rank-one
x x^T of spectral norm ||x||^2); the upper triangle (diagonal included) of x x^T has
l2 norm sqrt(sum_i x_i^4 + sum_{i<j} x_i^2 x_j^2) <= ||x||^2 <= B^2; X^T y moves by
||x y|| <= B B_y. Each release is therefore a Gaussian mechanism with noise multiplier
s1/B^2, s2/B^2, s3/(B B_y); the paper prices each at (eps/3, delta/3) with a classical
bound, we price their composition exactly (PLD) with the accountant and split the
budget in equal thirds as the paper does (equal noise multipliers). :class:`AdasspPlan`
calibrates that noise multiplier from public quantities.
"""

from __future__ import annotations

import math

import numpy as np
from dp_accounting.dp_event import GaussianDpEvent, SelfComposedDpEvent

from .. import _validation as v
from ..accounting import gaussian_noise_multiplier
from ..data.kernels import chunk_statistics, split_statistics
from ..data.sources import as_rows
from ..losses import SquaredLoss
from ..release import Release
from .plan import Plan, PlanInputs

#: failure probability of the ridge's noise bound; the paper's experiments use 0.05
DEFAULT_RHO = 0.05


def adassp_event(noise_multiplier: float):
    """The three equal-noise Gaussian releases of AdaSSP, composed."""
    return SelfComposedDpEvent(GaussianDpEvent(noise_multiplier), 3)


def adassp(
    X,
    y,
    *,
    noise_multiplier: float,
    row_bound: float,
    y_bound: float,
    delta: float,
    rng: np.random.Generator,
    rho: float = DEFAULT_RHO,
) -> Release:
    """Release AdaSSP's ridge estimate (Wang 2018, Algorithm 2; Theorem 3 for privacy).

    Rows must have norm <= ``row_bound`` and targets |y| <= ``y_bound`` (checked; the
    caller clips). Each of the three releases adds Gaussian noise of ``noise_multiplier``
    times its sensitivity; priced by ``adassp_event(noise_multiplier)``. ``delta`` only
    sets the one-sided confidence shift of the eigenvalue release (as in the paper);
    it is public. ``X`` may be a :class:`~dpconvex.data.sources.RowSource` (in
    memory or out of core, then ``y=None``); its statistics are computed where the
    rows live.
    """
    z = v.positive("noise_multiplier", noise_multiplier)
    y_bound = v.positive("y_bound", y_bound)
    delta = v.probability_open("delta", delta)
    rho = v.probability_open("rho", rho)
    if not (math.isfinite(row_bound) and row_bound > 0):
        raise ValueError(f"row_bound must be a finite number > 0, got {row_bound}")
    source = as_rows(X, y, None, row_bound)
    d = source.d
    total = source.reduce(chunk_statistics, d * d + d + 2, source.policy, maxima=2)
    gram, xty, max_norm, max_y = split_statistics(total, d)
    if not (np.all(np.isfinite(gram)) and np.all(np.isfinite(xty))):
        raise ValueError("X or y contains NaN or infinity")
    if max_norm > row_bound * (1 + 1e-9):
        raise ValueError(
            f"a row has norm {max_norm:.6g} above the declared bound {row_bound}; "
            "the privacy analysis does not cover it"
        )
    if max_y > y_bound * (1 + 1e-12):
        raise ValueError(f"targets must be within [-{y_bound}, {y_bound}], found |y| = {max_y:.6g}")
    d = gram.shape[0]
    s_eig = z * row_bound**2
    s_gram = z * row_bound**2
    s_xty = z * row_bound * y_bound

    lam_min = max(0.0, float(np.linalg.eigvalsh(gram)[0]))
    shift = s_eig * math.sqrt(math.log(6.0 / delta))
    lam_min_private = max(0.0, lam_min + s_eig * float(rng.standard_normal()) - shift)
    lam = max(0.0, math.sqrt(d * math.log(2.0 * d * d / rho)) * s_gram - lam_min_private)

    noise = np.triu(rng.standard_normal((d, d)))
    noise = noise + np.triu(noise, 1).T
    gram_private = gram + s_gram * noise
    xty_private = xty + s_xty * rng.standard_normal(d)
    theta = np.linalg.pinv(gram_private + lam * np.eye(d), hermitian=True) @ xty_private
    info = {
        "n_iter": 1,  # one closed-form solve
        "noise_multiplier": z,
        "ridge": lam,
        "lambda_min_private": lam_min_private,
    }
    return Release(theta, adassp_event(z), info)


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
