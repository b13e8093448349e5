"""PrivatePipeline: the event of every step that reads the rows, composed, checked and charged."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from dp_accounting.dp_event import ComposedDpEvent, GaussianDpEvent
from dp_accounting.pld import pld_privacy_accountant
from scipy.optimize import brentq
from scipy.stats import norm
from sklearn.base import BaseEstimator, ClassifierMixin, TransformerMixin
from sklearn.model_selection import GridSearchCV
from sklearn.preprocessing import FunctionTransformer, Normalizer, StandardScaler

from dpconvex import Budget, BudgetExceededError, DPLogisticRegression
from dpconvex.models.session import RepeatedFitWarning, reset_session, session_spent
from dpconvex.pipeline import PrivatePipeline, Public, make_private_pipeline


class _Clip(TransformerMixin, BaseEstimator):
    """A fake private step: clips the rows, "priced" as one Gaussian mechanism."""

    def __init__(self, noise=4.0, epsilon=None, budget=None, declare_width=True, cheat=False):
        self.noise = noise
        self.epsilon = epsilon
        self.budget = budget
        self.declare_width = declare_width
        self.cheat = cheat

    def privacy_event(self, n_samples, n_features, subsample=False):
        return GaussianDpEvent(self.noise)

    def public_n_features_out(self, n_features):
        return n_features if self.declare_width else None

    def fit(self, X, y=None, public_n=None):
        self.dp_event_ = GaussianDpEvent(self.noise / 2 if self.cheat else self.noise)
        return self

    def transform(self, X):
        return np.clip(X, -1.0, 1.0)


class _MeanSign(ClassifierMixin, BaseEstimator):
    """A fake private classifier priced as one Gaussian mechanism."""

    def __init__(self, noise=3.0, delta=1e-5, budget=None):
        self.noise = noise
        self.delta = delta
        self.budget = budget

    def privacy_event(self, n_samples, n_features):
        return GaussianDpEvent(self.noise)

    def fit(self, X, y):
        self.classes_ = np.array([0, 1])
        self.w_ = np.asarray(X).T @ (2.0 * np.asarray(y) - 1.0) / len(y)
        self.dp_event_ = GaussianDpEvent(self.noise)
        return self

    def predict(self, X):
        return (np.asarray(X) @ self.w_ > 0).astype(int)


@pytest.fixture(autouse=True)
def _fresh_session():
    reset_session()
    yield
    reset_session()


def _data(n=300, d=3, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    return X, (X[:, 0] > 0).astype(int)


def _gaussian_epsilon(sigma: float, delta: float) -> float:
    """Exact epsilon of a Gaussian mechanism of sensitivity 1 (Balle & Wang 2018, Thm 8)."""

    def excess(eps):
        return norm.cdf(0.5 / sigma - eps * sigma) - math.exp(eps) * norm.cdf(
            -0.5 / sigma - eps * sigma
        ) - delta  # fmt: skip

    return brentq(excess, 0.0, 100.0, xtol=1e-12)


def test_the_pipeline_composes_every_private_step_exactly():
    X, y = _data()
    pipe = make_private_pipeline(_Clip(4.0), Normalizer(), _MeanSign(3.0), delta=1e-5)
    pipe.fit(X, y)
    assert pipe.dp_event_ == ComposedDpEvent([GaussianDpEvent(4.0), GaussianDpEvent(3.0)])
    assert pipe.private_steps_ == ["_clip", "_meansign"]
    # two Gaussians compose to one of noise (4^-2 + 3^-2)^(-1/2): exact epsilon by root finding
    exact = _gaussian_epsilon((4.0**-2 + 3.0**-2) ** -0.5, 1e-5)
    assert pipe.epsilon_ == pytest.approx(exact, rel=2e-3)
    assert pipe.epsilon_ >= exact * (1 - 1e-9)  # the accountant errs on the safe side
    # and dp_accounting's own PLD accountant agrees
    theirs = pld_privacy_accountant.PLDAccountant(value_discretization_interval=1e-4)
    assert pipe.epsilon_ == pytest.approx(
        theirs.compose(pipe.dp_event_).get_epsilon(1e-5), rel=2e-3
    )
    assert pipe.delta_ == 1e-5
    # predict, score and transform work as in scikit-learn
    manual = pipe[-1].predict(Normalizer().fit_transform(np.clip(X, -1, 1)))
    assert np.array_equal(pipe.predict(X), manual)
    assert pipe.score(X, y) == np.mean(manual == y)
    assert pipe[:-1].transform(X).shape == X.shape


def test_a_real_estimator_after_a_private_step():
    X, y = _data()
    model = DPLogisticRegression(method="amp", epsilon=0.9)
    pipe = PrivatePipeline([("clip", _Clip(5.0)), ("clf", model)], epsilon=1.5).fit(X, y)
    assert pipe.dp_event_ == ComposedDpEvent([GaussianDpEvent(5.0), model.dp_event_])
    assert model.epsilon_ < pipe.epsilon_ <= 1.5
    assert pipe.score(X, y) > 0.6


@pytest.mark.filterwarnings("ignore::dpconvex.models.session.RepeatedFitWarning")
def test_a_transformer_that_learns_from_the_rows_is_refused_before_anything_runs():
    X, y = _data()
    scaler, final = StandardScaler(), _MeanSign()
    with pytest.raises(ValueError, match=r"step 'standardscaler' \(StandardScaler\) learns"):
        make_private_pipeline(scaler, final).fit(X, y)
    assert not hasattr(scaler, "mean_") and not hasattr(final, "w_")
    # FunctionTransformer may mix rows (X - X.mean(axis=0)): it must be declared
    with pytest.raises(ValueError, match="Public"):
        make_private_pipeline(FunctionTransformer(np.tanh), final).fit(X, y)
    # declared public: by a wrapper, by name, or fitted elsewhere on public data
    for pipe in (
        make_private_pipeline(Public(StandardScaler()), _MeanSign()),
        PrivatePipeline([("s", StandardScaler()), ("m", _MeanSign())], public=["s"]),
        make_private_pipeline(Public(StandardScaler().fit(X[:50]), prefit=True), _MeanSign()),
    ):
        pipe.fit(X, y)
        assert pipe.dp_event_ == ComposedDpEvent([GaussianDpEvent(3.0)])
    assert make_private_pipeline(Public(StandardScaler()), _MeanSign()).steps[0][0] == (
        "public_standardscaler"
    )
    with pytest.raises(ValueError, match="public must list step names"):
        PrivatePipeline([("m", _MeanSign())], public=["x"]).fit(X, y)


def test_a_total_epsilon_is_checked_before_any_step_runs():
    X, y = _data()
    clip, final = _Clip(1.0), _MeanSign(1.0)
    with pytest.raises(ValueError, match="compose to epsilon=.* above the pipeline's epsilon=1"):
        make_private_pipeline(clip, final, epsilon=1.0).fit(X, y)
    assert not hasattr(clip, "dp_event_") and not hasattr(final, "w_")
    # within the total: accepted, and the report is at most the total
    pipe = make_private_pipeline(_Clip(6.0), _MeanSign(6.0), epsilon=1.0).fit(X, y)
    assert pipe.epsilon_ <= 1.0


def test_a_budget_is_charged_once_with_the_whole_plan(tmp_path):
    X, y = _data()
    ledger = Budget(tmp_path / "b.db", epsilon=3.0, delta=1e-5)
    pipe = make_private_pipeline(_Clip(4.0), _MeanSign(3.0), budget=ledger).fit(X, y)
    entries = ledger.entries()
    assert len(entries) == 1 and entries[0].event == pipe.dp_event_
    # a step with its own ledger would be charged twice: refused
    with pytest.raises(ValueError, match="has a budget of its own"):
        make_private_pipeline(_Clip(4.0, budget=ledger), _MeanSign(), budget=ledger).fit(X, y)
    # a refused charge fits nothing
    small = Budget(tmp_path / "s.db", epsilon=0.5, delta=1e-5)
    clip = _Clip(4.0)
    with pytest.raises(BudgetExceededError):
        make_private_pipeline(clip, _MeanSign(3.0), budget=small).fit(X, y)
    assert not hasattr(clip, "dp_event_") and small.entries() == []


def test_a_step_that_runs_another_event_than_planned_is_not_released():
    X, y = _data()
    with pytest.raises(RuntimeError, match="other than the one planned"):
        make_private_pipeline(_Clip(4.0, cheat=True), _MeanSign()).fit(X, y)


def test_a_width_unknown_before_fit_blocks_a_budget_but_not_a_plain_fit():
    X, y = _data()
    with pytest.raises(ValueError, match="cannot price its steps before fitting"):
        make_private_pipeline(_Clip(declare_width=False), _MeanSign(), epsilon=5.0).fit(X, y)
    pipe = make_private_pipeline(_Clip(4.0, declare_width=False), _MeanSign(3.0)).fit(X, y)
    assert pipe.dp_event_ == ComposedDpEvent([GaussianDpEvent(4.0), GaussianDpEvent(3.0)])
    assert session_spent(X).fits == 1  # recorded once its events were known


def test_grid_search_over_a_private_pipeline_warns_and_counts_pipeline_fits():
    X, y = _data()
    pipe = make_private_pipeline(_Clip(4.0), DPLogisticRegression(method="amp"))
    search = GridSearchCV(pipe, {"dplogisticregression__lam": [5.0, 50.0]}, cv=2)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        search.fit(X, y)
    assert any(issubclass(w.category, RepeatedFitWarning) for w in caught)
    # 2 candidates x 2 folds + the refit, each one pipeline event (its steps not again)
    spent = session_spent()
    assert spent.fits == 5
    assert all(
        isinstance(e, ComposedDpEvent) and len(e.events) == 2 for e in _leaves(spent.dp_event)
    )


def _leaves(event):
    """The recorded pipeline events inside the session's grouped composition."""
    out = []
    for part in event.events:
        out.append(getattr(part, "event", part))
    return out


