"""Langevin samplers for densities proportional to exp(-f) (Ganesh's thesis, §3.4).

Source: Arun Ganesh, *Improved Algorithms and Upper Bounds in Differential Privacy*, PhD
thesis, UC Berkeley EECS-2022-53, chapter 3.

* :func:`ula` — discretized overdamped Langevin dynamics (the unadjusted Langevin
  algorithm): x_{i+1} = x_i - eta grad f(x_i) + N(0, 2 eta I)
  (thesis §3.4).
* :func:`underdamped` — discretized underdamped dynamics (3.1): the gradient is
  frozen at the start of each step and the linear SDE
  dv = -gamma v dt - mu g dt + sqrt(2 gamma mu) dB, dx = v dt is solved exactly
  (derived here; the thesis's sub-step Euler scheme converges to it):
  v' = e1 v - mu g (1 - e1)/gamma + zeta_v,
  x' = x + v (1 - e1)/gamma - mu g (h/gamma - (1 - e1)/gamma^2) + zeta_x,
  e1 = e^(-gamma h), with jointly Gaussian (zeta_x, zeta_v) of variances
  (2 mu/gamma)(h - 2(1 - e1)/gamma + (1 - e1^2)/(2 gamma)), mu (1 - e1^2) and
  covariance mu (1 - e1)^2 / gamma.
* :func:`standardized` — the reductions of thesis §3.4: with x* the minimizer and m the
  strong convexity, y = sqrt(m)(x - x*) has potential g(y) = f(x* + y/sqrt m),
  1-strongly convex, (M/m)-smooth, minimum at 0 (the thesis prints
  "f(x - x*)" and "rescale by sqrt m"; these are the correct directions).

All samplers are vectorized over independent chains: ``x0`` of shape (k,) or
(chains, k); ``grad`` must map an array of that shape to the gradients row by row.
Only the final state is returned: it is the one the theory certifies.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from .. import _validation as v

Grad = Callable[[np.ndarray], np.ndarray]


def _start(x0) -> np.ndarray:
    x = np.array(x0, dtype=float)
    if x.ndim not in (1, 2) or x.size == 0:
        raise ValueError(f"x0 must have shape (k,) or (chains, k), got {x.shape}")
    if not np.all(np.isfinite(x)):
        raise ValueError("x0 must be finite (no NaN or inf)")
    return x


def _checked_grad(grad: Grad, x: np.ndarray) -> np.ndarray:
    g = np.asarray(grad(x), dtype=float)
    if g.shape != x.shape:
        raise ValueError(f"grad returned shape {g.shape}, expected {x.shape}")
    if not np.all(np.isfinite(g)):
        raise ValueError("grad returned NaN or inf (step size too large for this f?)")
    return g


def ula(grad: Grad, x0, step: float, steps: int, rng: np.random.Generator) -> np.ndarray:
    """Final state of ``steps`` ULA steps of size ``step`` (continuous time steps * step)."""
    step = v.positive("step", step)
    steps = v.positive_int("steps", steps)
    x = _start(x0)
    scale = math.sqrt(2.0 * step)
    for _ in range(steps):
        x = x - step * _checked_grad(grad, x) + scale * rng.standard_normal(x.shape)
    return x


def underdamped_coefficients(step: float, gamma: float, mu: float) -> dict:
    """Mean coefficients and noise covariance of one exact underdamped step."""
    h = v.positive("step", step)
    gamma = v.positive("gamma", gamma)
    mu = v.positive("mu", mu)
    e1 = math.exp(-gamma * h)
    one_m_e1 = -math.expm1(-gamma * h)
    one_m_e2 = -math.expm1(-2.0 * gamma * h)
    var_x = (2.0 * mu / gamma) * (h - 2.0 * one_m_e1 / gamma + one_m_e2 / (2.0 * gamma))
    var_v = mu * one_m_e2
    cov = mu * one_m_e1**2 / gamma
    return {
        "e1": e1,
        "a": one_m_e1 / gamma,  # x gains a * v
        "b": h / gamma - one_m_e1 / gamma**2,  # x loses mu * b * g
        "cov": np.array([[var_x, cov], [cov, var_v]]),
    }


def underdamped(
    grad: Grad,
    x0,
    step: float,
    steps: int,
    rng: np.random.Generator,
    *,
    gamma: float = 2.0,
    mu: float = 1.0,
    v0=None,
) -> tuple[np.ndarray, np.ndarray]:
    """Final (x, v) after ``steps`` exact steps of the discretized underdamped dynamics (3.1).

    Stationary law of the continuous dynamics: density proportional to
    exp(-(f(x) + ||v||^2 / (2 mu))). ``v0`` defaults to a draw from N(0, mu I).
    """
    steps = v.positive_int("steps", steps)
    c = underdamped_coefficients(step, gamma, mu)
    chol = np.linalg.cholesky(c["cov"])
    x = _start(x0)
    vel = math.sqrt(mu) * rng.standard_normal(x.shape) if v0 is None else _start(v0)
    if vel.shape != x.shape:
        raise ValueError(f"v0 must have the shape of x0 {x.shape}, got {vel.shape}")
    for _ in range(steps):
        g = _checked_grad(grad, x)
        z1, z2 = rng.standard_normal(x.shape), rng.standard_normal(x.shape)
        x, vel = (
            x + c["a"] * vel - mu * c["b"] * g + chol[0, 0] * z1,
            c["e1"] * vel - mu * c["a"] * g + chol[1, 0] * z1 + chol[1, 1] * z2,
        )
    return x, vel


def standardized(grad: Grad, minimizer, strong_convexity: float) -> tuple[Grad, Callable]:
    """grad of g(y) = f(x* + y / sqrt m) and the map y -> x = x* + y / sqrt m (thesis §3.4).

    g is 1-strongly convex and (M/m)-smooth with its minimum at 0 when f is
    m-strongly convex, M-smooth and minimized at x*. ULA on g with step eta is
    ULA on f with step eta / m, started from x* + y_0 / sqrt m.
    """
    m = v.positive("strong_convexity", strong_convexity)
    x_star = np.asarray(minimizer, dtype=float)
    root = math.sqrt(m)

    def grad_g(y: np.ndarray) -> np.ndarray:
        return np.asarray(grad(x_star + y / root)) / root

    def to_x(y: np.ndarray) -> np.ndarray:
        return x_star + y / root

    return grad_g, to_x


def ula_gaussian_variance(lam, step: float, steps: int, initial=1.0) -> np.ndarray:
    """Exact ULA variance after ``steps`` on f = lam x^2 / 2 (per eigen-direction).

    v_T = (1 - eta lam)^(2T) v_0 + v_inf (1 - (1 - eta lam)^(2T)),
    v_inf = 1 / (lam (1 - eta lam / 2)) (the stationary over-dispersion).
    """
    lam = np.asarray(lam, dtype=float)
    rho2 = (1.0 - step * lam) ** (2 * steps)
    v_inf = 1.0 / (lam * (1.0 - step * lam / 2.0))
    return rho2 * np.asarray(initial, dtype=float) + v_inf * (1.0 - rho2)
