"""``TableEncoder``: a raw table to features in [-1, 1] with a public row-norm bound.

Numeric columns are clipped to their bounds (after the declared log) and scaled to
[-1, 1]; categories are one-hot (0/1); missing-value indicators are 0/1 (and 1 only
when the value is the fill 0). Every output row therefore has Euclidean norm at most
``row_bound_ = sqrt(#numeric + #categorical groups)``, whatever the input (attained by
a row at the bounds), and the estimators take
``row_norm="clip", row_bound=encoder.row_bound_`` (which then clips nothing).

Bounds declared in the schema are public and cost nothing. Each bound left to
estimate is the exponential-mechanism quantile of :mod:`dpconvex.preprocessing.quantile`
at ``epsilon / m`` for the m estimated bounds (Smith 2011; Gillenwater, Joseph & Kulesza
2021, arXiv 2102.08244, Sec. 3): each is (epsilon/m, 0)-DP, so by basic composition
(Dwork & Roth 2014, "The algorithmic foundations of differential privacy", Thm 3.16) the
fit is (epsilon, 0)-DP. ``dp_event_`` lists the m mechanisms (a ``NoOpDpEvent`` when
every bound is declared) for composition with the model's event. A column with both ends
open and the default quantiles gets a range centred at its private median instead
(:mod:`dpconvex.preprocessing.centring`), from two mechanisms of the same kind and
epsilon (the median, then the median distance to it).
"""

from __future__ import annotations

import math
import warnings
from numbers import Real
from typing import TYPE_CHECKING

import numpy as np
from dp_accounting.dp_event import DpEvent, NoOpDpEvent, SelfComposedDpEvent
from sklearn.base import BaseEstimator, TransformerMixin, _fit_context
from sklearn.utils._param_validation import Interval
from sklearn.utils.validation import check_is_fitted

from .. import _validation as v
from .._random import RANDOM_STATE_CONSTRAINT, make_rng
from ..accounting import MAX_EPSILON, MIN_EPSILON
from ..models.charge import charge
from .centring import centred_range, prefer_centred
from .columns import (
    category_codes,
    check_dask_table,
    frame_column,
    is_dask_table,
    numeric_cells,
    table_columns,
)
from .defaults import MAX_QUANTILE, RANK_MARGIN, default_quantiles
from .quantile import private_centre, private_quantile, quantile_event
from .schema import Numeric, Schema, schema_from_dict

if TYPE_CHECKING:
    from dask.array import Array as DaskArray


def _check_quantiles(quantiles) -> tuple[float, float] | None:
    if quantiles is None:
        return None
    try:
        q_lo, q_hi = (float(q) for q in quantiles)
    except (TypeError, ValueError):
        raise ValueError("quantiles must be None or a pair (q_low, q_high)") from None
    if not 0.0 <= q_lo < q_hi <= 1.0:
        raise ValueError(f"quantiles must satisfy 0 <= q_low < q_high <= 1, got {quantiles}")
    return q_lo, q_hi


