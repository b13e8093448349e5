"""DpEvents of the mechanisms of Su, Zhao & Wang and their privacy-loss distributions.

Su, Zhao & Wang (arXiv 2303.18047) state the privacy of their building blocks
as (epsilon, delta) guarantees, not as privacy-loss distributions:

* the Generalized Gaussian (GG) mechanism, Lemma 3 (from Bassily-Guzman-Nandi 2021):
  noise GG_{||.||_+}(0, sigma^2) on a query of ||.||_*-sensitivity s is
  (eps, delta)-DP whenever sigma^2 = 2 kappa log(1/delta) s^2 / eps^2;
* objective perturbation over C, Lemma 5 (Iyengar et al. 2019, Thm 1, as restated
  by Algorithm 5): (eps, delta)-DP when sigma^2 = 32 L^2 log(1/delta) / eps^2 and
  lam >= r beta / (2 eps n);
* amplification by shuffling, Lemma 16 (Feldman-McMillan-Talwar 2021), with the
  explicit constants of the reference implementation (see :func:`shuffle_epsilon`).

At a *fixed* noise level each statement holds for a whole family of pairs
(eps_i, delta_i). A mechanism that is (eps_i, delta_i)-DP for every i has trade-off
curves above f = max_i f_{eps_i, delta_i} (Dong, Roth & Su 2022, Prop. 2.4-2.5), and f
is the trade-off curve of one explicit discrete pair of distributions. Its
privacy-loss random variable is what :func:`envelope_loss_pmf` builds (rounded up to
the PLD grid, so pessimistic), and the accountant composes it exactly
(Dong-Roth-Su Thm 3.2: composition is monotone in the trade-off order). That is
how these events get composition that is tighter than Lemma 1's advanced
composition while claiming nothing beyond the paper's own lemmas. The paper
restricts every lemma to 0 < eps < 1, and so do we.

Neighbours are the paper's (replace one sample, fixed n); each sensitivity below
is the replace-one sensitivity. The events are priced by PLD only (registered
with :func:`dpconvex.accounting.register_pld`); RDP accounting refuses them.
"""

from __future__ import annotations

import math

import attr
import numpy as np
from dp_accounting import dp_event

from .. import _validation as v
from ..accounting import register_pld
from ..accounting.pld import LossPmf, gaussian_loss_pmf

#: Per-mechanism epsilons at which the (eps, delta) profiles are sampled, all < 1.
PROFILE_EPSILONS = np.geomspace(1e-4, 1.0 - 1e-9, 1200)
#: Local epsilons and deltas at which the shuffle bound is sampled (a finer grid: a
#: single shuffled mechanism is priced by these points alone).
SHUFFLE_LOCAL_EPSILONS = np.geomspace(1e-3, 1.0 - 1e-9, 1000)
SHUFFLE_DELTAS = np.geomspace(1e-16, 0.5, 500)


def _positive(name):
    def check(instance, attribute, value):
        v.positive(name, value)

    return check


def _at_least(name, low):
    def check(instance, attribute, value):
        value = v.finite(name, value)
        if value < low:
            raise ValueError(f"{name} must be >= {low}, got {value}")

    return check


# -- the envelope pair ---------------------------------------------------------------
def _upper_envelope(slopes: np.ndarray, intercepts: np.ndarray) -> tuple[list[int], list[float]]:
    """Lines of max_j (a_j x + b_j) in order of increasing x, and the breakpoints between them."""
    order = np.lexsort((intercepts, slopes))
    hull: list[int] = []
    for j in order:
        if hull and slopes[hull[-1]] == slopes[j]:
            hull.pop()  # same slope: the later one has the larger intercept
        while len(hull) >= 2:
            i1, i2 = hull[-2], hull[-1]
            x12 = (intercepts[i1] - intercepts[i2]) / (slopes[i2] - slopes[i1])
            x13 = (intercepts[i1] - intercepts[j]) / (slopes[j] - slopes[i1])
            if x13 <= x12:
                hull.pop()
            else:
                break
        hull.append(int(j))
    breaks = [
        (intercepts[i] - intercepts[k]) / (slopes[k] - slopes[i])
        for i, k in zip(hull[:-1], hull[1:], strict=True)
    ]
    return hull, breaks


