"""Algorithms 4 and 7 of Su, Zhao & Wang: truncated DP mirror descent, heavy-tailed gradients.

Su, Zhao & Wang (arXiv 2303.18047), §5.2: Algorithm 4 (Shuffled Truncated DP Mirror
Descent; privacy Thm 9, utility Thm 10) and Appendix B.6, Algorithm 7 (Truncated DP
Batched Mirror Descent; Thm 11/16).

Setting C: loss convex and beta-smooth in ||.||_p over a bounded set, gradients with
bounded variance only (no Lipschitz constant). Per-sample gradients whose dual norm
exceeds beta M + lam are *set to zero* (truncation), which bounds the sensitivity.
The constraint set is C = {||w||_s <= radius} with s the mirror map's index (s = p when
p >= 1 + 1/(2 ln d)), so the constrained mirror step has a closed form;
M is its ||.||_p-diameter. The truncation analysis assumes an interior population
minimizer.
"""

from __future__ import annotations

import math

import numpy as np

from .. import _validation as v
from .._random import make_rng
from ..accounting import calibrate
from ..noise import norm_gaussian
from ..release import Release
from .events import NormGaussianDpEvent, ShuffledNormGaussianDpEvent, shuffle_epsilon
from .geometry import ball_mirror_step, dual_exponent, lp_norm, lp_regularity, mirror_map
from .glm import GLMData
from .privacy import calibrate_noise, check_privacy, gg_sigma, pld_epsilon, pld_interval

#: Largest local epsilon in Algorithm 4: the proof of Thm 9 needs eps0 <= 1/2.
ALG4_MAX_LOCAL_EPSILON = 0.5


def _setup(X, y, loss, p, radius, row_bound):
    p = float(p)
    if math.isnan(p) or not 1 < p <= 2:
        raise ValueError(f"this algorithm is for 1 < p <= 2, got p={p}")
    radius = v.positive("radius", radius)
    data = GLMData(X, y, loss, row_bound, q=dual_exponent(p))
    reg = lp_regularity(p, data.d)
    phi = mirror_map(reg)
    s = reg.mirror_index
    diameter = 2.0 * radius * data.d ** max(0.0, 1.0 / p - 1.0 / s)
    return data, reg, phi, radius, diameter


def _truncated_sum(data: GLMData, w, rows, threshold: float, q: float) -> tuple[np.ndarray, int]:
    """sum over rows of grad l(w, x) if ||grad||_q <= threshold else 0 (the truncation step)."""
    g = data.sample_gradients(w, rows)
    keep = lp_norm(g, q) <= threshold
    return g[keep].sum(axis=0), int((~keep).sum())


def _batches(order: np.ndarray, T: int) -> list[np.ndarray]:
    return [b for b in np.array_split(order, T) if b.size]


def _truncated_mirror_descent(data, phi, reg, batches, noisy_mean, *, threshold, gamma, radius):
    """The loop of Algs. 4 and 7: truncated batch gradient, noise, ball mirror step, average.

    ``noisy_mean(total, rows)`` turns a batch's truncated gradient sum into the noisy
    mean the mirror step uses. Returns (average iterate, number of truncated gradients).
    """
    w = np.zeros(data.d)
    avg = np.zeros(data.d)
    truncated = 0
    for rows in batches:
        total, cut = _truncated_sum(data, w, rows, threshold, reg.q)
        truncated += cut
        w = ball_mirror_step(phi, w, noisy_mean(total, rows), gamma, radius)
        avg += w
    return avg / len(batches), truncated


def _info(algorithm, calibration, spent, spent_pld, epsilon, delta, sigma, steps, lam,
          threshold, gamma, diameter, reg, truncated_fraction, **extra) -> dict:  # fmt: skip
    """The ``info`` of a truncated mirror-descent release (Algs. 4 and 7)."""
    return {
        "algorithm": algorithm,
        "calibration": calibration,
        "epsilon": spent,
        "epsilon_pld": spent_pld,
        "delta": delta,
        "pld_interval": pld_interval(epsilon),
        "sigma": sigma,
        **extra,
        "steps": steps,
        "truncation": lam,
        "threshold": threshold,
        "step_scale": gamma,
        "diameter": diameter,
        "kappa": reg.kappa,
        "norm_index": reg.r,
        "mirror_index": reg.mirror_index,
        "truncated_fraction": truncated_fraction,
    }


