"""Privacy-loss distributions of our mechanisms, in dp_accounting's PLD format.

A mechanism dominated by a pair (P, Q) is described by its privacy-loss random
variable (PLRV) w = log P/Q under P (Redberg, Koskela & Wang, arXiv 2401.00583,
Def. J.4 and Thm D.2; cited below as Redberg et al.):
delta(eps) = E[1 - e^(eps - w)]_+. We discretize w *pessimistically* — the mass
of every interval ((k-1)h, kh] is put at kh and the far right tail at +inf —
which can only increase E[1 - e^(eps - w)]_+ for every eps, so the discrete
distribution is itself a dominating pair. The result is handed to
``dp_accounting.pld`` so that k-fold composition (Redberg et al., eq. D.11, Fig. 4),
composition with dp_accounting's own mechanisms and Poisson subsampling all run
in one PLD accountant. Compositions of our PLRVs (k-fold, and with the running
PLD) are computed here by :func:`compose_counts`, whose every bin is a certified
upper bound despite floating-point FFT round-off (dp_accounting's plain FFT
power is not: issue 13).
"""

from __future__ import annotations

import contextlib
import contextvars
import math
from dataclasses import dataclass

import numpy as np
from dp_accounting.pld import pld_pmf
from dp_accounting.pld.privacy_loss_distribution import PrivacyLossDistribution
from scipy import fft
from scipy.special import ndtr, ndtri

from .. import _validation as v
from .objpert import amp_output_sensitivity, jacobian_term
from .pld_fft import (
    DIRECT_CONVOLUTION_WORK,
    TILT_GAIN,
    direct_convolution,
    tilted_upper,
    tilts,
    window,
)

DEFAULT_TAIL_MASS = 1e-15
#: Most grid points of one privacy-loss distribution (a single event's, or a
#: composition's window). A composition by FFT holds about a dozen arrays of this
#: length, so 10^7 points stay near 1 GB; beyond it accounting refuses rather than
#: allocating without bound.
MAX_GRID_POINTS = 10**7
#: Most grid points a calibration's *search* may price one candidate with: candidates
#: beyond it count as missing the budget (a larger, safe-side noise is then found), so
#: that a search over extreme public arguments stays fast and small. The calibrations of
#: DP-SGD over epsilon 0.1-8, 10^3-10^5 steps and sampling rates 0.007-0.1 composed on at
#: most 1.97e5 points (docs/reliability.md, section 6.5).
SEARCH_GRID_POINTS = 2 * 10**6
_GRID_CAP: contextvars.ContextVar[int] = contextvars.ContextVar("grid_cap", default=MAX_GRID_POINTS)


class GridTooLargeError(ValueError):
    """A privacy-loss distribution would need more than :data:`MAX_GRID_POINTS` grid points."""


def current_grid_cap() -> int:
    """The most grid points allowed here: :data:`MAX_GRID_POINTS`, or less in a search."""
    return _GRID_CAP.get()


@contextlib.contextmanager
def grid_cap(points: int):
    """Within the block, :func:`check_grid_points` refuses more than ``points`` points."""
    token = _GRID_CAP.set(min(int(points), MAX_GRID_POINTS))
    try:
        yield
    finally:
        _GRID_CAP.reset(token)


def check_grid_points(points: float, what: str, h: float) -> None:
    """Raise :class:`GridTooLargeError` before allocating ``points`` grid points of step ``h``.

    ``points`` may be a float (inf or NaN when the span itself overflowed): all are
    refused above the cap, with a message that says which arguments to change.
    """
    cap = current_grid_cap()
    if points <= cap:  # False for NaN
        return
    shown = "more than 1e300" if not math.isfinite(points) else f"about {points:.3g}"
    raise GridTooLargeError(
        f"PLD accounting of {what} needs {shown} grid points at step {h:g} (at most "
        f"{cap:.0e}): its privacy loss is too large or too widely spread; use "
        "more noise, fewer compositions, a coarser value_discretization_interval, or RDP "
        "accounting"
    )


