"""Spend before release: estimators and the search charge a ledger before using the data."""

import numpy as np
import pytest
from dp_accounting.dp_event import ComposedDpEvent

from dpconvex import DPLinearRegression, DPLogisticRegression, PrivateRandomSearch
from dpconvex.budget import Budget, BudgetExceededError


@pytest.fixture
def data():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(600, 4))
    return X, (X[:, 0] > 0).astype(int)


def test_fit_charges_the_planned_event_before_training(tmp_path, data):
    X, y = data
    ledger = Budget(tmp_path / "b.db", 2.5, 1e-5)
    model = DPLogisticRegression(epsilon=1.0, random_state=0, budget=ledger).fit(X, y)
    (entry,) = ledger.entries()
    assert entry.event == model.dp_event_ == model.privacy_event(*X.shape)
    # a path works as well as a Budget
    DPLinearRegression(epsilon=1.0, random_state=0, budget=str(tmp_path / "b.db")).fit(X, X[:, 1])
    assert len(ledger.entries()) == 2


def test_refused_charge_trains_nothing(tmp_path, data, monkeypatch):
    X, y = data
    ledger = Budget(tmp_path / "b.db", 1.5, 1e-5)
    DPLogisticRegression(epsilon=1.0, random_state=0, budget=ledger).fit(X, y)
    touched = []
    import importlib

    # (the package's name "amp" is the release function, so import the module by path)
    amp_plan = importlib.import_module("dpconvex.mechanisms.amp")

    real = amp_plan.amp
    monkeypatch.setattr(amp_plan, "amp", lambda *a, **k: touched.append(1) or real(*a, **k))
    model = DPLogisticRegression(epsilon=1.0, random_state=0, budget=ledger)
    with pytest.raises(BudgetExceededError):
        model.fit(X, y)
    assert touched == [] and not hasattr(model, "coef_")
    assert len(ledger.entries()) == 1


def test_missing_ledger_and_bad_budget_are_clear_errors(tmp_path, data):
    X, y = data
    with pytest.raises(ValueError, match="does not exist"):
        DPLogisticRegression(budget=str(tmp_path / "none.db")).fit(X, y)
    with pytest.raises(TypeError, match="budget must be"):
        DPLogisticRegression(budget=3).fit(X, y)


@pytest.mark.slow  # paper-scale (> 20 s here); CI runs -m slow as its own step
def test_search_charges_once_and_uses_the_declared_classes(tmp_path, data):
    X, y = data
    ledger = Budget(tmp_path / "b.db", 3.0, 1e-5)
    est = DPLogisticRegression(classes=[0, 1, 2], budget=ledger)
    search = PrivateRandomSearch(
        est, {"solver": ["lbfgs", "newton"]}, epsilon=2.0, mu=2, random_state=0, budget=ledger
    ).fit(X, y)
    (entry,) = ledger.entries()  # the runs do not charge the ledger again
    assert entry.event == search.dp_event_
    assert list(search.classes_) == [0, 1, 2]
    assert search.best_estimator_.coef_.shape == (3, 4)
    with pytest.raises(ValueError, match=r"some labels are not in the declared classes"):
        PrivateRandomSearch(est, {"solver": ["lbfgs"]}, epsilon=2.0).fit(X, np.where(y, 5, 0))
    assert len(ledger.entries()) == 1  # refused before any charge
    assert isinstance(search.dp_event_, ComposedDpEvent) or search.dp_event_ is not None
