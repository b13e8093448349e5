"""Hidden-state privacy accounting of DP-MBCD (Chen & Liu, Thm 4.6, corrected indexing).

Chen & Liu, *Hidden State Differential Private Mini-Batch Block Coordinate Descent for
Multi-convexity Optimization* (arXiv 2407.08233).

Pure math, no data, no randomness. One released block is updated m times per epoch
for K epochs by

    theta <- T( F_t(theta) + N(0, 2 eta o(k, j) I) ),

with F_t L_F-Lipschitz, the linear part of the prox T L_T-Lipschitz (any non-linear
part 1-Lipschitz), F_t identical for neighbouring datasets except at the step whose
batch holds the differing example (position j0 in every epoch), where the two maps
differ by at most ``eta * sensitivity / batch_size``. Writing x = R_alpha / alpha,

* Lemma C.3: the LSI constants of the iterates
  satisfy 1/c_{t+1} = L^2 / c_t + 2 eta L_T^2 o_t with L = L_F L_T and 1/c_0 = 0
  (deterministic start);
* Cor. 4.5, case 1 (no differing example in the batch): x <- a_t x with
  a_t = (1 + 2 eta o_t c_t / L_F^2)^(-1);
* Cor. 4.5, case 2 (the differing example in the batch): x <- x + A_t with
  A_t = eta S^2 / (4 b^2 o_t);
* Thm 4.6 / eq. (39): the position j0 is uniform and secret, so
  eps_K(alpha) = 1/(alpha - 1) log mean_j0 exp((alpha - 1) alpha x_j0).

Deviations from the printed paper (corrections of its printed formulas), each on the
safe side or a pure re-indexing:

* the indices of eq. (9) are re-derived (the printed c_K^{n/b-1} and prod_{l=k}^{K}
  are off by one); the step-by-step recursion and the telescoped product agree;
* the contraction exponent is -1, not -1/L_T^2: a linear prox theta/(1 + eta lam)
  commutes with the Gaussian, so the step is exactly a no-prox step with map
  L_T F and noise variance 2 eta o L_T^2, whose factor is (1 + 2 eta o c / L_F^2)^-1;
  the paper's exponent -1/L_T^2 < -1 would claim more than that reduction gives;
* L_T <= 1 always (a prox of a convex function is non-expansive; Lemma 4.2's bound
  of 2 is loose and would void the contraction).

The accountant is sound only when L = L_F L_T < 1, which needs a strongly convex
block or a ridge term in the prox; :class:`~dpconvex.bcd.events.HiddenStateDpEvent`
refuses anything else.
"""

from __future__ import annotations

import numpy as np
from scipy.special import logsumexp


def _as_schedule(noise) -> np.ndarray:
    o = np.asarray(noise, dtype=float)
    if o.ndim != 2 or o.size == 0:
        raise ValueError(
            f"noise schedule must be a non-empty (epochs, n_batches) array, got {o.shape}"
        )
    if not np.all(np.isfinite(o)) or np.any(o <= 0):
        raise ValueError("noise schedule o(k, j) must be finite and > 0 everywhere")
    return o


def inverse_lsi_constants(
    step_size: float, noise, grad_lipschitz: float, prox_lipschitz: float = 1.0
) -> np.ndarray:
    """1/c_t before every step t = k m + j, and after the last one (length K m + 1).

    Chen & Liu, Lemma C.3: 1/c_{t+1} = L^2/c_t + 2 eta L_T^2 o_t,
    1/c_0 = 0 (point-mass start). Working with 1/c avoids infinity at t = 0.
    """
    o = _as_schedule(noise).ravel()
    l2 = (grad_lipschitz * prox_lipschitz) ** 2
    inc = 2.0 * step_size * prox_lipschitz**2 * o
    inv_c = np.empty(o.size + 1)
    cur = 0.0
    for t in range(o.size):
        inv_c[t] = cur
        cur = l2 * cur + inc[t]
    inv_c[-1] = cur
    return inv_c


def log_contractions(
    step_size: float, noise, grad_lipschitz: float, prox_lipschitz: float = 1.0
) -> np.ndarray:
    """log a_{k,j}, shape (K, m): the per-step contraction of R_alpha/alpha (Cor. 4.5, case 1).

    a = (1 + 2 eta o c / L_F^2)^(-1) = L_F^2 (1/c) / (L_F^2 (1/c) + 2 eta o); a = 0
    (log = -inf) at the first step, whose input is a point mass.
    """
    o = _as_schedule(noise)
    inv_c = inverse_lsi_constants(step_size, o, grad_lipschitz, prox_lipschitz)[:-1]
    num = grad_lipschitz**2 * inv_c
    with np.errstate(divide="ignore"):
        out = np.log(num) - np.log(num + 2.0 * step_size * o.ravel())
    return out.reshape(o.shape)


