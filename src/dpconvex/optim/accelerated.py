"""Nesterov's accelerated gradient method, once, for both certified solvers.

:func:`accelerated_steps` is the constant-step scheme for a mu-strongly convex, L-smooth J
over a closed convex set C (Nesterov, Introductory Lectures on Convex Optimization, 2004,
scheme (2.2.19); Beck, First-Order Methods in Optimization, SIAM 2017, Thm 10.42,
V-FISTA). Two certificates stop it:

* ||grad F|| <= tau, unconstrained (C = R^d): the provable phase of
  :func:`dpconvex.optim.solve` (:func:`accelerated_phase`, budget :func:`accelerated_budget`),
  which AMP's privacy proof needs (Redberg, Koskela & Wang, arXiv 2401.00583, Thm 4.1);
* J(x+) - min_C J <= alpha by the gradient mapping: :func:`certified_minimize`
  (budget :func:`certified_budget`), for Algorithms 1-2 of Su, Zhao & Wang
  (arXiv 2303.18047), described below.

**The gap certificate.** Certified optimizer O(J, alpha) of Algorithms 1-2: accelerated
projected gradient.

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
from collections.abc import Callable, Generator
from dataclasses import dataclass

import numpy as np

from .. import _validation as v
from .certificate import CERTIFICATE_MESSAGE, GAP_CERTIFICATE_MESSAGE, CertificateError


def nesterov_momentum(kappa: float) -> float:
    """(sqrt(kappa) - 1) / (sqrt(kappa) + 1), the momentum of the scheme for kappa = L / mu."""
    return (math.sqrt(kappa) - 1.0) / (math.sqrt(kappa) + 1.0)


def accelerated_steps(
    grad: Callable[[np.ndarray], np.ndarray],
    project: Callable[[np.ndarray], np.ndarray],
    x: np.ndarray,
    *,
    smoothness: float,
    momentum: float,
) -> Generator[tuple[np.ndarray, np.ndarray], np.ndarray | None, None]:
    """Nesterov's scheme from x_0 = y_0 = ``x`` (a point of C); yields (x_k, y_k), k = 0, 1, ...

        x_{k+1} = Proj_C(y_k - grad J(y_k) / L),  y_{k+1} = x_{k+1} + m (x_{k+1} - x_k).

    The step after a yield evaluates grad J(y_k), unless the caller already has it and
    sends it in (``steps.send(g)``): no gradient is computed twice.
    """
    y = x
    while True:
        g = yield x, y
        if g is None:
            g = grad(y)
        x_new = project(y - g / smoothness)
        y = x_new + momentum * (x_new - x)
        x = x_new


def accelerated_budget(kappa: float, start_norm: float, tau: float) -> int:
    """Gradient evaluations after which :func:`_accelerated` has ||grad F(y_k)|| <= tau.

    For a mu-strongly convex, L-smooth F (kappa = L/mu >= 1), Nesterov's constant-step
    scheme x_{k+1} = y_k - grad F(y_k)/L, y_{k+1} = x_{k+1} + m (x_{k+1} - x_k),
    m = (sqrt(kappa) - 1)/(sqrt(kappa) + 1), y_0 = x_0, has
    F(x_k) - F* <= (1 - q)^k (F(x_0) - F* + (mu/2)||x_0 - x*||^2), q = 1/sqrt(kappa)
    (Nesterov, Introductory Lectures on Convex Optimization, 2004, Thm 2.2.3 with
    gamma_0 = mu, scheme (2.2.19); Beck, First-Order Methods in Optimization, 2017,
    Thm 10.42). With (mu/2)||x - x*||^2 <= F(x) - F* <= ||grad F(x)||^2/(2 mu), the bracket
    is at most g_0^2/mu (g_0 = ||grad F(x_0)||) and ||x_k - x*||^2 <= 2 (1-q)^k g_0^2 / mu^2;
    since y_k - x* = (1+m)(x_k - x*) - m (x_{k-1} - x*) and m < 1,
    ||grad F(y_k)|| <= L ||y_k - x*|| <= 3 sqrt(2) kappa (1-q)^((k-1)/2) g_0. So
    ||grad F(y_k)|| <= tau for every
    k >= 1 + ln(18 kappa^2 g_0^2 / tau^2) / (-ln(1 - q)), about
    sqrt(kappa) (ln(18 kappa^2) + 2 ln(g_0/tau)). One more is added for rounding.
    """
    if not start_norm > tau:
        return 0
    if not (math.isfinite(kappa) and kappa >= 1.0 and math.isfinite(start_norm) and tau > 0):
        raise ValueError("the accelerated method needs a finite condition number and start")
    q = 1.0 / math.sqrt(kappa)
    if q >= 1.0:  # kappa = 1: x_1 is the minimizer, y_2 = x_1
        return 2
    log_ratio = (
        math.log(18.0) + 2.0 * math.log(kappa) + 2.0 * (math.log(start_norm) - math.log(tau))
    )
    return 2 + math.ceil(log_ratio / -math.log1p(-q))


#: the smoothness constant used by the provable phase is the objective's bound times this
#: (an allowance for the rounding of the sum of row norms that forms it)
SMOOTHNESS_ALLOWANCE = 1.0 + 1e-6


def _unconstrained(point: np.ndarray) -> np.ndarray:
    return point


def accelerated_phase(obj, tau: float, theta: np.ndarray, grad: np.ndarray):
    """The provable phase: Nesterov's accelerated gradient from theta (see
    :func:`accelerated_budget`), for at most its budget; returns (y, ||grad F(y)||, steps).

    Strong convexity mu = lam (the loss is convex) and smoothness L = ``obj.smoothness()``
    (sup f'' sum_i ||x_i||^2 + lam, at most n beta + lam); only gradients are evaluated,
    and each is the certificate test at the point returned.
    """
    smoothness = SMOOTHNESS_ALLOWANCE * float(obj.smoothness())
    kappa = max(smoothness / obj.lam, 1.0)
    norm = float(np.linalg.norm(grad))
    budget = accelerated_budget(kappa, norm, tau)
    steps = accelerated_steps(
        obj.gradient,
        _unconstrained,
        np.asarray(theta, dtype=np.float64),
        smoothness=smoothness,
        momentum=nesterov_momentum(kappa),
    )
    _, y = next(steps)
    for step in range(1, budget + 1):
        _, y = steps.send(grad)  # grad F(y_{k-1}), computed by the previous test
        grad = obj.gradient(y)
        norm = float(np.linalg.norm(grad))
        if norm <= tau or not math.isfinite(norm):
            return y, norm, step
    return y, norm, budget


def provable_start(obj, candidates: list) -> tuple[np.ndarray, np.ndarray]:
    """(point, its gradient): of the finite candidates, the one of smallest gradient norm."""
    best = None
    for theta in candidates:
        if theta is None or not np.all(np.isfinite(theta)):
            continue
        grad = obj.gradient(theta)
        norm = float(np.linalg.norm(grad))
        if math.isfinite(norm) and (best is None or norm < best[2]):
            best = (theta, grad, norm)
    if best is None:
        raise CertificateError(CERTIFICATE_MESSAGE)
    return best[0], best[1]


def can_prove(obj) -> bool:
    """Whether the provable phase applies: known smoothness (finite) and lam > 0."""
    if not hasattr(obj, "smoothness"):
        return False
    smoothness = float(obj.smoothness())
    return math.isfinite(smoothness) and obj.lam > 0 and math.isfinite(smoothness / obj.lam)


@dataclass(frozen=True)
class Certified:
    """A point ``theta`` in C with J(theta) - min_C J <= ``gap_bound`` <= the requested accuracy."""

    theta: np.ndarray
    gap_bound: float
    n_iter: int
    grad_evals: int


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
    evals = 0

    def counted_grad(point: np.ndarray) -> np.ndarray:
        nonlocal evals
        evals += 1
        return grad(point)

    x = project(np.asarray(x0, dtype=float))
    steps = accelerated_steps(
        counted_grad, project, x, smoothness=L, momentum=nesterov_momentum(L / mu)
    )
    limit = max_iter
    it = 0
    for x, _ in steps:  # each pass of the loop after the first takes one step (grad at y)
        if it >= limit:
            break
        it += 1
        if it % check_every == 1 or check_every == 1:
            g = counted_grad(x)
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
    raise CertificateError(GAP_CERTIFICATE_MESSAGE)