class TableEncoder(TransformerMixin, BaseEstimator):
    """Encode a raw table by a declared public schema; estimate unknown bounds privately.

    Parameters
    ----------
    schema : Schema or dict
        The declared columns (see :mod:`dpconvex.preprocessing.schema`).
    epsilon : float or None
        This step's budget, spent only on the bounds the schema leaves to estimate
        (required then; see :func:`~dpconvex.preprocessing.defaults.split_epsilon` for
        its share of a total).
    quantiles : (q_low, q_high) or None
        Which quantiles estimate a lower and an upper bound; None: the derived default
        :func:`~dpconvex.preprocessing.defaults.default_quantiles`, and for a column with
        both ends open a range centred at its private median
        (:mod:`~dpconvex.preprocessing.centring`).
    random_state : None, int, SeedSequence or Generator
        None (default) draws from OS entropy.
    budget : Budget, path or None
        A ledger charged with ``dp_event_`` before the quantiles read the data.

    Attributes
    ----------
    schema_ : Schema
    bounds_ : dict
        Column name -> (low, high) used for clipping, after the column's log.
    row_bound_ : float
        Public bound on the Euclidean norm of every output row.
    dp_event_ : DpEvent
    epsilon_, delta_ : float
        The guarantee of the fit: (epsilon, 0) by basic composition of pure-DP steps.
    """

    _parameter_constraints: dict = {
        "schema": [Schema, dict],
        "epsilon": [None, Interval(Real, 0, MAX_EPSILON, closed="both")],
        "quantiles": [None, tuple, list],
        "random_state": RANDOM_STATE_CONSTRAINT,
        "budget": "no_validation",
    }

    def __init__(self, schema, *, epsilon=None, quantiles=None, random_state=None, budget=None):
        self.schema = schema
        self.epsilon = epsilon
        self.quantiles = quantiles
        self.random_state = random_state
        self.budget = budget

    def _plan(self, schema: Schema) -> tuple[DpEvent, float]:
        """(event, epsilon of each quantile) from the schema and epsilon alone."""
        m = schema.n_estimated
        if m == 0:
            return NoOpDpEvent(), 0.0
        if self.epsilon is None or isinstance(self.epsilon, bool) or self.epsilon < MIN_EPSILON:
            raise ValueError(
                f"the schema leaves {m} bound(s) to estimate privately: give epsilon "
                f">= {MIN_EPSILON:g} (this step's share of the budget), or declare every bound"
            )
        total = float(self.epsilon)
        each = total / m
        while each * m > total:  # basic composition must not round above epsilon
            each = math.nextafter(each, 0.0)
        event = quantile_event(each)
        return (event if m == 1 else SelfComposedDpEvent(event, m)), each

    def privacy_event(
        self,
        n_samples: int | None = None,
        n_features: int | None = None,
        *,
        subsample: bool = False,
    ):
        """The event a fit would produce, from the schema and epsilon alone (no data).

        The sizes are not needed (the quantiles' guarantee does not depend on them), nor
        is ``subsample`` (a fit on a secret subsample, ``fit(X, public_n=...)``, has the
        same event); they are accepted for pipelines, which ask every private step the
        same way.
        """
        self._validate_params()
        return self._plan(schema_from_dict(self.schema))[0]

    def public_n_features_out(self, n_features: int | None = None) -> int:
        """Number of output columns, known from the schema before fit."""
        return schema_from_dict(self.schema).n_features

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y=None, *, public_n=None):
        """Estimate the bounds the schema leaves open; ``y`` is ignored.

        ``X`` is a table in memory or a dask DataFrame (see :func:`_dask_cells`); both
        are parsed (and refused) by the same rules before anything is charged, and both
        feed the same mechanism.

        Parameters
        ----------
        X : table of shape (n_samples, n_columns)
            The cells, one column per schema column.
        y : ignored
        public_n : int, optional
            When ``X`` is a secret subsample (e.g. a Poisson sample in a private search),
            the public expected number of rows it was drawn for: the default quantiles
            (``quantiles=None``) are chosen for ``public_n``, never for X's actual row
            count. The event is the same either way.

        Returns
        -------
        self : TableEncoder
            The fitted encoder.
        """
        public_n = v.public_n(public_n)
        schema = schema_from_dict(self.schema)
        quantiles = _check_quantiles(self.quantiles)
        event, each = self._plan(schema)
        n, values = _dask_cells(X, schema) if is_dask_table(X) else _memory_cells(X, schema)
        if n == 0:
            raise ValueError("X has no rows")
        rows = n if public_n is None else public_n  # what the default quantiles are for
        if quantiles is None and schema.n_estimated:
            _warn_if_thin(each, rows, schema.n_estimated)
        if schema.n_estimated:
            charge(
                self.budget,
                event,
                mechanism=type(self).__name__,
                label=f"{schema.n_estimated} private bounds",
                # the session record: later fits on these rows are told
                rows=X.to_dask_array() if is_dask_table(X) else X,
                delta=0.0,
            )
        q_lo, q_hi = quantiles or default_quantiles(each, rows)
        # the default quantiles, while they clip more than the centred range would
        centred = quantiles is None and prefer_centred(q_lo, FEATURE_SPREAD)
        rng = make_rng(self.random_state)
        self.bounds_ = {
            col.name: _bounds(col, values, (q_lo, q_hi), each, rng, centred=centred)
            for col in schema.columns
            if isinstance(col, Numeric)
        }
        self.schema_ = schema
        self.n_features_in_ = len(schema.columns)
        self.row_bound_ = schema.row_bound()
        self.dp_event_ = event
        self.epsilon_ = each * schema.n_estimated
        self.delta_ = 0.0
        return self

    def check_input(self, X) -> None:
        """Parse ``X`` as :meth:`fit` would and raise its error, charging nothing.

        :class:`~dpconvex.PrivatePipeline` calls it before it charges a ledger, so a table
        the encoder refuses spends nothing from the budget (it costs one more parse of
        the cells; for a dask DataFrame, one more pass).
        """
        schema = schema_from_dict(self.schema)
        n, _ = _dask_cells(X, schema) if is_dask_table(X) else _memory_cells(X, schema)
        if n == 0:
            raise ValueError("X has no rows")

    def transform(self, X) -> np.ndarray | DaskArray:
        """Features in [-1, 1] (float64), one row per input row; see the module doc.

        A dask DataFrame gives a lazy dask array chunked as its partitions (one chunk
        along the columns), each chunk this method's output on that partition; the
        partitions' lengths are computed here (a pass over the rows; the number of rows is
        public), so the estimators' dask path takes it as it is.
        """
        check_is_fitted(self)
        if hasattr(X, "dask"):
            return _dask_transform(self, X)
        schema = self.schema_
        cells = table_columns(X, schema)
        n = cells[0].shape[0]
        out = np.zeros((n, schema.n_features))
        markers = frozenset(schema.missing_values)
        j = 0
        for col, column_cells in zip(schema.columns, cells, strict=True):
            if isinstance(col, Numeric):
                values = numeric_cells(column_cells, col, markers)
                missing = np.isnan(values)
                out[:, j] = np.where(missing, 0.0, _scaled(col, values, self.bounds_[col.name]))
                j += 1
                if col.missing == "indicator":
                    out[:, j] = missing
                    j += 1
            else:
                codes = category_codes(column_cells, col, markers)
                rows = np.flatnonzero(codes >= 0)
                out[rows, j + codes[rows]] = 1.0
                j += len(col.levels)
        return out

    def get_feature_names_out(self, input_features=None) -> np.ndarray:
        """Output feature names: ``col``, ``col=<missing>``, ``col=category``, ``col=<other>``."""
        check_is_fitted(self)
        return np.asarray(self.schema_.feature_names(), dtype=object)


