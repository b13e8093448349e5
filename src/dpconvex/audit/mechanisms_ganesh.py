"""Auditors for the mechanisms of Ganesh's thesis (EECS-2022-53): GG noise, Langevin, PDA-DPMD.

Same contract as :data:`dpconvex.audit.mechanisms.AUDITS`: each builder
``builder(fast) -> (run, claimed_epsilon, delta)``; ``run(use_z, rng)`` executes the
library's own mechanism once on the worst-case input Z (``use_z``) or its
neighbour Z' and returns a scalar statistic oriented to be larger under Z; the
claimed epsilon is what the library's PLD accountant reports for that run's
event at ``delta`` = 1e-5.

* ``generalized-gaussian`` — :func:`dpconvex.queries.gg_release` (the noise step of
  :func:`~dpconvex.queries.gg_mechanism`) on answers 0 vs 1 in every coordinate, the
  worst l_inf-neighbours (thesis §2.5). Statistic: the
  exact log-likelihood ratio sum_i (|y_i - 1|^p - |y_i|^p) / sigma^p, i.e. the
  privacy loss itself (the most powerful test).
* ``langevin`` — :func:`dpconvex.sampling.posterior_sample` (composition accounting)
  with the linear loss f(u) = u: one row, the canary x = 1 (Z) vs a zero row (Z'),
  so that the gradients of F_D and F_D' differ by exactly G = beta at every ULA step
  (the worst case of the per-step Gaussian accounting). n = 1 in both (n is public).
  The final state is Gaussian with a mean shift; statistic: -theta (likelihood-ratio
  order). Only the last iterate is released, so the audit is loose by design.
* ``pda-dpmd`` — :func:`dpconvex.public.pda_dpmd` (Algorithm 1, thesis §4.4) with a
  public quadratic mirror map, squared loss, private rows all 0 except the canary
  (x = 1, y = -1e6: its gradient is clipped to norm L at every step) in Z and a zero
  row in Z' (same n; the sums of clipped gradients differ by exactly L, the
  add/remove sensitivity). Statistic: -theta.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ..accounting import PrivacyAccountant
from .linear_loss import LinearLoss

DELTA = 1e-5
#: Target epsilon of the calibrated audits (large enough to be measurable with ~2000 runs).
EPSILON = 4.0


def _claimed(event) -> float:
    return PrivacyAccountant("pld").compose(event).get_epsilon(DELTA)


def _generalized_gaussian(fast: bool):
    """GG_4 noise on k answers, 0 vs 1 in every coordinate (worst l_inf shift)."""
    from ..queries import gg_release

    p, k = 4.0, (100 if fast else 1000)
    # a fixed noise scale (no calibration per run): about (4.7, 1e-5)-DP for either k,
    # large enough an epsilon for a few thousand runs to give a non-trivial lower bound
    sigma = 20.0 if fast else 63.0
    zeros, ones = np.zeros(k), np.ones(k)

    def run(use_z: bool, rng: np.random.Generator) -> float:
        y = gg_release(zeros if use_z else ones, p, sigma, random_state=rng).theta
        return float(np.sum(np.abs(y - 1.0) ** p - np.abs(y) ** p) / sigma**p)

    event = gg_release(zeros, p, sigma, random_state=np.random.default_rng(0)).event
    return run, _claimed(event), DELTA


def _langevin(fast: bool):
    """Posterior sampling (ULA, composition accounting) with a linear-loss canary."""
    from ..sampling import posterior_sample

    loss = LinearLoss()
    canary, zero = np.array([[1.0]]), np.array([[0.0]])
    y = np.ones(1)
    kwargs = {"epsilon": EPSILON, "delta": DELTA, "lam": 1.0, "fit_intercept": False}
    if not fast:
        kwargs["horizon"] = 10.0

    def run(use_z: bool, rng: np.random.Generator) -> float:
        rel = posterior_sample(canary if use_z else zero, y, loss, random_state=rng, **kwargs)
        return -float(rel.theta[0])

    event = posterior_sample(canary, y, loss, random_state=0, **kwargs).event
    return run, _claimed(event), DELTA


def _pda_dpmd(fast: bool):
    """PDA-DPMD (Algorithm 1) with a clipped canary among zero rows."""
    from ..losses import SquaredLoss
    from ..public import linear_regression_mirror_map, pda_dpmd, pda_noise_multiplier

    n, steps, clip = 10, (5 if fast else 20), 1.0
    rng0 = np.random.default_rng(0)
    X_pub = rng0.standard_normal((20, 1))
    mirror = linear_regression_mirror_map(X_pub, X_pub[:, 0], ridge=1e-3, normalize=True)
    X_z = np.vstack([np.zeros((n - 1, 1)), [[1.0]]])
    X_zp = np.zeros((n, 1))
    y = np.append(np.zeros(n - 1), -1e6)
    loss = SquaredLoss()
    z = pda_noise_multiplier(EPSILON, DELTA, steps, "add_remove")  # once, not per run
    kwargs = {"clip": clip, "steps": steps, "learning_rate": 1.0, "theta0": np.zeros(1)}
    kwargs.update(noise_multiplier=z, neighbours="add_remove")

    def run(use_z: bool, rng: np.random.Generator) -> float:
        rel = pda_dpmd(X_z if use_z else X_zp, y, loss, mirror, random_state=rng, **kwargs)
        return -float(rel.theta[0])

    event = pda_dpmd(X_z, y, loss, mirror, random_state=0, **kwargs).event
    return run, _claimed(event), DELTA


AUDITS_GANESH: dict[str, Callable] = {
    "generalized-gaussian": _generalized_gaussian,
    "langevin": _langevin,
    "pda-dpmd": _pda_dpmd,
}