@dataclass(frozen=True)
class LossPmf:
    """Pessimistically discretized PLRV under P.

    ``probs[i]`` is the probability of the loss ``(offset + i) * h``;
    ``infinity_mass`` is the probability of an infinite loss (points where Q = 0
    plus the truncated right tail).
    """

    h: float
    offset: int
    probs: np.ndarray
    infinity_mass: float

    @property
    def losses(self) -> np.ndarray:
        return (self.offset + np.arange(self.probs.size)) * self.h

    def to_dp_accounting(self) -> pld_pmf.DensePLDPmf:
        return pld_pmf.DensePLDPmf(
            self.h, self.offset, self.probs, self.infinity_mass, pessimistic_estimate=True
        )


def _discretize(sf, lo: float, hi: float, h: float) -> LossPmf:
    """Round a PLRV with survival function ``sf`` up to the grid h*Z on [lo, hi].

    All mass at or below ``kmin*h`` (kmin = ceil(lo/h)) is put at ``kmin*h`` and
    all mass above ``kmax*h`` (kmax = ceil(hi/h)) at +inf: both are pessimistic.
    """
    if not (math.isfinite(lo) and math.isfinite(hi)):
        check_grid_points(math.inf, "this mechanism", h)
    check_grid_points((hi - lo) / h + 1, "this mechanism", h)
    kmin = math.ceil(lo / h)
    kmax = max(math.ceil(hi / h), kmin)
    grid = np.arange(kmin, kmax + 1) * h
    s = np.asarray(sf(grid), dtype=float)
    probs = np.empty(grid.size)
    probs[0] = 1.0 - s[0]
    probs[1:] = s[:-1] - s[1:]
    return LossPmf(h, kmin, np.maximum(probs, 0.0), float(s[-1]))


def objpert_loss_pmf(
    sigma: float,
    lam: float,
    beta: float,
    lipschitz: float,
    h: float = 1e-4,
    tail_mass: float = DEFAULT_TAIL_MASS,
) -> LossPmf:
    """PLRV of objective perturbation's dominating pair (Redberg et al., App. D.3, Lemma D.6).

    w = c + s^2/2 + |N(0, s^2)| with s = L/sigma, c = -log(1 - beta/lam); its
    survival function is 2 Phi(-(l - c - s^2/2)/s).
    """
    c = jacobian_term(lam, beta)
    s = v.positive("lipschitz", lipschitz) / v.positive("sigma", sigma)
    shift = c + 0.5 * s**2
    z = -float(ndtri(tail_mass / 2))
    return _discretize(
        lambda loss: 2.0 * ndtr(-np.maximum(loss - shift, 0.0) / s), shift, shift + z * s, h
    )


def gaussian_loss_pmf(
    sensitivity: float, sigma: float, h: float = 1e-4, tail_mass: float = DEFAULT_TAIL_MASS
) -> LossPmf:
    """PLRV of the Gaussian mechanism: N(mu, 2 mu), mu = D^2/(2 sigma^2) (Redberg et al. App. B)."""
    mu = v.positive("sensitivity", sensitivity) ** 2 / (2 * v.positive("sigma", sigma) ** 2)
    sd = math.sqrt(2 * mu)
    z = -float(ndtri(tail_mass / 2))
    return _discretize(lambda loss: ndtr((mu - loss) / sd), mu - z * sd, mu + z * sd, h)


def convolve(first: LossPmf, second: LossPmf) -> LossPmf:
    """PLRV of the composition of two mechanisms (sum of independent PLRVs, Thm D.1).

    The sum of two pessimistic discretizations is pessimistic; the FFT's
    round-off is bounded and added (:func:`compose_counts`, full support).
    """
    return compose_counts([(first, 1), (second, 1)], tail_mass=0.0)


def _bin_up(losses: np.ndarray, masses: np.ndarray, h: float, infinity_mass: float) -> LossPmf:
    """Masses at ``losses`` rounded up to the grid h Z (pessimistic), the span bounded first."""
    with np.errstate(over="ignore", invalid="ignore"):
        scaled = np.asarray(losses, dtype=float) / h
    top, bottom = float(np.max(scaled)), float(np.min(scaled))
    span = top - bottom if math.isfinite(top) and math.isfinite(bottom) else math.inf
    check_grid_points(span + 2, "this mechanism", h)
    k = np.ceil(scaled).astype(np.int64)
    offset = int(k.min())
    probs = np.bincount(k - offset, weights=masses)
    return LossPmf(h, offset, probs, float(infinity_mass))


#: Add-direction pairs of a Poisson-subsampled event (see :func:`poisson_subsample`).
ADD_PAIRS = ("thm11", "mixture")


