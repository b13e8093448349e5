"""The session record: scikit-learn habits that fit the same rows again are told what they spent."""

from __future__ import annotations

import re
import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from dp_accounting.dp_event import ComposedDpEvent, GaussianDpEvent
from sklearn.model_selection import GridSearchCV, cross_val_score
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import Normalizer, StandardScaler

from dpconvex import DPLogisticRegression, PrivateRandomSearch
from dpconvex.accounting import DEFAULT_RDP_ORDERS, PrivacyAccountant, pld_grid
from dpconvex.models import session
from dpconvex.models.row_fingerprints import row_keys
from dpconvex.models.session import (
    RepeatedFitWarning,
    UnpricedStepWarning,
    observe,
    priced_by_caller,
    reset_session,
    session_spent,
)
from dpconvex.pipeline import Public

FITTED_EVENTS: list = []


class _Recorded(DPLogisticRegression):
    """Records the event of every fit (GridSearchCV clones it: the list is module-wide)."""

    def fit(self, X, y):
        super().fit(X, y)
        FITTED_EVENTS.append(self.dp_event_)
        return self


@pytest.fixture(autouse=True)
def _fresh_session():
    reset_session()
    FITTED_EVENTS.clear()
    yield
    reset_session()


def _data(n=240, d=3, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    return X, (X[:, 0] + 0.3 * rng.normal(size=n) > 0).astype(int)


def _caught(category, run):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        run()
    return [w for w in caught if issubclass(w.category, category)]


def test_grid_search_warns_and_the_session_total_composes_its_ten_fits():
    # the reproducer: 3 candidates x 3 folds + the refit = 10 fits, and
    # best_estimator_.epsilon_ alone says about 1
    X, y = _data()
    search = GridSearchCV(_Recorded(method="amp"), {"lam": [3.0, 10.0, 30.0]}, cv=3)
    repeated = _caught(RepeatedFitWarning, lambda: search.fit(X, y))
    assert len(FITTED_EVENTS) == 10
    assert len(repeated) == 10  # the first fit as part of GridSearchCV, then 9 overlaps
    assert "GridSearchCV" in str(repeated[0].message)
    assert "9 earlier private fit(s)" in str(repeated[-1].message)
    everything = ComposedDpEvent(list(FITTED_EVENTS))
    # the warning's figure: the Renyi-DP composition of the 10 events (an upper bound)
    shown = float(re.search(r"epsilon <= ([0-9.]+)", str(repeated[-1].message)).group(1))
    rdp = PrivacyAccountant("rdp", orders=DEFAULT_RDP_ORDERS).compose(everything)
    assert shown == pytest.approx(rdp.get_epsilon(1e-5), rel=1e-3)
    # the session's total: the accountant on all 10 events, computed directly
    spent = session_spent()
    assert spent.fits == 10 and spent.delta == 1e-5
    h = pld_grid(PrivacyAccountant("rdp").compose(everything).get_epsilon(1e-5))
    direct = PrivacyAccountant("pld", value_discretization_interval=h).compose(everything)
    assert spent.epsilon == pytest.approx(direct.get_epsilon(1e-5), rel=1e-6)
    assert spent.epsilon > 3 * search.best_estimator_.epsilon_
    assert session_spent(X).fits == 10  # every fit read rows of X


def test_cross_val_score_warns_about_its_five_fits():
    X, y = _data()
    repeated = _caught(
        RepeatedFitWarning, lambda: cross_val_score(DPLogisticRegression(method="amp"), X, y)
    )
    assert len(repeated) == 5 and "cross_val_score" in str(repeated[0].message)
    assert session_spent().fits == 5


def test_refitting_the_same_estimator_on_the_same_rows_warns():
    # a notebook cell run twice spends twice
    X, y = _data()
    model = DPLogisticRegression(method="amp")
    assert not _caught(RepeatedFitWarning, lambda: model.fit(X, y))
    again = _caught(RepeatedFitWarning, lambda: model.fit(X, y))
    assert len(again) == 1 and "1 earlier private fit(s)" in str(again[0].message)
    # a sparse copy or a shuffled subset of the same rows is the same people
    assert _caught(RepeatedFitWarning, lambda: model.fit(sp.csr_matrix(X[::-2]), y[::-2]))
    assert session_spent(X).fits == 3


def test_a_single_fit_and_fits_on_other_rows_warn_nothing():
    X, y = _data()
    X2, y2 = _data(seed=1)
    with warnings.catch_warnings():
        warnings.simplefilter("error", RepeatedFitWarning)
        warnings.simplefilter("error", UnpricedStepWarning)
        DPLogisticRegression(method="amp").fit(X, y)
        DPLogisticRegression(method="amp").fit(X2, y2)
    assert session_spent().fits == 2 and session_spent(X2).fits == 1


def test_a_pipeline_with_a_scaler_before_the_estimator_warns():
    X, y = _data()
    pipe = make_pipeline(StandardScaler(), DPLogisticRegression(method="amp"))
    unpriced = _caught(UnpricedStepWarning, lambda: pipe.fit(X, y))
    assert len(unpriced) == 1 and "'standardscaler'" in str(unpriced[0].message)
    # steps that learn nothing from the rows, or are declared public, are fine
    for first in (Normalizer(), Public(StandardScaler()), "passthrough"):
        pipe = make_pipeline(first, DPLogisticRegression(method="amp"))
        assert not _caught(UnpricedStepWarning, lambda p=pipe: p.fit(X, y))


def test_private_random_search_runs_are_priced_by_the_search_not_the_session():
    X, y = _data(n=400)
    search = PrivateRandomSearch(
        DPLogisticRegression(method="amp"),
        {"lam": [5.0, 20.0]},
        epsilon=4.0,
        strategy="repeat",
        mu=4.0,
        random_state=3,
    )
    with warnings.catch_warnings():
        warnings.simplefilter("error", RepeatedFitWarning)
        search.fit(X, y)
    spent = session_spent()
    assert spent.fits == 1 and spent.dp_event == ComposedDpEvent([search.dp_event_])
    # fitting the search again on the same rows does spend again
    assert _caught(RepeatedFitWarning, lambda: search.fit(X, y))


def test_fits_priced_by_their_caller_are_not_recorded():
    X, _ = _data()
    with priced_by_caller():
        observe(GaussianDpEvent(1.0), rows=X, delta=1e-5)
    assert session_spent().fits == 0


def test_row_keys_identify_rows_whatever_holds_them():
    X, _ = _data(n=50, d=4)
    keys = row_keys(X)
    assert keys.dtype == np.uint64 and np.unique(keys).size == 50
    assert np.array_equal(row_keys(sp.csr_matrix(X)), keys)
    assert np.array_equal(row_keys(X[10:20]), keys[10:20])
    changed = X.copy()
    changed[3, 2] = np.nextafter(changed[3, 2], np.inf)
    assert np.flatnonzero(row_keys(changed) != keys).tolist() == [3]
    # a purely linear hash of the bits would map these two rows to the same key
    pair = row_keys(np.array([[1.0, 1.0], [-1.0, -1.0]]))
    assert pair[0] != pair[1]
    assert row_keys(np.array([["a", 1], ["b", 2]], dtype=object)).shape == (2,)


def test_stored_keys_stay_under_the_cap_and_overlaps_are_still_found(monkeypatch):
    monkeypatch.setattr(session, "MAX_STORED_KEYS", 300)
    rng = np.random.default_rng(2)
    tables = [rng.normal(size=(200, 2)) for _ in range(4)]
    for table in tables:
        observe(GaussianDpEvent(2.0), rows=table, delta=1e-5)
    assert session._SESSION.stored <= 300 and session._SESSION.level >= 2
    # a consistent hash sample: a refit on the same rows is still found
    assert _caught(
        RepeatedFitWarning, lambda: observe(GaussianDpEvent(2.0), rows=tables[0], delta=1e-5)
    )


def test_old_records_are_merged_beyond_the_cap_and_nothing_is_forgotten(monkeypatch):
    monkeypatch.setattr(session, "MAX_FITS", 4)
    rng = np.random.default_rng(3)
    for _ in range(7):
        observe(GaussianDpEvent(3.0), rows=rng.normal(size=(30, 2)), delta=1e-5)
    assert len(session._SESSION.fits) == 4
    spent = session_spent()
    assert spent.fits == 7
    sigma = 3.0 / np.sqrt(7)  # 7 Gaussians of noise 3 compose to one of noise 3/sqrt(7)
    alone = PrivacyAccountant("pld", value_discretization_interval=1e-4)
    assert spent.epsilon == pytest.approx(
        alone.compose(GaussianDpEvent(sigma)).get_epsilon(1e-5), rel=2e-3
    )


@pytest.mark.dask
def test_a_refit_on_the_same_dask_array_warns():
    da = pytest.importorskip("dask.array")
    X, y = _data(n=400)
    Xd, yd = da.from_array(X, chunks=(200, 3)), da.from_array(y, chunks=200)
    model = DPLogisticRegression(method="amp")
    model.fit(Xd, yd)
    assert _caught(RepeatedFitWarning, lambda: model.fit(Xd, yd))


@pytest.mark.dask
def test_a_refit_of_a_pipeline_on_the_same_dask_dataframe_warns():
    dd = pytest.importorskip("dask.dataframe")
    pd = pytest.importorskip("pandas")
    from dpconvex import TableEncoder, make_private_pipeline

    X, y = _data(n=400)
    # a column called "name": the frame's .name would be that column, not the graph's
    frame = dd.from_pandas(pd.DataFrame({"a": X[:, 0], "name": X[:, 1]}), npartitions=2)
    schema = {"columns": [{"name": c, "type": "numeric", "bounds": [-5, 5]} for c in ("a", "name")]}
    pipe = make_private_pipeline(TableEncoder(schema), DPLogisticRegression(method="amp"))
    yd = dd.from_pandas(pd.Series(y), npartitions=2)
    pipe.fit(frame, yd)
    assert _caught(RepeatedFitWarning, lambda: pipe.fit(frame, yd))
