"""Model files of a fitted table pipeline: the encoder's schema and bounds with the model.

A :class:`~dpconvex.PrivatePipeline` of a :class:`~dpconvex.preprocessing.TableEncoder`
then a dpconvex estimator (the shape :func:`dpconvex.make_table_model` builds) is
written as a record of ``format_version`` 2 (estimator files stay version 1):

* ``steps``: the two step names; ``pipeline``: its ``epsilon``, ``delta`` and
  ``accounting`` parameters;
* ``schema``: the declared schema (:meth:`Schema.to_dict`, public);
* ``encoder``: its ``epsilon`` and ``quantiles`` parameters, the fitted ``bounds``
  (released: each estimated end is the output of a priced quantile mechanism, a
  declared end is public), the event that prices them and its ``epsilon_spent``;
* ``estimator``: the estimator's own record
  (:func:`~dpconvex.models.estimator_files.model_record`);
* ``target_bounds`` (only when the last step is a
  :class:`~dpconvex.table_model.TargetBoundsRegressor`, the regression whose target range
  is estimated): its ``params`` (``y_bounds`` as declared, ``y_search_range``,
  ``epsilon``, ``quantiles``), the released bounds ``y_bounds`` (the quantile
  mechanism's output, post-processed), the quantiles' event and its ``epsilon_spent``;
  ``estimator`` is then the record of the model fitted with those bounds;
* ``epsilon_spent``, ``delta``, ``dp_event_json``: the pipeline's composed guarantee.

Never written: seeds, ledger paths, solver iteration counts (see
:mod:`dpconvex.models.persist`). Reading checks, besides the estimator's own checks: the
schema under :func:`~dpconvex.preprocessing.schema_from_dict`'s caps; one pair of finite
bounds per numeric column, each declared end equal to its declared value and each
estimated end inside the column's search range (after its log); the encoder's event and
epsilon equal to what its parameters plan for this schema; the estimator clipping rows
at the schema's public row bound and reading the encoder's number of features; for
``target_bounds``: its event and epsilon equal to what its parameters plan, the released
bounds finite, low < high, inside ``y_search_range`` and keeping each declared end (or
the public minimum width a degenerate draw is widened to), the estimator's
``params.y_bounds`` equal to them; the pipeline's event equal to the composition of the
stored events (encoder, then the quantiles' and the estimator's composed); its
``epsilon_spent`` not below what that event costs (by the pipeline's accountant at its
delta) and not above ``pipeline.epsilon``.
"""

from __future__ import annotations

import math

from dp_accounting.dp_event import ComposedDpEvent

from .estimator_files import MODELS, build_estimator, model_record
from .model_json import EPSILON_TOLERANCE, FORMAT, BadField, number_field, one_line, show

PIPELINE_VERSION = 2
PIPELINE_MODEL = "PrivatePipeline"
_STEP_NAME = 100  # longest step name
_PIPELINE_KEYS = ("format", "format_version", "model", "steps", "pipeline", "schema",
                  "encoder", "estimator", "epsilon_spent", "delta", "dp_event",
                  "dp_event_json", "target_bounds")  # fmt: skip
_ENCODER_KEYS = ("params", "bounds", "epsilon_spent", "dp_event_json")
_TARGET_KEYS = ("params", "y_bounds", "epsilon_spent", "dp_event_json")
_TARGET_PARAMS = ("y_bounds", "y_search_range", "epsilon", "quantiles")
_WRITER_FIELDS = ("data", "target", "task")


def is_table_pipeline(model) -> bool:
    """Whether ``model`` is a PrivatePipeline (saved by this module)."""
    from ..pipeline import PrivatePipeline

    return isinstance(model, PrivatePipeline)


