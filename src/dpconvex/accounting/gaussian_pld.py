"""Privacy-loss distributions of the (Poisson-subsampled) Gaussian mechanism, built in numpy.

dp_accounting builds these PLDs by connect-the-dots (Doroshenko, Ghazi, Kamath,
Kumar & Manurangsi, "Connect the Dots: Tighter Discrete Approximations of Privacy
Loss Distributions", arXiv 2207.04380, Alg. 1): the PMF on the grid h Z follows from
the hockey-stick divergence delta(epsilon) at every grid point. It evaluates that
divergence one grid point at a time in Python, which made it most of the cost of
calibrating DP-SGD (tens of thousands of points per PLD). Here the divergence is
computed for all grid points at once from its closed form; the grid, its ends
(dp_accounting's tail truncation at mass e^-50) and the PMF construction are
dp_accounting's own, so the result is the same PLD (tested bin by bin against
``PrivacyLossDistribution.from_gaussian_mechanism``). Its k-fold self-composition is
*not* dp_accounting's plain FFT power, whose round-off can put the composed delta
below the true one at small deltas, but the certified composition of
:func:`dpconvex.accounting.pld.compose_counts` (every bin a proven upper bound).

Closed form (sensitivity 1, noise std sigma, sampling rate q; Phi the standard
normal CDF). The privacy loss is monotone in the output x, so
delta(eps) = P_upper(X <= x_eps) - e^eps P_lower(X <= x_eps) at the point x_eps
where the loss equals eps (Balle & Wang 2018, Thm 5; Zhu, Dong & Wang 2022, §3):

* remove (P_upper = (1-q) N(0, s^2) + q N(-1, s^2), P_lower = N(0, s^2)):
  x_eps = -1/2 - s^2 L, L = log(1 + (e^eps - 1)/q) the unsubsampled loss;
  delta = 1 - e^eps for eps <= log(1 - q).
* add (P_upper = N(0, s^2), P_lower = (1-q) N(0, s^2) + q N(1, s^2)):
  x_eps = 1/2 - s^2 L, L = -log(1 + (e^-eps - 1)/q); delta = 0 for eps >= -log(1 - q).
"""

from __future__ import annotations

import math

import numpy as np
from dp_accounting.pld import pld_pmf, privacy_loss_mechanism
from dp_accounting.pld.privacy_loss_distribution import PrivacyLossDistribution
from scipy import fft, special

from .. import _validation as v
from .pld import (
    LossPmf,
    check_grid_points,
    compose_counts,
    current_grid_cap,
    to_pld,
)

_REMOVE = privacy_loss_mechanism.AdjacencyType.REMOVE
_ADD = privacy_loss_mechanism.AdjacencyType.ADD
#: dp_accounting's default: the noise tails beyond this log-mass are truncated
#: (pessimistically: their mass goes to the largest loss and to infinity)
LOG_MASS_TRUNCATION = -50.0


def gaussian_hockey_stick(
    epsilons: np.ndarray, sigma: float, q: float = 1.0, remove: bool = True
) -> np.ndarray:
    """delta(epsilon) of the Poisson-subsampled Gaussian (sensitivity 1), all epsilons at once.

    ``remove`` picks the remove pair (privacy loss of the mixture against N(0, s^2)),
    otherwise the add pair; with q = 1 both are the Gaussian mechanism's profile
    (Balle & Wang 2018, "Improving the Gaussian mechanism", Thm 8). Values are
    clipped to [0, 1] as dp_accounting does.
    """
    eps = np.asarray(epsilons, dtype=float)
    s2 = sigma * sigma
    out = np.zeros_like(eps)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        if q == 1.0:
            x = -0.5 - eps * s2
            out = special.ndtr((x + 1.0) / sigma) - np.exp(eps + special.log_ndtr(x / sigma))
        elif remove:
            active = eps > math.log1p(-q)
            out[~active] = -np.expm1(eps[~active])
            e = eps[active]
            # L = log(1 + (e^eps - 1)/q), written to stay accurate near eps = log(1 - q)
            loss = e - math.log(q) + np.log1p(-(1.0 - q) * np.exp(-e))
            x = -0.5 - loss * s2
            upper = (1.0 - q) * special.ndtr(x / sigma) + q * special.ndtr((x + 1.0) / sigma)
            out[active] = upper - np.exp(e + special.log_ndtr(x / sigma))
        else:
            active = eps < -math.log1p(-q)
            e = eps[active]
            loss = e + math.log(q) - np.log1p(-(1.0 - q) * np.exp(e))
            x = 0.5 - loss * s2
            lower = np.logaddexp(
                math.log1p(-q) + special.log_ndtr(x / sigma),
                math.log(q) + special.log_ndtr((x - 1.0) / sigma),
            )
            out[active] = special.ndtr(x / sigma) - np.exp(e + lower)
    return np.clip(np.nan_to_num(out, nan=0.0), 0.0, 1.0)


