"""Settings of a private search that are not given: derived from (epsilon, delta, n).

See docs/guide/tuning.md ("How the defaults are chosen") for the derivation and the
measurements behind each rule.
"""

from __future__ import annotations

import math

from .. import _validation as v

STRATEGIES = ("auto", "subsample", "repeat")

#: smallest expected number of training rows of a tuning run on the subsample; below
#: it the default strategy is repeat-and-select on all rows
MIN_TUNING_ROWS = 1000
#: expected rows of the tuning subsample the default rate aims at, and its bounds
TARGET_TUNING_ROWS = 5000
MIN_SUBSAMPLE, MAX_SUBSAMPLE = 0.05, 0.5


def resolve_settings(
    *,
    strategy,
    subsample,
    mu,
    shape,
    score_noise,
    validation_fraction,
    scoring: str,
    epsilon: float,
    delta: float,
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
    if strategy == "auto":
        rows = q * (1 - (frac if noisy else 0.0)) * n
        strategy = "subsample" if size_free and rows >= MIN_TUNING_ROWS else "repeat"
    if shape is None:
        shape = 1.0  # geometric: K >= 1, so a search always selects something
    shape = float(shape)
    if math.isnan(shape) or shape < 0:
        raise ValueError(f"shape must be >= 0 (inf for Poisson), got {shape}")
    if mu is None:
        mu = 8.0 if strategy == "subsample" else 3.0
    mu = v.positive("mu", mu)
    if mu < 1:
        raise ValueError(f"mu (the mean number of runs) must be >= 1, got {mu}")
    if score_noise is None:
        val_rows = (q if strategy == "subsample" else 1.0) * frac * n
        score_noise = max(1.0, 0.5 * math.sqrt(val_rows))
    score_noise = v.positive("score_noise", score_noise)
    cfg = {
        "strategy": strategy,
        "mu": mu,
        "shape": shape,
        "score_noise": score_noise,
        "validation_fraction": frac,
    }
    if strategy == "subsample":
        cfg["subsample"] = cfg["q"] = q
    return cfg


#: a learning rate chosen on the subsample is multiplied by this for the final run
LEARNING_RATE_TRANSFER = 0.5


def extrapolate(params: dict, estimator, cfg: dict) -> dict:
    """The hyperparameters of the final run on all rows, from those chosen on the subsample.

    A tuning run takes the final run's steps with its noise and sampling rate, on a
    q-th of the rows: its gradients are as noisy as the final run's would be at q times
    its epsilon. DP-SGD's learning rate is halved (``LEARNING_RATE_TRANSFER``): on two
    synthetic problems (benchmarks/derive_tuning_defaults.py lr, epsilon 0.3-3, q 0.05
    and 0.15) the best rate on the subsample was one grid step (x2.15) above the best on
    all rows in 8 of 12 cases, equal in 3, two steps above in 1. Everything else carries
    over unchanged (what it means does not depend on the number of rows: the objective
    perturbation's lam is a sum-form regularizer calibrated for privacy, not per row).
    """
    out = dict(params)
    if "learning_rate" in out and estimator.get_params().get("method") in ("dpsgd", "dpgd"):
        out["learning_rate"] = out["learning_rate"] * LEARNING_RATE_TRANSFER
    return out
