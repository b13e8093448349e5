"""PrivateRandomSearch over a PrivatePipeline, and over method="auto" estimators."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pandas as pd
import pytest
from dp_accounting.dp_event import (
    ComposedDpEvent,
    DpEvent,
    PoissonSampledDpEvent,
    SelfComposedDpEvent,
)
from sklearn.base import clone
from sklearn.datasets import make_classification
from sklearn.preprocessing import StandardScaler

from dpconvex import Budget, DPLogisticRegression, PrivateRandomSearch
from dpconvex.accounting import PrivacyAccountant, RandomChoiceDpEvent, tuned_event
from dpconvex.models.clipping import ClippingWarning
from dpconvex.models.session import RepeatedFitWarning, reset_session, session_spent
from dpconvex.pipeline import PrivatePipeline, make_private_pipeline
from dpconvex.preprocessing import TableEncoder, quantile_event
from dpconvex.preprocessing import encoder as encoder_module
from dpconvex.preprocessing.defaults import default_quantiles
from dpconvex.tuning import search as search_module

from ..table_schemas import jobs_schema

# small test tables: the default quantiles are thin there, which is what the warning says
pytestmark = pytest.mark.filterwarnings("ignore::dpconvex.preprocessing.ThinBoundsWarning")

SCHEMA = jobs_schema()
LAMS = [20.0, 80.0]


@pytest.fixture(autouse=True)
def _fresh_session():
    reset_session()
    yield
    reset_session()


def raw_table(n: int, seed: int = 0) -> tuple[pd.DataFrame, np.ndarray]:
    rng = np.random.default_rng(seed)
    X = pd.DataFrame({
        "age": rng.normal(40, 10, n),
        "pay": rng.lognormal(9, 1.5, n),
        "job": rng.choice(["a", "b"], n).astype(object),
    })  # fmt: skip
    score = (X["age"] - 40) / 10 + (X["job"] == "a") + rng.normal(0, 0.5, n)
    return X, (score > 0.5).astype(int).to_numpy()


def pipeline(schema=SCHEMA, e_encoder=0.2, e_model=0.8, **model):
    model = {"row_norm": "clip", "row_bound": 2.0, "method": "amp", **model}
    return make_private_pipeline(
        TableEncoder(schema, epsilon=e_encoder), DPLogisticRegression(epsilon=e_model, **model)
    )


def _with_runs(monkeypatch, k: int) -> None:
    """Fix the number of runs (the random K) so that a test's cost is known."""
    monkeypatch.setattr(search_module, "sample_number_of_runs", lambda rng, mu, shape: k)


def _expected_run_event(search, rows: int, d: int) -> DpEvent:
    """The run event rebuilt by hand: the pipeline with the steps at their shares of the
    calibrated per-run epsilon, planned for ``rows``, then the noisy score."""
    each = search.step_epsilons_
    events = []
    for lam in LAMS:
        pipe = clone(search.estimator).set_params(
            tableencoder__epsilon=each["tableencoder"],
            dplogisticregression__epsilon=each["dplogisticregression"],
            dplogisticregression__delta=search.delta,
            dplogisticregression__lam=lam,
        )
        encoder_event = quantile_event(each["tableencoder"] / 3)  # three estimated bounds
        model = pipe.named_steps["dplogisticregression"]
        subsample = search.strategy_ == "subsample"
        model_event = model.privacy_event(rows, pipe.final_n_features_in(d), subsample=subsample)
        assert pipe.privacy_event(rows, d).events[0] == SelfComposedDpEvent(encoder_event, 3)
        events.append(ComposedDpEvent([
            ComposedDpEvent([SelfComposedDpEvent(encoder_event, 3), model_event]),
            search._score_event(),
        ]))  # fmt: skip
    return RandomChoiceDpEvent(events)