def batched_truncated_mirror_descent(
    X,
    y,
    loss="squared",
    *,
    p: float,
    radius: float,
    epsilon: float,
    delta: float,
    row_bound: float,
    steps: int | None = None,
    truncation: float | None = None,
    step_scale: float | None = None,
    c_T: float = 1.0,
    c_lambda: float = 1.0,
    calibration: str = "accountant",
    random_state=None,
) -> Release:
    """Algorithm 7 of Su et al.: (epsilon, delta)-DP for any 0 < epsilon < 1 (Thm 16).

    Data are cut into T disjoint batches (any partition is allowed: the printed
    "divide the permuted data" has no permutation step; we use
    consecutive blocks of sizes floor(n/T) or ceil(n/T)); step t truncates the per-sample
    gradients at w_{t-1}, adds one GG noise vector Z^t to the batch mean and takes the
    constrained mirror step with inverse step size gamma. Output: the average of
    w_1..w_T. Utility (Thm 16): O(M^(4/3) kappa^(2/3) (d log(1/delta))^(1/6) / (n eps)^(1/3)).

    Privacy: the truncated batch mean has replace-one ||.||_q-sensitivity
    2 (beta M + lam) / b with b the smallest batch; batches are disjoint, so the run is
    one GG mechanism (parallel composition). ``calibration="paper"``: Lemma 3,
    sigma^2 = 8 kappa (beta M + lam)^2 log(1/delta) / (b^2 eps^2) (Lemma 3 made explicit);
    ``"accountant"``: the smallest sigma whose PLD meets (epsilon, delta)
    (the same Lemma 3 family, so nearly the same sigma unless p = 2, when the exact
    Gaussian profile is used).

    Settings (Thm 16; utility only): lam = c_lambda ((sqrt(n eps) M) /
    (kappa (d log(1/delta))^(1/4)))^(2/3), raised to max(beta, 1) M (Thm 16's n
    condition); T = c_T n eps / (M lam sqrt(d log(1/delta))) in [1, n]; gamma =
    max(sqrt(T), 2 beta) (``step_scale`` overrides gamma; the 2 beta floor is the
    stability condition gamma_t >= 2 beta of Alg. 4's proof, not stated in Thm 10).
    """
    epsilon, delta = check_privacy(epsilon, delta, calibration)
    if epsilon >= 1 and calibration == "accountant":
        raise ValueError("Algorithm 7 is analysed for 0 < epsilon < 1; use a smaller epsilon")
    data, reg, phi, radius, M = _setup(X, y, loss, p, radius, row_bound)
    n, d = data.n, data.d
    beta = data.smoothness
    log_term = math.log(1.0 / delta)
    if truncation is None:
        lam = c_lambda * (math.sqrt(n * epsilon) * M / (reg.kappa * (d * log_term) ** 0.25)) ** (
            2.0 / 3.0
        )
        lam = max(lam, max(beta, 1.0) * M)
    else:
        lam = v.positive("truncation", truncation)
    if steps is None:
        T = c_T * n * epsilon / (M * lam * math.sqrt(d * log_term))
        T = int(min(max(round(T), 1), n))
    else:
        T = v.positive_int("steps", steps)
        if T > n:
            raise ValueError(f"steps={T} exceeds n={n}: batches would be empty")
    gamma = (
        max(math.sqrt(T), 2.0 * beta)
        if step_scale is None
        else v.positive("step_scale", step_scale)
    )
    batches = _batches(np.arange(n), T)
    b_min = min(b.size for b in batches)
    threshold = beta * M + lam
    sensitivity = 2.0 * threshold / b_min

    def event_for(sigma: float) -> NormGaussianDpEvent:
        return NormGaussianDpEvent(sigma, sensitivity, reg.kappa, reg.r)

    paper_sigma = gg_sigma(epsilon, delta, sensitivity, reg.kappa)
    if calibration == "paper":
        sigma, spent = paper_sigma, epsilon
        spent_pld = pld_epsilon(event_for(sigma), delta, 1, pld_interval(epsilon))
    else:
        sigma, spent = calibrate_noise(
            event_for, epsilon, delta, paper_sigma, key=("gg", sensitivity, reg.kappa, reg.r)
        )
        spent_pld = spent
    rng = make_rng(random_state)
    theta, truncated = _truncated_mirror_descent(
        data,
        phi,
        reg,
        batches,
        lambda total, rows: total / rows.size + norm_gaussian(d, reg.r, sigma, rng),
        threshold=threshold,
        gamma=gamma,
        radius=radius,
    )
    info = _info(
        "Truncated DP Batched Mirror Descent (Su, Zhao & Wang, Alg. 7)",
        calibration, spent, spent_pld, epsilon, delta, sigma, len(batches), lam, threshold,
        gamma, M, reg, truncated / n,
    )  # fmt: skip
    return Release(theta, event_for(sigma), info)