def pipeline_record(pipe, extra: dict | None = None) -> dict:
    """The JSON-ready record of a fitted table pipeline; ValueError for another shape."""
    from ..accounting.serialization import event_to_dict
    from ..preprocessing import TableEncoder
    from ..table_model import TargetBoundsRegressor

    steps = list(pipe.steps)
    final = steps[-1][1] if steps else None
    targeted = type(final) is TargetBoundsRegressor
    inner = final.model if targeted else final
    if (
        len(steps) != 2
        or type(steps[0][1]) is not TableEncoder
        or type(inner).__name__ not in MODELS
        or pipe.public
    ):
        raise ValueError(
            "only a PrivatePipeline of a TableEncoder then a dpconvex estimator (the shape "
            "make_table_model builds) can be saved"
        )
    if not hasattr(pipe, "dp_event_"):
        raise ValueError("the pipeline is not fitted: fit it before saving")
    (enc_name, enc), (est_name, _) = steps
    est = final.model_ if targeted else final
    record = {
        "format": FORMAT,
        "format_version": PIPELINE_VERSION,
        "model": PIPELINE_MODEL,
        "steps": [enc_name, est_name],
        "pipeline": {"epsilon": pipe.epsilon, "delta": pipe.delta, "accounting": pipe.accounting},
        "schema": enc.schema_.to_dict(),
        "encoder": {
            "params": {"epsilon": enc.epsilon, "quantiles": _pair_or_none(enc.quantiles)},
            "bounds": {name: [float(lo), float(hi)] for name, (lo, hi) in enc.bounds_.items()},
            "epsilon_spent": float(enc.epsilon_),
            "dp_event_json": event_to_dict(enc.dp_event_),
        },
        "estimator": model_record(est),
        "epsilon_spent": float(pipe.epsilon_),
        "delta": float(pipe.delta_),
        "dp_event": repr(pipe.dp_event_),
        "dp_event_json": event_to_dict(pipe.dp_event_),
    }
    if targeted:
        record["target_bounds"] = _target_record(final)
    clash = sorted(set(extra or ()) & set(_PIPELINE_KEYS))
    if clash:
        raise ValueError(f"extra fields {clash} would replace the pipeline's own fields")
    record.update(extra or {})
    return record


def _target_record(step) -> dict:
    """The ``target_bounds`` section: parameters, released bounds, the quantiles' event."""
    from ..accounting.serialization import event_to_dict

    event = step.dp_event_.events[0]  # (quantiles, model): see TargetBoundsRegressor.fit
    return {
        "params": {
            "y_bounds": [None if b is None else float(b) for b in step.y_bounds],
            "y_search_range": _pair_or_none(step.y_search_range),
            "epsilon": step.epsilon,
            "quantiles": _pair_or_none(step.quantiles),
        },
        "y_bounds": [float(b) for b in step.y_bounds_],
        "epsilon_spent": float(step._each() * len(step._todo())),
        "dp_event_json": event_to_dict(event),
    }


def _pair_or_none(value):
    return None if value is None else [float(v) for v in value]


# --- reading ------------------------------------------------------------------------------
def build_pipeline(record: dict):
    """The fitted PrivatePipeline a checked record describes; ``BadField`` for a failed check."""
    if record.get("model") != PIPELINE_MODEL:
        raise BadField("model", f"must be {PIPELINE_MODEL!r} in a format_version 2 file")
    unknown = [k for k in record if k not in _PIPELINE_KEYS and k not in _WRITER_FIELDS]
    if unknown:
        raise BadField(show(unknown[0]), "is not a field of a pipeline model file")
    names = _step_names(record.get("steps"))
    settings = _pipeline_settings(record.get("pipeline"))
    schema = _schema(record.get("schema"))
    encoder = _encoder(record.get("encoder"), schema)
    inner = record.get("estimator")
    if not isinstance(inner, dict):
        raise BadField("estimator", "must be the estimator's record (an object)")
    try:
        model = build_estimator(inner)
    except BadField as err:
        raise BadField("estimator", str(err)) from None
    _check_estimator(model, inner, schema)
    if "target_bounds" in record:
        model = _target_step(record["target_bounds"], model)
    _writer_fields(record)
    return _assemble(record, names, settings, encoder, model)


def _step_names(value) -> list[str]:
    if not isinstance(value, list) or len(value) != 2:
        raise BadField("steps", "must be a list of the two step names [encoder, estimator]")
    for name in value:
        if not (isinstance(name, str) and name.isidentifier() and len(name) <= _STEP_NAME):
            raise BadField("steps", f"a step name must be an identifier of at most {_STEP_NAME} "
                       "characters")  # fmt: skip
    if value[0] == value[1] or any("__" in name for name in value):
        raise BadField("steps", "step names must differ and hold no '__'")
    return list(value)


def _optional_number(field: str, value, low: float, high: float, *, open_low=False):
    if value is None:
        return None
    if type(value) not in (int, float) or not (low < value if open_low else low <= value):
        raise BadField(field, f"must be null or a number in {'(' if open_low else '['}{low:g}, "
                   f"{high:g}]")  # fmt: skip
    if value > high:
        raise BadField(field, f"must be at most {high:g}")
    return float(value)


