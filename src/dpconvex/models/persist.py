"""Model files: a fitted estimator as JSON (``dpconvex fit --out``), and back.

A model file holds what the fit released and nothing else: the estimator's
parameters, the declared classes, ``coef_`` and ``intercept_``, the privacy spent
(``epsilon_spent``, ``delta``), the event that prices it (``dp_event_json``, read by
:func:`dpconvex.accounting.serialization.event_from_dict`), the calibrated
``mechanism_params`` and the method that ran (``method_run``, with ``method_reason``:
for ``method="auto"`` the choice made from public sizes), plus what the writer adds
(the CLI adds the data name and the feature names) and, for an estimator fitted on a
data frame, its column names ``feature_names_in`` (restored as ``feature_names_in_``, so
``predict`` on a frame checks the columns as scikit-learn does). A fitted
:class:`~dpconvex.PrivatePipeline` of a table encoder and an estimator is written with
its schema, the encoder's bounds and the composed guarantee (``format_version`` 2; see
:mod:`dpconvex.models.pipeline_files`), and, when its model estimated the target's range
(:class:`~dpconvex.table_model.TargetBoundsRegressor`), the released target bounds and
the event that priced them. Never written: the solver's
iteration count (data-dependent for "amp" and "output"), the noise seed
``random_state`` (with it the noise can be replayed and the data read off the model)
and the ``budget`` ledger path.

Reading (:func:`load_model`, :func:`read_model_record`) treats the file as hostile and
raises one :class:`ModelFileError` naming the file and the field for anything that is
not a model file this version writes: a file above :data:`MAX_FILE_BYTES` or nested
deeper than :data:`MAX_JSON_DEPTH`, NaN/Infinity tokens, duplicate keys, integers of
2^63 or more, an unknown ``format_version`` or model class, parameters the estimator
would refuse (or unknown ones), coefficients that are not finite numbers of at most
:data:`MAX_COEFFICIENT` in the shape the classes imply, classes that are not the
declared ones, an event that is not the one the method that ran (``method_run``; in
files without it, ``params.method``) produces for that many classes, an intercept other
than the public centre of ``params.y_bounds`` when ``fit_intercept`` is false,
and an ``epsilon_spent`` below what its event costs by the accountant the estimator
reported with. A stored seed or ledger path in an older file is ignored: a loaded model has
``random_state=None`` and ``budget=None``, predicts exactly as the saved model did
(JSON floats round-trip exactly), is not refitted and spends nothing.

The checks make a file internally consistent; they cannot show that its writer ran the
mechanism it names. A file's privacy claim is only as good as the process that wrote it.
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import numpy as np
from dp_accounting import dp_event as de
from sklearn.base import ClassifierMixin
from sklearn.utils.validation import check_is_fitted

from .._arrays import jsonable
from ..accounting.limits import MAX_COUNT
from .labels import declared_classes
from .linear import DPHuberRegressor, DPLinearRegression, DPLogisticRegression

FORMAT = "dpconvex-model"
FORMAT_VERSION = 1
#: format versions this code reads (2: a table pipeline, see pipeline_files)
READABLE_VERSIONS = (1, 2)
#: largest model file read or written (about 6 million coefficients)
MAX_FILE_BYTES = 128 * 2**20
#: deepest nesting of JSON arrays and objects in a model file (one this code writes: 8)
MAX_JSON_DEPTH = 64
#: largest absolute coefficient or intercept: with rows of norm at most 1e8 (the largest
#: row bound) the scores of d < 1e100 features stay finite in float64
MAX_COEFFICIENT = 1e100
#: relative slack allowed between ``epsilon_spent`` and the cost of the event
EPSILON_TOLERANCE = 1e-6
_MODELS = {
    cls.__name__: cls for cls in (DPLogisticRegression, DPLinearRegression, DPHuberRegressor)
}
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


class ModelFileError(ValueError):
    """A model file that cannot be loaded; the message names the file and the field."""


class _Bad(ValueError):
    """One failed check of a record: ``field`` and what is wrong with it."""

    def __init__(self, field: str, problem: str):
        super().__init__(f"{field}: {problem}")


def _show(value: object, limit: int = 60) -> str:
    """``value`` for a message: its repr (control characters escaped), shortened."""
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _where(path: str | Path) -> str:
    text = str(path)
    return text if text.isprintable() else repr(text)


# --- writing -------------------------------------------------------------------------------
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


def _dumps(record: dict) -> str:
    """One top-level field per line; values compact (long coefficient lists stay small)."""
    lines = [f"  {json.dumps(k)}: {json.dumps(v, allow_nan=False)}" for k, v in record.items()]
    return "{\n" + ",\n".join(lines) + "\n}\n"


def save_model(model, path: str | Path, *, overwrite: bool = False, extra: dict | None = None):
    """Write fitted ``model`` as JSON to ``path``; refuse an existing file unless ``overwrite``.

    ``model`` is a dpconvex estimator, or a :class:`~dpconvex.PrivatePipeline` of a
    :class:`~dpconvex.preprocessing.TableEncoder` then an estimator, or then a
    :class:`~dpconvex.table_model.TargetBoundsRegressor` around one (as built by
    :func:`dpconvex.make_table_model`; written with its schema and bounds).

    The directory of ``path`` must exist. A record that :func:`load_model` would refuse
    (e.g. non-finite coefficients, ``feature_names`` of the wrong length) is not written.
    Returns the path.
    """
    path = Path(path)
    if path.exists() and not overwrite:
        raise ValueError(f"{_where(path)} exists already; pass overwrite=True to replace it")
    if not path.parent.is_dir():
        raise ValueError(
            f"cannot write {_where(path)}: directory {_where(path.parent)} does not exist"
        )
    from .pipeline_files import is_table_pipeline, pipeline_record

    try:
        writer = pipeline_record if is_table_pipeline(model) else model_record
        text = _dumps(writer(model, extra))
        if len(text.encode()) > MAX_FILE_BYTES:
            raise _Bad("file", f"larger than {MAX_FILE_BYTES} bytes, the most load_model reads")
        _build_any(_parse(text.encode()))
    except (_Bad, TypeError, ValueError) as err:
        raise ModelFileError(f"refusing to write {_where(path)}: {err}") from None
    path.write_text(text)
    return path


# --- reading: bounded, strict JSON ---------------------------------------------------------
_STRING = re.compile(rb'"[^"\\]*(?:\\.?[^"\\]*)*(?:"|\Z)', re.DOTALL)
_NOT_BRACKET = bytes(b for b in range(256) if b not in b"[]{}")


def _json_depth(raw: bytes) -> int:
    """Deepest nesting of arrays and objects in ``raw``, strings skipped (linear time)."""
    brackets = _STRING.sub(b"", raw).translate(None, _NOT_BRACKET)
    deepest, base = 0, 0
    for start in range(0, len(brackets), 1 << 20):
        chunk = np.frombuffer(brackets[start : start + (1 << 20)], dtype=np.uint8)
        steps = np.where((chunk == ord("[")) | (chunk == ord("{")), 1, -1)
        depth = base + np.cumsum(steps, dtype=np.int64)
        deepest, base = max(deepest, int(depth.max())), int(depth[-1])
    return deepest


def _no_constant(name: str):
    raise _Bad("file", f"holds {name}, which is not a JSON number")


def _int(text: str) -> int:
    if len(text.lstrip("-")) > 19 or abs(value := int(text)) >= 2**63:
        raise _Bad("file", f"holds an integer of {len(text.lstrip('-'))} digits (at most 2^63)")
    return value


def _float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise _Bad("file", f"holds the number {_show(text, 30)}, beyond float64")
    return value


def _object(pairs: list) -> dict:
    out = {}
    for key, value in pairs:
        if key in out:
            raise _Bad("file", f"key {_show(key)} appears twice in one object")
        out[key] = value
    return out


def _parse(raw: bytes) -> dict:
    """The record in ``raw``: strict JSON, bounded depth, an object."""
    if _json_depth(raw) > MAX_JSON_DEPTH:
        raise _Bad("file", f"nested more than {MAX_JSON_DEPTH} levels deep")
    try:
        record = json.loads(
            raw.decode("utf-8"),
            object_pairs_hook=_object,
            parse_constant=_no_constant,
            parse_int=_int,
            parse_float=_float,
        )
    except UnicodeDecodeError:
        raise _Bad("file", "not UTF-8 text") from None
    except json.JSONDecodeError as err:
        where = f"line {err.lineno} column {err.colno}"
        raise _Bad("file", f"not JSON ({err.msg} at {where})") from None
    except RecursionError:  # the depth check above makes this unreachable
        raise _Bad("file", "nested too deeply") from None
    if not isinstance(record, dict):
        raise _Bad("file", "not a JSON object")
    return record


def _read(path: str | Path) -> tuple[dict, object]:
    """(record, model) of the model file ``path``; ModelFileError naming it otherwise."""
    path = Path(path)
    where = _where(path)
    try:
        if not path.exists():
            raise ModelFileError(f"no such model file: {where}")
        if not path.is_file():
            raise ModelFileError(f"{where} is not a regular file: not a model file")
        if path.stat().st_size > MAX_FILE_BYTES:
            raise ModelFileError(f"{where} is larger than {MAX_FILE_BYTES} bytes: not a model file")
        with open(path, "rb") as fh:
            raw = fh.read(MAX_FILE_BYTES + 1)
    except OSError as err:
        raise ModelFileError(f"cannot read {where}: {err.strerror or err}") from None
    if len(raw) > MAX_FILE_BYTES:
        raise ModelFileError(f"{where} is larger than {MAX_FILE_BYTES} bytes: not a model file")
    try:
        record = _parse(raw)
        return record, _build_any(record)
    except _Bad as err:
        raise ModelFileError(
            f"{where} is not a dpconvex model file this version loads: {err}"
        ) from None


def read_model_record(path: str | Path) -> dict:
    """The record of the model file ``path``, every field checked (see the module docstring)."""
    return _read(path)[0]


def load_model(path: str | Path):
    """The fitted estimator or table pipeline saved in ``path`` (by :func:`save_model`).

    Every field is checked first (see the module docstring); a file that fails raises
    :class:`ModelFileError` naming the file and the field. The model predicts exactly
    as the saved one did and reports the privacy it spent (``epsilon_``, ``delta_``,
    ``dp_event_``). Its ``budget`` and ``random_state`` are None: a loaded model charges
    no ledger and does not replay the noise of the fit.
    """
    return _read(path)[1]


# --- reading: the fields -------------------------------------------------------------------
def _build_any(record: dict):
    """The estimator (version 1) or table pipeline (version 2) a checked record describes."""
    _check_format(record, READABLE_VERSIONS)
    if record["format_version"] == 2:
        from .pipeline_files import build_pipeline

        return build_pipeline(record)
    return _build(record)


def _build(record: dict):
    """The estimator a checked record describes; ``_Bad`` for the first failed check."""
    _check_format(record, (1,))
    if not isinstance(record.get("model"), str) or record["model"] not in _MODELS:
        raise _Bad("model", f"must name one of {sorted(_MODELS)}, got {_show(record.get('model'))}")
    model = _params(record, _MODELS[record["model"]])
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
        raise _Bad("method_run", f"must name one of {sorted(allowed)}, got {_show(method)}")
    if given != "auto" and method != given:
        raise _Bad("method_run", "must equal params.method when that is not 'auto'")
    reason = record.get("method_reason", f'given: method="{method}"')
    if not isinstance(reason, str) or not reason.isprintable() or len(reason) > _MAX_REASON:
        raise _Bad("method_reason", f"must be text of at most {_MAX_REASON} printable characters")
    return method, reason


def _check_format(record: dict, versions: tuple) -> None:
    if record.get("format") != FORMAT:
        raise _Bad("format", f"must be {FORMAT!r}, got {_show(record.get('format'))}")
    version = record.get("format_version")
    if type(version) is not int or version not in versions:
        raise _Bad(
            "format_version",
            f"{_show(version)} is not one this dpconvex reads here ({list(versions)}); "
            "a newer dpconvex may read it",
        )


def _params(record: dict, cls: type):
    params = record.get("params")
    if not isinstance(params, dict):
        raise _Bad("params", "must be an object of the estimator's parameters")
    valid = cls().get_params(deep=False)
    for key, value in params.items():
        if key not in valid:
            raise _Bad("params", f"{_show(key)} is not a parameter of {cls.__name__}")
        _param_value(key, value)
    missing = [k for k in _REQUIRED_PARAMS if k not in params]
    if missing:
        raise _Bad("params", f"misses {missing[0]!r}")
    model = cls(**{k: v for k, v in params.items() if k not in _DROPPED_PARAMS})
    try:
        model._validate_params()
    except (ValueError, TypeError) as err:
        raise _Bad("params", _one_line(err)) from None
    return model


def _param_value(key: str, value: object) -> None:
    field = f"params.{key}"
    if key == "random_state":
        if value is not None and (type(value) is not int or value < 0):
            raise _Bad(field, "must be null (an older file may hold a seed, which is ignored)")
    elif key == "budget":
        if value is not None and not isinstance(value, str):
            raise _Bad(field, "must be null (a ledger path in an older file is ignored)")
    elif key == "classes":
        if value is not None and not isinstance(value, list):
            raise _Bad(field, "must be null or a list of labels")
    elif key == "y_bounds":
        if value is not None and not (
            isinstance(value, list) and len(value) == 2
            and all(type(b) in (int, float) for b in value)
        ):  # fmt: skip
            raise _Bad(field, "must be null or a list [lo, hi] of two numbers")
    elif isinstance(value, bool) and key != "fit_intercept":
        raise _Bad(field, f"must not be {str(value).lower()}")
    elif isinstance(value, int) and abs(value) > MAX_COUNT:
        raise _Bad(field, "is an integer above 2^53")
    elif isinstance(value, list | dict):
        raise _Bad(field, "must be a number, a string or null")


def _classes(record: dict, model) -> np.ndarray | None:
    if not isinstance(model, ClassifierMixin):
        if "classes" in record:
            raise _Bad("classes", f"a {type(model).__name__} has no classes")
        return None
    if "classes" not in record:
        raise _Bad("classes", "missing: a classifier file lists its classes")
    stored = record["classes"]
    _labels("classes", stored)
    if model.classes is not None:
        _labels("params.classes", model.classes, one_type=False)
    try:
        declared = declared_classes(model.classes).tolist()
    except (ValueError, TypeError) as err:
        raise _Bad("params.classes", _one_line(err)) from None
    if [(type(c), c) for c in declared] != [(type(c), c) for c in stored]:
        raise _Bad("classes", "must be the declared labels params.classes, sorted, once each")
    return np.asarray(stored)


def _labels(field: str, labels: object, *, one_type: bool = True) -> None:
    if not isinstance(labels, list) or len(labels) < 2:
        raise _Bad(field, "must be a list of at least 2 labels")
    kinds = {type(c) for c in labels}
    if not kinds <= {str, int, float, bool}:
        raise _Bad(field, "labels must be strings, numbers or true/false")
    if one_type and len(kinds) != 1:
        raise _Bad(field, "labels must all be of one type")
    if any(isinstance(c, str) and not c.isprintable() for c in labels):
        raise _Bad(field, "a label holds a control character")


def _numbers(field: str, value: object, length: int | None = None) -> np.ndarray:
    """A list of finite numbers of at most MAX_COEFFICIENT in absolute value, as float64."""
    if not isinstance(value, list) or not value:
        raise _Bad(field, "must be a non-empty list of numbers")
    if length is not None and len(value) != length:
        raise _Bad(field, f"has {len(value)} entries, expected {length}")
    if not {type(x) for x in value} <= {int, float}:
        raise _Bad(field, "must hold numbers only")
    out = np.asarray(value, dtype=np.float64)
    if not np.all(np.abs(out) <= MAX_COEFFICIENT):
        raise _Bad(field, f"holds a value beyond {MAX_COEFFICIENT:g} in absolute value")
    return out


def _coefficients(record: dict, model, classes) -> tuple[np.ndarray, object]:
    for key in ("coef", "intercept"):
        if key not in record:
            raise _Bad(key, "missing")
    if classes is None:
        coef = _numbers("coef", record["coef"])
        intercept = record["intercept"]
        if type(intercept) not in (int, float):
            raise _Bad("intercept", "must be a number")
        intercept = float(_numbers("intercept", [intercept])[0])
        nonzero = intercept != 0.0
    else:
        rows = 1 if classes.size == 2 else classes.size
        stored = record["coef"]
        if not isinstance(stored, list) or len(stored) != rows:
            raise _Bad("coef", f"must be a list of {rows} rows for {classes.size} classes")
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
            raise _Bad("intercept", "must be 0 when params.fit_intercept is false")
        return
    from .linear import _centre_and_half_width

    centre = _centre_and_half_width(float(lo_hi[0]), float(lo_hi[1]))[0]
    if intercept != centre:
        raise _Bad(
            "intercept",
            "must be the centre (lo + hi) / 2 of params.y_bounds when params.fit_intercept "
            "is false",
        )


def _number(record: dict, key: str) -> float:
    value = record.get(key)
    if type(value) not in (int, float):
        raise _Bad(key, f"must be a number, got {_show(value)}")
    return float(value)


def _privacy(record: dict, model, classes, method: str) -> tuple[de.DpEvent, float, float]:
    from ..accounting.serialization import event_from_dict

    spent, delta = _number(record, "epsilon_spent"), _number(record, "delta")
    if not 0 < spent <= model.epsilon * (1 + 1e-9):
        raise _Bad("epsilon_spent", f"must be in (0, params.epsilon = {model.epsilon:g}]")
    if delta != float(model.delta):
        raise _Bad("delta", "must equal params.delta")
    if not isinstance(record.get("dp_event"), str | None):
        raise _Bad("dp_event", "must be text")
    if record.get("dp_event_json") is None:
        raise _Bad("dp_event_json", "missing: the event that prices the model")
    try:
        event = event_from_dict(record["dp_event_json"])
    except (ValueError, TypeError) as err:
        raise _Bad("dp_event_json", _one_line(err)) from None
    problems = 1 if classes is None or classes.size == 2 else classes.size
    _check_shape(event, method, problems)
    _check_cost(event, spent, delta, model)
    return event, spent, delta


def _is_gaussian_steps(e: de.DpEvent, inner) -> bool:
    return type(e) is de.SelfComposedDpEvent and inner(e.event)


def _is_sampled_gaussian(e: de.DpEvent) -> bool:
    return type(e) is de.PoissonSampledDpEvent and type(e.event) is de.GaussianDpEvent


def _method_event(method: str, e: de.DpEvent) -> bool:
    """Whether ``e`` is the event ``method`` produces for one problem (see dpconvex.plans)."""
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
            raise _Bad("dp_event_json", f"must compose {problems} events, one per class")
    if not all(_method_event(method, p) for p in parts):
        raise _Bad("dp_event_json", f"is not the event of method {method!r}")


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
        raise _Bad("dp_event_json", f"cannot be priced: {_one_line(err)}") from None
    if not cost <= spent * (1 + EPSILON_TOLERANCE):
        raise _Bad("epsilon_spent", "is below what its event costs at this delta")


def _one_line(err: BaseException) -> str:
    text = " ".join(str(err).split())
    return text if len(text) <= 200 else text[:197] + "..."


def _names(record: dict, key: str, n_features: int) -> None:
    names = record.get(key)
    if names is not None:
        if not isinstance(names, list) or len(names) != n_features:
            raise _Bad(key, f"must be a list of {n_features} names, one per feature")
        if not all(isinstance(n, str) and n.isprintable() for n in names):
            raise _Bad(key, "must be text without control characters")
        if len(set(names)) != len(names):
            raise _Bad(key, "must not repeat a name")


def _extras(record: dict, n_features: int) -> None:
    _names(record, "feature_names", n_features)
    if record.get("feature_names_in", []) is None:
        raise _Bad("feature_names_in", "must be a list of names when present")
    _names(record, "feature_names_in", n_features)
    data = record.get("data")
    if data is not None and not (isinstance(data, str) and data.isprintable()):
        raise _Bad("data", "must be text without control characters")
    if not isinstance(record.get("dask", False), bool):
        raise _Bad("dask", "must be true or false")
    _mechanism_params(record.get("mechanism_params", {}))


def _mechanism_params(params: object) -> None:
    if not isinstance(params, dict) or len(params) > _MAX_MECHANISM_PARAMS:
        raise _Bad("mechanism_params", f"must be an object of at most {_MAX_MECHANISM_PARAMS} "
                   "numbers")  # fmt: skip
    for key, value in params.items():
        if type(value) not in (int, float) or not key.isidentifier():
            raise _Bad("mechanism_params", f"{_show(key)} must name a number")
