"""Tight privacy accounting of the Generalized Gaussian mechanism for counting queries.

The mechanism adds x ~ GGauss(p, sigma) (k i.i.d. GG_p(sigma) coordinates) to
answers with l_inf-sensitivity ``sensitivity`` (Ganesh's thesis, UC Berkeley
EECS-2022-53, Def. 19 and §2.5, mechanism M_sigma^p). The thesis proves privacy only for even
p in [4, log k] with the loose constant of Lemma 30 / Thm 34; this module computes
the exact privacy of the mechanism for every real p >= 1 instead:

* **Worst-case neighbour.** The per-coordinate family {GG_p(sigma) shifted by t}
  is log-concave and symmetric, so it has a monotone likelihood ratio: for every
  type-I error the optimal test is a threshold, whose type-II error
  F(F^-1(1 - a) - t) falls as |t| grows. The trade-off curve is therefore
  pointwise worst at |t| = sensitivity, and tensor products of trade-off
  functions are monotone (Dong, Roth & Su 2022, Lemma C.2), so the worst
  neighbouring shift in [-s, s]^k is (s, ..., s). The pair (P, Q) = (GG^k
  centred at 0, GG^k centred at s 1) is a dominating pair for add/remove and
  replace-one neighbours alike, and it is symmetric (x -> s 1 - x swaps P, Q),
  so add and remove PLDs coincide.
* **PLD (tight).** The per-coordinate privacy profile delta_1(eps) = F(x*) -
  e^eps F(x* - s), with x* the point where the (strictly decreasing) loss
  (|x - s|^p - |x|^p)/sigma^p equals eps, is exact from the incomplete gamma
  function. It is discretized by Connect-the-Dots (Doroshenko, Ghazi, Kamath,
  Kumar & Manurangsi 2022, Alg. 1: a dominating pair supported on a grid, with
  composition error second order in the grid step) on a fine grid adapted to
  the per-coordinate loss, composed k times by FFT (tails bounded by
  Chernoff and charged to +inf; round-off bounded and added, under several
  exponential tilts, :func:`dpconvex.accounting.pld.compose_counts`), and
  rounded up once to the accountant's grid. Every step is pessimistic, floating
  point included, so the reported delta(eps) is an upper bound. (A plain FFT
  power is not: at p = 4, sigma = 34.08, k = 7102 its round-off made delta
  0.04% too small at epsilon 42.49, issue 13.)
* **RDP (looser alternative).** k * r_p(alpha), r_p the per-coordinate Renyi
  divergence by 1-D quadrature (additivity over independent coordinates; seed
  004, Thm 16 / Def. 13).

:class:`GeneralizedGaussianDpEvent` is registered with the accountants, so it
composes with every other event of :mod:`dpconvex.accounting`.
"""

from __future__ import annotations

import math
import warnings

import attr
import numpy as np
from numpy.typing import ArrayLike
from scipy import integrate, special

from .. import _validation as v
from ..accounting import pld as _pld
from ..accounting import register_pld, register_rdp
from ..accounting.events import DpEvent
from ..accounting.limits import check_count
from ..accounting.pld import LossPmf, self_compose
from .distribution import check_p, gg_cdf

#: P-mass of each per-coordinate tail cut off before discretization; the left
#: tail (high loss) goes to +inf, the right tail is rounded up (pessimistic).
COORDINATE_TAIL_MASS = 1e-30
#: Tail mass of the k-fold composition dropped outside the FFT window (charged to +inf).
COMPOSITION_TAIL_MASS = 1e-15
#: Fine-grid bins per standard deviation of the per-coordinate privacy loss.
BINS_PER_SD = 64
#: Largest refinement of the accountant's grid for one coordinate (see fine_grid_factor).
MAX_FINE_FACTOR = 2**40
#: Smallest delta a PLD calibration aims at: the composition's tail, COMPOSITION_TAIL_MASS,
#: is charged to delta, so smaller targets could not be met (or only by a sigma inflated
#: to absorb that tail).
MIN_PLD_DELTA = 1e-12
#: Most queries whose PLD is computed. The fine grid resolves one coordinate's loss, whose
#: spread is that of the whole composition over sqrt(k), so the composed PMF holds about
#: 1100 sqrt(k) points: 3.4e6 (0.5 GB with the FFT's work arrays) at this cap. Above it,
#: use RDP accounting (``PrivacyAccountant("rdp")``), whose cost does not grow with k.
MAX_PLD_QUERIES = 10**7


