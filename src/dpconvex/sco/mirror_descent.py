"""Algorithm 3 of Su, Zhao & Wang: Noisy Regularized Mirror Descent, unconstrained l_p^d.

Su, Zhao & Wang (arXiv 2303.18047), §5.1, Algorithm 3 for 1 < p <= 2; privacy Thm 6,
utility Thm 7. With Phi the p-norm mirror map (1-strongly convex in
||.||_p) and full-batch gradients,

    w_{t+1} = argmin_w <grad L^(w_t) + g_t, w - w_t> + beta D_Phi(w, w_t) + alpha Phi(w),

g_t ~ GG_{||.||_r}(0, sigma^2) fresh each step, output the weighted average of w_2..w_{T+1}
with weights ((2 beta + alpha) / (2 beta))^t. p = 2 is allowed: Phi = ||w||^2/2, the
noise is Gaussian and each step is a regularized gradient step.
"""

from __future__ import annotations

import math

import numpy as np
from dp_accounting.dp_event import SelfComposedDpEvent

from .. import _validation as v
from .._random import make_rng
from ..noise import norm_gaussian
from ..release import Release
from .events import NormGaussianDpEvent
from .geometry import dual_exponent, lp_regularity, mirror_map, regularized_mirror_step
from .glm import GLMData
from .privacy import (
    advanced_composition_step,
    calibrate_noise,
    check_privacy,
    gg_sigma,
    pld_epsilon,
    pld_interval,
)