#: Half-width of a feature's default range when both its ends are estimated, in units of
#: its private median absolute deviation on the column's (logged) scale.
FEATURE_SPREAD = 3.0


class ThinBoundsWarning(UserWarning):
    """Too little epsilon per estimated bound for the default quantiles to be reliable."""


def _warn_if_thin(each: float, n: int, m: int) -> None:
    """Warn (from public sizes only) when the default margin exceeds MAX_QUANTILE."""
    if RANK_MARGIN / (each * n) > MAX_QUANTILE:
        warnings.warn(
            f"{m} bounds estimated with epsilon {each * m:.3g} on {n} rows get too little "
            "epsilon each to be reliable (a bound may land far outside the data and squash "
            "it): declare the bounds you know, give this step more epsilon, or narrow the "
            "search ranges",
            ThinBoundsWarning,
            stacklevel=4,  # the caller of fit (through scikit-learn's fit wrapper)
        )


def _memory_cells(X, schema: Schema):
    """(n, values): the rows of a table in memory, every cell parsed (and refused) here;
    ``values(col)`` is a numeric column as float64 (NaN where missing)."""
    cells = table_columns(X, schema)
    markers = frozenset(schema.missing_values)
    values = {}
    for col, column_cells in zip(schema.columns, cells, strict=True):
        if isinstance(col, Numeric):
            values[col.name] = numeric_cells(column_cells, col, markers)
        elif col.missing == "refuse":  # the only way a categorical column refuses
            category_codes(column_cells, col, markers)
    return cells[0].shape[0], lambda col: values[col.name]