def _check_p_event(instance, attribute, value):
    check_p(value)


def _positive_attr(instance, attribute, value):
    v.positive(attribute.name, value)


def _count_attr(instance, attribute, value):
    if isinstance(value, float) and not math.isfinite(value):
        raise ValueError(f"{attribute.name} must be a positive integer, got {value}")
    check_count(attribute.name, value)


@attr.s(frozen=True, slots=True, auto_attribs=True)
class GeneralizedGaussianDpEvent(DpEvent):
    """k counting queries answered with i.i.d. GG_p(sigma) noise (Ganesh's thesis, Def. 19, §2.5).

    ``sensitivity`` is the l_inf-sensitivity of the answer vector (1 for
    counting queries, under add/remove and replace-one neighbours alike).
    Priced exactly by its PLD (Connect-the-Dots, k-fold FFT composition) or by
    RDP quadrature; see :mod:`dpconvex.queries.privacy`.
    """

    p: float = attr.ib(validator=_check_p_event)
    sigma: float = attr.ib(validator=_positive_attr)
    k: int = attr.ib(validator=_count_attr)
    sensitivity: float = attr.ib(default=1.0, validator=_positive_attr)


# -- the per-coordinate privacy loss --------------------------------------------------


def coordinate_loss(x: ArrayLike, p: float, sigma: float, shift: float = 1.0) -> np.ndarray:
    """Per-coordinate privacy loss log g(x)/g(x - shift) = (|x - shift|^p - |x|^p) / sigma^p.

    Computed as |u - d|^p - |u|^p with u = x / sigma and d = shift / sigma, so that
    sigma^p never overflows (sigma in the thousands with p = 64 would).
    """
    u = np.asarray(x, dtype=float) / sigma
    d = shift / sigma
    return np.abs(u - d) ** p - np.abs(u) ** p


def _inverse_loss(eps: np.ndarray, p: float, sigma: float, shift: float) -> np.ndarray:
    """x* with loss(x*) = eps (loss strictly decreasing on [0, shift], and everywhere if p > 1).

    Returns -inf where eps is at or above the largest loss and +inf where it is at
    or below the smallest (p = 1 has a bounded loss). Vectorized bisection to
    machine precision, in units of sigma (u = x / sigma, d = shift / sigma: the loss
    is |u - d|^p - |u|^p, so that sigma^p never overflows).
    """
    eps = np.asarray(eps, dtype=float)
    d = shift / sigma
    if p == 1.0:  # loss = d on u <= 0, linear on [0, d], -d beyond
        u = 0.5 * (d - eps)
        u = np.where(eps >= d, -np.inf, u)
        return sigma * np.where(eps <= -d, np.inf, u)
    return sigma * _bisect_loss(eps, p, d)


def _bisect_loss(target: np.ndarray, p: float, d: float) -> np.ndarray:
    """u with |u - d|^p - |u|^p = target (decreasing in u for p > 1), by bisection."""
    lo = np.full(target.shape, -1.0)
    hi = np.full(target.shape, 1.0 + d)

    def g(u):
        return np.abs(u - d) ** p - np.abs(u) ** p

    for _ in range(2000):  # expand the bracket: g decreasing from +inf to -inf
        bad_lo = g(lo) < target
        bad_hi = g(hi) > target
        if not (bad_lo.any() or bad_hi.any()):
            break
        lo = np.where(bad_lo, 2.0 * lo, lo)
        hi = np.where(bad_hi, 2.0 * hi, hi)
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        above = g(mid) > target
        lo = np.where(above, mid, lo)
        hi = np.where(above, hi, mid)
        # machine precision relative to max(shift, |x|), as in units of x
        if np.all(hi - lo <= 4 * np.finfo(float).eps * np.maximum(d, np.abs(mid))):
            break
    return 0.5 * (lo + hi)


