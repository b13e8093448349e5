"""Private posterior (exponential-mechanism) sampling for GLMs with Langevin dynamics.

Target: S_D(theta) proportional to exp(-F_D(theta)) with
F_D(theta) = beta * sum_i f(x_i^T theta; y_i) + (lam/2) ||theta||^2, rows ||x_i|| <= R
(declared or enforced by the row policy, never read off the data), f a GLM loss
with |f'| <= L_f and f'' <= c_f. Then F_D is lam-strongly convex and
(lam + beta n c_f R^2)-smooth, and for add/remove neighbours F_D - F_D' =
+-beta f(x^T theta; y) is G-Lipschitz with G = beta L_f R.

* **Exact target** (Gopi, Lee & Liu 2022, "Private convex optimization via
  exponential mechanism", COLT; the GDP theorem for strongly convex F with a
  Lipschitz perturbation): sampling S_D is (G / sqrt(lam))-GDP. Checked here
  against 1-D quadrature and the Gaussian equality case (tests).
* ``accounting="thesis"`` — Ganesh's thesis (UC Berkeley EECS-2022-53), §3.2 and
  Thm 42: run ULA on the centred, rescaled potential from N(0, I) with
  (tau, eta) from :func:`dpconvex.sampling.theory.plan_thm42`, and chain
  P_D ~ S_D ~ S_D' ~ P_D' (:func:`~dpconvex.sampling.theory.chain_epsilon`).
  Centring uses a minimizer certified in float64 to ||grad F_D|| <= ``gradient_tol``;
  the potential is tilted by that residual gradient so that its minimum is
  exactly the centre (Thm 42's hypothesis), which adds 2 * gradient_tol to G.
  The required number of steps is astronomically large for any real problem
  (with the constants made explicit): the sampler refuses above ``max_steps``.
* ``accounting="composition"`` — each ULA step
  theta' = theta - eta grad F_D(theta) + N(0, 2 eta I) is a Gaussian mechanism
  on grad F_D with sensitivity eta G and noise sqrt(2 eta) (noise multiplier
  sqrt(2/eta)/G), adaptively composed T times from a data-independent start
  (theta_0 = 0): exact PLD accounting of ``SelfComposedDpEvent(GaussianDpEvent)``,
  valid for any step size (no convexity needed for privacy). Not in the thesis
  (it is noisy-GD accounting); the thesis remarks that later work bounds the
  last iterate uniformly in time (Chourasia, Ye & Shokri 2021). beta is
  calibrated so that the composition meets (epsilon, delta) at horizon
  tau = ``horizon``/lam with eta = ``step_fraction``/M.

The number of training rows n is treated as public (it fixes the smoothness
bound and hence the step size), as for DP-SGD's sampling rate.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import attr
import numpy as np
from dp_accounting.dp_event import GaussianDpEvent, SelfComposedDpEvent
from scipy import optimize

from .. import _validation as v
from .._random import make_rng
from ..accounting import (
    PrivacyAccountant,
    calibrate,
    gaussian_delta,
    gaussian_sigma,
    register_pld,
)
from ..accounting.events import DpEvent
from ..accounting.pld import LossPmf
from ..data.policy import add_intercept, design_bound, transform_rows
from ..losses import LOSSES, GLMLoss
from ..release import Release
from .langevin import standardized, ula
from .theory import MOVEMENT_CONSTANT, chain_epsilon, plan_thm42

ACCOUNTINGS = ("composition", "thesis")


def _positive_attr(instance, attribute, value):
    v.positive(attribute.name, value)


def _delta_attr(instance, attribute, value):
    v.probability_open(attribute.name, value)


@attr.s(frozen=True, slots=True, auto_attribs=True)
class ApproximateDpEvent(DpEvent):
    """A mechanism known only to be (epsilon, delta)-DP; priced by its worst case.

    The tight dominating pair of (epsilon, delta)-DP (Kairouz, Oh & Viswanath
    2015, Thm 2.1): loss +inf w.p. delta, +eps w.p. (1 - delta) e^eps/(1 + e^eps),
    -eps otherwise. Used for the thesis's chained sampler. PLD only.
    """

    epsilon: float = attr.ib(validator=_positive_attr)
    delta: float = attr.ib(validator=_delta_attr)


def _approx_pld(event: ApproximateDpEvent, h: float) -> LossPmf:
    e = event.epsilon
    p_hi = (1.0 - event.delta) / (1.0 + math.exp(-e))
    hi, lo = math.ceil(e / h), math.ceil(-e / h)
    probs = np.zeros(hi - lo + 1)
    probs[0] = 1.0 - event.delta - p_hi
    probs[-1] = p_hi
    return LossPmf(h, lo, probs, event.delta)


register_pld(ApproximateDpEvent, _approx_pld)


def check_loss(loss: GLMLoss) -> GLMLoss:
    """Refuse losses for which the privacy proofs fail (unbounded derivative or curvature)."""
    if not isinstance(loss, GLMLoss):
        raise TypeError(f"loss must be a GLMLoss, got {type(loss).__name__}")
    if not math.isfinite(loss.derivative_bound):
        raise ValueError(
            f"{loss.name} loss has an unbounded derivative: F_D - F_D' is not "
            "Lipschitz, so neither the exact nor the sampled mechanism is private "
            "(use a Lipschitz loss such as logistic or huber)"
        )
    if not math.isfinite(loss.curvature):
        raise ValueError(f"{loss.name} loss is not smooth (curvature bound is inf)")
    return loss


@dataclass(frozen=True)
class GLMPotential:
    """F_D = beta sum_i f(x_i^T theta; y_i) + lam/2 ||theta||^2 on rows of norm <= row_bound.

    Data-free description (n is public): its constants, and the GDP of exact sampling.
    """

    loss: GLMLoss
    beta: float
    lam: float
    row_bound: float
    n: int

    def __post_init__(self):
        check_loss(self.loss)
        v.positive("beta", self.beta)
        v.positive("lam", self.lam)
        v.positive("row_bound", self.row_bound)
        v.positive_int("n", self.n)

    @property
    def strong_convexity(self) -> float:
        return float(self.lam)

    @property
    def smoothness(self) -> float:
        return self.lam + self.beta * self.n * self.loss.curvature * self.row_bound**2

    @property
    def condition_number(self) -> float:
        return self.smoothness / self.lam

    @property
    def gradient_sensitivity(self) -> float:
        """G: Lipschitz constant of F_D - F_D' for add/remove neighbours (beta L_f R)."""
        return self.beta * self.loss.derivative_bound * self.row_bound

    def exact_mu(self, tilt: float = 0.0) -> float:
        """GDP parameter of exact sampling (GLL22): (G + 2 tilt) / sqrt(lam)."""
        return (self.gradient_sensitivity + 2.0 * tilt) / math.sqrt(self.lam)

    def gradient(self, X, y, thetas: np.ndarray) -> np.ndarray:
        """grad F_D at each row of ``thetas`` (shape (k,) or (chains, k))."""
        t = np.atleast_2d(thetas)
        u = np.asarray(X @ t.T)
        d = self.loss.derivative(u, y[:, None])
        g = self.beta * np.asarray(X.T @ d).T + self.lam * t
        return g.reshape(np.shape(thetas))

    def value_and_grad(self, X, y, theta: np.ndarray) -> tuple[float, np.ndarray]:
        u = np.asarray(X @ theta).ravel()
        value = self.beta * float(np.sum(self.loss.value(u, y))) + 0.5 * self.lam * theta @ theta
        return value, self.gradient(X, y, theta)


