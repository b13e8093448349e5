"""Proximal operators of the released blocks' regularizers (Chen & Liu, eq. 5, Lemma 4.2).

Source: Chen & Liu, arXiv 2407.08233.

Prox_{eta r}(v) = argmin_t r(t) + ||t - v||^2 / (2 eta) for
r = (ridge / 2) ||t||^2 + l1 ||t||_1 + indicator(constraint). It factors as
T = N o S: a linear scale S(v) = v / (1 + eta ridge), Lipschitz 1/(1 + eta ridge)
(correcting the printed eta/(1+eta) theta for the ridge prox), followed by a
1-Lipschitz non-linear map N (soft-threshold at eta l1 / (1 + eta ridge), projection
on the non-negative orthant, on a ball, or both). Every prox of a convex function is
non-expansive, so L_T <= 1 always (Lemma 4.2's 2 is loose). Only the linear part
contracts the hidden-state bound: :mod:`dpconvex.bcd.hidden_state` folds S into the
step and applies N by data processing.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .. import _validation as v

CONSTRAINTS = (None, "nonnegative", "ball", "nonnegative-ball")


@dataclass(frozen=True)
class Prox:
    """Prox of (ridge/2)||t||^2 + l1 ||t||_1 + indicator(constraint) (see module docstring).

    ``constraint`` is None, ``"nonnegative"``, ``"ball"`` (||t||_F <= radius) or
    ``"nonnegative-ball"`` (both; projecting on the orthant, then radially, is the
    exact projection on their intersection because the ball is centred at 0).
    ``l1`` is not combined with a ball (that prox is not a composition of the two).
    """

    ridge: float = 0.0
    l1: float = 0.0
    constraint: str | None = None
    radius: float | None = None

    def __post_init__(self):
        v.nonnegative("ridge", self.ridge)
        v.nonnegative("l1", self.l1)
        if self.constraint not in CONSTRAINTS:
            raise ValueError(f"constraint must be one of {CONSTRAINTS}, got {self.constraint!r}")
        if self.constraint in ("ball", "nonnegative-ball"):
            v.positive("radius", self.radius)
            if self.l1:
                raise ValueError("an l1 term and a ball constraint cannot be combined")
        elif self.radius is not None:
            raise ValueError("radius is only used with a ball constraint")

    def linear_lipschitz(self, step: float) -> float:
        """Lipschitz constant of the linear part S: 1 / (1 + step * ridge)."""
        return 1.0 / (1.0 + step * self.ridge)

    def __call__(self, values: np.ndarray, step: float) -> np.ndarray:
        """Prox_{step * r}(values)."""
        scale = self.linear_lipschitz(step)
        out = values * scale if self.ridge else np.array(values, dtype=float, copy=True)
        shrink = step * self.l1 * scale
        if self.constraint in ("nonnegative", "nonnegative-ball"):
            out = np.maximum(out - shrink, 0.0)
        elif shrink:
            out = np.sign(out) * np.maximum(np.abs(out) - shrink, 0.0)
        if self.constraint in ("ball", "nonnegative-ball"):
            norm = float(np.linalg.norm(out))
            if norm > self.radius:
                out *= self.radius / norm
        return out