def injection_terms(step_size: float, sensitivity: float, batch_size: float, noise) -> np.ndarray:
    """A_{k,j} = eta S^2 / (4 b^2 o(k, j)): the Gaussian RDP / alpha of a step that sees i0.

    Chen & Liu, Cor. 4.5 case 2; equal to Delta^2 / (2 sigma^2) with shift
    Delta = eta S / b and noise variance sigma^2 = 2 eta o (the Gaussian mechanism's RDP).
    """
    o = _as_schedule(noise)
    return step_size * sensitivity**2 / (4.0 * batch_size**2 * o)


def epoch_contributions(
    step_size: float,
    sensitivity: float,
    batch_size: float,
    noise,
    grad_lipschitz: float,
    prox_lipschitz: float = 1.0,
) -> np.ndarray:
    """eps_K(alpha, j0, k) / alpha for every epoch k and position j0, shape (K, m).

    Chen & Liu, proof of Thm 4.6, eq. (38), with corrected indices: the injection at
    (k, j0) times every contraction after it, skipping the later j0 steps (which
    inject instead of contracting). Vectorized with suffix sums of log a.
    """
    o = _as_schedule(noise)
    K, m = o.shape
    log_a = log_contractions(step_size, o, grad_lipschitz, prox_lipschitz)
    amount = injection_terms(step_size, sensitivity, batch_size, o)
    flat = log_a.ravel()
    # suffix[t] = sum of log a over steps >= t (steps >= 1 are finite; step 0 never follows)
    suffix = np.zeros(K * m + 1)
    suffix[:-1] = np.cumsum(flat[::-1])[::-1]
    t_after = np.arange(K)[:, None] * m + np.arange(m)[None, :] + 1  # first step after (k, j0)
    total_after = suffix[t_after]
    # own-column steps after (k, j0): epochs l > k at position j0 (they inject, not contract)
    col = np.zeros((K + 1, m))
    col[:-1] = np.cumsum(log_a[::-1], axis=0)[::-1]
    own_after = col[1:]
    with np.errstate(invalid="ignore"):
        log_decay = total_after - own_after
    return amount * np.exp(log_decay)


def position_bounds(
    step_size: float,
    sensitivity: float,
    batch_size: float,
    noise,
    grad_lipschitz: float,
    prox_lipschitz: float = 1.0,
) -> np.ndarray:
    """eps_K(alpha, j0) / alpha for each position j0 (length m); Chen & Liu, Thm 4.6."""
    return epoch_contributions(
        step_size, sensitivity, batch_size, noise, grad_lipschitz, prox_lipschitz
    ).sum(axis=0)


def composition_position_bounds(
    step_size: float, sensitivity: float, batch_size: float, noise
) -> np.ndarray:
    """Every iterate released: eps(alpha, j0) / alpha = sum_k A_{k, j0}.

    Adaptive composition of the K Gaussian steps that see the differing example.
    """
    return injection_terms(step_size, sensitivity, batch_size, noise).sum(axis=0)


def mix_positions(orders, per_position: np.ndarray) -> np.ndarray:
    """RDP at ``orders`` of the mixture over a uniform secret position (Chen & Liu, eq. 39).

    Joint convexity of exp((alpha - 1) D_alpha): with per-position RDP alpha * x_j,
    eps(alpha) <= 1/(alpha - 1) log mean_j exp((alpha - 1) alpha x_j); at alpha = 1
    the limit mean_j x_j.
    """
    a = np.atleast_1d(np.asarray(orders, dtype=float))
    x = np.asarray(per_position, dtype=float)
    out = np.empty(a.shape)
    one = a <= 1.0
    out[one] = x.mean()
    b = a[~one]
    y = (b - 1.0)[:, None] * b[:, None] * x[None, :]
    # log mean exp(y): log1p(mean(expm1(y))) keeps its precision when y is tiny (alpha -> 1)
    small = np.abs(y).max(axis=1) < 1.0
    lme = np.empty(b.shape)
    lme[small] = np.log1p(np.mean(np.expm1(y[small]), axis=1))
    lme[~small] = logsumexp(y[~small], axis=1) - np.log(x.size)
    out[~one] = lme / (b - 1.0)
    return out


def stationary_position_bounds(
    step_size: float,
    sensitivity: float,
    batch_size: float,
    noise_level: float,
    n_batches: int,
    grad_lipschitz: float,
    prox_lipschitz: float = 1.0,
) -> np.ndarray:
    """lim_{K -> inf} eps_K(alpha, j0) / alpha for a constant schedule (derived here).

    With constant o and L = L_F L_T < 1 the factors a_t increase to r = L^2, so
    eps_inf(alpha, j0) = alpha A r^(m-1-j0) / (1 - r^(m-1)), an upper bound on every
    finite K. Infinite when m = 1 (the differing example is in every step).
    """
    r = (grad_lipschitz * prox_lipschitz) ** 2
    m = int(n_batches)
    amount = step_size * sensitivity**2 / (4.0 * batch_size**2 * noise_level)
    if m == 1 or r >= 1.0:
        return np.full(m, np.inf)
    j0 = np.arange(m)
    return amount * r ** (m - 1 - j0) / (1.0 - r ** (m - 1))