def exact_posterior_delta(epsilon, potential: GLMPotential, tilt: float = 0.0):
    """Privacy profile of exact sampling from S_D: the mu-GDP curve (GLL22)."""
    return gaussian_delta(epsilon, 1.0, 1.0 / potential.exact_mu(tilt))


# -- plans -------------------------------------------------------------------------------


def _safe_multiplier(epsilon: float, delta: float, steps: int) -> float:
    """Analytic-Gaussian noise multiplier for ``steps`` compositions, nudged up until the PLD
    accountant (which can exceed the analytic profile by ~1e-12 in epsilon) reports <= epsilon.
    """
    z = gaussian_sigma(epsilon, delta, math.sqrt(steps))
    for _ in range(100):
        event = SelfComposedDpEvent(GaussianDpEvent(z), steps)
        if PrivacyAccountant("pld").compose(event).get_epsilon(delta) <= epsilon:
            return z
        z *= 1.0 + 1e-9
    raise RuntimeError("could not calibrate the noise multiplier safely")  # pragma: no cover


def plan_composition(
    n: int,
    loss: GLMLoss,
    lam: float,
    row_bound: float,
    epsilon: float,
    delta: float,
    *,
    horizon: float = 5.0,
    step_fraction: float = 0.5,
) -> dict:
    """beta, steps T, step eta and noise multiplier for ``accounting="composition"``.

    tau = horizon / lam; for T steps the noise multiplier z_T is the analytic
    Gaussian one for sensitivity sqrt(T) (T steps compose exactly), which fixes
    G = sqrt(2/eta)/z_T and beta = G/(L_f R); T is increased until
    eta = tau/T <= step_fraction / M(beta). Data-free (cached on its arguments).
    """
    return dict(_plan_composition(n, loss, lam, row_bound, epsilon, delta, horizon, step_fraction))


