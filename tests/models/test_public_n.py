"""fit(..., public_n=N): a fit on a secret subsample is calibrated for its public size N."""

import numpy as np
import pytest
from dp_accounting.dp_event import GaussianDpEvent
from sklearn.base import BaseEstimator, TransformerMixin, clone
from sklearn.datasets import make_classification, make_regression

from dpconvex import DPLinearRegression, DPLogisticRegression, TableEncoder
from dpconvex.mechanisms import PLANS
from dpconvex.pipeline import make_private_pipeline
from dpconvex.table_model import TargetBoundsRegressor

PUBLIC_N = 400


def _classification(n=237, d=3):
    X, y = make_classification(n_samples=n, n_features=d, n_informative=2, n_redundant=0,
                               random_state=0)  # fmt: skip
    return X, y


def test_a_fit_on_a_subsample_spends_the_event_planned_for_its_public_size():
    X, y = _classification()  # 237 rows, drawn for an expected 400
    est = DPLogisticRegression(epsilon=1.0, method="dpsgd", epochs=2, batch_size=32,
                               random_state=0)  # fmt: skip
    planned = est.privacy_event(PUBLIC_N, X.shape[1], subsample=True)
    fitted = clone(est).fit(X, y, public_n=PUBLIC_N)
    assert fitted.dp_event_ == planned
    # DP-SGD's sampling rate batch / n depends on n: calibrated for the rows given, the
    # event differs (so the equality above says which size the fit used)
    own = clone(est).fit(X, y)
    assert own.dp_event_ == est.privacy_event(X.shape[0], X.shape[1])
    assert own.dp_event_ != fitted.dp_event_
    assert fitted.epsilon_ <= 1.0 * (1 + 1e-9)


def test_auto_on_a_subsample_runs_a_method_that_can_run_there():
    X, y = _classification()
    est = DPLogisticRegression(epsilon=1.0, random_state=0).fit(X, y, public_n=PUBLIC_N)
    assert PLANS[est.method_].size_free
    planned = DPLogisticRegression(epsilon=1.0).privacy_event(PUBLIC_N, 3, subsample=True)
    assert est.dp_event_ == planned


def test_a_method_whose_guarantee_depends_on_the_row_count_refuses_a_subsample():
    assert not PLANS["adassp"].size_free
    X, y = make_regression(n_samples=120, n_features=3, random_state=0)
    est = DPLinearRegression(method="adassp", y_bound=300.0)
    with pytest.raises(ValueError, match="'adassp' cannot run on a secret subsample"):
        est.fit(X, y, public_n=PUBLIC_N)
    with pytest.raises(ValueError, match="'adassp' cannot run on a secret subsample"):
        est.privacy_event(PUBLIC_N, 3, subsample=True)
    assert not hasattr(est, "coef_")
    est.fit(X, y)  # without public_n it runs (calibrated for the rows given)
    assert est.dp_event_ == est.privacy_event(120, 3)


@pytest.mark.parametrize("bad", [0, -1, 2.5, 2.0, "a", True])
def test_a_bad_public_size_is_one_clear_error(bad):
    X, y = _classification()
    pipe = make_private_pipeline(DPLogisticRegression(epsilon=1.0))
    encoder = TableEncoder({"columns": [{"name": "a", "type": "numeric", "bounds": [0, 1]}]})
    for fit in (DPLogisticRegression().fit, DPLinearRegression().fit, pipe.fit, encoder.fit):
        with pytest.raises(ValueError, match="public_n must be None or a positive integer"):
            fit(X, y, public_n=bad)


class _SizedStep(TransformerMixin, BaseEstimator):
    """A private step that knows nothing of subsamples (no public_n, no subsample)."""

    def privacy_event(self, n_samples, n_features):
        return GaussianDpEvent(100.0 / n_samples)

    def fit(self, X, y=None):
        self.dp_event_ = GaussianDpEvent(100.0 / len(X))
        return self

    def transform(self, X):
        return X


def test_a_pipeline_routes_the_public_size_and_refuses_a_step_that_cannot_take_it():
    X, y = _classification()
    model = DPLogisticRegression(epsilon=1.0, method="dpsgd", epochs=2, random_state=0)
    pipe = make_private_pipeline(clone(model)).fit(X, y, public_n=PUBLIC_N)
    assert pipe.dp_event_.events == [model.privacy_event(PUBLIC_N, 3, subsample=True)]
    assert pipe.privacy_event(PUBLIC_N, 3, subsample=True) == pipe.dp_event_
    unaware = make_private_pipeline(_SizedStep(), clone(model))
    unaware.fit(X, y)  # without public_n it is an ordinary private step
    with pytest.raises(ValueError, match="'_sizedstep' .* cannot run on a secret subsample"):
        make_private_pipeline(_SizedStep(), clone(model)).fit(X, y, public_n=PUBLIC_N)
    with pytest.raises(ValueError, match="cannot run on a secret subsample"):
        unaware.privacy_event(PUBLIC_N, 3, subsample=True)


def test_target_bounds_on_a_subsample_spend_the_event_planned_for_its_public_size():
    X, y = make_regression(n_samples=237, n_features=3, noise=1.0, random_state=0)
    model = DPLinearRegression(epsilon=1.0, method="dpsgd", epochs=2, random_state=0)
    est = TargetBoundsRegressor(model, y_search_range=(-1000.0, 1000.0), epsilon=0.5,
                                random_state=0)  # fmt: skip
    fitted = clone(est).fit(X, y, public_n=PUBLIC_N)
    assert fitted.dp_event_ == est.privacy_event(PUBLIC_N, 3, subsample=True)
    assert fitted.dp_event_ != est.privacy_event(237, 3)
    cannot = TargetBoundsRegressor(DPLinearRegression(method="adassp"),
                                   y_search_range=(-1000.0, 1000.0), epsilon=0.5)  # fmt: skip
    with pytest.raises(ValueError, match="'adassp' cannot run on a secret subsample"):
        cannot.fit(X, y, public_n=PUBLIC_N)
    assert not hasattr(cannot, "y_bounds_")  # refused before the quantiles ran
    assert np.isfinite(fitted.predict(X)).all()