def _pmf(sigma: float, q: float, h: float, remove: bool) -> pld_pmf.PLDPmf:
    """Pessimistic connect-the-dots PMF of one direction on the grid h Z."""
    loss = privacy_loss_mechanism.GaussianPrivacyLoss(
        sigma,
        sensitivity=1.0,
        log_mass_truncation_bound=LOG_MASS_TRUNCATION,
        sampling_prob=q,
        adjacency_type=_REMOVE if remove else _ADD,
    )
    bounds = loss.connect_dots_bounds()  # the loss at the truncated tails (two scalar calls)
    span = (bounds.epsilon_upper - bounds.epsilon_lower) / h + 2
    check_grid_points(span, f"the Gaussian of noise multiplier {sigma:.3g}", h)
    lo = math.floor(bounds.epsilon_lower / h)
    hi = math.ceil(bounds.epsilon_upper / h)
    deltas = gaussian_hockey_stick(np.arange(lo, hi + 1) * h, sigma, q, remove)
    if hi - lo + 1 <= 1000:  # dp_accounting keeps small PMFs sparse
        return pld_pmf.create_pmf_pessimistic_connect_dots_fixed_gap(h, lo, hi, deltas)
    # connect-the-dots masses (Doroshenko et al. 2022, Alg. 1) on the contiguous grid,
    # as dp_accounting's create_pmf_pessimistic_connect_dots_fixed_gap, without its dict
    deltas = np.minimum.accumulate(deltas)
    steps = np.diff(deltas)
    probs = np.empty_like(deltas)
    probs[0] = 1.0 - deltas[0] + steps[0] / math.expm1(h)
    probs[1:-1] = (steps[1:] - steps[:-1] * math.exp(h)) / math.expm1(h)
    probs[-1] = steps[-1] / math.expm1(-h)
    return pld_pmf.DensePLDPmf(h, lo, np.maximum(probs, 0.0), float(deltas[-1]), True)


def approximate_self_composed(pmf: pld_pmf.DensePLDPmf, count: int, tail_mass: float = 1e-15):
    """``pmf.self_compose(count)`` of dp_accounting, computed with one real FFT: search only.

    Not a certified bound: the FFT's round-off can put small deltas below the true
    ones. Calibration searches use it to propose candidates quickly
    (:func:`dpconvex.accounting.caches.search_hints`); every answer they return is
    checked with :func:`gaussian_pld`.

    The same algorithm (Koskela, Jälkö & Honkela 2020; dp_accounting's
    ``common.self_convolve``): the support of the ``count``-fold sum is cut to the
    window outside which a Chernoff bound leaves at most ``tail_mass`` (charged to
    +infinity), at the same 40 orders, and the PMF is raised to the ``count``-th
    power in Fourier space. Only the arithmetic is vectorized (all orders at once,
    a real instead of a complex FFT). None for sparse PMFs (a few points: dp_accounting
    squares dictionaries, for minutes at 10^9 compositions) and when that window,
    linear in ``count``, exceeds :data:`~dpconvex.accounting.pld.MAX_GRID_POINTS`:
    the certified composition then serves.
    """
    if not isinstance(pmf, pld_pmf.DensePLDPmf):
        return None
    probs = np.asarray(pmf._probs, dtype=float)
    size = probs.size
    upper = (size - 1) * count
    lower = 0
    if tail_mass > 0 and size > 1:
        orders = np.concatenate((np.arange(-20, 0), np.arange(1, 21))) / size
        # |order * index| <= 20: the MGF needs no log-sum-exp guard against overflow;
        # summed by numpy, not BLAS, so that the window does not depend on BLAS threads;
        # one order at a time, so that memory stays a few copies of the PMF (it may hold
        # up to MAX_GRID_POINTS points)
        index = np.arange(size, dtype=float)
        mgf = np.array([np.sum(np.exp(order * index) * probs) for order in orders])
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            log_mgf = np.log(mgf)
            bounds = (count * log_mgf + math.log(2.0 / tail_mass)) / orders
        ok = np.isfinite(bounds)
        if (ok & (orders > 0)).any():
            upper = min(upper, math.ceil(bounds[ok & (orders > 0)].min()))
        if (ok & (orders < 0)).any():
            lower = max(lower, math.floor(bounds[ok & (orders < 0)].max()))
    length = upper - lower + 1
    if length > current_grid_cap():
        return None
    n_fft = fft.next_fast_len(max(length, size), real=True)
    wrapped = fft.irfft(fft.rfft(probs, n_fft) ** count, n_fft)
    out = np.roll(wrapped, -lower)[:length]
    infinity = tail_mass - math.expm1(count * math.log1p(-pmf._infinity_mass))
    return pld_pmf.DensePLDPmf(
        pmf._discretization, pmf._lower_loss * count + lower, out, infinity,
        pmf._pessimistic_estimate,
    )  # fmt: skip