def _parse_partition(part, schema: Schema) -> int:
    """Parse (and refuse) every cell of a pandas partition as :func:`_memory_cells`
    does; its number of rows."""
    _memory_cells(part, schema)
    return len(part)


def _numeric_partition(part, schema: Schema, col: Numeric) -> np.ndarray:
    """The non-missing values of the numeric column ``col`` of a pandas partition."""
    values = numeric_cells(
        frame_column(part, schema, col.name), col, frozenset(schema.missing_values)
    )
    return values[~np.isnan(values)]


def _dask_cells(X, schema: Schema):
    """(n, values) of a dask DataFrame, as :func:`_memory_cells` gives them in memory.

    One pass parses (and refuses) every cell of every partition by the in-memory rules
    and counts the rows, before anything is charged. ``values(col)`` then computes that
    one column's non-missing values into memory (a pass reading it): 8 bytes per row,
    one column at a time, only for the columns with an estimated bound (the quantile
    mechanism sorts them, which takes about as much again).
    """
    import dask

    check_dask_table(X, schema)
    parts = X.to_delayed()
    counts = dask.compute(*[dask.delayed(_parse_partition)(p, schema) for p in parts])
    n = int(sum(counts))

    def values(col: Numeric) -> np.ndarray:
        pieces = dask.compute(*[dask.delayed(_numeric_partition)(p, schema, col) for p in parts])
        return np.concatenate([np.empty(0), *pieces])

    return n, values


def _dask_transform(encoder: TableEncoder, X):
    """The encoder's output on each partition of a dask DataFrame, as a dask array."""
    import dask
    import dask.array as da

    check_dask_table(X, encoder.schema_)
    width = encoder.schema_.n_features
    parts = X.to_delayed()
    lengths = dask.compute(*[dask.delayed(len)(p) for p in parts])
    blocks = [
        da.from_delayed(dask.delayed(encoder.transform)(p), (int(k), width), dtype=np.float64)
        for p, k in zip(parts, lengths, strict=True)
    ]
    if not blocks:
        return da.zeros((0, width), chunks=((0,), (width,)))
    return da.concatenate(blocks, axis=0)


def _bounds(col: Numeric, values, quantiles, each: float, rng, centred: bool = False) -> tuple:
    """(low, high) after the column's log: declared ends, and private quantiles of the
    column's values (``values(col)``, read only when an end is estimated).

    ``centred`` (the default quantiles, while they clip more than the centred range) with
    both ends open: the range centred at the private median
    (:func:`~dpconvex.preprocessing.centring.centred_range`), from two (each, 0)-DP
    quantile mechanisms (:func:`~dpconvex.preprocessing.quantile.private_centre`).
    """
    ends = list(col.logged_range())
    todo = [k for k, estimated in enumerate(col.estimated) if estimated]
    if todo:
        a, b = (float(col.forward(x)) for x in col.search_range)
        column = values(col)
        logged = np.clip(col.forward(column[~np.isnan(column)]), a, b)
        if centred and len(todo) == 2:
            median, unit = private_centre(logged, each, a, b, rng)
            return centred_range(median, unit, a, b, FEATURE_SPREAD)
        for k in todo:
            ends[k] = private_quantile(logged, quantiles[k], each, a, b, rng)
    low, high = sorted(ends)  # post-processing: an upper estimate below the lower swaps
    return float(low), float(high)


def _scaled(col: Numeric, values: np.ndarray, bounds: tuple) -> np.ndarray:
    low, high = bounds
    with np.errstate(invalid="ignore"):
        z = np.clip(col.forward(values), low, high)
    if not high > low:
        return np.zeros_like(z)
    return np.clip(2.0 * (z - low) / (high - low) - 1.0, -1.0, 1.0)