@functools.lru_cache(maxsize=128)
def _plan_composition(n, loss, lam, row_bound, epsilon, delta, horizon, step_fraction) -> dict:
    check_loss(loss)
    lam = v.positive("lam", lam)
    epsilon = v.positive("epsilon", epsilon)
    delta = v.probability_open("delta", delta)
    horizon = v.positive("horizon", horizon)
    step_fraction = v.positive("step_fraction", step_fraction)
    if step_fraction >= 2:
        raise ValueError(
            f"step_fraction must be < 2 (ULA diverges beyond 2/M), got {step_fraction}"
        )
    tau = horizon / lam
    steps = 10
    for _ in range(100):
        z = _safe_multiplier(epsilon, delta, steps)
        eta = tau / steps
        G = math.sqrt(2.0 / eta) / z
        pot = GLMPotential(loss, G / (loss.derivative_bound * row_bound), lam, row_bound, n)
        needed = math.ceil(tau * pot.smoothness / step_fraction)
        if needed <= steps:
            break
        steps = needed
    else:  # pragma: no cover - the iteration converges in a few rounds
        raise RuntimeError("composition plan did not converge")
    return {
        "potential": pot,
        "beta": pot.beta,
        "steps": steps,
        "eta": eta,
        "tau": tau,
        "noise_multiplier": z,
        "event": SelfComposedDpEvent(GaussianDpEvent(z), steps),
        "condition_number": pot.condition_number,
    }


