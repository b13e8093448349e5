"""Settings of a private search that are not given: derived from (epsilon, n).

The rules were chosen on two synthetic logistic problems (36,000 x 50 and 20,000 x 100,
never Adult or another benchmark data set) by ``benchmarks/derive_tuning_defaults.py``,
tuning DP-SGD's learning rate over loguniform(1e-4, 1e-1) (docs/guide/tuning.md, "How
the defaults are chosen", has the tables and the figure):

* Subsample (``search``: q in {0.05, 0.1, 0.2, 0.4}, epsilon 0.1-8, 2 seeds): tuning
  sets of 1,800-3,600 rows (q 0.05-0.1) were best or within noise of the best at every
  epsilon; q = 0.4 lost up to 3 points (weaker amplification, less for the final run).
  Rule: q = 2,500 / n, kept in [0.02, 0.5].
* Share of runs that keep the estimator's own settings of the free hyperparameters
  (``search2``, 3 seeds): 0.5 beat 0 at 20 of 24 points, by up to 2 points; at small
  epsilon 0.9 did better still (:func:`default_share_for`).
* Runs and score noise (``search2``): Poisson K of mean 6 beat mean 3 at epsilon 1 and 8
  on one problem and tied on the other; score noise sqrt(v) on the count of correct
  predictions among v expected validation rows was the safe middle (0.5 sqrt(v) lost 8
  points on one problem at epsilon 0.1; 2 sqrt(v) selected less well at large epsilon).
* Validation share: 0.2 of the tuning rows.

The budget split between the tuning runs and the final run is not a setting: both run
at the same per-run epsilon, calibrated so that the whole search meets epsilon; it grows
with epsilon, so the released model approaches the non-private one.
"""

from __future__ import annotations

import math

from .. import _validation as v

STRATEGIES = ("auto", "subsample", "repeat")

#: smallest expected number of training rows of a tuning run on the subsample; below
#: it the default strategy is repeat-and-select on all rows
MIN_TUNING_ROWS = 1000
#: fewest expected training rows of a tuning run that strategy="subsample" accepts (the
#: subsample's size is secret: a run must not meet an empty subsample but with negligible
#: probability, and a refusal must depend on public sizes only)
MIN_SUBSAMPLE_ROWS = 100
#: expected rows of the tuning subsample the default rate aims at, and its bounds
TARGET_TUNING_ROWS = 2500
MIN_SUBSAMPLE, MAX_SUBSAMPLE = 0.02, 0.5
#: default mean number of runs (geometric K) and score noise / sqrt(validation rows)
DEFAULT_MU = 6.0
#: largest mean number of runs a search accepts: the cost of selection grows with log(mu)
#: while the runs' own budgets shrink, and a search of 1,000 runs on average already
#: costs more than any gain a wider search of a finite space can bring
MAX_MU = 1000.0
SCORE_NOISE_FACTOR = 1.0
#: probability that a run keeps the estimator's own settings of the free hyperparameters,
#: at epsilon >= 1 and at epsilon <= 0.1 (log-linear between)
DEFAULT_SHARE, SMALL_EPSILON_SHARE = 0.5, 0.9


def default_share_for(epsilon: float) -> float:
    """Share of runs that keep the estimator's own free settings: more as epsilon shrinks.

    At small epsilon every tuning run is poor and their noisy scores hardly separate
    them, so the winner is close to a random draw from the search space; keeping the
    estimator's own settings in most runs bounds the damage. Synthetic problems
    (benchmarks/derive_tuning_defaults.py, Poisson K of mean 6, 4 seeds): 0.9 against 0.5
    gave 79.87 vs 78.88 % (syn-a) and 70.85 vs 70.85 % (syn-b) at epsilon 0.1, 81.23 vs
    80.64 and 73.96 vs 73.96 at 0.3; 0.5 against 0 gained at 20 of 24 grid points, up to
    2 points (3 seeds).
    """
    t = min(1.0, max(0.0, math.log10(1.0 / epsilon)))  # 0 at epsilon >= 1, 1 at <= 0.1
    return DEFAULT_SHARE + (SMALL_EPSILON_SHARE - DEFAULT_SHARE) * t


#: times default settings are relaxed (fewer runs, more score noise) to meet epsilon
FALLBACK_STEPS = 8