def coordinate_delta(epsilon: ArrayLike, p: float, sigma: float, shift: float = 1.0) -> np.ndarray:
    """Exact privacy profile of one GG_p(sigma) coordinate with shift ``shift``.

    delta_1(eps) = Pr_P[loss > eps] - e^eps Pr_Q[loss > eps] = F(x*) - e^eps F(x* - shift)
    with P = GG_p(sigma), Q = P shifted by ``shift``, F the CDF of P and x* the
    inverse loss (the loss is monotone). Evaluated with
    left tails when x* < shift/2 and with right tails otherwise, so both ends keep
    their relative precision. Valid for every real eps (negative ones included).
    """
    p = check_p(p)
    sigma = v.positive("sigma", sigma)
    eps = np.asarray(epsilon, dtype=float)
    x = _inverse_loss(eps, p, sigma, shift)
    e = np.exp(eps)
    with np.errstate(invalid="ignore", over="ignore"):
        left = gg_cdf(x, p, sigma) - e * gg_cdf(x - shift, p, sigma)
        right = -np.expm1(eps) - gg_cdf(-x, p, sigma) + e * gg_cdf(shift - x, p, sigma)
    delta = np.where(x < 0.5 * shift, left, right)
    delta = np.where(np.isneginf(x), 0.0, np.where(np.isposinf(x), -np.expm1(eps), delta))
    return np.clip(delta, 0.0, 1.0)


def coordinate_loss_sd(p: float, sigma: float, shift: float = 1.0) -> float:
    """Scale of the per-coordinate loss: sqrt(Fisher information) * shift.

    I = p^2 Gamma(2 - 1/p) / (sigma^2 Gamma(1/p)); used only to choose grids.
    """
    info = p**2 * math.exp(special.gammaln(2.0 - 1.0 / p) - special.gammaln(1.0 / p))
    return math.sqrt(info) * shift / sigma


# -- discretization and composition ---------------------------------------------------


def connect_the_dots(deltas: np.ndarray, h: float, lower: int) -> LossPmf:
    """Pessimistic Connect-the-Dots PMF on the grid (lower + i) h from delta at those points.

    Doroshenko et al. 2022, Alg. 1, fixed-gap form (as in dp_accounting's
    ``create_pmf_pessimistic_connect_dots_fixed_gap``): mass
    1 - d_1 + (d_2 - d_1)/(e^h - 1) on the first point,
    ((d_{i+1} - d_i) - e^h (d_i - d_{i-1}))/(e^h - 1) inside,
    (d_n - d_{n-1})/(e^-h - 1) on the last, and d_n on +inf.
    """
    d = np.minimum.accumulate(np.asarray(deltas, dtype=float))
    if d.size == 1:
        return LossPmf(h, lower, np.array([1.0 - d[0]]), float(d[0]))
    diff = np.diff(d)
    probs = np.empty_like(d)
    probs[0] = 1.0 - d[0] + diff[0] / math.expm1(h)
    probs[1:-1] = (diff[1:] - diff[:-1] * math.exp(h)) / math.expm1(h)
    probs[-1] = diff[-1] / math.expm1(-h)
    return LossPmf(h, lower, np.maximum(probs, 0.0), float(d[-1]))


def _interval_mass(x: np.ndarray, p: float, sigma: float) -> np.ndarray:
    """P(x[j+1] <= X < x[j]) for X ~ GG_p(sigma) and decreasing x, from cancellation-free tails.

    With t(x) = Pr[X < -|x|] = Q(1/p, |x/sigma|^p)/2 (one incomplete-gamma call):
    both points <= 0 gives t(x_j) - t(x_j+1), both >= 0 gives t(x_j+1) - t(x_j),
    and an interval straddling 0 gives 1 - t(x_j) - t(x_j+1).
    """
    with np.errstate(invalid="ignore"):
        t = 0.5 * special.gammaincc(1.0 / p, np.abs(x / sigma) ** p)
    t = np.where(np.isinf(x), 0.0, t)
    hi, lo, t_hi, t_lo = x[:-1], x[1:], t[:-1], t[1:]
    out = np.where(hi <= 0, t_hi - t_lo, np.where(lo >= 0, t_lo - t_hi, 1.0 - t_hi - t_lo))
    return np.maximum(out, 0.0)


def _loss_range(p: float, sigma: float, shift: float) -> tuple[float, float]:
    """(smallest, largest) per-coordinate loss over all x but the COORDINATE_TAIL_MASS tails."""
    u = special.gammainccinv(1.0 / p, 2.0 * COORDINATE_TAIL_MASS) ** (1.0 / p)
    with np.errstate(over="ignore"):
        top = float(coordinate_loss(-sigma * u, p, sigma, shift))
        bottom = float(coordinate_loss(sigma * u + shift, p, sigma, shift))
    return bottom, top


