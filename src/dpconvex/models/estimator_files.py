"""Model files of a fitted estimator (``format_version`` 1): its record, and back.

:func:`model_record` writes what the fit released (see :mod:`dpconvex.models.persist`);
:func:`build_estimator` checks every field of a parsed record and returns the estimator it
describes, or raises :class:`~dpconvex.models.model_json.BadField` for the first failed
check.
"""

from __future__ import annotations

import numpy as np
from dp_accounting import dp_event as de
from sklearn.base import ClassifierMixin
from sklearn.utils.validation import check_is_fitted

from .._arrays import jsonable
from ..accounting.limits import MAX_COUNT
from .labels import declared_classes
from .linear import DPHuberRegressor, DPLinearRegression, DPLogisticRegression
from .model_json import (
    EPSILON_TOLERANCE,
    FORMAT,
    MAX_COEFFICIENT,
    BadField,
    check_format,
    number_field,
    one_line,
    show,
)

FORMAT_VERSION = 1
MODELS = {cls.__name__: cls for cls in (DPLogisticRegression, DPLinearRegression, DPHuberRegressor)}
#: parameters a file must state (they change predictions or the privacy claim)
_REQUIRED_PARAMS = ("epsilon", "delta", "method", "accounting", "fit_intercept", "row_norm",
                    "row_bound")  # fmt: skip
#: parameters never written, and ignored when an older file holds them
_DROPPED_PARAMS = ("random_state", "budget")
_CORE = ("format", "format_version", "model", "params", "classes", "coef", "intercept",
         "epsilon_spent", "delta", "dp_event", "dp_event_json", "method_run",
         "method_reason", "feature_names_in")  # fmt: skip
_MAX_MECHANISM_PARAMS = 64
#: longest ``method_reason`` read
_MAX_REASON = 400


def model_record(model, extra: dict | None = None) -> dict:
    """The JSON-ready record of a fitted dpconvex estimator (see the module docstring).

    ``extra`` adds fields (e.g. ``data``, ``feature_names``); it may not replace the
    model's own fields.
    """
    from ..accounting.serialization import event_to_dict

    check_is_fitted(model)
    params = {
        k: jsonable(v) for k, v in model.get_params(deep=False).items()
        if k not in _DROPPED_PARAMS
    }  # fmt: skip
    try:
        event = event_to_dict(model.dp_event_)
    except TypeError:
        event = None  # refused by the checks of save_model
    record = {
        "format": FORMAT,
        "format_version": FORMAT_VERSION,
        "model": type(model).__name__,
        "params": params,
    }
    if hasattr(model, "feature_names_in_"):  # fitted on a data frame: its column names
        record["feature_names_in"] = [str(name) for name in model.feature_names_in_]
    clash = sorted(set(extra or ()) & set(_CORE))
    if clash:
        raise ValueError(f"extra fields {clash} would replace the model's own fields")
    record.update(extra or {})
    if isinstance(model, ClassifierMixin):
        record["classes"] = jsonable(model.classes_)
    record.update(
        {
            "coef": jsonable(model.coef_),
            "intercept": jsonable(model.intercept_),
            "epsilon_spent": model.epsilon_,
            "delta": model.delta_,
            "dp_event": repr(model.dp_event_),
            "dp_event_json": event,
        }
    )
    if hasattr(model, "mechanism_params_"):
        record["mechanism_params"] = {k: jsonable(v) for k, v in model.mechanism_params_.items()}
    if hasattr(model, "method_"):  # the method run: for method="auto", the public choice
        record["method_run"] = model.method_
        record["method_reason"] = getattr(model, "method_reason_", "")
    return record