def envelope_loss_pmf(epsilons, deltas, h: float) -> LossPmf:
    """Pessimistic PLRV of the pair whose trade-off curve is max_i f_{eps_i, delta_i}.

    f_{eps,delta}(a) = max(0, 1 - delta - e^eps a, e^-eps (1 - delta - a)) (Dong, Roth &
    Su 2022, eq. (5)), so f is the upper envelope of lines on [0, 1]. A segment of
    slope -c and length l is an outcome with P-mass l and Q-mass c l, i.e. a
    privacy loss log(P/Q) = -log c with probability l; the part where f = 0 is an
    outcome Q never produces (loss +inf). Losses are rounded up to the grid h*Z,
    which can only increase delta(eps) = E_P[1 - e^(eps - loss)]_+ for every eps.
    The pair is symmetric (f is), so one PLRV serves both directions.
    """
    h = v.positive("h", h)
    eps = np.asarray(epsilons, dtype=float).ravel()
    dl = np.asarray(deltas, dtype=float).ravel()
    if eps.shape != dl.shape or eps.size == 0:
        raise ValueError("epsilons and deltas must be non-empty arrays of the same length")
    if np.any(~np.isfinite(eps)) or np.any(eps < 0) or np.any(np.isnan(dl)):
        raise ValueError("epsilons must be finite and >= 0, deltas must be numbers")
    keep = (dl < 1.0) & (dl >= 0.0)
    eps, dl = eps[keep], dl[keep]
    if eps.size == 0:  # no guarantee at all: the pair (point mass, disjoint point mass)
        return LossPmf(h, 0, np.zeros(1), 1.0)
    slopes = np.concatenate([-np.exp(eps), -np.exp(-eps), [0.0]])
    intercepts = np.concatenate([1.0 - dl, np.exp(-eps) * (1.0 - dl), [0.0]])
    hull, breaks = _upper_envelope(slopes, intercepts)
    edges = np.clip(np.concatenate([[-np.inf], breaks, [np.inf]]), 0.0, 1.0)
    lengths = np.diff(edges)
    a = slopes[hull]
    finite = a < 0
    masses = lengths[finite]
    losses = -np.log(-a[finite])
    infinity_mass = float(max(0.0, 1.0 - masses.sum()))
    nz = masses > 0
    if not np.any(nz):
        return LossPmf(h, 0, np.zeros(1), 1.0)
    k = np.ceil(losses[nz] / h - 1e-12).astype(np.int64)
    offset = int(k.min())
    probs = np.bincount(k - offset, weights=masses[nz])
    return LossPmf(h, offset, probs, infinity_mass)


def lemma3_delta(epsilon, sigma: float, sensitivity: float, kappa: float):
    """delta(eps) = exp(-eps^2 sigma^2 / (2 kappa s^2)): Su et al., Lemma 3, solved for delta."""
    eps = np.asarray(epsilon, dtype=float)
    return np.exp(-(eps**2) * sigma**2 / (2.0 * kappa * sensitivity**2))