def _pipeline_settings(value) -> dict:
    from ..accounting import MAX_EPSILON, MIN_EPSILON

    if not isinstance(value, dict) or set(value) != {"epsilon", "delta", "accounting"}:
        raise BadField("pipeline", "must be an object of epsilon, delta and accounting")
    if value["accounting"] not in ("pld", "rdp"):
        raise BadField("pipeline.accounting", "must be 'pld' or 'rdp'")
    delta = _optional_number("pipeline.delta", value["delta"], 0.0, 1.0, open_low=True)
    if delta == 1.0:
        raise BadField("pipeline.delta", "must be below 1")
    return {
        "epsilon": _optional_number(
            "pipeline.epsilon", value["epsilon"], MIN_EPSILON, MAX_EPSILON
        ),  # fmt: skip
        "delta": delta,
        "accounting": value["accounting"],
    }


def _schema(value):
    from ..preprocessing import SchemaError, schema_from_dict

    try:
        return schema_from_dict(value)
    except SchemaError as err:
        raise BadField("schema", one_line(err)) from None
    except TypeError:  # a key that is not a keyword of the column's class
        raise BadField("schema", "holds a column entry that is not a schema column") from None


def _encoder(value, schema):
    """A fitted TableEncoder from the stored parameters, bounds and event."""
    from ..preprocessing import TableEncoder
    from ..preprocessing.schema import Numeric

    if not isinstance(value, dict) or set(value) != set(_ENCODER_KEYS):
        raise BadField("encoder", f"must be an object of {list(_ENCODER_KEYS)}")
    params = value["params"]
    if not isinstance(params, dict) or set(params) != {"epsilon", "quantiles"}:
        raise BadField("encoder.params", "must be an object of epsilon and quantiles")
    quantiles = params["quantiles"]
    if quantiles is not None and not (
        isinstance(quantiles, list) and len(quantiles) == 2
        and all(type(q) in (int, float) for q in quantiles)
    ):  # fmt: skip
        raise BadField("encoder.params.quantiles", "must be null or a pair of numbers")
    epsilon = params["epsilon"]
    if epsilon is not None and type(epsilon) not in (int, float):
        raise BadField("encoder.params.epsilon", "must be null or a number")
    encoder = TableEncoder(
        schema, epsilon=epsilon, quantiles=None if quantiles is None else tuple(quantiles)
    )
    try:
        encoder._validate_params()
        from ..preprocessing.encoder import _check_quantiles

        _check_quantiles(encoder.quantiles)
        planned, each = encoder._plan(schema)
    except (ValueError, TypeError) as err:
        raise BadField("encoder.params", one_line(err)) from None
    event = _event("encoder.dp_event_json", value["dp_event_json"])
    if event != planned:
        raise BadField(
            "encoder.dp_event_json", "is not the event its parameters plan for the schema"
        )
    spent = number_field(value, "epsilon_spent")
    if spent != each * schema.n_estimated:
        raise BadField("encoder.epsilon_spent", "is not the epsilon of its event")
    numeric = [c for c in schema.columns if isinstance(c, Numeric)]
    encoder.bounds_ = _bounds(value["bounds"], numeric)
    encoder.schema_ = schema
    encoder.n_features_in_ = len(schema.columns)
    encoder.row_bound_ = schema.row_bound()
    encoder.dp_event_, encoder.epsilon_, encoder.delta_ = event, spent, 0.0
    return encoder


def _event(field: str, value):
    from ..accounting.serialization import event_from_dict

    if value is None:
        raise BadField(field, "missing")
    try:
        return event_from_dict(value)
    except (ValueError, TypeError) as err:
        raise BadField(field, one_line(err)) from None


def _bounds(value, numeric: list) -> dict:
    """Column -> (low, high), checked against each column's declared ends and range."""
    if not isinstance(value, dict) or set(value) != {c.name for c in numeric}:
        raise BadField(
            "encoder.bounds", "must hold one [low, high] per numeric column of the schema"
        )
    out = {}
    for col in numeric:
        field = f"encoder.bounds[{col.name!r}]"
        pair = value[col.name]
        if not (isinstance(pair, list) and len(pair) == 2
                and all(type(b) in (int, float) for b in pair)):  # fmt: skip
            raise BadField(field, "must be a pair [low, high] of numbers")
        low, high = (float(b) for b in pair)
        if not (math.isfinite(low) and math.isfinite(high) and low <= high):
            raise BadField(field, "must be finite with low <= high")
        _check_ends(field, col, low, high)
        out[col.name] = (low, high)
    return out