def poisson_subsample(pmf: LossPmf, q: float, add_pair: str = "thm11") -> tuple[LossPmf, LossPmf]:
    """PLRVs (remove, add) of a mechanism run on a Poisson subsample with rate ``q``.

    ``pmf`` is the PLRV w = log P/Q under P of a pair (P, Q) that dominates the
    mechanism for all orders alpha > 0 in *both* directions: H_a(M(D) || M(D')) <=
    H_a(P || Q) for D' = D minus a record (remove) and for D' = D plus a record
    (add). This is the contract of every PLRV priced here (ObjPert: Redberg et al.,
    App. D.3, whose proof bounds |PLRV|; AMP: that pair times the Gaussian pair,
    Thm D.1 applied in each direction; the ``PLD_RULES`` of :mod:`dpconvex.accounting.registry`).
    Q's mass at loss l is e^(-l) p; the rest of Q (where P = 0) is an atom at -inf.

    Remove direction (Zhu, Dong & Wang 2022, "Optimal accounting of differential
    privacy via characteristic function", Thm 11): (qP + (1-q)Q, Q), i.e.
    loss log(q e^l + 1 - q) with mass q p + (1-q) e^(-l) p; Q's atom gives log(1-q).

    Add direction, two valid pairs (``add_pair``):

    * ``"thm11"``: (Q, qP + (1-q)Q) (ZDW Thm 11; uses only the remove-direction
      domination, flipped): loss -log(q e^l + 1 - q) with mass e^(-l) p, and Q's
      atom at loss -log(1-q). When Q's atom is large (ObjPert: 1 - 2(1 - beta/lam)
      Phi(-L/sigma), often > 1/2) this puts a floor of about -log(1-q) under epsilon.
    * ``"mixture"``: (P, (1-q)P + qQ): loss -log(1 - q + q e^(-l)) with mass p;
      P's mass at +inf (where Q = 0) gets the finite loss -log(1-q). Q's atom enters
      only the second distribution, so it costs nothing here.

    Proof sketch for ``"mixture"``. Domination for every alpha > 0 is equivalent
    to domination of trade-off functions (Dong, Roth & Su 2022, "Gaussian
    differential privacy", Prop. 2.12), so by Blackwell's theorem (ibid. Thm 2.10)
    for every neighbour pair there is a Markov kernel K with K(P) = B := M(T) and
    K(Q) = A := M(T + x), as (P, Q) dominates the add direction (B, A) of the base
    mechanism. In the add direction the subsampled mechanism, given the subsample
    T of D, outputs B on D and (1-q)B + qA on D + x; by linearity of K that pair is
    K(P, (1-q)P + qQ), so H_a(B || (1-q)B + qA) <= H_a(P || (1-q)P + qQ) (data
    processing). Averaging over T (same law on both sides) and joint convexity of
    H_a give the claim for every alpha, hence for adaptive composition (Redberg et al.,
    Thm D.1). The (Q, P)-type pair in the remove direction would put Q's atom at
    loss +inf and is not offered. ``pmf`` is itself pessimistic (losses rounded up,
    which dominates the exact pair for every alpha), and l -> -log(1 - q + q e^(-l))
    is increasing, so applying it to the rounded losses and rounding up again stays
    pessimistic.

    Neither add pair is always tighter: "mixture" removes the -log(1-q) floor of a
    single run, but its KL divergence is ~q (1 - E_P e^(-w)) (first order in q)
    while Thm 11's is O(q^2), so Thm 11 composes better over many runs.
    :class:`~dpconvex.accounting.PrivacyAccountant` therefore evaluates both and
    reports the smaller epsilon (or delta), each being a valid upper bound.
    """
    q = v.sampling_rate("sampling_probability", q)
    if add_pair not in ADD_PAIRS:
        raise ValueError(f"add_pair must be one of {ADD_PAIRS}, got {add_pair!r}")
    if q == 1.0:
        return pmf, pmf
    losses = pmf.losses
    p = pmf.probs
    q_mass = p * np.exp(-losses)
    q_atom = max(0.0, 1.0 - float(q_mass.sum()))
    log1mq = math.log1p(-q)
    mixed = np.logaddexp(math.log(q) + losses, log1mq)
    remove = _bin_up(
        np.append(mixed, log1mq),
        np.append(q * p + (1 - q) * q_mass, (1 - q) * q_atom),
        pmf.h,
        q * pmf.infinity_mass,
    )
    if add_pair == "thm11":
        add = _bin_up(np.append(-mixed, -log1mq), np.append(q_mass, q_atom), pmf.h, 0.0)
    else:
        add = _bin_up(
            np.append(-np.logaddexp(log1mq, math.log(q) - losses), -log1mq),
            np.append(p, pmf.infinity_mass),
            pmf.h,
            0.0,
        )
    return remove, add