def build_estimator(record: dict):
    """The estimator a checked record describes; ``BadField`` for the first failed check."""
    check_format(record, (FORMAT_VERSION,))
    if not isinstance(record.get("model"), str) or record["model"] not in MODELS:
        raise BadField(
            "model", f"must name one of {sorted(MODELS)}, got {show(record.get('model'))}"
        )
    model = _params(record, MODELS[record["model"]])
    classes = _classes(record, model)
    method, reason = _method_run(record, model)
    coef, intercept = _coefficients(record, model, classes)
    event, spent, delta = _privacy(record, model, classes, method)
    _extras(record, coef.shape[-1])
    if classes is not None:
        model.classes_ = classes
    model.coef_, model.intercept_ = coef, intercept
    model.n_features_in_ = int(coef.shape[-1])
    model.epsilon_, model.delta_, model.dp_event_ = spent, delta, event
    if "mechanism_params" in record:
        model.mechanism_params_ = dict(record["mechanism_params"])
    model.method_, model.method_reason_ = method, reason
    if "feature_names_in" in record:
        model.feature_names_in_ = np.asarray(record["feature_names_in"], dtype=object)
    return model


def _method_run(record: dict, model) -> tuple[str, str]:
    """(method run, reason): ``method_run`` (required for "auto"), else ``params.method``."""
    given = model.method
    method = record.get("method_run", None if given == "auto" else given)
    allowed = [m for m in model._parameter_constraints["method"][0].options if m != "auto"]
    if method not in allowed:
        raise BadField("method_run", f"must name one of {sorted(allowed)}, got {show(method)}")
    if given != "auto" and method != given:
        raise BadField("method_run", "must equal params.method when that is not 'auto'")
    reason = record.get("method_reason", f'given: method="{method}"')
    if not isinstance(reason, str) or not reason.isprintable() or len(reason) > _MAX_REASON:
        raise BadField(
            "method_reason", f"must be text of at most {_MAX_REASON} printable characters"
        )
    return method, reason


def _params(record: dict, cls: type):
    params = record.get("params")
    if not isinstance(params, dict):
        raise BadField("params", "must be an object of the estimator's parameters")
    valid = cls().get_params(deep=False)
    for key, value in params.items():
        if key not in valid:
            raise BadField("params", f"{show(key)} is not a parameter of {cls.__name__}")
        _param_value(key, value)
    missing = [k for k in _REQUIRED_PARAMS if k not in params]
    if missing:
        raise BadField("params", f"misses {missing[0]!r}")
    model = cls(**{k: v for k, v in params.items() if k not in _DROPPED_PARAMS})
    try:
        model._validate_params()
    except (ValueError, TypeError) as err:
        raise BadField("params", one_line(err)) from None
    return model


def _param_value(key: str, value: object) -> None:
    field = f"params.{key}"
    if key == "random_state":
        if value is not None and (type(value) is not int or value < 0):
            raise BadField(field, "must be null (an older file may hold a seed, which is ignored)")
    elif key == "budget":
        if value is not None and not isinstance(value, str):
            raise BadField(field, "must be null (a ledger path in an older file is ignored)")
    elif key == "classes":
        if value is not None and not isinstance(value, list):
            raise BadField(field, "must be null or a list of labels")
    elif key == "y_bounds":
        if value is not None and not (
            isinstance(value, list) and len(value) == 2
            and all(type(b) in (int, float) for b in value)
        ):  # fmt: skip
            raise BadField(field, "must be null or a list [lo, hi] of two numbers")
    elif isinstance(value, bool) and key != "fit_intercept":
        raise BadField(field, f"must not be {str(value).lower()}")
    elif isinstance(value, int) and abs(value) > MAX_COUNT:
        raise BadField(field, "is an integer above 2^53")
    elif isinstance(value, list | dict):
        raise BadField(field, "must be a number, a string or null")


def _classes(record: dict, model) -> np.ndarray | None:
    if not isinstance(model, ClassifierMixin):
        if "classes" in record:
            raise BadField("classes", f"a {type(model).__name__} has no classes")
        return None
    if "classes" not in record:
        raise BadField("classes", "missing: a classifier file lists its classes")
    stored = record["classes"]
    _labels("classes", stored)
    if model.classes is not None:
        _labels("params.classes", model.classes, one_type=False)
    try:
        declared = declared_classes(model.classes).tolist()
    except (ValueError, TypeError) as err:
        raise BadField("params.classes", one_line(err)) from None
    if [(type(c), c) for c in declared] != [(type(c), c) for c in stored]:
        raise BadField("classes", "must be the declared labels params.classes, sorted, once each")
    return np.asarray(stored)