def alg4_max_epsilon(n: int, delta: float) -> float:
    """Largest epsilon Algorithm 4 accepts: the shuffle bound at eps0 = 1/2 and delta/2.

    Su et al., Thm 9, make Algorithm 4 private only for eps = O(sqrt(log(n/delta)/n)); with
    the explicit constants of :func:`dpconvex.sco.events.shuffle_epsilon` and the
    proof's eps0 <= 1/2, that range is eps <= shuffle_epsilon(n, 1/2, delta/2)
    (0 when the closed form is not valid at eps0 = 1/2, i.e. n < 16 e^(1/2) log(8/delta)).
    """
    n = v.positive_int("n", n)
    delta = v.probability_open("delta", delta)
    e = shuffle_epsilon(n, ALG4_MAX_LOCAL_EPSILON, delta / 2.0)
    return e if math.isfinite(e) else 0.0


def shuffled_truncated_mirror_descent(
    X,
    y,
    loss="squared",
    *,
    p: float,
    radius: float,
    epsilon: float,
    delta: float,
    row_bound: float,
    gradient_std: float = 1.0,
    steps: int | None = None,
    truncation: float | None = None,
    step_scale: float | None = None,
    c_T: float = 1.0,
    c_lambda: float = 1.0,
    calibration: str = "accountant",
    random_state=None,
) -> Release:
    """Algorithm 4 of Su et al.: (epsilon, delta)-DP only for eps <= :func:`alg4_max_epsilon`.

    A secret uniform permutation, T batches, per-sample truncated gradients each with
    its *own* GG noise (a local randomizer), the constrained mirror step with
    gamma; output the average of w_1..w_T. Utility (Thm 10):
    O~(M (kappa^2 d log(1/delta))^(1/4) / sqrt(n eps)). Refuses (ValueError) epsilon above
    :func:`alg4_max_epsilon` (use :func:`batched_truncated_mirror_descent` there).

    Privacy (Thm 9): each noisy truncated gradient is an (eps0, delta0)-DP local
    randomizer (Lemma 3, replace-one sensitivity 2 (beta M + lam)), chosen adaptively,
    applied to a shuffled dataset, and shuffling amplifies (Lemma 16).
    ``calibration="paper"``: the proof's recipe made explicit — delta_hat = delta/2,
    eps0 <= 1/2 the largest local epsilon whose shuffle bound at delta_hat is <= eps,
    delta0 = delta / (2 (e^eps + 1)(1 + e^-eps0 / 2) n), sigma from Lemma 3 at
    (eps0, delta0). ``"accountant"`` (default): the smallest sigma for which the PLD
    of :class:`~dpconvex.sco.events.ShuffledNormGaussianDpEvent` (all Lemma 3 pairs,
    all shuffle-bound pairs) meets (epsilon, delta).

    Settings (Thm 10; utility only): lam = c_lambda sigma_g sqrt(n eps) /
    (kappa^2 d log(1/delta))^(1/4) with sigma_g = ``gradient_std`` (Assumption 4's
    declared bound; used for tuning only), raised to max(beta, 1) M; T = c_T M^2 n^2 eps^2 /
    (lam^2 d log(1/delta)) in [1, n]; gamma = max(sqrt(T), 2 beta) (the proof's
    gamma_t >= 2 beta).
    """
    epsilon, delta = check_privacy(epsilon, delta, calibration)
    data, reg, phi, radius, M = _setup(X, y, loss, p, radius, row_bound)
    n, d = data.n, data.d
    limit = alg4_max_epsilon(n, delta)
    if epsilon > limit:
        raise ValueError(
            f"Algorithm 4 is private only for epsilon <= {limit:.4g} at n={n}, delta={delta:g} "
            "(its shuffle analysis needs local eps0 <= 1/2); "
            "use batched_truncated_mirror_descent (Algorithm 7) for larger epsilon"
        )
    beta = data.smoothness
    log_term = math.log(1.0 / delta)
    if truncation is None:
        sigma_g = v.positive("gradient_std", gradient_std)
        lam = c_lambda * sigma_g * math.sqrt(n * epsilon) / (reg.kappa**2 * d * log_term) ** 0.25
        lam = max(lam, max(beta, 1.0) * M)
    else:
        lam = v.positive("truncation", truncation)
    if steps is None:
        T = c_T * M**2 * n**2 * epsilon**2 / (lam**2 * d * log_term)
        T = int(min(max(round(T), 1), n))
    else:
        T = v.positive_int("steps", steps)
        if T > n:
            raise ValueError(f"steps={T} exceeds n={n}: batches would be empty")
    gamma = (
        max(math.sqrt(T), 2.0 * beta)
        if step_scale is None
        else v.positive("step_scale", step_scale)
    )
    threshold = beta * M + lam
    local_sensitivity = 2.0 * threshold

    def event_for(sigma: float) -> ShuffledNormGaussianDpEvent:
        return ShuffledNormGaussianDpEvent(sigma, local_sensitivity, reg.kappa, reg.r, n)

    delta_hat = delta / 2.0
    eps0 = calibrate(
        lambda e0: shuffle_epsilon(n, e0, delta_hat),
        epsilon,
        1e-6,
        ALG4_MAX_LOCAL_EPSILON,
        decreasing=False,
        floor=1e-12,
        ceiling=ALG4_MAX_LOCAL_EPSILON,
        rtol=1e-9,
    )
    delta0 = delta / (2.0 * (math.exp(epsilon) + 1.0) * (1.0 + math.exp(-eps0) / 2.0) * n)
    paper_sigma = gg_sigma(eps0, delta0, local_sensitivity, reg.kappa)
    if calibration == "paper":
        sigma, spent = paper_sigma, epsilon
        spent_pld = pld_epsilon(event_for(sigma), delta, 1, pld_interval(epsilon))
    else:
        sigma, spent = calibrate_noise(
            event_for,
            epsilon,
            delta,
            paper_sigma,
            rtol=1e-3,
            key=("shuffled-gg", local_sensitivity, reg.kappa, reg.r, n),
        )
        spent_pld = spent
    rng = make_rng(random_state)
    batches = _batches(rng.permutation(n), T)

    def noisy_mean(total, rows):  # each sample's gradient gets its own local noise
        return (total + norm_gaussian(d, reg.r, sigma, rng, size=rows.size).sum(axis=0)) / rows.size

    theta, truncated = _truncated_mirror_descent(
        data, phi, reg, batches, noisy_mean, threshold=threshold, gamma=gamma, radius=radius
    )
    info = _info(
        "Shuffled Truncated DP Mirror Descent (Su, Zhao & Wang, Alg. 4)",
        calibration, spent, spent_pld, epsilon, delta, sigma, len(batches), lam, threshold,
        gamma, M, reg, truncated / n,
        local_epsilon_paper=eps0, local_delta_paper=delta0, max_epsilon=limit,
    )  # fmt: skip
    return Release(theta, event_for(sigma), info)
