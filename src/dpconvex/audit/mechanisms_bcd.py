"""Auditor of DP-MBCD (Chen & Liu) for :mod:`dpconvex.audit`: the library's own run, worst case.

Same shape as :data:`dpconvex.audit.mechanisms.AUDITS`: ``builder(fast) -> (run,
claimed_epsilon, delta)``, where ``run(use_z, rng)`` executes :func:`dpconvex.bcd.dp_mbcd`
once on Z (``use_z``) or on its add/remove neighbour Z' and returns a scalar that tends
to be larger under Z, and the claimed epsilon is what the library's hidden-state
accountant (Chen & Liu, arXiv 2407.08233, Thm 4.6) reports for that run's event.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ..bcd import LeastSquaresProblem, Prox, dp_mbcd, epsilon, run_events

DELTA = 1e-5


def _dp_mbcd(fast: bool):
    """One-dimensional ridge-prox least squares: Z' = three zero rows, Z adds (x = 1, t = 100).

    Zero rows have zero gradient, so only the added example moves the iterate; its
    gradient (W - 100) * 1 is clipped to norm C = 1 throughout (W stays far below 100),
    so every step whose batch holds it shifts W by exactly eta C / b, the sensitivity
    the accountant assumes. Batch capacity b = 2, m = 2 fixed batches (the position of
    the added example is secret and uniform), ridge prox lam = 1 (L_T = 2/3),
    eta = 0.5, o = 0.3. The statistic is the released W (its law is N(0, V) under Z'
    and a mixture of N(d_j0, V), d_j0 > 0, under Z: the likelihood ratio is monotone
    in W). ``fast``: 3 epochs instead of 10.
    """
    zeros = 3
    X_zp, t_zp = np.zeros((zeros, 1)), np.zeros(zeros)
    X_z, t_z = np.vstack([X_zp, [[1.0]]]), np.append(t_zp, 100.0)
    prox = Prox(ridge=1.0)
    with_z = LeastSquaresProblem(X_z, t_z, row_bound=1.0, clip=1.0, prox=prox)
    without = LeastSquaresProblem(X_zp, t_zp, row_bound=1.0, clip=1.0, prox=prox)
    settings = {
        "batch_size": 2,
        "n_batches": 2,
        "epochs": 3 if fast else 10,
        "step_size": 0.5,
        "noise": 0.3,
    }

    def run(use_z: bool, rng: np.random.Generator) -> float:
        rel = dp_mbcd(
            with_z if use_z else without, accountant="hidden-state", random_state=rng, **settings
        )
        return float(rel.theta["W"][0, 0])

    _, hidden = run_events(without, **settings)
    return run, epsilon(hidden, DELTA), DELTA


AUDITS_BCD: dict[str, Callable] = {"dp-mbcd": _dp_mbcd}