def grid_points(sigma: float, h: float) -> float:
    """Upper estimate of the grid points of the Gaussian's PLD: inf when the span overflows.

    At x standard deviations from the mean the privacy loss is 1/(2 s^2) +- x/s, and the
    truncation at mass e^-50 stops near x = 10, so the PMF spans at most about
    2 (1/(2 s^2) + 10/s) / h points (subsampling only narrows it).
    """
    with np.errstate(over="ignore", divide="ignore"):
        inverse = np.float64(1.0) / np.float64(sigma)
        return float(2.0 * (0.5 * inverse * inverse + 10.0 * inverse) / np.float64(h))


def gaussian_loss_pmfs(sigma: float, h: float, q: float = 1.0) -> tuple[LossPmf, LossPmf | None]:
    """(remove, add) PLRVs of the (Poisson-subsampled) Gaussian, add None when q = 1 (symmetric).

    The pessimistic connect-the-dots PMFs dp_accounting's ``from_gaussian_mechanism``
    builds (Doroshenko et al. 2022, Thm 4.5: each dominates its direction), in the form
    :func:`dpconvex.accounting.pld.compose_counts` composes with certified round-off.
    """
    if not (sigma > 0 and h > 0 and 0 < q <= 1):
        raise ValueError(f"need sigma > 0, h > 0 and 0 < q <= 1; got {sigma}, {h}, {q}")
    check_grid_points(grid_points(sigma, h), f"the Gaussian of noise multiplier {sigma:.3g}", h)
    remove = _loss_pmf(_pmf(sigma, q, h, remove=True))
    return remove, (None if q == 1.0 else _loss_pmf(_pmf(sigma, q, h, remove=False)))


def _loss_pmf(pmf) -> LossPmf:
    dense = pmf.to_dense_pmf()
    return LossPmf(
        dense._discretization,
        int(dense._lower_loss),
        np.asarray(dense._probs, dtype=float),
        float(dense._infinity_mass),
    )


def gaussian_pld(
    sigma: float, h: float, q: float = 1.0, count: int = 1, slack: float | None = None
) -> PrivacyLossDistribution:
    """The PLD of ``count`` compositions of the (Poisson-subsampled) Gaussian mechanism.

    Add/remove neighbours, sensitivity 1, pessimistic connect-the-dots on the grid
    ``h`` (:func:`gaussian_loss_pmfs`): for ``count`` = 1 the PLD dp_accounting's
    ``from_gaussian_mechanism(sigma, sampling_prob=q)`` returns. Larger ``count`` are
    composed by :func:`dpconvex.accounting.pld.compose_counts`, whose every bin is a
    certified upper bound despite the FFT's round-off (a plain FFT power, as
    dp_accounting's ``self_compose``, came out 18 % below the exact delta of 1000
    Gaussians at delta 3e-15), so the result is an upper bound on the privacy profile,
    loose by at most ``slack`` in any delta (see ``compose_counts``).
    """
    count = v.positive_int("count", count)
    remove, add = gaussian_loss_pmfs(sigma, h, q)
    parts = [remove] if add is None else [remove, add]
    if count > 1:
        parts = [compose_counts([(pmf, count)], slack=slack) for pmf in parts]
    return to_pld(*parts)


def approximate_gaussian_pld(
    sigma: float, h: float, q: float = 1.0, count: int = 1
) -> PrivacyLossDistribution:
    """dp_accounting's ``count``-fold Gaussian PLD (:func:`approximate_self_composed`):
    fast, not certified, for calibration searches only."""
    check_grid_points(grid_points(sigma, h), f"the Gaussian of noise multiplier {sigma:.3g}", h)
    pmfs = [_pmf(sigma, q, h, remove=True)]
    if q < 1.0:
        pmfs.append(_pmf(sigma, q, h, remove=False))
    if count > 1:
        pmfs = [_approximately_composed(pmf, count) for pmf in pmfs]
    return PrivacyLossDistribution(*pmfs)


def _approximately_composed(pmf, count: int):
    fast = approximate_self_composed(pmf, count)
    if fast is not None:
        return fast
    return compose_counts([(_loss_pmf(pmf), count)]).to_dp_accounting()