def mirror_descent_settings(
    n: int,
    d: int,
    p: float,
    epsilon: float,
    delta: float,
    beta: float,
    *,
    c_T: float = 10.0,
    c_alpha: float = 1.0,
) -> tuple[int, float]:
    """(T, alpha) of Thm 7 as in its proof (not its statement), times c_T and c_alpha.

    T = c_T (n eps sqrt(kappa) / sqrt(d log(1/delta)))^(2/5), rounded, within [1, n/2];
    alpha = c_alpha 4 beta log2(n/T) / (T + 1), capped at beta (the proof assumes
    alpha <= beta). The constants only affect utility, never privacy; with the literal
    c_T = 1 the regularization bias dominates (Algorithm 3 barely moves),
    hence the default c_T = 10.
    """
    kappa = lp_regularity(p, d).kappa
    T = c_T * (n * epsilon * math.sqrt(kappa) / math.sqrt(d * math.log(1 / delta))) ** 0.4
    T = int(min(max(round(T), 1), max(n // 2, 1)))
    return T, regularization_for(n, T, beta, c_alpha)


def regularization_for(n: int, steps: int, beta: float, c_alpha: float = 1.0) -> float:
    """alpha = min(c_alpha 4 beta log2(n/T) / (T + 1), beta) (proof of Thm 7; log2 >= 1)."""
    alpha = c_alpha * 4.0 * beta * math.log2(max(n / steps, 2.0)) / (steps + 1.0)
    return min(alpha, beta)


def noisy_mirror_descent(
    X,
    y,
    loss,
    *,
    p: float,
    epsilon: float,
    delta: float,
    row_bound: float,
    steps: int | None = None,
    regularization: float | None = None,
    c_T: float = 10.0,
    c_alpha: float = 1.0,
    calibration: str = "accountant",
    random_state=None,
) -> Release:
    """Algorithm 3 of Su et al.: (epsilon, delta)-DP for convex, smooth, Lipschitz GLM losses.

    Rows must satisfy ||z_i||_q <= ``row_bound`` (q = p/(p-1), declared and checked), so
    L = sup|f'| R and beta = sup f'' R^2 w.r.t. ||.||_p. Utility (Thm 7):
    O~(kappa^(4/5) (sqrt(d log(1/delta)) / (n eps))^(2/5)).

    Departures from the printed box, each for a stated reason:

    * mirror map index s = 1 + 1/kappa_plus, not kappa/(kappa-1) (a correction:
      the printed map is not strongly convex in ||.||_p): see
      :func:`dpconvex.sco.geometry.mirror_map`;
    * noise with kappa = (r-1) d^(2(1/r - 1/q)) (the paper states kappa three ways),
      the constant Lemma 3 needs for ||.||_+ = ||.||_r;
    * ``calibration="paper"``: sigma^2 = 64 kappa L^2 T ln(2T/delta) ln(4/delta) /
      (n^2 eps^2), i.e. Lemma 3 per step at the per-step budget of Lemma 1 (advanced
      composition, applied at delta/2 since it yields 2 delta in total). The printed
      sigma^2 = 64 L^2 kappa T log(1/delta) / (n^2 eps^2) omits the composition's log
      factor (a misprint) and is not used;
    * ``calibration="accountant"`` (default): the smallest sigma for which the T-fold
      composition of the per-step GG mechanism, priced by Lemma 3's whole (eps, delta)
      family through its privacy-loss distribution, meets (epsilon, delta). Same
      lemma, tighter composition (about 4x smaller sigma at T = 100).

    The per-step query is grad L^(w_t, D) with replace-one ||.||_*-sensitivity 2L/n
    (proof of Thm 6). T (``steps``) and alpha (``regularization``) default to
    :func:`mirror_descent_settings`.
    """
    epsilon, delta = check_privacy(epsilon, delta, calibration)
    p = float(p)
    if math.isnan(p) or not 1 < p <= 2:
        raise ValueError(f"Algorithm 3 is for 1 < p <= 2, got p={p} (use phased_dpsgd for p >= 2)")
    data = GLMData(X, y, loss, row_bound, q=dual_exponent(p))
    n, d = data.n, data.d
    lipschitz = data.lipschitz()
    beta = data.smoothness
    if beta <= 0:
        raise ValueError(
            "Algorithm 3 needs a smooth loss with a minimizer (beta > 0); "
            f"the {data.loss.name} loss has none"
        )
    reg = lp_regularity(p, d)
    phi = mirror_map(reg)
    if steps is None:
        T, _ = mirror_descent_settings(n, d, p, epsilon, delta, beta, c_T=c_T, c_alpha=c_alpha)
    else:
        T = v.positive_int("steps", steps)
    if regularization is None:
        alpha = regularization_for(n, T, beta, c_alpha)
    else:
        alpha = v.positive("regularization", regularization)
    sensitivity = 2.0 * lipschitz / n

    def event_for(sigma: float) -> NormGaussianDpEvent:
        return NormGaussianDpEvent(sigma, sensitivity, reg.kappa, reg.r)

    e_step, d_step = advanced_composition_step(min(epsilon, 0.999), delta, T)
    paper_sigma = gg_sigma(e_step, d_step, sensitivity, reg.kappa)
    if calibration == "paper":
        sigma = paper_sigma
        spent = epsilon  # Lemma 3 per step + Lemma 1
        spent_pld = pld_epsilon(event_for(sigma), delta, T, pld_interval(epsilon, T))
    else:
        sigma, spent = calibrate_noise(
            event_for,
            epsilon,
            delta,
            paper_sigma,
            count=T,
            key=("gg", sensitivity, reg.kappa, reg.r),
        )
        spent_pld = spent
    rng = make_rng(random_state)
    w = np.zeros(d)
    log_rho = math.log1p(alpha / (2.0 * beta))
    num = np.zeros(d)
    den = 0.0
    for t in range(1, T + 1):
        g = norm_gaussian(d, reg.r, sigma, rng)
        w = regularized_mirror_step(phi, w, data.grad(w) + g, beta, alpha)
        weight = math.exp((t - T) * log_rho)  # rho^t / rho^T: no overflow
        num += weight * w
        den += weight
    info = {
        "algorithm": "Noisy Regularized Mirror Descent (Su, Zhao & Wang, Alg. 3)",
        "calibration": calibration,
        "epsilon": spent,
        "epsilon_pld": spent_pld,
        "delta": delta,
        "pld_interval": pld_interval(epsilon, T),
        "sigma": sigma,
        "steps": T,
        "regularization": alpha,
        "kappa": reg.kappa,
        "norm_index": reg.r,
        "mirror_index": reg.mirror_index,
        "lipschitz": lipschitz,
        "smoothness": beta,
    }
    return Release(num / den, SelfComposedDpEvent(event_for(sigma), T), info)