def test_search_over_a_pipeline_on_a_raw_table(monkeypatch):
    """Repeat-and-select over a TableEncoder + estimator on a DataFrame of text and numbers:
    every run is the pipeline's composed event, the released object a fitted pipeline, and
    the search's epsilon_ is the accountant's for the whole, within the budget."""
    _with_runs(monkeypatch, 2)
    X, y = raw_table(1000)
    search = PrivateRandomSearch(
        pipeline(), {"dplogisticregression__lam": LAMS}, epsilon=1.0, mu=2.0, random_state=0
    )
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        search.fit(X, y)
    assert not [w for w in caught if issubclass(w.category, RepeatedFitWarning)]
    assert session_spent(X).fits == 1  # the search once, its runs inside its event
    assert search.strategy_ == "repeat"
    best = search.best_estimator_
    assert isinstance(best, PrivatePipeline) and best.private_steps_ == [
        "tableencoder", "dplogisticregression"
    ]  # fmt: skip
    # the split: the declared 0.2 : 0.8, scaled to the calibrated per-run epsilon
    each = search.step_epsilons_
    assert each["tableencoder"] / each["dplogisticregression"] == pytest.approx(0.25, rel=1e-12)
    assert math.fsum(each.values()) == pytest.approx(search.run_epsilon_, rel=1e-12)
    assert best.named_steps["tableencoder"].epsilon == each["tableencoder"]
    assert best.named_steps["dplogisticregression"].epsilon == each["dplogisticregression"]
    # the whole event, rebuilt by hand, priced by the accountant
    run = _expected_run_event(search, 800, 3)  # 200 of the 1,000 rows score the runs
    expected = tuned_event(run, search.settings_["mu"], search.settings_["shape"])
    assert search.dp_event_ == expected
    spent = PrivacyAccountant("rdp").compose(expected).get_epsilon(1e-5)
    assert search.epsilon_ == pytest.approx(spent, rel=1e-12) and spent <= 1.0 + 1e-9
    assert search.run_epsilon_ > 0.3  # calibrated to the total, not left at a floor
    # never below what was spent: the released pipeline's own run is one of the options
    assert best.dp_event_ in [e.events[0] for e in run.events]
    assert search.epsilon_ > best.epsilon_
    # basic composition: one run spends at most the sum of its steps' shares
    assert best.epsilon_ <= search.run_epsilon_ * (1 + 1e-9)
    # nothing that counts the runs: no noise stream on the released steps
    assert best.named_steps["tableencoder"].random_state is None
    assert best.named_steps["dplogisticregression"].random_state is None
    majority = max(y.mean(), 1 - y.mean())
    assert search.score(X, y) > majority + 0.05  # a raw table in, predictions out


def test_search_over_a_pipeline_on_a_matrix_on_a_subsample(monkeypatch):
    """On a secret subsample each run is planned for the public expected size: the model
    (fitted with public_n), the pipeline, and the encoder's default quantiles; the final
    pipeline is trained on all rows and is the final event."""
    _with_runs(monkeypatch, 2)
    seen = []
    real_fit = encoder_module.TableEncoder.fit

    def spy(self, X, y=None, public_n=None):
        seen.append((self.quantiles, len(X)))
        return real_fit(self, X, y, public_n=public_n)

    monkeypatch.setattr(encoder_module.TableEncoder, "fit", spy)
    X, y = make_classification(n_samples=3000, n_features=2, n_informative=2, n_redundant=0,
                               random_state=1)  # fmt: skip
    X = np.abs(X) * 20  # two positive columns: age, pay
    # run_epsilon given: the calibration over a pipeline is tested above
    search = PrivateRandomSearch(
        pipeline({"columns": SCHEMA["columns"][:2]}),
        {"dplogisticregression__lam": LAMS},
        epsilon=2.0, strategy="subsample", subsample=0.3, run_epsilon=0.5, random_state=0,
    ).fit(X, y)  # fmt: skip
    cfg = search._cfg
    assert search.strategy_ == "subsample" and cfg["tune_rows"] == 720
    each = search.step_epsilons_["tableencoder"] / 3
    pinned = default_quantiles(each, 720)
    assert [q for q, _ in seen[:2]] == [pinned, pinned]  # every run: the public size
    assert {rows for _, rows in seen[:2]} != {720}  # though the subsample's size varies
    assert seen[2] == (None, 3000)  # the final run: the encoder's own rule on all n rows
    run = _expected_run_event(search, 720, 2)
    final = search.best_estimator_.dp_event_
    expected = ComposedDpEvent([
        PoissonSampledDpEvent(0.3, tuned_event(run, cfg["mu"], cfg["shape"])),
        RandomChoiceDpEvent([
            clone(search.best_estimator_).set_params(dplogisticregression__lam=lam)
            .privacy_event(3000, 2) for lam in LAMS
        ]),
    ])  # fmt: skip
    assert search.dp_event_ == expected
    assert final in expected.events[1].events
    spent = PrivacyAccountant("rdp").compose(expected).get_epsilon(1e-5)
    assert search.epsilon_ == pytest.approx(spent, rel=1e-12) and spent <= 2.0


def test_an_encoder_with_every_bound_declared_gets_no_share():
    """A step whose event is empty gets no share of a run's budget; a model with
    method="auto" inside the pipeline is resolved once; and the one clipping report is on
    the released model's rows as its encoder maps them (a row bound below the encoder's
    sqrt(2) clips some of them)."""
    X, y = raw_table(600)
    declared = {"columns": [
        {"name": "age", "type": "numeric", "bounds": [0, 100]},
        {"name": "job", "type": "categorical", "categories": ["a", "b"]},
    ]}  # fmt: skip
    search = PrivateRandomSearch(
        pipeline(declared, e_encoder=0.5, e_model=0.5, row_bound=1.2, method="auto"),
        {"dplogisticregression__lam": LAMS}, epsilon=2.0, mu=1.0, run_epsilon=0.5,
        random_state=0,
    )  # fmt: skip
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        search.fit(X, y)
    clipping = [str(w.message) for w in caught if issubclass(w.category, ClippingWarning)]
    assert len(clipping) == 1 and " of 480 " in clipping[0]  # the released run's rows
    assert set(search.step_epsilons_) == {"dplogisticregression"}
    assert search.step_epsilons_["dplogisticregression"] == search.run_epsilon_
    assert search.best_estimator_.named_steps["tableencoder"].epsilon == 0.5  # untouched
    model = search.best_estimator_.named_steps["dplogisticregression"]
    assert model.method == model.method_ == search.method_  # "auto" resolved in the pipeline


