"""Privacy bounds of objective perturbation and AMP for generalized linear models.

Source: Redberg, Koskela & Wang, "Improving the Privacy and Practicality of
Objective Perturbation for Differentially Private Linear Learners" (NeurIPS 2023,
arXiv 2401.00583), cited below as Redberg et al., with corrections of misprinted
formulas noted where they are used (:func:`objpert_delta`, :class:`DominatingPair`).

Setting (all functions): the loss is GLM, l(theta; z) = f(x^T theta; y), with
f beta-smooth (``beta`` = sup f'' * R^2 for rows of norm <= R), per-example
gradient norm <= ``lipschitz`` (L = sup|f'| * R, or the clip threshold C),
regularization (lam/2)||theta||^2 on every coordinate, noise b ~ N(0, sigma^2 I),
add/remove neighbours, and lam > beta strictly. Outside that setting these
numbers are not privacy guarantees; the functions raise when lam <= beta.

Notation: s = L / sigma and c = -log(1 - beta/lam) >= 0 (the "Jacobian term").
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike
from scipy.special import erf, log_ndtr, ndtr

from .. import _validation as v
from .calibration import smallest_epsilon
from .gaussian import gaussian_delta, gaussian_rdp
from .limits import bounded, bounded_ratio, check_count

_LOG2 = math.log(2.0)


def _params(sigma: float, lam: float, beta: float, lipschitz: float) -> tuple[float, float]:
    """Validate the mechanism parameters; return (s, c)."""
    sigma = bounded("sigma", sigma)
    lipschitz = bounded("lipschitz", lipschitz)
    lam, beta = v.regularization_exceeds_smoothness(lam, beta)
    bounded("lam", lam)
    s = bounded_ratio("lipschitz / sigma", lipschitz / sigma, "change sigma or lipschitz")
    return s, -math.log1p(-beta / lam)


def jacobian_term(lam: float, beta: float) -> float:
    """c = |log(1 - beta/lam)| = -log(1 - beta/lam), the leading term of Thms 3.1/3.2."""
    lam, beta = v.regularization_exceeds_smoothness(lam, beta)
    return -math.log1p(-beta / lam)


def _as_array(name: str, values: ArrayLike) -> np.ndarray:
    arr = np.asarray(values, dtype=float)
    if np.isnan(arr).any():
        raise ValueError(f"{name} must not contain NaN")
    return arr


def _scalar_or_array(arr: np.ndarray) -> np.ndarray | float:
    return arr if arr.ndim else float(arr)


def half_normal_log_mgf(t: ArrayLike, s: float) -> np.ndarray | float:
    """log E[exp(t|X|)] for X ~ N(0, s^2) and t >= 0: t^2 s^2 / 2 + log(2 Phi(t s)).

    The moment generating function of the half-normal that appears in Thm 3.2
    of Redberg et al., in closed form. ``log(2 Phi(x))`` is
    computed as ``log1p(erf(x/sqrt 2))`` for moderate x (keeps relative
    precision as x -> 0) and as ``log 2 + log_ndtr(x)`` for large x.
    """
    s = v.nonnegative("s", s)
    t = _as_array("t", t)
    if (t < 0).any():
        raise ValueError("t must be >= 0")
    x = t * s
    log_two_phi = np.where(
        x < 5.0, np.log1p(erf(np.minimum(x, 5.0) / math.sqrt(2.0))), _LOG2 + log_ndtr(x)
    )
    return _scalar_or_array(0.5 * x**2 + log_two_phi)


# ----------------------------------------------------------------------------
# Approximate DP: the privacy profile (Thm 3.1) and its inverse
# ----------------------------------------------------------------------------


def objpert_delta(
    epsilon: ArrayLike, *, sigma: float, lam: float, beta: float, lipschitz: float
) -> np.ndarray | float:
    """Privacy profile delta(epsilon) of objective perturbation (Redberg et al., Thm 3.1).

    Corrects two misprints in the statement of Thm 3.1 (its proof in App. D.2 has the
    right forms): the printed eps_tilde and eps_hat add |log(1 - beta/lam)| where it
    must be subtracted, and the second case prints H_{e^(L^2/sigma^2)} for
    H_{e^(L^2/(2 sigma^2))}. With
    eps_hat = epsilon - c - s^2/2 and a = max(eps_hat, 0),

        delta(epsilon) = 2 Phi(-a/s) - 2 exp(eps_hat + s^2/2) Phi(-a/s - s),

    which equals 2 H_{e^(eps - c)}(N(L,sigma^2) || N(0,sigma^2)) for eps_hat >= 0
    and (1 - e^eps_hat) + 2 e^eps_hat H_{e^(L^2/2sigma^2)}(...) otherwise, and
    E[1 - e^(epsilon - w)]_+ with w = c + s^2/2 + |N(0, s^2)| (Lemma D.3, eq. D.4).
    The last form makes it valid for every real epsilon, negative ones included,
    and equal to the hockey-stick divergence of the dominating pair of App. D.3.
    Vectorized over ``epsilon``.
    """
    s, c = _params(sigma, lam, beta, lipschitz)
    eps = _as_array("epsilon", epsilon)
    eps_hat = eps - c - 0.5 * s**2
    a = np.maximum(eps_hat, 0.0)
    with np.errstate(invalid="ignore"):
        log_first = _LOG2 + log_ndtr(-a / s)
        log_second = _LOG2 + eps_hat + 0.5 * s**2 + log_ndtr(-a / s - s)
        delta = np.exp(log_first) * -np.expm1(np.minimum(log_second - log_first, 0.0))
    delta = np.where(log_first == -np.inf, 0.0, delta)  # so far out that both terms underflow
    delta = np.where(eps == np.inf, 0.0, np.where(eps == -np.inf, 1.0, delta))
    return _scalar_or_array(np.clip(delta, 0.0, 1.0))


def objpert_epsilon(
    delta: float, *, sigma: float, lam: float, beta: float, lipschitz: float
) -> float:
    """Smallest epsilon >= 0 with objpert_delta(epsilon) <= delta (Redberg et al., Thm 3.1).

    Computed by the package's safe-side calibrator: the profile is checked to
    hold at the returned epsilon.
    """
    _params(sigma, lam, beta, lipschitz)
    return smallest_epsilon(
        lambda e: objpert_delta(e, sigma=sigma, lam=lam, beta=beta, lipschitz=lipschitz), delta
    )


# ----------------------------------------------------------------------------
# Renyi DP (Thm 3.2) and AMP (Thm 4.1)
# ----------------------------------------------------------------------------


def objpert_rdp(
    alpha: ArrayLike, *, sigma: float, lam: float, beta: float, lipschitz: float
) -> np.ndarray | float:
    """RDP curve of objective perturbation (Redberg et al., Thm 3.2), in closed form.

    For alpha > 1 (the half-normal moment generating function of the theorem evaluated in
    closed form, checked against quadrature in the tests):

        eps(alpha) = c + alpha s^2 / 2 + log(2 Phi((alpha - 1) s)) / (alpha - 1),

    i.e. c + s^2/2 + (1/(alpha-1)) log E[e^((alpha-1)|X|)], X ~ N(0, s^2), the
    half-normal moment generating function evaluated with ``log_ndtr``/``erf``.

    At alpha = 1 the theorem's own value is returned: c + s^2 + log(2 Phi(s))
    (the KL bound as stated in Thm 3.2; it coincides with the alpha = 2 value).
    The limit alpha -> 1+ of the formula above, c + s^2/2 + s sqrt(2/pi), is
    smaller; it is what the curve approaches for alpha slightly above 1.
    Orders below 1 raise.
    """
    s, c = _params(sigma, lam, beta, lipschitz)
    a = _as_array("alpha", alpha)
    if (a < 1).any():
        raise ValueError("RDP order alpha must be >= 1")
    t = np.where(a > 1, a - 1.0, 1.0)
    above_one = c + 0.5 * s**2 + np.asarray(half_normal_log_mgf(t, s)) / t
    at_one = c + s**2 + math.log(2.0 * ndtr(s))
    return _scalar_or_array(np.where(a > 1, above_one, at_one))


def amp_output_sensitivity(tau: float, lam: float) -> float:
    """l2-sensitivity 2*tau/lam of AMP's output step (Redberg et al., Thm 4.1 / F.1).

    lam-strong convexity and ||grad L^P(theta~)|| <= tau give
    ||theta~ - theta^P|| <= tau/lam for each of the two neighbouring datasets.
    """
    return 2.0 * bounded("tau", tau) / bounded("lam", lam)


def amp_rdp(
    alpha: ArrayLike,
    *,
    sigma: float,
    lam: float,
    beta: float,
    lipschitz: float,
    tau: float,
    sigma_out: float,
) -> np.ndarray | float:
    """RDP of Algorithm 1 (AMP, gradient clipping at C = ``lipschitz``), Redberg et al. Thm 4.1.

    eps(alpha) = Thm 3.2 curve + alpha (2 tau / lam)^2 / (2 sigma_out^2): the adaptive
    composition of objective perturbation and a Gaussian mechanism of
    sensitivity 2*tau/lam and noise sigma_out.
    """
    sens = amp_output_sensitivity(tau, lam)
    bounded_ratio(
        "the output step's noise multiplier sigma_out * lam / (2 tau)",
        bounded("sigma_out", sigma_out) / sens,
        "change sigma_out, tau or lam",
    )
    out = np.asarray(
        objpert_rdp(alpha, sigma=sigma, lam=lam, beta=beta, lipschitz=lipschitz), dtype=float
    ) + np.asarray(gaussian_rdp(alpha, sens, v.positive("sigma_out", sigma_out)))
    return _scalar_or_array(out)


# ----------------------------------------------------------------------------
# Baselines for comparison: Kifer et al. (Thm 2.8) and the Gaussian lower bound
# ----------------------------------------------------------------------------


def kifer_delta(
    epsilon: ArrayLike, *, sigma: float, lam: float, beta: float, lipschitz: float
) -> np.ndarray | float:
    """delta(epsilon) implied by Kifer et al. 2012 (Redberg et al., Thm 2.8), for comparison only.

    Thm 2.8 gives (eps, delta)-DP when lam >= 2 beta/eps and
    sigma >= L sqrt(8 log(2/delta) + 4 eps)/eps. Solved for delta at fixed
    (sigma, lam):
    delta = min(1, 2 exp(-(eps^2 sigma^2 / L^2 - 4 eps) / 8)) when eps >= 2 beta/lam.
    Where the theorem gives no guarantee (eps < 2 beta/lam) the trivial value 1 is
    returned. (The proof of Thm 2.8 has the GLM gap of App. E; the bound is kept
    as the historical baseline of Fig. 1.)
    """
    sigma = bounded("sigma", sigma)
    lam = bounded("lam", lam)
    beta = v.nonnegative("beta", beta)
    lipschitz = bounded("lipschitz", lipschitz)
    eps = _as_array("epsilon", epsilon)
    with np.errstate(over="ignore"):
        bound = np.minimum(1.0, 2.0 * np.exp(-((eps * sigma / lipschitz) ** 2 - 4 * eps) / 8))
    return _scalar_or_array(np.where(eps >= 2 * beta / lam, bound, 1.0))


def kifer_epsilon(
    delta: float, *, sigma: float, lam: float, beta: float, lipschitz: float
) -> float:
    """Smallest epsilon that Kifer et al. 2012 (Redberg et al., Thm 2.8) certify as (eps, delta)-DP.

    Both conditions of the theorem, solved for epsilon:
    eps >= 2 beta/lam and sigma^2 eps^2 - 4 L^2 eps - 8 L^2 log(2/delta) >= 0.
    """
    delta = v.probability_open("delta", delta)
    lam = bounded("lam", lam)
    beta = v.nonnegative("beta", beta)
    s = bounded_ratio(
        "lipschitz / sigma",
        bounded("lipschitz", lipschitz) / bounded("sigma", sigma),
        "change sigma or lipschitz",
    )
    sigma, lipschitz = 1.0 / s, 1.0  # the bound depends on L / sigma only
    l2 = lipschitz**2
    root = (4 * l2 + math.sqrt(16 * l2**2 + 32 * sigma**2 * l2 * math.log(2 / delta))) / (
        2 * sigma**2
    )
    return max(2 * beta / lam, root)


def gaussian_lower_bound_delta(
    epsilon: ArrayLike, *, sigma: float, lipschitz: float, compositions: int = 1
) -> np.ndarray | float:
    """Lower bound on the privacy profile of objective perturbation (Redberg et al., Lemma 3.4).

    The linear loss x^T theta with ||x|| = L makes objective perturbation a
    Gaussian mechanism of sensitivity L and noise sigma, for every lam and beta;
    no bound for the class can be below its profile. K-fold composition of that
    witness is the Gaussian mechanism with sensitivity sqrt(K) L.
    """
    k = check_count("compositions", compositions)
    return gaussian_delta(
        epsilon, math.sqrt(k) * bounded("lipschitz", lipschitz), bounded("sigma", sigma)
    )


def gaussian_lower_bound_epsilon(
    delta: float, *, sigma: float, lipschitz: float, compositions: int = 1
) -> float:
    """Epsilon at ``delta`` of the witness of Redberg et al., Lemma 3.4: no valid bound is lower."""
    return smallest_epsilon(
        lambda e: gaussian_lower_bound_delta(
            e, sigma=sigma, lipschitz=lipschitz, compositions=compositions
        ),
        delta,
    )


# ----------------------------------------------------------------------------
# The dominating pair of App. D.3
# ----------------------------------------------------------------------------


@dataclass(frozen=True)
class DominatingPair:
    """The dominating pair (P, Q) of objective perturbation (Redberg et al., App. D.3, Lemma D.6).

    P is the half-normal |N(0, sigma^2)| on [0, inf). Q has density
    (1 - beta/lam) * 2 phi_sigma(x + L) on [0, inf) — the paper prints (t - L)^2,
    a misprint corrected here to (x + L)^2 — plus an atom of mass
    ``q_atom`` = 1 - 2 (1 - beta/lam) Phi(-L/sigma) placed where P has no mass.
    On x >= 0 the privacy loss is log P/Q = c + L^2/(2 sigma^2) + L x / sigma^2, so
    H_{e^eps}(P || Q) equals :func:`objpert_delta` for every real eps.
    """

    sigma: float
    lam: float
    beta: float
    lipschitz: float

    def __post_init__(self) -> None:
        _params(self.sigma, self.lam, self.beta, self.lipschitz)

    @property
    def q_atom(self) -> float:
        return 1.0 - 2.0 * (1.0 - self.beta / self.lam) * float(ndtr(-self.lipschitz / self.sigma))

    def p_pdf(self, x: ArrayLike) -> np.ndarray:
        x = np.asarray(x, dtype=float)
        dens = 2.0 * np.exp(-0.5 * (x / self.sigma) ** 2) / (self.sigma * math.sqrt(2 * math.pi))
        return np.where(x >= 0, dens, 0.0)

    def q_pdf(self, x: ArrayLike) -> np.ndarray:
        """Density of the continuous part of Q (total mass 1 - q_atom)."""
        x = np.asarray(x, dtype=float)
        z = (x + self.lipschitz) / self.sigma
        dens = (
            (1.0 - self.beta / self.lam)
            * 2.0
            * np.exp(-0.5 * z**2)
            / (self.sigma * math.sqrt(2 * math.pi))
        )
        return np.where(x >= 0, dens, 0.0)

    def privacy_loss(self, x: ArrayLike) -> np.ndarray:
        """log P(x)/Q(x) on the support of P."""
        x = np.asarray(x, dtype=float)
        c = -math.log1p(-self.beta / self.lam)
        return c + self.lipschitz**2 / (2 * self.sigma**2) + self.lipschitz * x / self.sigma**2
