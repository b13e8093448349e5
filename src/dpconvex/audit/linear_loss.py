"""The linear loss f(u) = u, under which objective perturbation is a Gaussian mechanism."""

from __future__ import annotations

import numpy as np

from ..losses import GLMLoss


class LinearLoss(GLMLoss):
    """f(u) = u: the loss that makes objective perturbation Gaussian.

    Redberg, Koskela & Wang (arXiv 2401.00583), Lemma 3.4.

    GLM with f'' = 0 and |f'| = 1, so it is in every beta-smooth class.
    """

    name = "linear"
    curvature = 0.0
    derivative_bound = 1.0

    def value(self, u, y):
        return np.asarray(u, dtype=float)

    def derivative(self, u, y):
        return np.ones_like(u, dtype=float)

    def second_derivative(self, u, y):
        return np.zeros_like(u, dtype=float)

    def breakpoints(self, kappa, y):
        kappa = np.asarray(kappa, dtype=float)
        low = np.where(kappa < 1, np.inf, -np.inf)  # f' = 1 > kappa: clipped everywhere
        return np.full_like(kappa, -np.inf), np.where(kappa < 1, -np.inf, np.inf) + 0 * low