def _labels(field: str, labels: object, *, one_type: bool = True) -> None:
    if not isinstance(labels, list) or len(labels) < 2:
        raise BadField(field, "must be a list of at least 2 labels")
    kinds = {type(c) for c in labels}
    if not kinds <= {str, int, float, bool}:
        raise BadField(field, "labels must be strings, numbers or true/false")
    if one_type and len(kinds) != 1:
        raise BadField(field, "labels must all be of one type")
    if any(isinstance(c, str) and not c.isprintable() for c in labels):
        raise BadField(field, "a label holds a control character")


def _numbers(field: str, value: object, length: int | None = None) -> np.ndarray:
    """A list of finite numbers of at most MAX_COEFFICIENT in absolute value, as float64."""
    if not isinstance(value, list) or not value:
        raise BadField(field, "must be a non-empty list of numbers")
    if length is not None and len(value) != length:
        raise BadField(field, f"has {len(value)} entries, expected {length}")
    if not {type(x) for x in value} <= {int, float}:
        raise BadField(field, "must hold numbers only")
    out = np.asarray(value, dtype=np.float64)
    if not np.all(np.abs(out) <= MAX_COEFFICIENT):
        raise BadField(field, f"holds a value beyond {MAX_COEFFICIENT:g} in absolute value")
    return out


def _coefficients(record: dict, model, classes) -> tuple[np.ndarray, object]:
    for key in ("coef", "intercept"):
        if key not in record:
            raise BadField(key, "missing")
    if classes is None:
        coef = _numbers("coef", record["coef"])
        intercept = record["intercept"]
        if type(intercept) not in (int, float):
            raise BadField("intercept", "must be a number")
        intercept = float(_numbers("intercept", [intercept])[0])
        nonzero = intercept != 0.0
    else:
        rows = 1 if classes.size == 2 else classes.size
        stored = record["coef"]
        if not isinstance(stored, list) or len(stored) != rows:
            raise BadField("coef", f"must be a list of {rows} rows for {classes.size} classes")
        width = len(stored[0]) if isinstance(stored[0], list) else None
        coef = np.vstack([_numbers(f"coef[{i}]", r, width) for i, r in enumerate(stored)])
        intercept = _numbers("intercept", record["intercept"], rows)
        nonzero = bool(np.any(intercept != 0.0))
    if not model.fit_intercept:
        _check_fixed_intercept(model, intercept, nonzero)
    return coef, intercept


def _check_fixed_intercept(model, intercept, nonzero: bool) -> None:
    """Without a fitted intercept, a regressor's intercept is the public target centre."""
    lo_hi = getattr(model, "y_bounds", None)
    if lo_hi is None:
        if nonzero:
            raise BadField("intercept", "must be 0 when params.fit_intercept is false")
        return
    from .linear import _centre_and_half_width

    centre = _centre_and_half_width(float(lo_hi[0]), float(lo_hi[1]))[0]
    if intercept != centre:
        raise BadField(
            "intercept",
            "must be the centre (lo + hi) / 2 of params.y_bounds when params.fit_intercept "
            "is false",
        )


def _privacy(record: dict, model, classes, method: str) -> tuple[de.DpEvent, float, float]:
    from ..accounting.serialization import event_from_dict

    spent, delta = number_field(record, "epsilon_spent"), number_field(record, "delta")
    if not 0 < spent <= model.epsilon * (1 + 1e-9):
        raise BadField("epsilon_spent", f"must be in (0, params.epsilon = {model.epsilon:g}]")
    if delta != float(model.delta):
        raise BadField("delta", "must equal params.delta")
    if not isinstance(record.get("dp_event"), str | None):
        raise BadField("dp_event", "must be text")
    if record.get("dp_event_json") is None:
        raise BadField("dp_event_json", "missing: the event that prices the model")
    try:
        event = event_from_dict(record["dp_event_json"])
    except (ValueError, TypeError) as err:
        raise BadField("dp_event_json", one_line(err)) from None
    problems = 1 if classes is None or classes.size == 2 else classes.size
    _check_shape(event, method, problems)
    _check_cost(event, spent, delta, model)
    return event, spent, delta


def _is_gaussian_steps(e: de.DpEvent, inner) -> bool:
    return type(e) is de.SelfComposedDpEvent and inner(e.event)