def coordinate_grid_points(
    p: float, sigma: float, k: int, h: float = 1e-4, sensitivity: float = 1.0
) -> float:
    """Points of the per-coordinate PMF that :func:`gg_loss_pmf` would build (inf if huge).

    Public arithmetic only; lets a caller refuse or skip a setting before building it.
    """
    bottom, top = _loss_range(p, sigma, sensitivity)
    fine = h / fine_grid_factor(p, sigma, k, h, sensitivity)
    with np.errstate(over="ignore", invalid="ignore"):
        points = (top - bottom) / fine + 2
    return float(points) if math.isfinite(points) else math.inf


def coordinate_loss_pmf(p: float, sigma: float, h: float, shift: float = 1.0) -> LossPmf:
    """Connect-the-Dots PMF of one coordinate's privacy loss on the grid h Z.

    The grid covers the losses of x in [x_lo, x_hi], with P-mass
    COORDINATE_TAIL_MASS in each tail outside. For every grid interval
    (e_j, e_j+1] the P-mass a_j and Q-mass b_j of the loss in it are computed
    exactly (incomplete gamma, from the tail that avoids cancellation) and split
    between its two end points so that both masses are preserved: the end point
    e_j+1 gets (a_j - b_j e^e_j) / (1 - e^-h). Splitting a point of a dominating
    pair into two points with the same P and Q masses is the inverse of merging
    them (a post-processing), so the result dominates the true pair, and its
    hockey-stick divergence equals the exact delta_1 at every grid point: this is
    Connect-the-Dots (Doroshenko et al. 2022, Alg. 1). P-mass below the grid is
    rounded up to its lowest point, P-mass above it goes to +inf. Computing the
    interval masses directly (rather than second differences of delta_1) keeps
    the total mass 1 to round-off, which matters after k-fold composition.
    """
    bottom, top = _loss_range(p, sigma, shift)
    _pld.check_grid_points((top - bottom) / h + 2, "one query's noise", h)
    lower, upper = math.floor(bottom / h), math.ceil(top / h)
    grid = np.arange(lower, upper + 1) * h
    x = _inverse_loss(grid, p, sigma, shift)  # decreasing in the grid index
    if grid.size == 1:
        return LossPmf(h, lower, np.array([1.0 - float(gg_cdf(x[0], p, sigma))]), 0.0)
    a = _interval_mass(x, p, sigma)
    b = _interval_mass(x - shift, p, sigma)
    with np.errstate(divide="ignore", over="ignore"):
        b_scaled = np.where(b > 0, np.exp(np.log(b) + grid[:-1]), 0.0)
    upper_share = np.clip((a - b_scaled) / -math.expm1(-h), 0.0, a)
    probs = np.zeros(grid.size)
    probs[:-1] += a - upper_share
    probs[1:] += upper_share
    probs[0] += float(gg_cdf(-x[0], p, sigma)) if np.isfinite(x[0]) else 0.0
    top_mass = float(gg_cdf(x[-1], p, sigma)) if np.isfinite(x[-1]) else 0.0
    return LossPmf(h, lower, probs, top_mass)