def plan_thesis(
    n: int,
    dim: int,
    loss: GLMLoss,
    lam: float,
    row_bound: float,
    epsilon: float,
    delta: float,
    *,
    movement_constant: float = MOVEMENT_CONSTANT,
    gradient_tol: float = 1e-9,
    link_fraction: float = 0.25,
) -> dict:
    """beta, Renyi order alpha, sampler budget and Thm 42 (tau, eta, T) for the thesis route.

    Each sampler link gets eps_1 = ``link_fraction`` * epsilon at delta_1 = delta/10,
    with alpha = 1 + 2 ln(1/delta_1)/eps_1 and Renyi budget eps_1/2 (the thesis's
    choice, §3.2: R_alpha <= eps/2 at that alpha gives (eps, delta) by Thm 14).
    The exact mechanism's mu is then the largest for which the chain
    (:func:`chain_epsilon`) meets (epsilon, delta); beta follows from
    mu = (G + 2 gradient_tol) / sqrt(lam).
    """
    check_loss(loss)
    lam = v.positive("lam", lam)
    epsilon = v.positive("epsilon", epsilon)
    delta = v.probability_open("delta", delta)
    dim = v.positive_int("dim", dim)
    eps1 = v.positive("link_fraction", link_fraction) * epsilon
    d1 = delta / 10.0
    alpha = 1.0 + 2.0 * math.log(1.0 / d1) / eps1
    renyi = eps1 / 2.0
    mu = calibrate(
        lambda m: -chain_epsilon(renyi, alpha, m, delta),
        -(epsilon - 1e-3),  # margin: the PLD of the (eps, delta) pair rounds eps up to 1e-4
        0.1,
        1.0,
        decreasing=True,
        floor=1e-9,
        ceiling=1e3,
        rtol=1e-6,
    )
    G = mu * math.sqrt(lam) - 2.0 * gradient_tol
    if G <= 0:
        raise ValueError("gradient_tol is too large for this budget")
    pot = GLMPotential(loss, G / (loss.derivative_bound * row_bound), lam, row_bound, n)
    sampler = plan_thm42(alpha, renyi, dim, pot.condition_number, movement_constant)
    return {
        "potential": pot,
        "beta": pot.beta,
        "mu": mu,
        "alpha": alpha,
        "sampler_renyi": renyi,
        "chain_epsilon": chain_epsilon(renyi, alpha, mu, delta),
        "condition_number": pot.condition_number,
        **{key: sampler[key] for key in ("tau", "eta", "steps")},
    }


# -- the mechanism -----------------------------------------------------------------------


@functools.lru_cache(maxsize=128)
def _pld_epsilon(event: DpEvent, delta: float) -> float:
    """epsilon(delta) reported by the PLD accountant (cached: events are immutable)."""
    return PrivacyAccountant("pld").compose(event).get_epsilon(delta)


def _design(X, y, loss: GLMLoss, row_norm, row_bound, fit_intercept, intercept_scaling):
    X = np.asarray(X, dtype=float)
    if X.ndim != 2 or X.shape[0] == 0:
        raise ValueError(f"X must be a non-empty 2-D array, got shape {X.shape}")
    if not np.all(np.isfinite(X)):
        raise ValueError("X must be finite (no NaN or inf)")
    y = np.asarray(y, dtype=float)
    if y.shape != (X.shape[0],) or not np.all(np.isfinite(y)):
        raise ValueError(f"y must be a finite vector of length {X.shape[0]}")
    if loss.binary and not np.all(np.isin(y, (-1.0, 1.0))):
        raise ValueError(f"{loss.name} loss needs labels in {{-1, +1}}")
    Xt = transform_rows(X, row_norm, row_bound)
    if fit_intercept:
        Xt = add_intercept(Xt, intercept_scaling)
    return Xt, y, design_bound(row_norm, row_bound, fit_intercept, intercept_scaling)


def _certified_minimizer(pot: GLMPotential, X, y, tol: float) -> tuple[np.ndarray, np.ndarray]:
    """argmin F_D to ||grad|| <= tol in float64 (refuses otherwise); returns (theta, grad)."""
    k = X.shape[1]

    def fun(theta):
        return pot.value_and_grad(X, y, theta)

    res = optimize.minimize(
        fun,
        np.zeros(k),
        jac=True,
        method="L-BFGS-B",
        options={"gtol": tol / 10, "ftol": 0.0, "maxiter": 50_000},
    )
    theta = res.x
    for _ in range(20):  # Newton polish (F_D is smooth and strongly convex)
        g = pot.gradient(X, y, theta)
        if np.linalg.norm(g) <= tol:
            return theta, g
        u = X @ theta
        H = pot.beta * (X.T * pot.loss.second_derivative(u, y)) @ X + pot.lam * np.eye(k)
        theta = theta - np.linalg.solve(H, g)
    g = pot.gradient(X, y, theta)
    if np.linalg.norm(g) > tol:
        raise ValueError(f"could not certify the minimizer to ||grad|| <= {tol}; nothing released")
    return theta, g