def _pareto(eps: np.ndarray, delta: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Drop dominated guarantees: (e, d) is implied by any (e', d') with e' <= e, d' <= d."""
    order = np.lexsort((eps, delta))
    eps, delta = eps[order], delta[order]
    best = np.minimum.accumulate(eps)
    keep = np.ones(eps.size, dtype=bool)
    keep[1:] = eps[1:] < best[:-1]
    return eps[keep], delta[keep]


# -- events -----------------------------------------------------------------------------
@attr.s(frozen=True, slots=True, auto_attribs=True)
class NormGaussianDpEvent(dp_event.DpEvent):
    """q(D) + GG_{||.||_r}(0, sigma^2): density prop. to exp(-||z||_r^2 / (2 sigma^2)).

    ``sensitivity`` is the replace-one sensitivity of q in the dual norm ||.||_*,
    ``kappa`` the regularity constant of (R^d, ||.||_*) for the smooth norm
    ||.||_r (see :func:`dpconvex.sco.geometry.lp_regularity`), ``norm_index`` = r.
    Priced by the (eps, delta)-pairs of Su et al., Lemma 3, 0 < eps < 1, through
    :func:`envelope_loss_pmf`; when r = 2 and kappa = 1 the noise is N(0, sigma^2 I)
    and the exact Gaussian PLRV is used instead.
    """

    sigma: float = attr.ib(validator=_positive("sigma"))
    sensitivity: float = attr.ib(validator=_positive("sensitivity"))
    kappa: float = attr.ib(validator=_at_least("kappa", 1.0))
    norm_index: float = attr.ib(default=2.0, validator=_at_least("norm_index", 2.0))

    @property
    def is_gaussian(self) -> bool:
        return self.norm_index == 2.0 and self.kappa == 1.0

    def guarantees(self) -> tuple[np.ndarray, np.ndarray]:
        """The (eps, delta) pairs of Lemma 3 at this sigma, eps on :data:`PROFILE_EPSILONS`."""
        eps = PROFILE_EPSILONS
        return eps, lemma3_delta(eps, self.sigma, self.sensitivity, self.kappa)


@attr.s(frozen=True, slots=True, auto_attribs=True)
class ConstrainedObjPertDpEvent(dp_event.DpEvent):
    """Algorithm 5 of Su et al.: exact argmin over C of L^(w) + <G, w>/n + lam ||w||_2^2.

    G ~ N(0, sigma^2 I); per-sample losses are L-Lipschitz and beta-smooth over C with
    r = min(d, 2 rank(Hessian)). Priced by Lemma 5 (Iyengar et al. 2019, Thm 1):
    (eps, exp(-eps^2 sigma^2 / (32 L^2)))-DP for every eps in [r beta / (2 n lam), 1)
    (sigma^2 = 32 L^2 log(1/delta) / eps^2 and lam >= r beta / (2 eps n), solved for
    delta at fixed sigma and lam).
    """

    sigma: float = attr.ib(validator=_positive("sigma"))
    lam: float = attr.ib(validator=_at_least("lam", 0.0))
    beta: float = attr.ib(validator=_at_least("beta", 0.0))
    lipschitz: float = attr.ib(validator=_positive("lipschitz"))
    rank: int = attr.ib(validator=_at_least("rank", 0))
    n: int = attr.ib(validator=_at_least("n", 1))

    @property
    def min_epsilon(self) -> float:
        """Smallest eps that Lemma 5's condition lam >= r beta / (2 eps n) allows."""
        need = self.rank * self.beta
        if need == 0:
            return 0.0
        if self.lam == 0:
            return math.inf
        return need / (2.0 * self.n * self.lam)

    def guarantees(self) -> tuple[np.ndarray, np.ndarray]:
        """Lemma 5's pairs at this (sigma, lam): eps = min_epsilon and the grid above it."""
        low = self.min_epsilon
        eps = PROFILE_EPSILONS[PROFILE_EPSILONS > low]
        if 0 < low < 1:
            eps = np.concatenate([[low], eps])
        return eps, np.exp(-(eps**2) * self.sigma**2 / (32.0 * self.lipschitz**2))


def shuffle_epsilon(n: int, local_epsilon: float, delta: float) -> float:
    """Closed-form shuffle amplification of n local eps0-DP randomizers (inf where invalid).

    Feldman, McMillan & Talwar 2021 (Su et al., Lemma 16) with the explicit constants
    of their reference implementation (``closedformanalysis`` in Apple's
    ml-shuffling-amplification): valid for
    eps0 <= log(n / (16 log(4/delta))); with a = 8 sqrt(e^eps0 log(4/delta) / n),
    c = 8 e^eps0 / n, e' = log(1 + a + c):
    eps = log(1 + (1 - e^-eps0) / (1 + e^(-eps0 - e')) (a + c)).
    """
    n = v.positive_int("n", n)
    e0 = v.positive("local_epsilon", local_epsilon)
    delta = v.probability_open("delta", delta)
    limit = math.log(n / (16.0 * math.log(4.0 / delta))) if n > 16 * math.log(4 / delta) else 0
    if e0 > limit:
        return math.inf
    a = 8.0 * math.sqrt(math.exp(e0) * math.log(4.0 / delta) / n)
    c = 8.0 * math.exp(e0) / n
    e = math.log1p(a + c)
    b = -math.expm1(-e0)
    dd = 1.0 + math.exp(-e0 - e)
    return math.log1p(b / dd * (a + c))


def _shuffle_epsilon_array(n: int, e0: np.ndarray, delta: np.ndarray) -> np.ndarray:
    """:func:`shuffle_epsilon` on broadcast arrays (inf where the closed form is invalid)."""
    log4 = np.log(4.0 / delta)
    with np.errstate(divide="ignore", invalid="ignore"):
        limit = np.where(n > 16.0 * log4, np.log(n / (16.0 * log4)), 0.0)
    a = 8.0 * np.sqrt(np.exp(e0) * log4 / n)
    c = 8.0 * np.exp(e0) / n
    e = np.log1p(a + c)
    out = np.log1p(-np.expm1(-e0) / (1.0 + np.exp(-e0 - e)) * (a + c))
    return np.where(e0 <= limit, out, np.inf)


def shuffle_delta_cost(epsilon: float, local_epsilon: float, local_delta: float, n: int) -> float:
    """Extra delta for (eps0, delta0)-DP randomizers: (e^eps + 1)(1 + e^-eps0 / 2) n delta0.

    The approximate-DP extension of FMT21 (their Thm 3.8), as used by public
    implementations of the clone analysis.
    """
    return (math.exp(epsilon) + 1.0) * (1.0 + math.exp(-local_epsilon) / 2.0) * n * local_delta


@attr.s(frozen=True, slots=True, auto_attribs=True)
class ShuffledNormGaussianDpEvent(dp_event.DpEvent):
    """n GG-noised local reports z_i = g(x_pi(i)) + GG_{||.||_r}(0, sigma^2), pi a secret shuffle.

    Algorithm 4's privacy (Su et al., Thm 9): each report is a local randomizer that is
    (eps0, delta0)-DP for every Lemma 3 pair at this sigma (``sensitivity`` = the
    replace-one ||.||_*-sensitivity of one report), adaptively chosen, and the
    shuffle amplifies them (Lemma 16 with the constants of :func:`shuffle_epsilon`
    and :func:`shuffle_delta_cost`). The guarantee set holds, for every local pair
    (eps0, delta0) with eps0 < 1 and every delta_hat on :data:`SHUFFLE_DELTAS`,
    (eps(n, eps0, delta_hat), delta_hat + shuffle_delta_cost) when eps0 is in the
    closed form's range, and (eps0, delta0) itself (one sample enters one report).
    """

    sigma: float = attr.ib(validator=_positive("sigma"))
    sensitivity: float = attr.ib(validator=_positive("sensitivity"))
    kappa: float = attr.ib(validator=_at_least("kappa", 1.0))
    norm_index: float = attr.ib(validator=_at_least("norm_index", 2.0))
    n: int = attr.ib(validator=_at_least("n", 1))

    def guarantees(self) -> tuple[np.ndarray, np.ndarray]:
        e0 = SHUFFLE_LOCAL_EPSILONS[None, :]
        d0 = lemma3_delta(e0, self.sigma, self.sensitivity, self.kappa)
        dh = SHUFFLE_DELTAS[:, None]
        eps = _shuffle_epsilon_array(self.n, e0, dh)
        total = dh + (np.exp(eps) + 1.0) * (1.0 + np.exp(-e0) / 2.0) * self.n * d0
        ok = np.isfinite(eps) & (eps < e0) & (total < 1.0)
        return _pareto(np.concatenate([e0[0], eps[ok]]), np.concatenate([d0[0], total[ok]]))


# -- pricing ----------------------------------------------------------------------------
def _norm_gaussian_pmf(event: NormGaussianDpEvent, h: float) -> LossPmf:
    if event.is_gaussian:
        return gaussian_loss_pmf(event.sensitivity, event.sigma, h)
    return envelope_loss_pmf(*event.guarantees(), h)


def _guarantee_pmf(event, h: float) -> LossPmf:
    return envelope_loss_pmf(*event.guarantees(), h)


register_pld(NormGaussianDpEvent, _norm_gaussian_pmf)
register_pld(ConstrainedObjPertDpEvent, _guarantee_pmf)
register_pld(ShuffledNormGaussianDpEvent, _guarantee_pmf)