def _check_ends(field: str, col, low: float, high: float) -> None:
    """Declared ends are kept (after the log); estimated ends lie in the search range."""
    declared = [float(col.forward(b)) for b in col.bounds if b is not None]
    if not any(col.estimated):
        if [low, high] != declared:
            raise BadField(field, "must be the column's declared bounds (after its log)")
        return
    a, b = (float(col.forward(x)) for x in col.search_range)
    lo_ok, hi_ok = min([a, *declared]), max([b, *declared])
    if not (lo_ok <= low and high <= hi_ok):
        raise BadField(field, "lies outside the column's search range")
    if any(d not in (low, high) for d in declared):
        raise BadField(field, "must keep the column's declared bound")


def _target_step(value, model):
    """The fitted TargetBoundsRegressor of a ``target_bounds`` section around ``model``."""
    from sklearn.base import ClassifierMixin, clone

    from ..table_model import TargetBoundsRegressor

    if not isinstance(value, dict) or set(value) != set(_TARGET_KEYS):
        raise BadField("target_bounds", f"must be an object of {list(_TARGET_KEYS)}")
    if isinstance(model, ClassifierMixin) or "y_bounds" not in model.get_params():
        raise BadField("target_bounds", "goes with a regression estimator only")
    step = TargetBoundsRegressor(clone(model).set_params(y_bounds=None), **_target_params(value))
    try:
        lower, upper = step._check()
        planned, each = step._quantile_event(), step._each()
    except (ValueError, TypeError) as err:
        raise BadField("target_bounds.params", one_line(err)) from None
    event = _event("target_bounds.dp_event_json", value["dp_event_json"])
    if event != planned:
        raise BadField("target_bounds.dp_event_json", "is not the event its parameters plan")
    if number_field(value, "epsilon_spent") != each * len(step._todo()):
        raise BadField("target_bounds.epsilon_spent", "is not the epsilon of its event")
    low, high = _released_target_bounds(value["y_bounds"], step, lower, upper)
    stored = model.y_bounds
    if model.y_bound is not None or stored is None or [float(b) for b in stored] != [low, high]:
        raise BadField("estimator.params.y_bounds", "must be target_bounds.y_bounds")
    step.y_bounds_, step.model_ = (low, high), model
    step.dp_event_ = ComposedDpEvent([event, model.dp_event_])
    step.n_features_in_ = model.n_features_in_
    for name in ("coef_", "intercept_", "method_", "method_reason_"):
        setattr(step, name, getattr(model, name))
    return step


def _target_params(value: dict) -> dict:
    """The stored parameters of the target's bounds, typed (their values checked later)."""
    params = value["params"]
    if not isinstance(params, dict) or set(params) != set(_TARGET_PARAMS):
        raise BadField("target_bounds.params", f"must be an object of {list(_TARGET_PARAMS)}")
    number = lambda b: type(b) in (int, float)  # noqa: E731
    pair = lambda p, ok: isinstance(p, list) and len(p) == 2 and all(map(ok, p))  # noqa: E731
    if not pair(params["y_bounds"], lambda b: b is None or number(b)):
        raise BadField("target_bounds.params.y_bounds", "must be a pair of numbers or nulls")
    if not pair(params["y_search_range"], number):
        raise BadField("target_bounds.params.y_search_range", "must be a pair of numbers")
    if not number(params["epsilon"]):
        raise BadField("target_bounds.params.epsilon", "must be a number")
    quantiles = params["quantiles"]
    if quantiles is not None:
        from ..preprocessing.encoder import _check_quantiles

        if not pair(quantiles, number):
            raise BadField("target_bounds.params.quantiles", "must be null or a pair of numbers")
        try:
            _check_quantiles(quantiles)
        except ValueError as err:
            raise BadField("target_bounds.params.quantiles", str(err)) from None
    return {
        "y_bounds": tuple(params["y_bounds"]),
        "y_search_range": tuple(params["y_search_range"]),
        "epsilon": params["epsilon"],
        "quantiles": None if quantiles is None else tuple(quantiles),
    }