class _SizedSign(_MeanSign):
    """A fake private classifier whose event depends on the number of rows it plans for."""

    def privacy_event(self, n_samples, n_features, subsample=False):
        return GaussianDpEvent(self.noise * 100.0 / n_samples)

    def fit(self, X, y, public_n=None):
        super().fit(X, y)
        rows = public_n or len(y)
        self.dp_event_ = GaussianDpEvent(self.noise * 100.0 / rows)
        return self


def test_a_pipeline_nests_and_prices_like_its_steps():
    """A PrivatePipeline is itself a private step: planned by privacy_event(n, d), its
    width known before fit, its fitted event the planned one."""
    X, y = _data()
    inner = make_private_pipeline(_Clip(4.0), _Clip(5.0))
    assert inner.public_n_features_out(3) == 3 and inner.final_n_features_in(3) == 3
    outer = PrivatePipeline([("pre", inner), ("clf", _MeanSign(3.0))], epsilon=2.0).fit(X, y)
    flat = [GaussianDpEvent(4.0), GaussianDpEvent(5.0)]
    assert outer.dp_event_ == ComposedDpEvent([ComposedDpEvent(flat), GaussianDpEvent(3.0)])
    flat_pipe = make_private_pipeline(_Clip(4.0), _Clip(5.0), _MeanSign(3.0)).fit(X, y)
    assert outer.epsilon_ == pytest.approx(flat_pipe.epsilon_, rel=1e-6)
    assert [name for name, _ in outer.reading_steps()] == ["pre", "clf"]


