"""Model files: a fitted estimator as JSON (``dpconvex fit --out``), and back.

A model file holds what the fit released and nothing else: the estimator's
parameters, the declared classes, ``coef_`` and ``intercept_``, the privacy spent
(``epsilon_spent``, ``delta``) and the event that prices it (``dp_event_json``,
readable by :func:`dpconvex.accounting.serialization.event_from_dict`), plus
whatever the writer adds (the CLI adds the data name and feature names). The
solver's iteration count is never written: for "amp" and "output" it depends on
the data and is not covered by the guarantee.

:func:`load_model` rebuilds an estimator that predicts exactly as the saved one
did (the JSON floats round-trip exactly). It is not refitted and carries no
budget ledger: loading and predicting spend nothing.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
from sklearn.base import ClassifierMixin

from .linear import DPHuberRegressor, DPLinearRegression, DPLogisticRegression

FORMAT = "dpconvex-model"
FORMAT_VERSION = 1
_MODELS = {
    cls.__name__: cls for cls in (DPLogisticRegression, DPLinearRegression, DPHuberRegressor)
}


def _jsonable(value):
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, np.generic):
        return value.item()
    return value


def model_record(model, extra: dict | None = None) -> dict:
    """The JSON-ready record of a fitted dpconvex estimator (see the module docstring)."""
    from ..accounting.serialization import event_to_dict

    params = {k: _jsonable(v) for k, v in model.get_params().items()}
    if not isinstance(params.get("budget"), str | None):
        params["budget"] = None  # a Budget object: only a ledger path is worth writing
    if not isinstance(params.get("random_state"), int | None):
        params["random_state"] = None  # a Generator / SeedSequence
    try:
        event = event_to_dict(model.dp_event_)
    except TypeError:
        event = None
    record = {
        "format": FORMAT,
        "format_version": FORMAT_VERSION,
        "model": type(model).__name__,
        "params": params,
    }
    if extra:
        record.update(extra)
    if isinstance(model, ClassifierMixin):
        record["classes"] = _jsonable(model.classes_)
    record.update(
        {
            "coef": _jsonable(model.coef_),
            "intercept": _jsonable(model.intercept_),
            "epsilon_spent": model.epsilon_,
            "delta": model.delta_,
            "dp_event": repr(model.dp_event_),
            "dp_event_json": event,
        }
    )
    return record


def save_model(model, path: str | Path, *, overwrite: bool = False, extra: dict | None = None):
    """Write fitted ``model`` as JSON to ``path``; refuse an existing file unless ``overwrite``.

    The directory of ``path`` must exist. Returns the path.
    """
    path = Path(path)
    if path.exists() and not overwrite:
        raise ValueError(f"{path} exists already; pass overwrite=True to replace it")
    if not path.parent.is_dir():
        raise ValueError(f"cannot write {path}: directory {path.parent} does not exist")
    path.write_text(json.dumps(model_record(model, extra), indent=2))
    return path


def read_model_record(path: str | Path) -> dict:
    """The JSON record of a model file, checked to be one; errors name the file."""
    path = Path(path)
    if not path.is_file():
        raise ValueError(f"no such model file: {path}")
    try:
        record = json.loads(path.read_text())
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise ValueError(f"{path} is not a dpconvex model file (not JSON: {exc})") from None
    if not isinstance(record, dict) or record.get("model") not in _MODELS:
        raise ValueError(
            f"{path} is not a dpconvex model file (no 'model' field naming one of "
            f"{sorted(_MODELS)})"
        )
    missing = [
        k for k in ("params", "coef", "intercept", "epsilon_spent", "delta") if k not in record
    ]
    if missing:
        raise ValueError(f"{path} is not a complete dpconvex model file: {missing} missing")
    return record


def load_model(path: str | Path):
    """The fitted estimator saved in ``path`` (by ``dpconvex fit`` or :func:`save_model`).

    It predicts exactly as the saved model did and reports the privacy it spent
    (``epsilon_``, ``delta_``, and ``dp_event_`` when the file records the event).
    Its ``budget`` is None: a loaded model charges no ledger.
    """
    from ..accounting.serialization import event_from_dict

    record = read_model_record(path)
    cls = _MODELS[record["model"]]
    valid = cls().get_params()
    params = {k: v for k, v in record["params"].items() if k in valid}
    params["budget"] = None
    model = cls(**params)
    coef = np.asarray(record["coef"], dtype=np.float64)
    if issubclass(cls, ClassifierMixin):
        if "classes" not in record:
            raise ValueError(f"{path} holds a classifier without its classes")
        model.classes_ = np.asarray(record["classes"])
        model.coef_ = np.atleast_2d(coef)
        model.intercept_ = np.atleast_1d(np.asarray(record["intercept"], dtype=np.float64))
    else:
        model.coef_ = coef.ravel()
        model.intercept_ = float(record["intercept"])
    model.n_features_in_ = int(model.coef_.shape[-1])
    model.epsilon_ = float(record["epsilon_spent"])
    model.delta_ = float(record["delta"])
    if record.get("dp_event_json") is not None:
        model.dp_event_ = event_from_dict(record["dp_event_json"])
    if "mechanism_params" in record:
        model.mechanism_params_ = record["mechanism_params"]
    return model
