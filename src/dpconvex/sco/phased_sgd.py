"""Algorithm 6 of Su, Zhao & Wang: Phased DP-SGD (Feldman-Koren-Talwar 2020), p >= 2.

Su, Zhao & Wang (arXiv 2303.18047), Appendix B, Algorithm 6 and Lemma 14, unconstrained;
used for l_p^d with 2 <= p <= inf by running it in Euclidean geometry (Thm 8 / Thm 15).

k = ceil(log2 n) phases on disjoint consecutive subsets S_i of n_i = floor(2^-i n)
samples; phase i runs one pass of SGD with step eta_i = 4^-i eta from the previous
phase's output, averages its n_i + 1 iterates and adds N(0, sigma_i^2 I).
"""

from __future__ import annotations

import math

import numpy as np
from dp_accounting.dp_event import GaussianDpEvent

from .. import _validation as v
from .._random import make_rng
from ..accounting import gaussian_sigma
from ..release import Release
from .geometry import dual_exponent
from .glm import GLMData
from .privacy import check_calibration, pld_epsilon


def sgd_pass_average(data: GLMData, rows: np.ndarray, w0: np.ndarray, eta: float) -> np.ndarray:
    """One pass of SGD over ``rows`` from w0 with step eta; the average of its n_i + 1 iterates.

    The noiseless phase of Algorithm 6 (steps 5-8). For convex beta-smooth losses and
    eta <= 2/beta each step is non-expansive, so replacing one row moves the average by
    at most 2 L eta (tested).
    """
    w = np.array(w0, dtype=float)
    total = w.copy()
    for j in rows:
        z = data.X[j]
        w = w - eta * data.loss.derivative(np.array([z @ w]), data.y[j : j + 1])[0] * z
        total += w
    return total / (len(rows) + 1)


def phased_dpsgd(
    X,
    y,
    loss,
    *,
    p: float = 2.0,
    epsilon: float,
    delta: float,
    row_bound: float,
    step_size: float | None = None,
    calibration: str = "accountant",
    random_state=None,
) -> Release:
    """Algorithm 6 of Su et al. (Phased DP-SGD): (epsilon, delta)-DP, any 2 <= p <= inf.

    Rows must satisfy ||z_i||_q <= ``row_bound`` with q = p/(p-1) <= 2 (declared,
    checked); then ||z||_2 <= ||z||_q, so the loss is L = sup|f'| R-Lipschitz and
    beta = sup f'' R^2-smooth in l2 too (proof of Thm 15). Utility (Thm 8/15):
    O(L d^(1-2/p) ||w*||_p^2 (1/sqrt(n) + sqrt(d log(1/delta)) / (eps n))).

    Privacy (Lemma 14): with eta_i <= 1/beta, one pass of SGD on convex beta-smooth
    losses is non-expansive, so replacing one sample of S_i moves the phase average by
    at most 2 L eta_i; the subsets are disjoint, so the whole run is one Gaussian
    mechanism with noise multiplier sigma_i / (2 L eta_i), the same in every phase.

    * ``step_size``: eta; default Lemma 14's (1/L) min{4/sqrt(n), eps/(2 sqrt(d log(1/delta)))},
      lowered to 1/beta when larger (the privacy premise eta <= 1/beta then holds; the
      paper instead asks for n large enough). A given eta > 1/beta is refused.
    * ``calibration="paper"``: sigma_i = 4 L eta_i sqrt(log(1/delta)) / eps, valid for
      delta <= 0.8 and eps <= 2 log(1/delta) (Lemma 14; tests check the Gaussian profile);
      ``"accountant"`` (default): the analytic Gaussian noise multiplier for
      (epsilon, delta) (exact for one Gaussian mechanism).
    """
    check_calibration(calibration)
    epsilon = v.positive("epsilon", epsilon)
    delta = v.probability_open("delta", delta)
    if epsilon > 2.0 * math.log(1.0 / delta):
        raise ValueError(
            f"Phased DP-SGD is analysed for epsilon <= 2 log(1/delta) = "
            f"{2 * math.log(1 / delta):.4g}; got {epsilon}"
        )
    if calibration == "paper" and delta > 0.8:
        raise ValueError(f"the paper's noise sigma_i needs delta <= 0.8, got {delta}")
    p = float(p)
    if math.isnan(p) or p < 2:
        raise ValueError(f"Algorithm 6 is used for p >= 2, got p={p}")
    data = GLMData(X, y, loss, row_bound, q=dual_exponent(p))
    n, d = data.n, data.d
    lipschitz = data.lipschitz()
    beta = data.smoothness
    eta_max = math.inf if beta == 0 else 1.0 / beta
    if step_size is None:
        eta = min(4.0 / math.sqrt(n), epsilon / (2.0 * math.sqrt(d * math.log(1 / delta))))
        eta = min(eta / lipschitz, eta_max)
    else:
        eta = v.positive("step_size", step_size)
        if eta > eta_max:
            raise ValueError(
                f"step_size={eta:.4g} exceeds 1/beta = {eta_max:.4g}: Lemma 14's "
                "non-expansiveness (and so its privacy) does not hold"
            )
    if calibration == "paper":
        multiplier = 2.0 * math.sqrt(math.log(1.0 / delta)) / epsilon
        spent = epsilon
    else:
        multiplier = gaussian_sigma(epsilon, delta, 1.0)
        spent = None
    event = GaussianDpEvent(multiplier)
    spent_pld = pld_epsilon(event, delta)
    spent = spent_pld if spent is None else spent
    rng = make_rng(random_state)
    k = max(1, math.ceil(math.log2(n)))
    w = np.zeros(d)
    start = 0
    for i in range(1, k + 1):
        n_i = int(math.floor(n * 2.0**-i))
        eta_i = eta * 4.0**-i
        rows = np.arange(start, start + n_i)
        start += n_i
        w = sgd_pass_average(data, rows, w, eta_i)
        w = w + rng.normal(0.0, multiplier * 2.0 * lipschitz * eta_i, d)
    info = {
        "algorithm": "Phased DP-SGD (Su, Zhao & Wang, Alg. 6)",
        "calibration": calibration,
        "epsilon": spent,
        "epsilon_pld": spent_pld,
        "delta": delta,
        "pld_interval": 1e-4,
        "noise_multiplier": multiplier,
        "step_size": eta,
        "phases": k,
        "samples_used": start,
        "lipschitz": lipschitz,
        "smoothness": beta,
    }
    return Release(w, event, info)
