"""GG noise corrected by sparse vector (Ganesh's thesis, Thm 37), with explicit parameters.

The mechanism of Thm 37 of Ganesh's thesis (UC Berkeley EECS-2022-53, §2.6):

1. y = phi(D) + x, x ~ GGauss(p, sigma)  (released; priced by its exact PLD);
2. NumericSparse (Dwork & Roth 2014, Alg. 3, "output 0 instead of bottom", Thm 36)
   on the queries q_i(D) = |y_i - phi_i(D)| = |x_i|. With y fixed, changing D
   moves each q_i by at most 1, so these queries have sensitivity 1 (the
   correct reading of the proof). Each time a noisy query exceeds a noisy
   threshold the numeric answer x_hat_i = (y_i - phi_i(D)) + Lap(b_N) is released
   and the threshold is redrawn; at most ``cutoff`` answers, zeros elsewhere;
3. output y - x_hat (post-processing).

The thesis's own parameters (c_SV = 4k/(log k)^(2+2t), ...) are asymptotic and
vacuous at practical k (c_SV < 1 at k = 1e4). Here every parameter is
explicit and the whole composition is priced numerically:

* each AboveThreshold round with threshold noise Lap(b_T) and query noise Lap(b_Q)
  is (1/b_T + 2/b_Q)-DP for sensitivity-1 queries (Dwork & Roth 2014, Thm 3.23,
  with the budget split of Lyu, Su & Li 2017, Thm 2 at c = 1); an eps-DP
  mechanism is dominated by binary randomized response with the same eps
  (Kairouz, Oh & Viswanath 2015, Thm 2.1), priced by :class:`PureDpEvent`;
* each numeric answer is a Laplace mechanism of sensitivity 1 (dp_accounting's
  ``LaplaceDpEvent``);
* ``cutoff`` rounds and answers, adaptively composed with the GG step by the PLD
  accountant.

The thesis's "output phi(D) if ||x||_p is large" step is a proof device and is
not implemented (no un-noised release).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import attr
import numpy as np
from dp_accounting.dp_event import ComposedDpEvent, LaplaceDpEvent, SelfComposedDpEvent
from scipy import special

from .. import _validation as v
from .._random import make_rng
from ..accounting import PrivacyAccountant, calibrate, register_pld, register_rdp
from ..accounting.events import DpEvent
from ..accounting.pld import LossPmf
from ..noise import generalized_gaussian
from ..release import Release
from .calibration import gdp_sigma_guess
from .distribution import check_p
from .privacy import GeneralizedGaussianDpEvent


def _positive_attr(instance, attribute, value):
    v.positive(attribute.name, value)


@attr.s(frozen=True, slots=True, auto_attribs=True)
class PureDpEvent(DpEvent):
    """Any epsilon-DP mechanism, priced by its worst case: binary randomized response.

    Every (epsilon, 0)-DP mechanism is a post-processing of randomized response
    with P(truth) = e^eps / (1 + e^eps) (Kairouz, Oh & Viswanath 2015, Thm 2.1),
    whose PLRV is +eps w.p. e^eps/(1+e^eps) and -eps otherwise; its Renyi
    divergence is (1/(alpha-1)) log(p^alpha q^(1-alpha) + q^alpha p^(1-alpha)).
    """

    epsilon: float = attr.ib(validator=_positive_attr)


def _pure_pld(event: PureDpEvent, h: float) -> LossPmf:
    e = event.epsilon
    p_hi = 1.0 / (1.0 + math.exp(-e))
    hi, lo = math.ceil(e / h), math.ceil(-e / h)  # rounding losses up is pessimistic
    probs = np.zeros(hi - lo + 1)
    probs[0] += 1.0 - p_hi
    probs[-1] += p_hi
    return LossPmf(h, lo, probs, 0.0)


def _pure_rdp(event: PureDpEvent, orders: np.ndarray) -> np.ndarray:
    e = event.epsilon
    a = np.asarray(orders, dtype=float)
    log_p, log_q = -np.logaddexp(0.0, -e), -np.logaddexp(0.0, e)
    out = np.empty(a.shape)
    one = a == 1.0
    out[one] = (math.exp(log_p) - math.exp(log_q)) * e  # KL at alpha = 1
    b = a[~one]
    terms = np.logaddexp(b * log_p + (1 - b) * log_q, b * log_q + (1 - b) * log_p)
    out[~one] = terms / (b - 1.0)
    return out


register_pld(PureDpEvent, _pure_pld)
register_rdp(PureDpEvent, _pure_rdp)


def sparse_vector_event(
    cutoff: int, threshold_scale: float, query_scale: float, numeric_scale: float
) -> DpEvent:
    """Event of NumericSparse with ``cutoff`` rounds (see the module doc for each piece)."""
    cutoff = v.positive_int("cutoff", cutoff)
    b_t = v.positive("threshold_scale", threshold_scale)
    b_q = v.positive("query_scale", query_scale)
    b_n = v.positive("numeric_scale", numeric_scale)
    round_eps = 1.0 / b_t + 2.0 / b_q
    return ComposedDpEvent(
        [
            SelfComposedDpEvent(PureDpEvent(round_eps), cutoff),
            SelfComposedDpEvent(LaplaceDpEvent(b_n), cutoff),
        ]
    )


@dataclass(frozen=True)
class SparseVectorPlan:
    """All parameters of the GG + sparse-vector mechanism and the event that prices them."""

    k: int
    p: float
    sigma: float
    cutoff: int
    threshold: float
    threshold_scale: float
    query_scale: float
    numeric_scale: float
    epsilon: float
    delta: float

    @property
    def event(self) -> DpEvent:
        return ComposedDpEvent(
            [
                GeneralizedGaussianDpEvent(self.p, self.sigma, self.k),
                sparse_vector_event(
                    self.cutoff, self.threshold_scale, self.query_scale, self.numeric_scale
                ),
            ]
        )


def plan_sparse_vector(
    k: int,
    epsilon: float,
    delta: float,
    p: float = 4.0,
    *,
    cutoff: int = 10,
    sv_fraction: float = 0.1,
    expected_exceedances: float | None = None,
) -> SparseVectorPlan:
    """Explicit, numerically accounted parameters for the Thm 37 mechanism.

    1. The sparse-vector part alone gets (sv_fraction*epsilon, sv_fraction*delta):
       b_Q = 2 b_T, b_N = b_T, and b_T is the smallest scale (calibrated by PLD)
       meeting that budget over ``cutoff`` rounds.
    2. sigma is the smallest GG noise for which the composition of GG and the
       sparse vector meets (epsilon, delta) (PLD accountant, safe side).
    3. The threshold T puts ``expected_exceedances`` (default cutoff/2) coordinates of
       |x| above it in expectation: T = sigma * Qinv(1/p, e/k)^(1/p).

    Parameters depend only on (k, epsilon, delta, p, cutoff): no data.
    """
    k = v.positive_int("k", k)
    epsilon = v.positive("epsilon", epsilon)
    delta = v.probability_open("delta", delta)
    p = check_p(p)
    cutoff = v.positive_int("cutoff", cutoff)
    frac = v.positive("sv_fraction", sv_fraction)
    if frac >= 1:
        raise ValueError(f"sv_fraction must be in (0, 1), got {sv_fraction}")
    exceed = cutoff / 2 if expected_exceedances is None else expected_exceedances
    exceed = v.positive("expected_exceedances", exceed)
    if exceed >= k:
        raise ValueError(f"expected_exceedances must be < k, got {exceed}")

    def sv(b: float) -> DpEvent:
        return sparse_vector_event(cutoff, b, 2.0 * b, b)

    b_t = calibrate(
        lambda b: PrivacyAccountant("pld").compose(sv(b)).get_delta(frac * epsilon),
        frac * delta,
        cutoff / (frac * epsilon),
        4 * cutoff / (frac * epsilon),
        decreasing=True,
        floor=1e-12,
        rtol=1e-5,
    )
    guess = gdp_sigma_guess(k, epsilon, delta, p)

    def total_delta(sigma: float) -> float:
        event = ComposedDpEvent([GeneralizedGaussianDpEvent(p, sigma, k), sv(b_t)])
        return PrivacyAccountant("pld").compose(event).get_delta(epsilon)

    sigma = calibrate(total_delta, delta, guess, 1.5 * guess, decreasing=True, rtol=1e-6)
    threshold = sigma * special.gammainccinv(1.0 / p, exceed / k) ** (1.0 / p)
    event = ComposedDpEvent([GeneralizedGaussianDpEvent(p, sigma, k), sv(b_t)])
    achieved = PrivacyAccountant("pld").compose(event).get_epsilon(delta)
    return SparseVectorPlan(
        k, p, sigma, cutoff, float(threshold), b_t, 2.0 * b_t, b_t, achieved, delta
    )


def _numeric_sparse(
    residual: np.ndarray, plan: SparseVectorPlan, rng: np.random.Generator
) -> np.ndarray:
    """NumericSparse on q_i = |residual_i| (Dwork & Roth Alg. 3, zeros instead of bottom)."""
    k = residual.size
    x_hat = np.zeros(k)
    noisy_q = np.abs(residual) + rng.laplace(0.0, plan.query_scale, k)
    start, count = 0, 0
    while count < plan.cutoff and start < k:
        t_hat = plan.threshold + rng.laplace(0.0, plan.threshold_scale)
        hits = np.flatnonzero(noisy_q[start:] >= t_hat)
        if hits.size == 0:
            break
        i = start + int(hits[0])
        x_hat[i] = residual[i] + rng.laplace(0.0, plan.numeric_scale)
        count += 1
        start = i + 1
    return x_hat


def gg_sparse_vector(answers, plan: SparseVectorPlan, random_state=None) -> Release:
    """Run the Thm 37 mechanism with ``plan``; returns the corrected answers and the event.

    The noisy answers y are computed once; the sparse vector sees only the
    sensitivity-1 queries |y_i - answers_i|. Nothing un-noised is released.
    """
    a = np.asarray(answers, dtype=float)
    if a.ndim != 1 or a.size != plan.k:
        raise ValueError(f"answers must be a 1-D array of length k={plan.k}, got {a.shape}")
    if not np.all(np.isfinite(a)):
        raise ValueError("answers must be finite (no NaN or inf)")
    rng = make_rng(random_state)
    y = a + generalized_gaussian(plan.p, plan.sigma, plan.k, rng)
    x_hat = _numeric_sparse(y - a, plan, rng)
    info = {"corrected": int(np.count_nonzero(x_hat)), "epsilon": plan.epsilon}
    return Release(y - x_hat, plan.event, info)


def simulate_max_error(plan: SparseVectorPlan, trials: int, random_state=None) -> np.ndarray:
    """Monte Carlo ||output - answers||_inf of :func:`gg_sparse_vector` (answers = 0)."""
    trials = v.positive_int("trials", trials)
    rng = make_rng(random_state)
    zeros = np.zeros(plan.k)
    return np.array(
        [np.max(np.abs(gg_sparse_vector(zeros, plan, rng).theta)) for _ in range(trials)]
    )