def _is_sampled_gaussian(e: de.DpEvent) -> bool:
    return type(e) is de.PoissonSampledDpEvent and type(e.event) is de.GaussianDpEvent


def _method_event(method: str, e: de.DpEvent) -> bool:
    """Whether ``e`` is the event ``method`` produces for one problem (see dpconvex.mechanisms)."""
    from ..accounting.events import AmpDpEvent

    gaussian = lambda x: type(x) is de.GaussianDpEvent  # noqa: E731
    return {
        "amp": lambda: type(e) is AmpDpEvent,
        "output": lambda: gaussian(e),
        "dpgd": lambda: _is_gaussian_steps(e, gaussian),
        "adassp": lambda: _is_gaussian_steps(e, gaussian) and e.count == 3,
        "dpsgd": lambda: _is_gaussian_steps(e, _is_sampled_gaussian),
    }[method]()


def _check_shape(event: de.DpEvent, method: str, problems: int) -> None:
    """The event must be the method's, composed once per one-vs-rest problem."""
    parts = [event]
    if problems > 1:
        if type(event) is de.SelfComposedDpEvent and event.count == problems:
            parts = [event.event]
        elif type(event) is de.ComposedDpEvent and len(event.events) == problems:
            parts = list(event.events)
        else:
            raise BadField("dp_event_json", f"must compose {problems} events, one per class")
    if not all(_method_event(method, p) for p in parts):
        raise BadField("dp_event_json", f"is not the event of method {method!r}")


def _check_cost(event: de.DpEvent, spent: float, delta: float, model) -> None:
    """Refuse ``epsilon_spent`` below the epsilon of ``event`` at ``delta``.

    The event is priced as the estimator reported it: by its ``accounting`` ("pld" on
    the grid ``pld_grid(epsilon)``, "rdp" on the default orders), which reproduces the
    fit's own ``epsilon_``; both are upper bounds on the event's epsilon. Accepted
    claims satisfy epsilon_spent >= (1 - EPSILON_TOLERANCE) x that epsilon. Time and
    memory are bounded by the accountants' own grid limits (``GridTooLargeError``).
    """
    from ..accounting import PrivacyAccountant, UnsupportedEventError, pld_grid

    h = pld_grid(model.epsilon)
    accountant = PrivacyAccountant(model.accounting, value_discretization_interval=h)
    try:
        cost = accountant.compose(event).get_epsilon(delta)
    except (ValueError, ArithmeticError, UnsupportedEventError) as err:
        raise BadField("dp_event_json", f"cannot be priced: {one_line(err)}") from None
    if not cost <= spent * (1 + EPSILON_TOLERANCE):
        raise BadField("epsilon_spent", "is below what its event costs at this delta")


def _names(record: dict, key: str, n_features: int) -> None:
    names = record.get(key)
    if names is not None:
        if not isinstance(names, list) or len(names) != n_features:
            raise BadField(key, f"must be a list of {n_features} names, one per feature")
        if not all(isinstance(n, str) and n.isprintable() for n in names):
            raise BadField(key, "must be text without control characters")
        if len(set(names)) != len(names):
            raise BadField(key, "must not repeat a name")


def _extras(record: dict, n_features: int) -> None:
    _names(record, "feature_names", n_features)
    if record.get("feature_names_in", []) is None:
        raise BadField("feature_names_in", "must be a list of names when present")
    _names(record, "feature_names_in", n_features)
    data = record.get("data")
    if data is not None and not (isinstance(data, str) and data.isprintable()):
        raise BadField("data", "must be text without control characters")
    if not isinstance(record.get("dask", False), bool):
        raise BadField("dask", "must be true or false")
    _mechanism_params(record.get("mechanism_params", {}))


def _mechanism_params(params: object) -> None:
    if not isinstance(params, dict) or len(params) > _MAX_MECHANISM_PARAMS:
        raise BadField("mechanism_params", f"must be an object of at most {_MAX_MECHANISM_PARAMS} "
                   "numbers")  # fmt: skip
    for key, value in params.items():
        if type(value) not in (int, float) or not key.isidentifier():
            raise BadField("mechanism_params", f"{show(key)} must name a number")