def to_pld(remove: LossPmf, add: LossPmf | None = None) -> PrivacyLossDistribution:
    """dp_accounting ``PrivacyLossDistribution`` from our PLRVs (symmetric when ``add`` is None)."""
    return PrivacyLossDistribution(
        remove.to_dp_accounting(), None if add is None else add.to_dp_accounting()
    )


def amp_loss_pmf(
    sigma: float,
    lam: float,
    beta: float,
    lipschitz: float,
    tau: float,
    sigma_out: float,
    h: float = 1e-4,
) -> LossPmf:
    """PLRV of Algorithm 1 / AMP (Redberg et al., Thm 4.1 and §D.3.1).

    Objective perturbation composed with the Gaussian output step of
    sensitivity 2*tau/lam and noise sigma_out: the sum of the two PLRVs.
    """
    return convolve(
        objpert_loss_pmf(sigma, lam, beta, lipschitz, h),
        gaussian_loss_pmf(amp_output_sensitivity(tau, lam), sigma_out, h),
    )


# -- composition by FFT with certified round-off -----------------------------------------

#: Largest total round-off mass (certified error bound per bin x bins) accepted from
#: one untilted FFT before the tilted ladder is used. It can raise any delta(epsilon)
#: by at most this much (the result stays an upper bound). ``PrivacyAccountant``
#: lowers it to 1e-4 x delta when it knows the delta asked for (:data:`slack_budget`).
UNTILTED_SLACK = 1e-9
#: The slack in force for the current composition (a context variable, so threads
#: and nested calls each keep their own).
slack_budget: contextvars.ContextVar[float] = contextvars.ContextVar(
    "untilted_slack", default=UNTILTED_SLACK
)
#: Set while a calibration *search* composes (never for a reported or released answer):
#: the (subsampled) Gaussian may then be composed by a plain FFT power, faster and
#: not certified (:func:`dpconvex.accounting.gaussian_pld.approximate_self_composed`).
approximate: contextvars.ContextVar[bool] = contextvars.ContextVar("approximate", default=False)