def _released_target_bounds(pair, step, lower: float, upper: float) -> tuple[float, float]:
    """The released (low, high): what TargetBoundsRegressor.fit can output for ``step``."""
    from ..table_model import minimum_target_width

    field = "target_bounds.y_bounds"
    if not (isinstance(pair, list) and len(pair) == 2
            and all(type(b) in (int, float) for b in pair)):  # fmt: skip
        raise BadField(field, "must be a pair [low, high] of numbers")
    low, high = (float(b) for b in pair)
    if not (math.isfinite(low) and math.isfinite(high) and low < high):
        raise BadField(field, "must be finite with low < high")
    if not (lower <= low and high <= upper):
        raise BadField(field, "lies outside target_bounds.params.y_search_range")
    width = minimum_target_width(lower, upper)
    if not high - low >= width * (1 - 1e-9):
        raise BadField(field, "is narrower than the width fit widens estimated bounds to")
    declared = [float(b) for b in step.y_bounds if b is not None]  # one at most
    for d in declared:  # kept, or inside a pair fit widened to the public minimum width
        widened = low <= d <= high and abs((high - low) - width) <= 1e-9 * width
        if d not in (low, high) and not widened:
            raise BadField(field, "must keep the declared end of target_bounds.params.y_bounds")
    return low, high


def _check_estimator(model, inner: dict, schema) -> None:
    if model.row_norm != "clip" or float(model.row_bound) != schema.row_bound():
        raise BadField(
            "estimator.params",
            "must clip rows (row_norm 'clip') at the schema's row bound sqrt(#columns)",
        )
    if model.n_features_in_ != schema.n_features:
        raise BadField("estimator.coef", f"must have the schema's {schema.n_features} features")
    for key in ("feature_names", "feature_names_in", "data", "dask"):
        if key in inner:
            raise BadField(f"estimator.{key}", "has no place inside a pipeline file")


def _writer_fields(record: dict) -> None:
    for key in _WRITER_FIELDS:
        value = record.get(key)
        if value is not None and not (isinstance(value, str) and value.isprintable()
                                      and len(value) <= 1000):  # fmt: skip
            raise BadField(key, "must be text without control characters")


def _assemble(record: dict, names, settings: dict, encoder, model):
    """The pipeline, once its own event and claim are checked against the steps'."""
    from ..pipeline import PrivatePipeline
    from .session import PURE_DELTA

    event = _event("dp_event_json", record.get("dp_event_json"))
    if event != ComposedDpEvent([encoder.dp_event_, model.dp_event_]):
        raise BadField("dp_event_json", "must compose the encoder's and the estimator's events")
    if not isinstance(record.get("dp_event"), str | None):
        raise BadField("dp_event", "must be text")
    delta = number_field(record, "delta")
    # as PrivatePipeline._plan: the steps' own delta (none for the target's bounds step)
    planned_delta = settings["delta"] or (float(getattr(model, "delta", 0.0)) or PURE_DELTA)
    if delta != planned_delta:
        raise BadField("delta", "must be pipeline.delta (or, without it, the estimator's delta)")
    pipe = PrivatePipeline(
        [(names[0], encoder), (names[1], model)],
        epsilon=settings["epsilon"],
        delta=settings["delta"],
        accounting=settings["accounting"],
    )
    spent = number_field(record, "epsilon_spent")
    _check_claim(pipe, event, spent, delta, [encoder.epsilon, model.epsilon])
    pipe.dp_event_, pipe.epsilon_, pipe.delta_ = event, spent, delta
    pipe.private_steps_ = list(names)
    return pipe


def _check_claim(pipe, event, spent: float, delta: float, scales: list) -> None:
    """``spent`` at least the event's cost as the pipeline prices it; at most its epsilon."""
    from ..accounting import UnsupportedEventError

    if not spent > 0:
        raise BadField("epsilon_spent", "must be positive")
    if pipe.epsilon is not None and spent > pipe.epsilon * (1 + 1e-9):
        raise BadField("epsilon_spent", "must not exceed pipeline.epsilon")
    # the step epsilons PrivatePipeline._plan collects: the grid it priced on without one
    scales = [float(e) for e in scales if isinstance(e, int | float) and not isinstance(e, bool)]
    try:
        cost = pipe._spent(event.events, delta, scales)
    except (ValueError, ArithmeticError, UnsupportedEventError) as err:
        raise BadField("dp_event_json", f"cannot be priced: {one_line(err)}") from None
    if not cost <= spent * (1 + EPSILON_TOLERANCE):
        raise BadField("epsilon_spent", "is below what its event costs at this delta")
