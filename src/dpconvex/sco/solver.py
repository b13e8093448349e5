"""Certified optimizer O(J, alpha) of Algorithms 1-2: accelerated projected gradient.

Privacy of Algorithms 1 and 2 (seed 002, proof of Thm 1) needs
J(theta_2) - min_C J <= alpha to hold *with certainty*: the output noise is
calibrated to the sensitivity 2 sqrt(2 alpha / mu_J) of theta_2 - theta_1, which
follows from it. A stochastic solver's in-expectation guarantee does not suffice
(spec/dp-sco.md §2.7). We run Nesterov's accelerated projected gradient for
mu-strongly convex, L_f-smooth J and stop only when the gradient-mapping
certificate proves the accuracy:

    x+ = Proj_C(x - grad J(x) / L_f),  G = L_f (x - x+),
    J(x+) - min_C J <= ||G||^2 / (2 mu)                      (x in C)

(from F(x+) <= F(z) + <G, x - z> - ||G||^2/(2 L_f) - (mu/2)||x - z||^2 for z in C,
maximized over z). The certificate is evaluated at projected iterates x in C and
returns x+; a floating-point allowance is added to ||G|| before the test. If it
is not met within ``max_iter`` iterations nothing is returned
(:class:`CertificateError`).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from .. import _validation as v
from ..optim import CertificateError

__all__ = ["CertificateError", "Certified", "certified_minimize"]


@dataclass(frozen=True)
class Certified:
    """A point ``theta`` in C with J(theta) - min_C J <= ``gap_bound`` <= the requested accuracy."""

    theta: np.ndarray
    gap_bound: float
    n_iter: int
    grad_evals: int


def certified_minimize(
    grad: Callable[[np.ndarray], np.ndarray],
    project: Callable[[np.ndarray], np.ndarray],
    x0: np.ndarray,
    *,
    smoothness: float,
    strong_convexity: float,
    accuracy: float,
    max_iter: int = 100_000,
    check_every: int = 5,
    gradient_scale: float = 1.0,
) -> Certified:
    """Minimize a ``strong_convexity``-strongly convex, ``smoothness``-smooth J over C.

    Returns theta in C with J(theta) - min_C J <= ``accuracy``, proved by the
    gradient-mapping certificate at a projected iterate (see the module
    docstring). ``gradient_scale`` bounds the magnitude of the terms summed in
    grad J; it sets the floating-point allowance 1e-12 * (gradient_scale +
    smoothness * ||x||) added to ||G|| (rounding of float64 sums of n terms is
    orders of magnitude below this for n < 10^9).

    Raises:
        CertificateError: if the certificate is not reached within ``max_iter``.
    """
    L = v.positive("smoothness", smoothness)
    mu = v.positive("strong_convexity", strong_convexity)
    accuracy = v.positive("accuracy", accuracy)
    if mu > L:
        raise ValueError(f"strong_convexity {mu} cannot exceed smoothness {L}")
    kappa = L / mu
    momentum = (math.sqrt(kappa) - 1.0) / (math.sqrt(kappa) + 1.0)
    x = project(np.asarray(x0, dtype=float))
    y = x.copy()
    evals = 0
    best = math.inf
    for it in range(1, max_iter + 1):
        if it % check_every == 1 or check_every == 1:
            g = grad(x)
            evals += 1
            x_plus = project(x - g / L)
            slack = 1e-12 * (gradient_scale + L * float(np.linalg.norm(x)))
            gm = L * float(np.linalg.norm(x - x_plus)) + slack
            bound = gm**2 / (2.0 * mu)
            best = min(best, bound)
            if bound <= accuracy:
                return Certified(x_plus, bound, it, evals)
        g = grad(y)
        evals += 1
        x_new = project(y - g / L)
        y = x_new + momentum * (x_new - x)
        x = x_new
    raise CertificateError(
        f"the solver did not certify J(theta) - min J <= {accuracy:.3g} within {max_iter} "
        f"iterations (best certified gap {best:.3g}); nothing is released"
    )