def compose_counts(
    parts, tail_mass: float = DEFAULT_TAIL_MASS, slack: float | None = None
) -> LossPmf:
    """PLRV of the composition of ``count`` copies of each ``pmf`` in ``parts`` (pairs).

    The sum of independent PLRVs (Redberg et al., Thm D.1) is computed by FFT within an
    index window outside which at most ``tail_mass`` lies (Chernoff bound on the
    exact log-MGF; that mass is charged to +inf; ``tail_mass = 0`` keeps the full
    support). Floating-point FFT round-off is *not* negligible here: a relative
    error u in a Fourier coefficient becomes ~count*u after powering, and low
    frequencies spread it evenly over all bins, i.e. ~1e-18 per bin, which is
    the whole mass of the far tail that sets delta at large epsilon (for the Generalized
    Gaussian of Ganesh's thesis with p = 4, k = 7102, delta was 0.04% too small).
    Hence every bin is the minimum over several exponential tilts (Esscher transform;
    the tilted FFT is accurate *relative* to the mass near its tilted mean) of certified upper
    bounds (:func:`dpconvex.accounting.pld_fft.tilted_upper`), so the result dominates the exact
    composition bin by bin and is pessimistic for every epsilon.

    Fast path: one untilted FFT is computed first; when its certified round-off
    (error bound per bin x bins) is at most ``slack`` (default: the context's
    :data:`slack_budget`, 1e-9, or 1e-4 x delta when ``PrivacyAccountant`` knows the
    delta asked for), its bins are returned (still upper bounds, at most ``slack``
    looser in any delta) and the tilted ladder is skipped.
    """
    parts = [(pmf, int(count)) for pmf, count in parts if count > 0]
    if not parts:
        raise ValueError("nothing to compose")
    h = parts[0][0].h
    if any(pmf.h != h for pmf, _ in parts):
        raise ValueError("cannot convolve PLRVs discretized on different grids")
    offset = sum(pmf.offset * count for pmf, count in parts)
    log_finite = sum(count * math.log1p(-pmf.infinity_mass) for pmf, count in parts)
    inf_mass = -math.expm1(log_finite) if log_finite > -math.inf else 1.0
    # exact shortcuts: point masses shift, a single copy is itself
    shift = 0
    rest = []
    for pmf, count in parts:
        nz = np.flatnonzero(pmf.probs)
        if nz.size == 1 and pmf.probs[nz[0]] == 1.0:
            shift += count * (pmf.offset + int(nz[0]))
        else:
            rest.append((pmf, count))
    if not rest:
        return LossPmf(h, shift, np.array([1.0]), inf_mass)
    if len(rest) == 1 and rest[0][1] == 1:
        pmf = rest[0][0]
        return LossPmf(h, pmf.offset + shift, pmf.probs, inf_mass)
    trimmed = []
    base = shift
    for pmf, count in rest:
        nz = np.flatnonzero(pmf.probs > 0)
        if nz.size == 0:
            return LossPmf(h, offset, np.array([0.0]), inf_mass)
        first = int(nz[0])
        idx = (nz - first).astype(np.int64)
        trimmed.append((idx, pmf.probs[nz], np.log(pmf.probs[nz]), count))
        base += count * (pmf.offset + first)
    if len(trimmed) == 2 and trimmed[0][3] == trimmed[1][3] == 1:
        lengths = [int(idx[-1]) + 1 for idx, *_ in trimmed]
        if lengths[0] * lengths[1] <= DIRECT_CONVOLUTION_WORK:
            return LossPmf(h, base, direct_convolution(trimmed, lengths), inf_mass)
    lo, hi = window(trimmed, tail_mass)
    length = hi - lo + 1
    longest = max(int(idx[-1]) + 1 for idx, _, _, _ in trimmed)
    check_grid_points(max(length, longest), "this composition", h)
    size = fft.next_fast_len(max(length, longest), real=True)
    positions = np.arange(lo, hi + 1)
    # One untilted FFT first: if its round-off bound is so small that adding it to
    # every bin moves no delta by more than UNTILTED_SLACK, it is the answer (an upper
    # bound all the same); otherwise the tilts recover relative accuracy in the tails.
    errors: list[float] = []
    probs = tilted_upper(trimmed, 0.0, size, positions, errors)
    if errors[0] * length <= (slack_budget.get() if slack is None else slack):
        full = sum(count * int(idx[-1]) for idx, _, _, count in trimmed)
        charged = tail_mass if (lo > 0 or hi < full) else 0.0
        return LossPmf(h, base + lo, probs, min(1.0, inf_mass + charged))
    # every tilt bounds every bin; a bin takes the smallest bound. A tilt is accurate
    # relative to the mass near its bulk, which for a sum with several modes need not be
    # near its mean, so tilts are not matched to bins by their means. Only bins whose
    # untilted bound may be loose (within a factor 1 + 1e-7 of the truth no tilt can do
    # better: a bin is off by at most twice the error bound) are untilted.
    for theta, _ in tilts(trimmed, lo, hi):
        if theta == 0.0:
            continue  # already in probs
        loose = np.flatnonzero(probs * TILT_GAIN < 2.0 * errors[0])
        if loose.size == 0:
            break
        tilted = tilted_upper(trimmed, theta, size, positions[loose])
        probs[loose] = np.minimum(probs[loose], tilted)
    full = sum(count * int(idx[-1]) for idx, _, _, count in trimmed)
    charged = tail_mass if (lo > 0 or hi < full) else 0.0
    return LossPmf(h, base + lo, probs, min(1.0, inf_mass + charged))


def self_compose(
    pmf: LossPmf, count: int, tail_mass: float = DEFAULT_TAIL_MASS, slack: float | None = None
) -> LossPmf:
    """PLRV of ``count``-fold composition (sum of i.i.d. PLRVs; see :func:`compose_counts`)."""
    count = v.positive_int("count", count)
    if count == 1:
        return pmf
    return compose_counts([(pmf, count)], tail_mass, slack)
