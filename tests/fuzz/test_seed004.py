"""Hardening of the entry points from Ganesh's thesis: counting queries, posterior sampling.

Same contract as test_inputs.py. ``report_cases`` gives the same cases, one call each, to
benchmarks/fuzz_report.py.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dpconvex.queries import answer_counting_queries
from dpconvex.sampling import posterior_sample

from .cases import DELTAS, EPSILONS, X_CASES, Y_CASES
from .test_inputs import FUZZ, _check_outcome

BAD_X = ("nan", "inf", "empty", "1-d array")
#: counting over zero individuals is a legitimate release (zero counts plus noise)
BAD_RECORDS = ("nan", "inf", "1-d array")


def _records(x_case: str, rng):
    """Counting records phi(d) in [0, 1]^k derived from the X case (bad cases stay bad)."""
    X = X_CASES[x_case](rng)
    if hasattr(X, "toarray") or X.ndim != 2 or not X.size:
        return X
    with np.errstate(invalid="ignore", over="ignore"):
        return np.where(np.isfinite(X), (X > 0).astype(float), X)


def _counting(x_case, eps, delta, seed):
    rng = np.random.default_rng(seed)
    return answer_counting_queries(_records(x_case, rng), eps, delta, p=2.0, random_state=seed)


def _posterior(x_case, y_case, eps, delta, seed):
    rng = np.random.default_rng(seed)
    X = X_CASES[x_case](rng)
    y = Y_CASES[y_case](rng, X.shape[0])
    return posterior_sample(X, y, epsilon=eps, delta=delta, random_state=seed, horizon=0.5)


def _check_release(release, eps):
    assert release.info.get("epsilon", 0.0) <= eps if isinstance(release.info, dict) else True
    assert np.all(np.isfinite(release.theta))


_COUNTING_CASES = dict(
    x_case=st.sampled_from(sorted(X_CASES)),
    eps=st.sampled_from([1.0, *EPSILONS]),
    delta=st.sampled_from([1e-5, *DELTAS]),
    seed=st.integers(0, 3),
)


#: the default run skips epsilon >= 100, where one calibration's loss grid takes ~30-60 s;
#: the slow run below covers every epsilon
_QUICK_COUNTING_CASES = dict(
    _COUNTING_CASES, eps=st.sampled_from([e for e in [1.0, *EPSILONS] if not 100.0 <= e < math.inf])
)


@settings(FUZZ, max_examples=12)  # ~1 s per case (a PLD calibration); the full run is slow
@given(**_QUICK_COUNTING_CASES)
def test_counting_queries_never_release_silently(x_case, eps, delta, seed):
    _counting_contract(x_case, eps, delta, seed)


@pytest.mark.slow
@FUZZ
@given(**_COUNTING_CASES)
def test_counting_queries_never_release_silently_full(x_case, eps, delta, seed):
    _counting_contract(x_case, eps, delta, seed)


def _counting_contract(x_case, eps, delta, seed):
    release, err = _check_outcome(lambda: _counting(x_case, eps, delta, seed))
    if err is not None:
        return
    assert math.isfinite(eps) and eps > 0 and 0 < delta < 1, f"accepted eps={eps}, {delta=}"
    assert x_case not in BAD_RECORDS, f"released on {x_case} records"
    _check_release(release, eps)


@pytest.mark.parametrize("records", [[[0.5, 1.5]], [[-0.1, 0.2]], [[np.nan, 0.0]]])
def test_counting_records_outside_the_unit_box_are_refused(records):
    with pytest.raises(ValueError, match="records"):
        answer_counting_queries(np.array(records), 1.0, 1e-6, p=2.0)


@FUZZ
@given(
    x_case=st.sampled_from(sorted(X_CASES)),
    y_case=st.sampled_from(["binary", "signed", "strings", "three classes", "nan labels"]),
    eps=st.sampled_from([1.0, 0.0, -1.0, math.inf, math.nan]),
    delta=st.sampled_from([1e-5, 0.0, 1.0]),
    seed=st.integers(0, 2),
)
def test_posterior_sampling_never_releases_silently(x_case, y_case, eps, delta, seed):
    release, err = _check_outcome(lambda: _posterior(x_case, y_case, eps, delta, seed))
    if err is not None:
        return
    assert math.isfinite(eps) and eps > 0 and 0 < delta < 1, f"accepted eps={eps}, {delta=}"
    assert x_case not in BAD_X, f"released on {x_case} data"
    assert y_case not in ("nan labels", "three classes"), f"released with {y_case} labels"
    _check_release(release, eps)


def report_cases():
    """(entry point, case, call, covered) for benchmarks/fuzz_report.py."""
    cases = []
    for x_case in X_CASES:
        cases.append(
            (
                "queries answer_counting_queries",
                f"records from X {x_case}",
                lambda x_case=x_case: _check_release(_counting(x_case, 1.0, 1e-6, 0), 1.0),
                x_case not in BAD_RECORDS,
            )
        )
        for y_case in Y_CASES:
            cases.append(
                (
                    "sampling posterior_sample",
                    f"X {x_case} / y {y_case}",
                    lambda x_case=x_case, y_case=y_case: _check_release(
                        _posterior(x_case, y_case, 1.0, 1e-5, 0), 1.0
                    ),
                    x_case not in BAD_X and y_case in ("binary", "signed", "strings", "one class"),
                )
            )
    for eps in EPSILONS:
        for delta in DELTAS:
            cases.append(
                (
                    "queries budget",
                    f"eps {eps:g} / delta {delta:g}",
                    lambda eps=eps, delta=delta: _check_release(
                        _counting("normal", eps, delta, 0), eps
                    ),
                    math.isfinite(eps) and eps > 0 and 0 < delta < 1,
                )
            )
    return cases
