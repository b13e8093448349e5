"""Certified optimizer O(J, alpha) of Algorithms 1-2: accelerated projected gradient.

Privacy of Algorithms 1 and 2 of Su, Zhao & Wang (arXiv 2303.18047, proof of Thm 1) needs
J(theta_2) - min_C J <= alpha to hold *with certainty*: the output noise is
calibrated to the sensitivity 2 sqrt(2 alpha / mu_J) of theta_2 - theta_1, which
follows from it. A stochastic solver's in-expectation guarantee does not suffice
(it holds only on average). We run Nesterov's accelerated projected gradient for
mu-strongly convex, L_f-smooth J and stop only when the gradient-mapping
certificate proves the accuracy:

    x+ = Proj_C(x - grad J(x) / L_f),  G = L_f (x - x+),
    J(x+) - min_C J <= ||G||^2 / (2 mu)                      (x in C)

(from F(x+) <= F(z) + <G, x - z> - ||G||^2/(2 L_f) - (mu/2)||x - z||^2 for z in C,
maximized over z; Nesterov, Introductory Lectures on Convex Optimization, 2004,
Thm 2.2.7). The certificate is evaluated at projected iterates x in C and
returns x+; a floating-point allowance is added to ||G|| before the test.

The iteration limit is the larger of ``max_iter`` and a budget within which the
certificate is reached in exact arithmetic on every input (:func:`certified_budget`,
from the method's proven rate): ``max_iter`` cannot make a valid run fail. If the
certificate is not met, nothing is returned (:class:`CertificateError`, whose message
carries no number): only possible when the accuracy asked for is below the
floating-point allowance.
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


#: the one message of the :class:`CertificateError` raised here (no data-dependent number)
CERTIFICATE_MESSAGE = (
    "the solver could not certify the requested accuracy in floating-point arithmetic; nothing "
    "is released: raise the accuracy, which is below the rounding allowance of the certificate"
)


def certified_budget(
    grad0: np.ndarray,
    x0: np.ndarray,
    x0_plus: np.ndarray,
    *,
    smoothness: float,
    strong_convexity: float,
    accuracy: float,
    gradient_scale: float,
) -> float:
    """Iterations k after which the certificate holds at x_k, in exact arithmetic (or inf).

    From x_0 in C, the first gradient g_0 = grad J(x_0) and x_0+ (G_0 = L (x_0 - x_0+)):
    Phi_0 = J(x_0) - J* + (mu/2)||x_0 - x*||^2 <= <g_0, x_0 - x_0+> + ||G_0||^2/(2 mu)
    + 2 ||G_0||^2 / mu (convexity; the certificate's inequality; ||x_0 - x*|| <= 2||G_0||/mu
    by the same inequality at z = x*). The accelerated projected gradient with momentum
    (sqrt(kappa) - 1)/(sqrt(kappa) + 1) has J(x_k) - J* <= (1 - q)^k Phi_0, q = 1/sqrt(kappa)
    (Beck, First-Order Methods in Optimization, SIAM 2017, Thm 10.42, V-FISTA with the
    indicator of C), and ||G(x_k)||^2 <= 2 L (J(x_k) - J*) (the same inequality at z = x_k).
    With the allowance s_k <= S = 1e-12 (gradient_scale + L (||x_0|| + 2||G_0||/mu +
    sqrt(2 Phi_0 / mu))), the certificate (||G|| + s)^2 / (2 mu) <= accuracy holds once
    sqrt(2 L Phi_0 (1-q)^k) <= sqrt(2 mu accuracy) - S. inf if S alone exceeds that.
    """
    L, mu = smoothness, strong_convexity
    G0 = L * float(np.linalg.norm(x0 - x0_plus))
    phi0 = max(float(grad0 @ (x0 - x0_plus)), 0.0) + G0**2 / (2.0 * mu) + 2.0 * G0**2 / mu
    reach = float(np.linalg.norm(x0)) + 2.0 * G0 / mu + math.sqrt(2.0 * phi0 / mu)
    allowance = 1e-12 * (gradient_scale + L * reach)
    room = math.sqrt(2.0 * mu * accuracy) - allowance
    if not (room > 0 and math.isfinite(phi0)):
        return math.inf
    need = 2.0 * L * phi0 / room**2
    if need <= 1.0:
        return 0.0
    q = math.sqrt(mu / L)
    if q >= 1.0:
        return 1.0
    return math.ceil(math.log(need) / -math.log1p(-q))


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
    orders of magnitude below this for n < 10^9). Runs up to the larger of ``max_iter``
    and :func:`certified_budget` iterations.

    Raises:
        CertificateError: if the certificate is not reached (a fixed message): only when
            ``accuracy`` is below what the floating-point allowance lets it certify.
    """
    L = v.positive("smoothness", smoothness)
    mu = v.positive("strong_convexity", strong_convexity)
    accuracy = v.positive("accuracy", accuracy)
    if mu > L:
        raise ValueError("strong_convexity cannot exceed smoothness")
    check_every = max(1, int(check_every))
    kappa = L / mu
    momentum = (math.sqrt(kappa) - 1.0) / (math.sqrt(kappa) + 1.0)
    x = project(np.asarray(x0, dtype=float))
    y = x.copy()
    evals = 0
    limit = max_iter
    it = 0
    while it < limit:
        it += 1
        if it % check_every == 1 or check_every == 1:
            g = grad(x)
            evals += 1
            x_plus = project(x - g / L)
            if it == 1:  # the budget from the first gradient: the limit is at least it
                budget = certified_budget(
                    g, x, x_plus, smoothness=L, strong_convexity=mu, accuracy=accuracy,
                    gradient_scale=gradient_scale,
                )  # fmt: skip
                if math.isfinite(budget):  # the check at x_k runs at iteration k + 1
                    limit = max(limit, 1 + check_every * (1 + math.ceil(budget / check_every)))
            slack = 1e-12 * (gradient_scale + L * float(np.linalg.norm(x)))
            gm = L * float(np.linalg.norm(x - x_plus)) + slack
            bound = gm**2 / (2.0 * mu)
            if bound <= accuracy:
                return Certified(x_plus, bound, it, evals)
            if not math.isfinite(bound):
                break
        g = grad(y)
        evals += 1
        x_new = project(y - g / L)
        y = x_new + momentum * (x_new - x)
        x = x_new
    raise CertificateError(CERTIFICATE_MESSAGE)
