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
deeper than :data:`~dpconvex.models.model_json.MAX_JSON_DEPTH`, NaN/Infinity tokens,
duplicate keys, integers of 2^63 or more, an unknown ``format_version`` or model class,
parameters the estimator would refuse (or unknown ones), coefficients that are not
finite numbers of at most :data:`~dpconvex.models.model_json.MAX_COEFFICIENT` in the
shape the classes imply, classes that are not the
declared ones, an event that is not the one the method that ran (``method_run``; in
files without it, ``params.method``) produces for that many classes, an intercept other
than the public centre of ``params.y_bounds`` when ``fit_intercept`` is false,
and an ``epsilon_spent`` below what its event costs by the accountant the estimator
reported with. A stored seed or ledger path in an older file is ignored: a loaded model has
``random_state=None`` and ``budget=None``, predicts exactly as the saved model did
(JSON floats round-trip exactly), is not refitted and spends nothing.

This module is the front door: the record of an estimator and its checks are in
:mod:`dpconvex.models.estimator_files`, those of a table pipeline in
:mod:`dpconvex.models.pipeline_files`, and the strict JSON they share in
:mod:`dpconvex.models.model_json`.

The checks make a file internally consistent; they cannot show that its writer ran the
mechanism it names. A file's privacy claim is only as good as the process that wrote it.
"""

from __future__ import annotations

from pathlib import Path

from .estimator_files import build_estimator, model_record
from .model_json import (
    READABLE_VERSIONS,
    BadField,
    check_format,
    display_path,
    dumps_record,
    parse_record,
)
from .pipeline_files import PIPELINE_VERSION, build_pipeline, is_table_pipeline, pipeline_record

__all__ = ["ModelFileError", "load_model", "model_record", "read_model_record", "save_model"]

#: largest model file read or written (about 6 million coefficients)
MAX_FILE_BYTES = 128 * 2**20


class ModelFileError(ValueError):
    """A model file that cannot be loaded; the message names the file and the field."""


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
        raise ValueError(f"{display_path(path)} exists already; pass overwrite=True to replace it")
    if not path.parent.is_dir():
        raise ValueError(
            f"cannot write {display_path(path)}: "
            f"directory {display_path(path.parent)} does not exist"
        )
    try:
        writer = pipeline_record if is_table_pipeline(model) else model_record
        text = dumps_record(writer(model, extra))
        if len(text.encode()) > MAX_FILE_BYTES:
            raise BadField("file", f"larger than {MAX_FILE_BYTES} bytes, the most load_model reads")
        _build_any(parse_record(text.encode()))
    except (BadField, TypeError, ValueError) as err:
        raise ModelFileError(f"refusing to write {display_path(path)}: {err}") from None
    path.write_text(text)
    return path


def _read(path: str | Path) -> tuple[dict, object]:
    """(record, model) of the model file ``path``; ModelFileError naming it otherwise."""
    path = Path(path)
    where = display_path(path)
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
        record = parse_record(raw)
        return record, _build_any(record)
    except BadField as err:
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


def _build_any(record: dict):
    """The estimator (version 1) or table pipeline (version 2) a checked record describes."""
    check_format(record, READABLE_VERSIONS)
    if record["format_version"] == PIPELINE_VERSION:
        return build_pipeline(record)
    return build_estimator(record)
