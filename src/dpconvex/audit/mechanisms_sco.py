"""Auditor of DP-SCO (Su, Zhao & Wang) for :mod:`dpconvex.audit`: Algorithm 1, worst-case pair.

Same shape as :data:`dpconvex.audit.mechanisms.AUDITS`: ``builder(fast) -> (run,
claimed_epsilon, delta)``. Su, Zhao & Wang (arXiv 2303.18047) use replace-one
neighbours, so Z and Z' have the same size and differ in one row.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ..sco import approx_objective_perturbation
from ..sco.sets import make_set

DELTA = 1e-5


def _sco_objpert(fast: bool):
    """App-ObjP (Su et al., Alg. 1, Thm 1) with the linear loss f(u) = u in one dimension.

    Z = (1, 1, 1, -1), Z' replaces the first row by -1: the empirical gradient moves by
    2/n, the largest change a unit-norm row can make. With the linear loss the minimizer of
    J is -(mean z + b/n) / (2 lam) clipped to C, so the released coordinate is a shifted
    Gaussian of the objective noise b; C is a large ball (radius 1000) so that clipping
    never hides the shift, and the solver accuracy alpha is tiny so that the output noise
    is negligible. The statistic is minus the released coordinate (larger under Z). The
    claimed epsilon is the accountant's price of the release's event (``info["epsilon"]``).
    """
    constraint = make_set("l2", 1, 1000.0)
    X_z = np.array([[1.0], [1.0], [1.0], [-1.0]])
    X_zp = X_z.copy()
    X_zp[0, 0] = -1.0
    y = np.ones(4)
    settings = dict(epsilon=0.5, delta=DELTA, row_bound=1.0, lam=1.0, accuracy=1e-6)

    def run(use_z, rng):
        rel = approx_objective_perturbation(
            X_z if use_z else X_zp, y, "linear", constraint, random_state=rng, **settings
        )
        return -float(rel.theta[0])

    release = approx_objective_perturbation(
        X_z, y, "linear", constraint, random_state=np.random.default_rng(0), **settings
    )
    return run, float(release.info["epsilon"]), DELTA


AUDITS_SCO: dict[str, Callable] = {"sco-objpert": _sco_objpert}
