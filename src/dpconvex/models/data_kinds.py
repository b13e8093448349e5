"""Where an estimator's rows live — in memory or in a row-chunked dask array — decided once.

:func:`data_kind` is the one place that looks at the kind of the rows; the estimators
then ask the returned object (:class:`InMemory` or :class:`OnDask`) for what differs:
how the input is validated, the row source a mechanism reads, the clipping counts that
go to the data owner, and the decision scores.
"""

from __future__ import annotations

import numpy as np
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import validate_data

from .. import _validation as v
from .._arrays import row_norms
from ..data.dask_rows import is_dask_array
from ..data.sources import InMemoryRows
from ..mechanisms import PLANS, transform_rows


class InMemory:
    """Rows in memory: a numpy array or a CSR matrix."""

    dask = False

    def validated(self, est, X, y, **kwargs):
        """scikit-learn's validate_data: text, missing or infinite values name the column,
        not the cell (and when that read found every value finite, scikit-learn does not
        read X again)."""
        finite = v.numeric_features(X)
        return validate_data(
            est,
            X,
            y,
            accept_sparse="csr",
            dtype=np.float64,
            ensure_all_finite=not finite,
            **kwargs,
        )

    def check_classification_targets(self, y) -> None:
        check_classification_targets(y)

    def float_targets(self, y):
        return np.asarray(y, dtype=np.float64)

    def row_norms(self, X) -> np.ndarray | None:
        """The rows' norms, for the count of rows the row bound clips (data owner only)."""
        return row_norms(X)

    def sources(self, est, X, targets: list, plan, method: str):
        """(rows, targets, source of a target vector): raw rows and the row policy.

        Dense rows are read in place by every pass (never copied into a transformed
        design); "error" refuses here, before anything is charged.
        """
        in_memory = InMemoryRows.from_raw(
            X,
            targets[0],
            row_norm=est.row_norm,
            row_bound=est.row_bound,
            fit_intercept=est.fit_intercept,
            intercept_scaling=est.intercept_scaling,
        )
        return X, targets, in_memory.with_labels

    def record(self, est, releases: list) -> None:
        """Nothing to record beyond the release in memory."""

    def scores(self, est, X):
        """X~ coef^T + intercept, X~ the rows under the fitted row policy (unchecked)."""
        finite = v.numeric_features(X)
        X = validate_data(
            est,
            X,
            accept_sparse="csr",
            dtype=np.float64,
            reset=False,
            ensure_all_finite=not finite,
        )
        Xt = transform_rows(X, est.row_norm, est.row_bound, check=False)
        return np.asarray(Xt @ est.coef_.T) + est.intercept_

    def map_scores(self, scores, fn, dtype, drop_axis):
        return fn(scores)


class OnDask:
    """Rows in a row-chunked dask array: validated lazily, transformed where they live."""

    dask = True

    def validated(self, est, X, y, **kwargs):
        from ..optim.solvers import WARM_START_ROWS
        from ..scale.fit import cache_inputs, check_dask_inputs

        X, y = check_dask_inputs(X, y)
        # the labels load first (the label check reads y alone), the rows meanwhile
        X, y = cache_inputs(X, y, WARM_START_ROWS)
        est.n_features_in_ = int(X.shape[1])
        return X, y

    def check_classification_targets(self, y) -> None:
        """(The declared-label check reads dask labels chunk by chunk.)"""

    def float_targets(self, y):
        return y.astype(np.float64)

    def row_norms(self, X) -> None:
        """None: no count of clipped rows out of core."""
        return None

    def sources(self, est, X, targets: list, plan, method: str):
        """(rows, targets, source of a target vector): the row policy applied chunk by
        chunk; rows and targets held in memory when small enough, the rows Newton's warm
        start reads first."""
        from ..optim.solvers import WARM_START_ROWS
        from ..scale.fit import cache_rows, dask_rows, row_policy

        if not plan.dask:  # refuse before anything is charged
            raise ValueError(
                f"method={method!r} is not available on dask data; use one of "
                f"{sorted(name for name, p in PLANS.items() if p.dask)}"
            )
        X, targets, scales = cache_rows(X, targets, WARM_START_ROWS, row_policy(est))
        return X, targets, lambda t: dask_rows(est, X, t, scales)

    def record(self, est, releases: list) -> None:
        """Passes over the data, for the out-of-core benchmark."""
        est.n_passes_ = int(sum(r.info.get("passes", 0) for r in releases))

    def scores(self, est, X):
        from ..scale.fit import linear_scores

        if X.shape[1] != est.n_features_in_:
            raise ValueError(f"X has {X.shape[1]} features, expected {est.n_features_in_}")
        return linear_scores(est, X)

    def map_scores(self, scores, fn, dtype, drop_axis):
        return scores.map_blocks(fn, dtype=dtype, drop_axis=drop_axis)


def data_kind(X) -> InMemory | OnDask:
    """The kind of the rows ``X`` (after :func:`dask_inputs`): the one branch on it."""
    return OnDask() if is_dask_array(X) else InMemory()


def dask_inputs(est, X, y, *, reset: bool):
    """(X, y) with a dask DataFrame ``X`` as a row-chunked dask array and a dask Series
    ``y`` as a dask array; the frame's column names checked or kept as scikit-learn does
    for pandas (``feature_names_in_``). Anything else is returned as given."""
    from ..scale.fit import frame_rows, is_dask_frame, series_labels

    if is_dask_frame(y):
        y = series_labels(y)
    if is_dask_frame(X):
        _frame_names(est, [c for c in X.columns] if X.ndim == 2 else [], reset)
        X = frame_rows(X)
    elif is_dask_array(X) and reset:  # no names: a fit forgets earlier ones
        _frame_names(est, [None], reset)
    return X, y


def _frame_names(est, columns: list, reset: bool) -> None:
    """Set (``reset``) or check ``feature_names_in_`` as scikit-learn does for a pandas
    DataFrame: the column names when every one is a string, else none."""
    names = np.asarray(columns, dtype=object) if all(isinstance(c, str) for c in columns) else None
    if reset:
        if names is not None:
            est.feature_names_in_ = names
        elif hasattr(est, "feature_names_in_"):
            del est.feature_names_in_
        return
    fitted = getattr(est, "feature_names_in_", None)
    if fitted is not None and names is not None and not np.array_equal(names, fitted):
        raise ValueError(
            "the columns of X differ from those seen in fit (names or order); give X the "
            "fitted columns, in the order of feature_names_in_"
        )
