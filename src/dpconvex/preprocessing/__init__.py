"""From a raw table to bounded rows: a declared public schema and private bounds.

:class:`TableEncoder` turns a pandas DataFrame or a 2-D table of cells (text and numbers)
into features in [-1, 1] with a public bound ``row_bound_`` on every row's norm, so the
estimators clip by that bound (``row_norm="clip", row_bound=encoder.row_bound_``)
instead of normalizing rows. Bounds the schema leaves open are estimated by the
exponential-mechanism quantile (Smith 2011; Gillenwater, Joseph & Kulesza 2021), priced
by ``dp_event_``. Example::

    schema = {"columns": [
        {"name": "age", "type": "numeric", "bounds": [17, 90]},
        {"name": "income", "type": "numeric", "bounds": [0, None],
         "search_range": [0, 1e7], "log": "log1p"},
        {"name": "sex", "type": "categorical", "categories": ["Female", "Male"]},
    ]}
    eps_encoder, eps_model = split_epsilon(1.0, n_estimated=1, n=len(frame))
    enc = TableEncoder(schema, epsilon=eps_encoder).fit(frame)
    clf = DPLogisticRegression(epsilon=eps_model, row_norm="clip", row_bound=enc.row_bound_)
    clf.fit(enc.transform(frame), y)
"""

from .adult import adult_schema, load_adult_raw
from .defaults import default_quantiles, default_share, split_epsilon
from .encoder import TableEncoder, ThinBoundsWarning
from .quantile import private_quantile, quantile_event
from .schema import (
    Categorical,
    Numeric,
    Schema,
    SchemaError,
    load_schema,
    schema_from_dict,
)

__all__ = [
    "Categorical",
    "Numeric",
    "Schema",
    "SchemaError",
    "TableEncoder",
    "ThinBoundsWarning",
    "adult_schema",
    "default_quantiles",
    "default_share",
    "load_adult_raw",
    "load_schema",
    "private_quantile",
    "quantile_event",
    "schema_from_dict",
    "split_epsilon",
]