def test_a_run_on_a_secret_subsample_is_planned_for_its_public_size():
    """The search fits its runs with public_n: the plan (and so the check that the
    fitted event is the planned one) uses it, never the rows actually given."""
    X, y = _data(n=300)
    pipe = make_private_pipeline(_Clip(4.0), _SizedSign(3.0))
    # the subsample's actual size differs from the public one
    pipe.fit(X[:237], y[:237], public_n=250)
    assert pipe.dp_event_.events[1] == GaussianDpEvent(3.0 * 100.0 / 250)


def test_a_table_the_encoder_refuses_spends_nothing_from_the_ledger(tmp_path):
    from dpconvex import TableEncoder

    schema = {"columns": [{"name": "age", "type": "numeric", "bounds": [None, 100],
                           "search_range": [0, 200]}]}  # fmt: skip
    ledger = Budget(tmp_path / "b.db", epsilon=3.0, delta=1e-5)
    cells = np.array([[30.0], [40.0], ["forty"], [50.0]], dtype=object)
    pipe = make_private_pipeline(
        TableEncoder(schema, epsilon=0.2),
        DPLogisticRegression(epsilon=0.8, row_norm="clip", row_bound=1.0),
        budget=ledger,
    )
    with pytest.raises(ValueError, match="column 'age' is declared numeric but holds a value"):
        pipe.fit(cells, np.array([0, 1, 0, 1]))
    assert ledger.entries() == []