@pytest.mark.parametrize(
    ("make", "space", "error", "words"),
    [
        (lambda: make_private_pipeline(StandardScaler(), DPLogisticRegression()),
         {"dplogisticregression__lam": LAMS}, ValueError, "without a privacy event"),
        (lambda: make_private_pipeline(DPLogisticRegression(), TableEncoder(SCHEMA, epsilon=1)),
         {}, TypeError, "last step must be a dpconvex estimator"),
        (lambda: make_private_pipeline(
            make_private_pipeline(TableEncoder(SCHEMA, epsilon=0.1)), DPLogisticRegression()),
         {}, TypeError, "pipeline or search of its own"),
        (pipeline, {"tableencoder__epsilon": [0.1, 0.2]}, ValueError, "set by the search"),
        (pipeline, {"epsilon": [0.5, 1.0]}, ValueError, "set by the search"),
        (pipeline, {"public": [None, ["tableencoder"]]}, ValueError, "set by the search"),
        (pipeline, {"tableencoder": [TableEncoder(SCHEMA)]}, ValueError, "whole steps"),
        (pipeline, {"dplogisticregression__method": ["auto", "amp"]}, ValueError, 'lists "auto"'),
    ],
)  # fmt: skip
def test_what_cannot_be_priced_is_refused_before_the_charge(tmp_path, make, space, error, words):
    X, y = raw_table(300)
    ledger = Budget(tmp_path / "ledger", epsilon=5.0, delta=1e-5)
    search = PrivateRandomSearch(make(), space, epsilon=1.0, budget=ledger, random_state=0)
    with pytest.raises(error, match=words):
        search.fit(X, y)
    assert Budget(tmp_path / "ledger").entries() == []


def test_a_search_over_an_auto_model_prices_the_resolved_method():
    """method="auto" is resolved once from public sizes; the search then prices exactly
    what a search over that concrete method prices, and every run runs it."""
    X, y = make_classification(n_samples=800, n_features=4, random_state=2)
    auto = PrivateRandomSearch(
        DPLogisticRegression(), {"lam": LAMS}, epsilon=1.0, mu=1.5, random_state=0
    ).fit(X, y)
    assert auto.method_ in ("amp", "dpgd") and auto.method_reason_
    given = PrivateRandomSearch(
        DPLogisticRegression(method=auto.method_), {"lam": LAMS}, epsilon=1.0, mu=1.5,
        random_state=0,
    ).fit(X, y)  # fmt: skip
    assert auto.dp_event_ == given.dp_event_
    assert auto.run_epsilon_ == given.run_epsilon_ and auto.epsilon_ == given.epsilon_
    assert auto.best_estimator_.method_ == auto.method_
    np.testing.assert_array_equal(auto.predict(X), given.predict(X))


def test_auto_is_resolved_for_the_released_model_on_a_subsample(monkeypatch):
    """On a subsample the tuning runs (720 rows) and the final model (3,000 rows) must run
    one method: resolved from the final model's sizes, where the runs' own sizes alone
    would pick another (old code: each run resolved "auto" at the subsample's size)."""
    _with_runs(monkeypatch, 1)
    X, y = make_classification(n_samples=3000, n_features=20, random_state=3)
    model = DPLogisticRegression(lam=40.0)
    model_at = clone(model).set_params(epsilon=4.0, delta=1e-5)
    final_pick = model_at.chosen_method(3000, 20)[0]
    clone_ = clone(model_at)
    run_pick = clone_.chosen_method(720, 20, subsample=True)[0]
    assert (final_pick, run_pick) == ("amp", "dpgd")  # the sizes disagree at this budget
    search = PrivateRandomSearch(
        model, {"max_iter": [200]}, epsilon=10.0, strategy="subsample", subsample=0.3,
        run_epsilon=4.0, default_share=0.0, random_state=0,
    )  # fmt: skip
    chosen = []
    real = search_module.PrivateRandomSearch._one_run

    def spy(self, *args):
        out = real(self, *args)
        chosen.append(getattr(out[2], "method_", None))
        return out

    monkeypatch.setattr(search_module.PrivateRandomSearch, "_one_run", spy)
    search.fit(X, y)
    assert chosen == ["amp"] and search.best_estimator_.method_ == "amp"
    assert search.method_ == "amp" and "AMP" in search.method_reason_