def resolve_settings(
    *,
    strategy,
    subsample,
    mu,
    shape,
    default_share,
    score_noise,
    validation_fraction,
    scoring: str,
    epsilon: float,
    n: int,
    size_free: bool,
) -> dict:
    """The search's settings: the ones given, validated; the others by the default rules."""
    if strategy not in STRATEGIES:
        raise ValueError(f"strategy must be one of {STRATEGIES}, got {strategy!r}")
    if strategy == "subsample" and not size_free:
        raise ValueError(
            'strategy="subsample" needs estimators whose guarantee does not depend on the '
            'number of rows (methods "amp", "output", "dpsgd", "dpgd"); use strategy="repeat"'
        )
    noisy = scoring == "noisy_validation"
    if validation_fraction is None:
        frac = 0.2
    else:
        frac = validation_fraction
        if not (isinstance(frac, int | float) and 0 < frac < 1):
            raise ValueError(f"validation_fraction must be in (0, 1), got {frac}")
    if subsample is not None:
        q = v.finite("subsample", subsample)
        if not 0 < q < 1:
            raise ValueError(f"subsample must be in (0, 1), got {q}")
    else:
        q = min(MAX_SUBSAMPLE, max(MIN_SUBSAMPLE, TARGET_TUNING_ROWS / n))
    rows = q * (1 - (frac if noisy else 0.0)) * n
    if strategy == "auto":
        strategy = "subsample" if size_free and rows >= MIN_TUNING_ROWS else "repeat"
    if strategy == "subsample" and rows < MIN_SUBSAMPLE_ROWS:
        raise ValueError(
            f"a subsample of {q:g} of {n} rows gives the tuning runs about {rows:.0f} "
            f"training rows (at least {MIN_SUBSAMPLE_ROWS} are needed); raise subsample or "
            'use strategy="repeat"'
        )
    if shape is None:
        # on a subsample K = 0 is harmless (the final model keeps the estimator's own
        # settings) and Poisson K varies least; repeat-and-select must select something
        shape = math.inf if strategy == "subsample" else 1.0
    shape = float(shape)
    if math.isnan(shape) or shape < 0:
        raise ValueError(f"shape must be >= 0 (inf for Poisson), got {shape}")
    if mu is None:
        mu = DEFAULT_MU
    mu = v.positive("mu", mu)
    if not 1 <= mu <= MAX_MU:
        raise ValueError(
            f"mu (the mean number of runs) must be between 1 and {MAX_MU:g}, got {mu:g}"
        )
    if score_noise is None:
        val_rows = (q if strategy == "subsample" else 1.0) * frac * n
        score_noise = max(1.0, SCORE_NOISE_FACTOR * math.sqrt(val_rows))
    score_noise = v.positive("score_noise", score_noise)
    if default_share is None:
        default_share = default_share_for(epsilon)
    share = v.finite("default_share", default_share)
    if not 0 <= share < 1:
        raise ValueError(f"default_share must be in [0, 1), got {share}")
    cfg = {
        "strategy": strategy,
        "mu": mu,
        "shape": shape,
        "default_share": share,
        "score_noise": score_noise,
        "validation_fraction": frac,
    }
    if strategy == "subsample":
        cfg["subsample"] = cfg["q"] = q
    return cfg


def extrapolate(params: dict, estimator, cfg: dict) -> dict:
    """The hyperparameters of the final run on all rows, from those chosen on the subsample.

    Every hyperparameter carries over unchanged. A tuning run takes the final run's
    steps with its noise and sampling rate, on a q-th of the rows. For DP-SGD's learning
    rate (benchmarks/derive_tuning_defaults.py lr, two synthetic problems, epsilon 0.3-3,
    q 0.05 and 0.15) the best rate on the subsample was one grid step (x2.15) above the
    best on all rows in 8 of 12 cases and equal in 3, but the curves on all rows are flat
    near their top: at the rate chosen on the subsample (q 0.15) the final run lost at
    most 0.2 points against its best rate. Other settings mean the same whatever the
    number of rows (the objective perturbation's lam is a sum-form regularizer
    calibrated for privacy, not per row). This is the one place a rule would go.
    """
    return dict(params)
