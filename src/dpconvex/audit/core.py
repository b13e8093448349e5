"""Empirical lower bounds on epsilon from a distinguisher's error rates.

If M is (eps, delta)-DP, every test T between M(Z) and M(Z') has
1 - beta <= e^eps alpha + delta and 1 - alpha <= e^eps beta + delta, with alpha =
P(T says Z | Z') and beta = P(T says Z' | Z) (Kairouz, Oh & Viswanath 2015; the
audit of Jagielski, Ullman & Oprea 2020). With one-sided Clopper-Pearson upper
bounds on alpha and beta (each at 1 - gamma/2), eps >= max(log((1 - beta - delta) /
alpha), log((1 - alpha - delta) / beta)) holds with probability >= 1 - gamma.

The threshold of the test is chosen on one half of the samples and evaluated on the
other half, so the reported bound is not inflated by the choice.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import asdict, dataclass
from numbers import Real

import numpy as np
from scipy.stats import beta as beta_dist

#: Fewest runs on each input an audit accepts (the threshold is chosen on half of them).
MIN_RUNS = 20
#: Most runs on each input an audit accepts: the statistics of both inputs are kept in
#: memory, 16 bytes a run (160 MB at this cap).
MAX_RUNS = 10**7


def check_runs(runs: object) -> int:
    """``runs`` as an int in [MIN_RUNS, MAX_RUNS]; ValueError naming the problem otherwise."""
    if isinstance(runs, bool) or not isinstance(runs, Real):
        raise ValueError(f"runs must be a whole number, got a {type(runs).__name__}")
    if not math.isfinite(runs) or runs != math.floor(runs):
        raise ValueError(f"runs must be a whole number, got {runs!r}")
    runs = int(runs)
    if not MIN_RUNS <= runs <= MAX_RUNS:
        shown = runs if runs < 10**18 else f"about 2^{runs.bit_length() - 1}"
        raise ValueError(f"runs must be between {MIN_RUNS} and {MAX_RUNS:.0e}, got {shown}")
    return runs


def clopper_pearson_upper(successes: int, trials: int, confidence: float) -> float:
    """One-sided upper confidence bound on a binomial proportion (exact, Clopper-Pearson)."""
    if trials <= 0:
        raise ValueError("trials must be > 0")
    if successes >= trials:
        return 1.0
    return float(beta_dist.ppf(confidence, successes + 1, trials - successes))


def epsilon_lower_bound(alpha: float, beta: float, delta: float) -> float:
    """max(log((1 - beta - delta)/alpha), log((1 - alpha - delta)/beta), 0) for error rates."""
    bounds = [0.0]
    for a, b in ((alpha, beta), (beta, alpha)):
        if a > 0 and 1 - b - delta > 0:
            bounds.append(math.log((1 - b - delta) / a))
        elif a == 0 and 1 - b - delta > 0:
            bounds.append(math.inf)
    return max(bounds)


def _errors(stat_z: np.ndarray, stat_zp: np.ndarray, threshold: float) -> tuple[int, int]:
    """(#Z' samples with stat >= t, #Z samples with stat < t): the test says Z when stat >= t."""
    return int(np.sum(stat_zp >= threshold)), int(np.sum(stat_z < threshold))


def _best_threshold(stat_z, stat_zp, delta, confidence) -> float:
    """The threshold whose Clopper-Pearson lower bound is largest on these (training) samples.

    Scoring candidates by the same conservative bound used for the final estimate
    prefers thresholds with enough samples behind them over lucky extreme tails.
    """
    pooled = np.concatenate([stat_z, stat_zp])
    levels = np.concatenate(
        [
            np.geomspace(1e-6, 0.01, 60),
            np.linspace(0.01, 0.99, 199),
            1 - np.geomspace(1e-6, 0.01, 60),
        ]
    )
    candidates = np.unique(np.quantile(pooled, levels))
    best, best_t = -1.0, float(candidates[0])
    for t in candidates:
        fp, fn = _errors(stat_z, stat_zp, t)
        eps = epsilon_lower_bound(
            clopper_pearson_upper(fp, stat_zp.size, confidence),
            clopper_pearson_upper(fn, stat_z.size, confidence),
            delta,
        )
        if eps > best:
            best, best_t = eps, float(t)
    return best_t


@dataclass(frozen=True)
class AuditResult:
    mechanism: str
    runs: int
    claimed_epsilon: float
    delta: float
    epsilon_lower_bound: float
    alpha_upper: float
    beta_upper: float
    threshold: float
    confidence: float

    @property
    def ratio(self) -> float:
        return self.epsilon_lower_bound / self.claimed_epsilon

    def as_dict(self) -> dict:
        return {**asdict(self), "ratio": self.ratio}


def audit_statistics(
    name: str,
    stat_z: np.ndarray,
    stat_zp: np.ndarray,
    *,
    claimed_epsilon: float,
    delta: float,
    confidence: float = 0.95,
) -> AuditResult:
    """Lower-bound epsilon from samples of a statistic under M(Z) and M(Z').

    The test says "Z" when the statistic is >= a threshold; orient the statistic so
    that it tends to be larger under Z (or pass both orientations and keep the max).
    """
    stat_z, stat_zp = np.asarray(stat_z, float), np.asarray(stat_zp, float)
    if stat_z.size < 20 or stat_zp.size < 20:
        raise ValueError("need at least 20 samples under each input")
    half_z, half_zp = stat_z.size // 2, stat_zp.size // 2
    per_side = 1 - (1 - confidence) / 2  # Bonferroni over the two error rates
    threshold = _best_threshold(stat_z[:half_z], stat_zp[:half_zp], delta, per_side)
    test_z, test_zp = stat_z[half_z:], stat_zp[half_zp:]
    fp, fn = _errors(test_z, test_zp, threshold)
    alpha_up = clopper_pearson_upper(fp, test_zp.size, per_side)
    beta_up = clopper_pearson_upper(fn, test_z.size, per_side)
    return AuditResult(
        name,
        int(stat_z.size + stat_zp.size),
        float(claimed_epsilon),
        float(delta),
        epsilon_lower_bound(alpha_up, beta_up, delta),
        alpha_up,
        beta_up,
        threshold,
        confidence,
    )


def audit_mechanism(
    name: str,
    run: Callable[[bool, np.random.Generator], float],
    runs: int,
    *,
    claimed_epsilon: float,
    delta: float,
    seed: int | None = None,
    confidence: float = 0.95,
    two_sided: bool = True,
    progress: bool = False,
) -> AuditResult:
    """Run ``run(use_z, rng) -> statistic`` ``runs`` times per input and audit the statistics.

    With ``two_sided`` the statistic and its negation are both tried (at half the
    confidence budget each) and the larger lower bound is kept.
    """
    runs = check_runs(runs)
    rng = np.random.default_rng(seed)
    iterator = range(runs)
    if progress:
        from tqdm import tqdm

        iterator = tqdm(iterator, desc=f"audit {name}")
    stat_z = np.empty(runs)
    stat_zp = np.empty(runs)
    for i in iterator:
        stat_z[i] = run(True, rng)
        stat_zp[i] = run(False, rng)
    if not two_sided:
        return audit_statistics(
            name,
            stat_z,
            stat_zp,
            claimed_epsilon=claimed_epsilon,
            delta=delta,
            confidence=confidence,
        )
    half = 1 - (1 - confidence) / 2
    results = [
        audit_statistics(
            name,
            sign * stat_z,
            sign * stat_zp,
            claimed_epsilon=claimed_epsilon,
            delta=delta,
            confidence=half,
        )
        for sign in (1.0, -1.0)
    ]
    return max(results, key=lambda r: r.epsilon_lower_bound)
