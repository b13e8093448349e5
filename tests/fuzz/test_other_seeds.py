"""Hardening of the DP-SCO (Su, Zhao & Wang) and DP-MBCD (Chen & Liu) entry points.

Same contract as test_inputs.py: every input case either gets a ValueError/TypeError
with a message, or a release that is finite, spends at most its budget, and came from
data the proofs cover.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dpconvex.bcd import LiftedMlpProblem, NmfProblem, dp_mbcd
from dpconvex.sco import (
    approx_objective_perturbation,
    batched_truncated_mirror_descent,
    noisy_mirror_descent,
    phased_dpsgd,
)
from dpconvex.sco.sets import make_set

from .cases import DELTAS, EPSILONS, X_CASES, Y_CASES
from .test_inputs import FUZZ, _check_outcome

_BAD_X = ("nan", "inf", "empty", "1-d array", "huge norms")
_BAD_Y = ("nan labels", "wrong length", "strings")


def _sco_call(name, X, y, eps, delta, seed):
    if name == "alg1":
        return approx_objective_perturbation(
            X, y, "logistic", make_set("l1", X.shape[1] if X.ndim == 2 else 1, 1.0),
            epsilon=eps, delta=delta, row_bound=10.0, random_state=seed,
        )  # fmt: skip
    if name == "alg3":
        return noisy_mirror_descent(
            X, y, "logistic", p=1.5, epsilon=eps, delta=delta, row_bound=10.0, random_state=seed
        )
    if name == "alg6":
        return phased_dpsgd(
            X, y, "logistic", p=4.0, epsilon=eps, delta=delta, row_bound=10.0, random_state=seed
        )
    return batched_truncated_mirror_descent(
        X, y, p=1.5, radius=1.0, epsilon=eps, delta=delta, row_bound=10.0, random_state=seed
    )


_SCO_ALGORITHMS_NEVER_RELEASE_SILENTLY_CASES = dict(
    name=st.sampled_from(["alg1", "alg3", "alg6", "alg7"]),
    x_case=st.sampled_from(sorted(X_CASES)),
    y_case=st.sampled_from(sorted(Y_CASES)),
    eps=st.sampled_from([0.5, *EPSILONS]),
    delta=st.sampled_from([1e-5, *DELTAS]),
    seed=st.integers(0, 3),
)


@settings(FUZZ, max_examples=15)  # the default run; the wide one is marked slow
@given(**_SCO_ALGORITHMS_NEVER_RELEASE_SILENTLY_CASES)
def test_sco_algorithms_never_release_silently(name, x_case, y_case, eps, delta, seed):
    _sco_algorithms_never_release_silently(name, x_case, y_case, eps, delta, seed)


@pytest.mark.slow
@FUZZ
@given(**_SCO_ALGORITHMS_NEVER_RELEASE_SILENTLY_CASES)
def test_sco_algorithms_never_release_silently_wide(name, x_case, y_case, eps, delta, seed):
    _sco_algorithms_never_release_silently(name, x_case, y_case, eps, delta, seed)


def _sco_algorithms_never_release_silently(name, x_case, y_case, eps, delta, seed):
    rng = np.random.default_rng(seed)
    X = X_CASES[x_case](rng)
    if not hasattr(X, "toarray") and X.ndim == 2:
        X = X / max(1.0, float(np.nanmax(np.abs(X), initial=0.0)) if X.size else 1.0)
    y = Y_CASES[y_case](rng, X.shape[0])
    release, err = _check_outcome(lambda: _sco_call(name, X, y, eps, delta, seed))
    if err is not None:
        return
    assert math.isfinite(eps) and 0 < eps and 0 < delta < 1, f"accepted eps={eps}, delta={delta}"
    assert release.info["epsilon"] <= eps
    assert np.all(np.isfinite(release.theta))
    assert x_case not in _BAD_X[:4], f"released on {x_case} data"
    assert y_case not in _BAD_Y[:2], f"released with {y_case}"


@FUZZ
@given(
    x_case=st.sampled_from(sorted(X_CASES)),
    y_case=st.sampled_from(sorted(Y_CASES)),
    which=st.sampled_from(["nmf", "mlp"]),
    seed=st.integers(0, 3),
)
def test_mbcd_case_studies_check_their_data(x_case, y_case, which, seed):
    rng = np.random.default_rng(seed)
    X = X_CASES[x_case](rng)
    y = Y_CASES[y_case](rng, X.shape[0])

    def run():
        if which == "nmf":
            problem = NmfProblem(np.abs(X) if hasattr(X, "ndim") else X, 2)
        else:
            problem = LiftedMlpProblem(X, y)
        return dp_mbcd(
            problem, batch_size=10, epochs=1, step_size=0.1, noise=0.5, random_state=seed,
            accountant="composition",
        )  # fmt: skip

    release, err = _check_outcome(run)
    if err is not None:
        return
    assert x_case not in ("nan", "inf", "empty", "1-d array"), f"released on {x_case} data"
    if which == "mlp":
        assert y_case not in ("nan labels", "wrong length", "continuous"), y_case
    for value in release.params.values() if hasattr(release, "params") else []:
        assert np.all(np.isfinite(value))


@FUZZ
@given(
    scale=st.sampled_from([1e-300, 1.0, 1e150, 1e300]),
    special=st.sampled_from([None, math.nan, math.inf]),
    seed=st.integers(0, 5),
)
def test_per_example_clipping_bounds_every_contribution(scale, special, seed):
    """||clip_C(a_i b_i^T)||_F <= C for all rows, huge or non-finite ones included."""
    from dpconvex.bcd.steps import clip_factors

    rng = np.random.default_rng(seed)
    a, b = rng.normal(size=(8, 3)) * scale, rng.normal(size=(8, 2))
    if special is not None:
        a[0, 0] = special
    factors = clip_factors(a, b, 0.5)
    assert np.all(np.isfinite(factors)) and np.all((factors >= 0) & (factors <= 1))
    finite = np.all(np.isfinite(a), axis=1)
    contrib = [np.linalg.norm(np.outer(a[i] * factors[i], b[i])) for i in np.flatnonzero(finite)]
    assert max(contrib) <= 0.5 * (1 + 1e-9)
    assert np.all(factors[~finite] == 0)