def round_up(pmf: LossPmf, factor: int, h: float) -> LossPmf:
    """Move a PMF from grid h/factor to grid h, rounding every loss up (pessimistic).

    ``h`` is passed exactly (h/factor*factor may differ from h in the last bit,
    and dp_accounting composes only identical grids).
    """
    if factor == 1:
        return LossPmf(h, pmf.offset, pmf.probs, pmf.infinity_mass)
    fine = pmf.offset + np.arange(pmf.probs.size)
    coarse = -((-fine) // factor)  # ceil division
    lower = int(coarse[0])
    probs = np.bincount(coarse - lower, weights=pmf.probs)
    return LossPmf(h, lower, probs, pmf.infinity_mass)


def fine_grid_factor(p: float, sigma: float, k: int, h: float, sensitivity: float = 1.0) -> int:
    """Integer m such that h / m resolves the per-coordinate loss with BINS_PER_SD bins per sd.

    At most MAX_FINE_FACTOR: a coarser fine grid only makes the (pessimistic) PLD a
    little looser, and grid indices stay within 64-bit integers.
    """
    sd = coordinate_loss_sd(p, sigma, sensitivity)
    return int(min(MAX_FINE_FACTOR, max(1, math.ceil(h * BINS_PER_SD / sd))))


def check_pld_queries(k: object) -> int:
    """``k`` as an int in [1, MAX_PLD_QUERIES]; ValueError naming the problem otherwise."""
    if isinstance(k, float) and not math.isfinite(k):
        raise ValueError(f"k must be a positive integer, got {k}")
    k = v.positive_int("k", k)
    if k > MAX_PLD_QUERIES:
        shown = f"{k:.3g}" if k < 10**300 else f"about 2^{k.bit_length() - 1}"
        raise ValueError(
            f"k = {shown} queries is more than {MAX_PLD_QUERIES:.0e}, the most whose exact "
            "(PLD) privacy accounting dpconvex computes (its memory grows with k); answer "
            "fewer queries at once, or use RDP accounting"
        )
    return k


def gg_loss_pmf(
    p: float, sigma: float, k: int, h: float = 1e-4, sensitivity: float = 1.0
) -> LossPmf:
    """Pessimistic PLD of the k-coordinate GG mechanism on the grid h Z (see the module doc).

    Per-coordinate Connect-the-Dots on the fine grid h/m, k-fold FFT composition,
    then one pessimistic rounding to h (costing at most h in epsilon).
    """
    p = check_p(p)
    sigma = v.positive("sigma", sigma)
    k = check_pld_queries(k)
    h = v.positive("h", h)
    sensitivity = v.positive("sensitivity", sensitivity)
    m = fine_grid_factor(p, sigma, k, h, sensitivity)
    one = coordinate_loss_pmf(p, sigma, h / m, sensitivity)
    return round_up(self_compose(one, k, COMPOSITION_TAIL_MASS), m, h)


def pmf_delta(pmf: LossPmf, epsilon: ArrayLike) -> np.ndarray | float:
    """delta(eps) = inf_mass + sum_i p_i (1 - e^(eps - l_i))_+ of a PLD.

    Redberg, Koskela & Wang (arXiv 2401.00583), Thm D.2.
    """
    eps = np.atleast_1d(np.asarray(epsilon, dtype=float))
    losses = pmf.losses
    out = np.empty(eps.shape)
    for i, e in enumerate(eps):
        above = losses > e
        out[i] = pmf.infinity_mass + float(np.sum(pmf.probs[above] * -np.expm1(e - losses[above])))
    out = np.clip(out, 0.0, 1.0)
    return out if np.ndim(epsilon) else float(out[0])


def gg_delta(
    epsilon: ArrayLike,
    p: float,
    sigma: float,
    k: int,
    sensitivity: float = 1.0,
    h: float = 1e-4,
) -> np.ndarray | float:
    """delta(epsilon) of the k-query GG_p(sigma) mechanism (upper bound; PLD of this module).

    It is what ``PrivacyAccountant("pld", value_discretization_interval=h)``
    reports for :class:`GeneralizedGaussianDpEvent`.
    """
    delta = pmf_delta(gg_loss_pmf(p, sigma, k, h, sensitivity), epsilon)
    # the composition's round-off allowance (pld.slack_budget) may add up to that much
    # to delta: when it exceeds 1e-4 of the smallest delta found, recompose tighter
    smallest = float(np.min(delta))
    if _pld.slack_budget.get() > 1e-4 * smallest:
        token = _pld.slack_budget.set(1e-4 * smallest)
        try:
            delta = pmf_delta(gg_loss_pmf(p, sigma, k, h, sensitivity), epsilon)
        finally:
            _pld.slack_budget.reset(token)
    return delta


# -- Renyi DP -----------------------------------------------------------------------------


def _log_renyi_integral(alpha: float, p: float, d: float) -> float:
    """log int exp(-alpha |u|^p + (alpha - 1) |u - d|^p) du, plus quad's error estimate.

    h(u) = -alpha |u|^p + (alpha-1)|u - d|^p decreases on [0, inf); for p > 1 its
    maximum on (-inf, 0] is at u* = -d / ((alpha/(alpha-1))^(1/(p-1)) - 1)
    (stationarity), for p = 1 at u* = 0. The integral of exp(h - h(u*)) is split
    at u*, 0 and d, and quad's absolute-error estimate is added (upper bound).
    """
    am1 = alpha - 1.0

    def h(u: float) -> float:
        return -alpha * abs(u) ** p + am1 * abs(u - d) ** p

    if p > 1.0:
        denom = math.expm1(-math.log1p(-1.0 / alpha) / (p - 1.0))
        u_star = -d / denom if denom > 0 else 0.0
    else:
        u_star = 0.0
    top = h(u_star)
    t = abs(u_star)
    curv = p * (p - 1.0) * abs(alpha * t ** (p - 2.0) - am1 * (t + d) ** (p - 2.0)) if p > 1 else 0
    width = 10.0 / math.sqrt(curv) if curv > 0 else 10.0
    points = sorted({u_star - width, u_star, 0.0, d, d + width})
    total, err = 0.0, 0.0
    edges = [-np.inf, *points, np.inf]
    for a, b in zip(edges[:-1], edges[1:], strict=True):
        if a == b:
            continue
        with warnings.catch_warnings():  # round-off warnings: quad's error estimate is added
            warnings.simplefilter("ignore", integrate.IntegrationWarning)
            val, e = integrate.quad(
                lambda u: math.exp(h(u) - top), a, b, limit=200, epsabs=0.0, epsrel=1e-12
            )
        total += val
        err += e
    return top + math.log(total + err)


def coordinate_rdp(orders: ArrayLike, p: float, sigma: float, shift: float = 1.0) -> np.ndarray:
    """Renyi divergence R_alpha(GG_p(sigma) || GG_p(sigma) + shift) by quadrature.

    r(alpha) = (1/(alpha-1)) log int g(x)^alpha g(x - shift)^(1 - alpha) dx
    (Ganesh's thesis, Def. 13, with the ``ln`` the printed formula omits).
    p = 2 gives alpha shift^2 / sigma^2 (the Gaussian of std sigma/sqrt 2).
    At alpha = 1 the KL divergence is returned as the limit (by quadrature).
    """
    p = check_p(p)
    sigma = v.positive("sigma", sigma)
    orders = np.atleast_1d(np.asarray(orders, dtype=float))
    if np.isnan(orders).any() or (orders < 1).any():
        raise ValueError("RDP orders must be >= 1")
    d = shift / sigma
    log_norm = math.log(2.0) + special.gammaln(1.0 + 1.0 / p)
    out = np.empty(orders.shape)
    for i, a in enumerate(orders):
        if a == 1.0:

            def kl_integrand(u: float) -> float:
                return math.exp(-(abs(u) ** p)) * (abs(u - d) ** p - abs(u) ** p)

            edges = (-np.inf, 0.0, d, np.inf)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", integrate.IntegrationWarning)
                kl = sum(
                    integrate.quad(kl_integrand, lo, hi, limit=200, epsabs=0.0, epsrel=1e-12)[0]
                    for lo, hi in zip(edges[:-1], edges[1:], strict=True)
                )
            out[i] = kl / math.exp(log_norm)
        else:
            out[i] = (_log_renyi_integral(float(a), p, d) - log_norm) / (a - 1.0)
    return out


def gg_rdp(
    orders: ArrayLike, p: float, sigma: float, k: int, sensitivity: float = 1.0
) -> np.ndarray:
    """RDP of the k-query GG mechanism: k * r_p(alpha) (independent coordinates, Thm 16)."""
    k = v.positive_int("k", k)
    sensitivity = v.positive("sensitivity", sensitivity)
    return k * coordinate_rdp(orders, p, sigma, sensitivity)


# -- registration with the accountants ------------------------------------------------------


def _pld_rule(event: GeneralizedGaussianDpEvent, h: float) -> LossPmf:
    return gg_loss_pmf(event.p, event.sigma, event.k, h, event.sensitivity)


def _rdp_rule(event: GeneralizedGaussianDpEvent, orders: np.ndarray) -> np.ndarray:
    return gg_rdp(orders, event.p, event.sigma, event.k, event.sensitivity)


register_pld(GeneralizedGaussianDpEvent, _pld_rule)
register_rdp(GeneralizedGaussianDpEvent, _rdp_rule)
