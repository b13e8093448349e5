"""One check suite run over every private method of the linear estimators.

In the spirit of scikit-learn's estimator checks: each check states a rule every method
must keep, and is parametrized over (estimator, method), so a new method is checked by
adding it to ``METHODS``:

* the released event is the planned one: the ledger charges an event built from public
  quantities before the rows are read, and it equals the fitted ``dp_event_``; an
  accountant recomputing that event's epsilon gets ``epsilon_``, which is at most the
  target;
* rows above the declared bound are refused (``row_norm="error"``) and nothing is charged;
* a privacy audit of the method's mechanism (:mod:`dpconvex.audit`, Jagielski et al.,
  arXiv 2006.07709; Nasr et al., arXiv 2101.04535) stays below its claim.
"""

import numpy as np
import pytest

from dpconvex import Budget, DPLinearRegression, DPLogisticRegression, reset_session
from dpconvex.accounting import PrivacyAccountant
from dpconvex.audit import AUDITS, run_audit

EPSILON, DELTA = 1.0, 1e-5

METHODS = [
    (DPLogisticRegression, "amp"),
    (DPLogisticRegression, "output"),
    (DPLogisticRegression, "dpsgd"),
    (DPLogisticRegression, "dpgd"),
    (DPLinearRegression, "amp"),
    (DPLinearRegression, "dpsgd"),
    (DPLinearRegression, "dpgd"),
    (DPLinearRegression, "adassp"),
]

#: the auditor of each method's mechanism (dpsgd's auditor covers DP-GD: full batches)
AUDITOR = {"amp": "amp-linear", "output": "output-perturbation", "dpsgd": "dpsgd",
           "dpgd": "dpsgd", "adassp": "adassp"}  # fmt: skip
#: methods without an auditor yet, with the reason; a method in neither dict fails the suite
NO_AUDITOR_YET: dict[str, str] = {}


def _ids(param):
    cls, method = param
    return f"{cls.__name__}-{method}"


def _data(cls, n=300, d=4, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    X /= np.maximum(1.0, np.linalg.norm(X, axis=1))[:, None]
    signal = X @ rng.normal(size=d)
    if cls is DPLogisticRegression:
        return X, (signal > 0).astype(int)
    return X, np.clip(signal, -1.0, 1.0)


def _estimator(cls, method, **kw):
    extra = {"classes": [0, 1]} if cls is DPLogisticRegression else {"y_bound": 1.0}
    if method in ("dpsgd", "dpgd"):
        extra["epochs"] = 2
    return cls(epsilon=EPSILON, delta=DELTA, method=method, random_state=0, **extra, **kw)


@pytest.fixture(autouse=True)
def _fresh_session():
    reset_session()
    yield
    reset_session()


@pytest.mark.parametrize("case", METHODS, ids=_ids)
def test_released_event_is_the_charged_plan(case, tmp_path):
    cls, method = case
    X, y = _data(cls)
    budget = Budget(tmp_path / "ledger", epsilon=10.0, delta=1e-4)
    model = _estimator(cls, method, budget=budget).fit(X, y)
    (entry,) = budget.entries()
    assert entry.event == model.dp_event_
    accountant = PrivacyAccountant()
    accountant.compose(model.dp_event_)
    assert accountant.get_epsilon(DELTA) == pytest.approx(model.epsilon_, rel=1e-9)
    assert model.epsilon_ <= EPSILON


@pytest.mark.parametrize("case", METHODS, ids=_ids)
def test_rows_above_the_declared_bound_are_refused_before_any_charge(case, tmp_path):
    cls, method = case
    X, y = _data(cls)
    X[7] *= 3.0 / np.linalg.norm(X[7])  # one row of norm 3 > row_bound 1
    budget = Budget(tmp_path / "ledger", epsilon=10.0, delta=1e-4)
    model = _estimator(cls, method, row_norm="error", row_bound=1.0, budget=budget)
    with pytest.raises(ValueError, match="row_bound"):
        model.fit(X, y)
    assert budget.entries() == []
    assert not hasattr(model, "coef_")


@pytest.mark.parametrize("method", sorted({m for _, m in METHODS}))
def test_every_method_has_an_auditor_or_a_stated_reason(method):
    if method in NO_AUDITOR_YET:
        assert method not in AUDITOR
        return
    assert AUDITOR[method] in AUDITS  # KeyError: a new method needs an auditor


@pytest.mark.slow  # tests/audit runs the same audits in the default suite
@pytest.mark.parametrize("method", sorted(AUDITOR))
def test_every_method_audits_below_its_claim(method):
    result = run_audit(AUDITOR[method], 1000, seed=1, fast=True)
    assert result.epsilon_lower_bound <= result.claimed_epsilon
