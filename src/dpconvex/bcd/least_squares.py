"""A single-block least-squares problem for DP-MBCD: the case the hidden-state accountant covers.

Per-example loss (1/2)||W x_i - t_i||^2 with rows clipped to ||x_i|| <= row_bound
(a per-row map, free of privacy cost). After per-example clipping each loss is a
Huber-ized least-squares loss, convex and row_bound^2-smooth, so with a ridge term
(``ridge`` in the objective or ``Prox(ridge=...)``) the step is a contraction and
Thm 4.6 of Chen & Liu (arXiv 2407.08233) applies (see :func:`dpconvex.bcd.hidden_state_conditions`).
"""

from __future__ import annotations

import numpy as np

from .. import _validation as v
from ._checks import clip_rows, finite_matrix
from .engine import BlockSpec, MbcdProblem
from .prox import Prox


class LeastSquaresProblem(MbcdProblem):
    """Ridge-regularized (multi-output) least squares, one released block ``"W"``.

    Args:
        X: (n, q) inputs; rows are clipped to ``row_bound``.
        targets: (n,) or (n, p) targets.
        row_bound: declared bound on the input rows (certifies smoothness row_bound^2).
        clip: per-example gradient clip C.
        ridge: (ridge/2)||W||^2 in the objective (strong convexity).
        prox: prox of the block (e.g. ``Prox(ridge=...)`` or a constraint).
    """

    has_hidden_blocks = False

    def __init__(
        self,
        X,
        targets,
        *,
        row_bound: float = 1.0,
        clip: float = 1.0,
        ridge: float = 0.0,
        prox: Prox | None = None,
    ):
        X = finite_matrix("X", X)
        t = finite_matrix("targets", targets, ndim=np.ndim(targets))
        if t.ndim == 1:
            t = t[:, None]
        if t.ndim != 2 or t.shape[0] != X.shape[0]:
            raise ValueError(f"targets must have {X.shape[0]} rows, got shape {np.shape(targets)}")
        self.row_bound = v.positive("row_bound", row_bound)
        self.X = clip_rows(X, self.row_bound)
        self.T = t
        self.n_examples = X.shape[0]
        self.shape = (t.shape[1], X.shape[1])
        self.blocks = (
            BlockSpec(
                "W",
                clip=clip,
                smoothness=self.row_bound**2,
                ridge=ridge,
                prox=prox or Prox(),
            ),
        )

    def init(self, rng):
        return {"W": np.zeros(self.shape)}

    def gradient_factors(self, name, params, batch):
        x = self.X[batch]
        return x @ params["W"].T - self.T[batch], x

    def least_squares(self, name, params, batch):
        return self.X[batch], self.T[batch], 1.0

    def predict(self, W: np.ndarray, X) -> np.ndarray:
        """W x for every row of X (rows clipped to the same bound)."""
        return clip_rows(finite_matrix("X", X), self.row_bound) @ W.T
