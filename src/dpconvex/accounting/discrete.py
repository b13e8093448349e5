"""Privacy of discrete Gaussian and discrete Laplace noise on the integer lattice.

Registered with the accountants on import (see :func:`register_rdp` / :func:`register_pld`).
Everything is in lattice units: an integer-valued query whose neighbouring answers
differ by an integer vector w, ||w||_2 <= Delta (Gaussian) or ||w||_1 <= Delta
(Laplace). Since ||w||_2^2 and ||w||_1 are integers, only floor(Delta^2) and
floor(Delta) matter (floor(Delta)^2 in one dimension); we use them, computed
exactly from the float given.

Discrete Gaussian N_Z(0, sigma^2)^d (Canonne, Kamath & Steinke 2020, "The Discrete
Gaussian for Differential Privacy", arXiv 2004.00010; CKS):

* RDP: D_alpha(N_Z(0, s^2) || N_Z(v, s^2)) <= alpha v^2 / (2 s^2) for integer v
  (CKS Prop. 5; proof: sum_x p(x)^alpha p(x - v)^(1 - alpha) =
  e^(alpha (alpha - 1) v^2 / (2 s^2)) theta((alpha - 1) v) / theta(0) with
  theta(c) = sum_x e^(-(x - c)^2 / (2 s^2)), and theta(c) <= theta(0) because its
  Fourier coefficients are positive). Coordinates are independent, so the RDP of
  the product is alpha ||w||_2^2 / (2 s^2) (CKS Thm 14): the same curve as the
  continuous Gaussian with the same sensitivity-to-noise ratio.
* PLD, d = 1: the discrete Gaussian family is a monotone-likelihood-ratio family,
  so the worst integer shift is k = floor(Delta) (the Neyman-Pearson optimal tests
  are thresholds, whose power grows with the shift). Its privacy loss is
  L = (k^2 - 2 k X) / (2 s^2), X ~ N_Z(0, s^2), whose hockey-stick divergence is
  CKS Thm 7's exact delta. For s <= 1e5 the pmf is summed directly over
  |x| <= 10 s + 10 (the tail beyond is bounded by Phi-bar(10) and put at +inf);
  above, the survival function is bounded by P[L > l] <= Phi(ceil(x_l) + 1) / s)
  + (theta - 1), x_l = (k^2 - 2 s^2 l) / (2 k), which follows from
  sum_{x >= j} e^(-x^2/2s^2) <= int_{j-1}^inf e^(-x^2/2s^2) dx and
  sqrt(2 pi) s <= sum_x e^(-x^2/2s^2) = sqrt(2 pi) s theta (Poisson summation,
  theta = sum_n e^(-2 pi^2 s^2 n^2)); it costs one lattice step, a loss shift of
  k / s^2 < 1e-5 k / s there. Either way the loss is then rounded up to the PLD grid.
* PLD, d > 1: refused. The privacy loss (||w||^2 - 2 <w, X>) / (2 s^2) depends on
  the direction of w (the discrete Gaussian is not rotation invariant), CKS give
  no tight worst case over integer w with ||w||_2 <= Delta, and the 1-D discrete
  PLD can exceed the continuous Gaussian's (small s: TV 0.787 vs 0.683 at s = 0.5),
  so borrowing the continuous pair is not provably safe. "auto" accounting then
  uses RDP, which is exact in form for every d.

Discrete Laplace, P[X = x] proportional to e^(-|x|/b) (the law of CKS Alg. 2):

* Pure epsilon-DP with epsilon = floor(Delta) / b, since
  |(|x - w| - |x|)| <= |w| coordinatewise.
* d = 1 (and k = floor(Delta) <= 2^20): the exact privacy loss
  L = (|X - k| - |X|) / b, X under P: k/b with mass P[X <= 0] = 1 / (1 + e^(-1/b)),
  -k/b with mass P[X >= k] = e^(-k/b) / (1 + e^(-1/b)), (k - 2x)/b with mass p(x)
  for 0 < x < k (worst shift k again by monotone likelihood ratio). RDP is computed
  from the same atoms: (1/(alpha-1)) log E[e^((alpha-1) L)].
* otherwise: the randomized-response pair with epsilon (loss +epsilon w.p.
  e^eps / (1 + e^eps), -epsilon otherwise), of which every epsilon-DP pair is a
  post-processing (Kairouz, Oh & Viswanath 2015, "The composition theorem for
  differential privacy": binary randomized response is the worst case; it is the
  pair dp_accounting's ``from_privacy_parameters`` uses); RDP by data processing
  (van Erven & Harremoes 2014, Thm 9):
  (1/(alpha-1)) log((e^(alpha eps) + e^((1-alpha) eps)) / (1 + e^eps)).
* Not dp_accounting's continuous ``LaplaceDpEvent``: at the same epsilon the
  discrete law puts mass 1/(1 + e^(-1/b)) > 1/2 on the largest loss, e.g. b = k = 1
  gives TV 0.462 against the continuous Laplace's 1 - e^(-1/2) = 0.393.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
from scipy.special import logsumexp, ndtr, ndtri

from .. import _validation as v
from . import pld as _pld
from .events import DiscreteGaussianDpEvent, DiscreteLaplaceScaleDpEvent
from .registry import register_pld, register_rdp

#: Above this sigma (lattice units) the 1-D discrete Gaussian PLD uses the
#: survival-function bound instead of summing the pmf.
DIRECT_SUM_MAX_SIGMA = 1e5
#: Above this integer shift the 1-D discrete Laplace is priced as randomized response.
LAPLACE_ATOMS_MAX = 2**20
_TAIL_SIGMAS = 10


def _floor(x: float) -> int:
    return math.floor(Fraction(x))


def _floor_square(x: float) -> int:
    return math.floor(Fraction(x) ** 2)


# -- discrete Gaussian -------------------------------------------------------------------


def discrete_gaussian_rdp(
    orders, sigma: float, sensitivity: float, dimension: int = 1
) -> np.ndarray:
    """RDP alpha ||w||^2 / (2 sigma^2) of N_Z(0, sigma^2)^d (CKS 2020, Prop. 5 and Thm 14).

    ||w||^2 is bounded by floor(Delta)^2 in one dimension and floor(Delta^2) in more.
    """
    sigma = v.positive("sigma", sigma)
    sensitivity = v.positive("sensitivity", sensitivity)
    if v.positive_int("dimension", dimension) == 1:
        sq = _floor(sensitivity) ** 2
    else:
        sq = _floor_square(sensitivity)
    orders = np.asarray(orders, dtype=float)
    return orders * sq / (2.0 * sigma**2)


def _theta_minus_one(sigma: float) -> float:
    """theta - 1 = 2 sum_{n>=1} e^(-2 pi^2 sigma^2 n^2) <= 2 r / (1 - r), r = e^(-2 pi^2 s^2)."""
    r = math.exp(-2.0 * math.pi**2 * sigma**2)
    return 2.0 * r / (1.0 - r)


def discrete_gaussian_loss_pmf(
    sigma: float, sensitivity: float, h: float = 1e-4, tail_mass: float = _pld.DEFAULT_TAIL_MASS
) -> _pld.LossPmf:
    """Pessimistic PLRV of the 1-D discrete Gaussian mechanism (CKS 2020, Thm 7's pair).

    Shift k = floor(``sensitivity``); loss L = (k^2 - 2 k X) / (2 sigma^2) with
    X ~ N_Z(0, sigma^2), rounded up to the grid h (module docstring).
    """
    sigma = v.positive("sigma", sigma)
    k = _floor(v.positive("sensitivity", sensitivity))
    h = v.positive("h", h)
    if k == 0:  # neighbours' answers coincide on the lattice: no privacy loss
        return _pld.LossPmf(h, 0, np.array([1.0]), 0.0)
    s2 = sigma**2
    if sigma <= DIRECT_SUM_MAX_SIGMA:
        half = math.ceil(_TAIL_SIGMAS * sigma) + 10
        x = np.arange(-half, half + 1, dtype=float)
        logw = -(x**2) / (2.0 * s2)
        p = np.exp(logw - logsumexp(logw))
        losses = (k * k - 2.0 * k * x) / (2.0 * s2)
        # P[X < -half] <= Phi-bar(half / sigma) (module docstring): put it at +inf
        return _pld._bin_up(losses, p, h, float(ndtr(-half / sigma)))
    theta1 = _theta_minus_one(sigma)

    def sf(loss):
        x_l = (k * k - 2.0 * s2 * np.asarray(loss, dtype=float)) / (2.0 * k)
        return np.minimum(1.0, ndtr((np.ceil(x_l) + 1.0) / sigma) + theta1)

    mu = k * k / (2.0 * s2)
    z = -float(ndtri(tail_mass / 2))
    spread = z * k / sigma + 2.0 * k / s2
    return _pld._discretize(sf, mu - spread, mu + spread, h)


def _gaussian_pld_check(event: DiscreteGaussianDpEvent) -> str | None:
    if event.dimension == 1:
        return None
    return (
        f"no provably valid PLD for the {event.dimension}-dimensional discrete Gaussian "
        "(its privacy loss depends on the direction of the shift; CKS 2020 give no tight "
        "worst case): use RDP accounting (CKS Thm 14), which 'auto' does"
    )


# -- discrete Laplace --------------------------------------------------------------------


def discrete_laplace_epsilon(scale: float, sensitivity: float) -> float:
    """Pure-DP epsilon floor(Delta_1) / scale of discrete Laplace noise (lattice units)."""
    return _floor(v.positive("sensitivity", sensitivity)) / v.positive("scale", scale)


def discrete_laplace_loss_atoms(scale: float, k: int) -> tuple[np.ndarray, np.ndarray]:
    """Exact privacy-loss atoms (losses, masses) of the 1-D discrete Laplace with shift k >= 1."""
    b = v.positive("scale", scale)
    k = v.positive_int("k", k)
    r = math.exp(-1.0 / b)
    c = math.tanh(0.5 / b)  # p(x) = c e^(-|x|/b)
    x = np.arange(1, k, dtype=float)
    losses = np.concatenate(([k / b, -k / b], (k - 2.0 * x) / b))
    masses = np.concatenate(([1.0 / (1.0 + r), math.exp(-k / b) / (1.0 + r)], c * np.exp(-x / b)))
    return losses, masses


def _rr_atoms(eps: float) -> tuple[np.ndarray, np.ndarray]:
    masses = np.array([1.0 / (1.0 + math.exp(-eps)), 1.0 / (1.0 + math.exp(eps))])
    return np.array([eps, -eps]), masses


def _laplace_atoms(event: DiscreteLaplaceScaleDpEvent) -> tuple[np.ndarray, np.ndarray] | None:
    k = _floor(event.sensitivity)
    if k == 0:
        return None
    if event.dimension == 1 and k <= LAPLACE_ATOMS_MAX:
        return discrete_laplace_loss_atoms(event.scale, k)
    return _rr_atoms(k / event.scale)


def discrete_laplace_rdp(orders, event: DiscreteLaplaceScaleDpEvent) -> np.ndarray:
    """RDP of ``event`` from its loss atoms: (1/(alpha-1)) log E_P[e^((alpha-1) L)]; KL at 1."""
    orders = np.asarray(orders, dtype=float)
    atoms = _laplace_atoms(event)
    if atoms is None:
        return np.zeros_like(orders)
    losses, masses = atoms
    out = np.empty_like(orders)
    logm = np.log(masses)
    for i, a in enumerate(orders.ravel()):
        if a == 1.0:
            out.flat[i] = float(np.dot(masses, losses))
        else:
            out.flat[i] = float(logsumexp(logm + (a - 1.0) * losses)) / (a - 1.0)
    return np.maximum(out, 0.0)


def discrete_laplace_loss_pmf(event: DiscreteLaplaceScaleDpEvent, h: float = 1e-4) -> _pld.LossPmf:
    """Pessimistic PLRV of ``event``: its loss atoms rounded up to the grid h."""
    atoms = _laplace_atoms(event)
    if atoms is None:
        return _pld.LossPmf(h, 0, np.array([1.0]), 0.0)
    return _pld._bin_up(atoms[0], atoms[1], h, 0.0)


# -- registration ------------------------------------------------------------------------

register_rdp(
    DiscreteGaussianDpEvent,
    lambda e, orders: discrete_gaussian_rdp(orders, e.sigma, e.sensitivity, e.dimension),
)
register_pld(
    DiscreteGaussianDpEvent,
    lambda e, h: discrete_gaussian_loss_pmf(e.sigma, e.sensitivity, h),
    check=_gaussian_pld_check,
)
register_rdp(DiscreteLaplaceScaleDpEvent, lambda e, orders: discrete_laplace_rdp(orders, e))
register_pld(DiscreteLaplaceScaleDpEvent, lambda e, h: discrete_laplace_loss_pmf(e, h))