def posterior_sample(
    X,
    y,
    loss: str | GLMLoss = "logistic",
    *,
    epsilon: float,
    delta: float,
    lam: float = 1.0,
    accounting: str = "composition",
    horizon: float = 5.0,
    step_fraction: float = 0.5,
    row_norm: str = "normalize",
    row_bound: float = 1.0,
    fit_intercept: bool = True,
    intercept_scaling: float = 1.0,
    max_steps: int = 10_000_000,
    movement_constant: float = MOVEMENT_CONSTANT,
    gradient_tol: float = 1e-9,
    random_state=None,
) -> Release:
    """One (epsilon, delta)-DP sample of theta from the GLM posterior exp(-F_D), by ULA.

    See the module docstring for the two accountings. Rows are transformed by
    ``row_norm`` (free) and an intercept column appended, exactly as in
    :mod:`dpconvex.models`. The returned Release carries the event that prices
    it: the T-step Gaussian composition, or the chained (eps, delta) of the
    thesis route as an :class:`ApproximateDpEvent`.
    """
    if isinstance(loss, str):
        if loss not in LOSSES:
            raise ValueError(f"loss must be one of {tuple(LOSSES)}, got {loss!r}")
        loss = LOSSES[loss]()
    check_loss(loss)
    if accounting not in ACCOUNTINGS:
        raise ValueError(f"accounting must be one of {ACCOUNTINGS}, got {accounting!r}")
    epsilon = v.positive("epsilon", epsilon)
    delta = v.probability_open("delta", delta)
    max_steps = v.positive_int("max_steps", max_steps)
    Xt, y, R = _design(X, y, loss, row_norm, row_bound, fit_intercept, intercept_scaling)
    n, k = Xt.shape
    rng = make_rng(random_state)
    if accounting == "composition":
        plan = plan_composition(
            n, loss, lam, R, epsilon, delta, horizon=horizon, step_fraction=step_fraction
        )
        if plan["steps"] > max_steps:
            raise ValueError(f"needs {plan['steps']} steps > max_steps={max_steps}")
        pot = plan["potential"]
        theta = ula(lambda t: pot.gradient(Xt, y, t), np.zeros(k), plan["eta"], plan["steps"], rng)
        event = plan["event"]
    else:
        plan = plan_thesis(
            n,
            k,
            loss,
            lam,
            R,
            epsilon,
            delta,
            movement_constant=movement_constant,
            gradient_tol=gradient_tol,
        )
        if plan["steps"] > max_steps:
            raise ValueError(
                f"Thm 42 with explicit constants needs {plan['steps']:.3g} steps "
                f"(condition number {plan['condition_number']:.3g}, alpha {plan['alpha']:.3g}) "
                f"> max_steps={max_steps}; use accounting='composition'"
            )
        pot = plan["potential"]
        center, residual = _certified_minimizer(pot, Xt, y, gradient_tol)
        grad_g, to_x = standardized(
            lambda t: pot.gradient(Xt, y, t) - residual, center, pot.strong_convexity
        )
        theta = to_x(ula(grad_g, rng.standard_normal(k), plan["eta"], plan["steps"], rng))
        event = ApproximateDpEvent(plan["chain_epsilon"], delta)
    spent = _pld_epsilon(event, delta)
    if spent > epsilon:  # pragma: no cover - plans are calibrated on the safe side
        raise RuntimeError(f"planned event spends epsilon={spent} > {epsilon}; not released")
    info = {
        "accounting": accounting,
        "beta": plan["beta"],
        "lam": float(lam),
        "steps": plan["steps"],
        "eta": plan["eta"],
        "condition_number": plan["condition_number"],
        "epsilon": spent,
        "n_iter": plan["steps"],
    }
    return Release(theta, event, info)
