"""Privacy-loss distributions of our mechanisms, in dp_accounting's PLD format.

A mechanism dominated by a pair (P, Q) is described by its privacy-loss random
variable (PLRV) w = log P/Q under P (seed 000, Def. J.4 and Thm D.2):
delta(eps) = E[1 - e^(eps - w)]_+. We discretize w *pessimistically* — the mass
of every interval ((k-1)h, kh] is put at kh and the far right tail at +inf —
which can only increase E[1 - e^(eps - w)]_+ for every eps, so the discrete
distribution is itself a dominating pair. The result is handed to
``dp_accounting.pld`` so that k-fold composition (seed 000 eq. D.11, Fig. 4),
composition with dp_accounting's own mechanisms and Poisson subsampling all run
in one PLD accountant.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from dp_accounting.pld import pld_pmf
from dp_accounting.pld.privacy_loss_distribution import PrivacyLossDistribution
from scipy import signal
from scipy.special import ndtr, ndtri

from .. import _validation as v
from .objpert import amp_output_sensitivity, jacobian_term

DEFAULT_TAIL_MASS = 1e-15


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
    """PLRV of objective perturbation's dominating pair (seed 000, App. D.3, Lemma D.6).

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
    """PLRV of the Gaussian mechanism: N(mu, 2 mu) with mu = D^2/(2 sigma^2) (seed 000, App. B)."""
    mu = v.positive("sensitivity", sensitivity) ** 2 / (2 * v.positive("sigma", sigma) ** 2)
    sd = math.sqrt(2 * mu)
    z = -float(ndtri(tail_mass / 2))
    return _discretize(lambda loss: ndtr((mu - loss) / sd), mu - z * sd, mu + z * sd, h)


def convolve(first: LossPmf, second: LossPmf) -> LossPmf:
    """PLRV of the composition of two mechanisms (sum of independent PLRVs, Thm D.1).

    The sum of two pessimistic discretizations is pessimistic; FFT round-off
    below zero is set to zero, which only adds mass.
    """
    if first.h != second.h:
        raise ValueError("cannot convolve PLRVs discretized on different grids")
    probs = np.maximum(signal.fftconvolve(first.probs, second.probs), 0.0)
    inf = 1.0 - (1.0 - first.infinity_mass) * (1.0 - second.infinity_mass)
    return LossPmf(first.h, first.offset + second.offset, probs, inf)


def _bin_up(losses: np.ndarray, masses: np.ndarray, h: float, infinity_mass: float) -> LossPmf:
    k = np.ceil(losses / h).astype(np.int64)
    offset = int(k.min())
    probs = np.bincount(k - offset, weights=masses)
    return LossPmf(h, offset, probs, float(infinity_mass))


def poisson_subsample(pmf: LossPmf, q: float) -> tuple[LossPmf, LossPmf]:
    """PLRVs (remove, add) of a mechanism run on a Poisson subsample with rate ``q``.

    If (P, Q) dominates the mechanism for all orders (as the pairs here do, for
    all real epsilon), then under add/remove neighbours the subsampled mechanism
    is dominated by (qP + (1-q)Q, Q) in the remove direction and by
    (Q, qP + (1-q)Q) in the add direction (Zhu, Dong & Wang 2022, Thm 11). In
    loss space, with Q's mass e^(-l) p at a loss l of mass p under P and the rest
    of Q (where P = 0) at -inf:
    remove: loss log(q e^l + 1 - q) with mass q p + (1-q) e^(-l) p,
    add:    loss -log(q e^l + 1 - q) with mass e^(-l) p;
    Q's atom contributes log(1-q) (remove) and -log(1-q) (add). Losses are
    rounded up again, so the result stays pessimistic.
    """
    q = v.sampling_rate("sampling_probability", q)
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
    add = _bin_up(np.append(-mixed, -log1mq), np.append(q_mass, q_atom), pmf.h, 0.0)
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
    """PLRV of Algorithm 1 / AMP (seed 000, Thm 4.1 and §D.3.1).

    Objective perturbation composed with the Gaussian output step of
    sensitivity 2*tau/lam and noise sigma_out: the sum of the two PLRVs.
    """
    return convolve(
        objpert_loss_pmf(sigma, lam, beta, lipschitz, h),
        gaussian_loss_pmf(amp_output_sensitivity(tau, lam), sigma_out, h),
    )
