"""``dpconvex predict``: apply a saved model to a CSV file."""

from __future__ import annotations

import json
from pathlib import Path

import click

from .._arrays import jsonable
from ..budget import safe_text
from .fit_run import _scores
from .options import (
    InputFile,
    _check_output,
    _emit,
    force_option,
    input_file,
    json_option,
    mkdir_option,
)
from .predict_dask import check_target_classes, predict_out_of_core


@click.command("predict")
@click.option(
    "--model",
    "model_file",
    type=InputFile(),
    required=True,
    help="Model file written by `dpconvex fit`.",
)
@click.option(
    "--data",
    required=True,
    help="CSV file with a header row, or Parquet file (.parquet, .pq), that holds the model's "
    "columns, by name (other columns are ignored): the schema's raw columns for a model "
    'fitted with --schema, else the numeric feature columns; or "adult" for all rows of '
    "the bundled Adult data.",
)
@click.option(
    "--target",
    default=None,
    help="Target column of the file; when given, the accuracy (R^2 and RMSE for a "
    "regression) on these rows is reported too.",
)
@click.option(
    "--out",
    type=click.Path(dir_okay=False),
    default=None,
    help="CSV file for the predictions (one column, prediction). Default: print them, one "
    "per line (with --dask, --out is required).",
)
@click.option(
    "--dask",
    "use_dask",
    is_flag=True,
    help="For a file larger than memory: read it with dask a part at a time (a Parquet file "
    "or directory of them, or a CSV file or glob) and write each part's predictions to --out "
    "as they come, so memory holds a few parts (about 16 MB of CSV text, or one Parquet file, "
    "each), never the whole file. Same "
    "predictions and scores as without it; for files that fit in memory, leave it out "
    '(faster to start). Needs: pip install "dpconvex[dask]".',
)
@click.option(
    "--scheduler",
    default=None,
    help="With --dask: address of a running dask scheduler whose workers can read --data "
    "(default: no cluster, threads in this process).",
)
@force_option
@mkdir_option
@json_option
def predict(model_file, data, target, out, use_dask, scheduler, force, mkdir, as_json):
    """Apply a model saved by `dpconvex fit` to new rows and print the predictions.

    Prediction uses only the released model, so it costs no further privacy. A model
    fitted with --schema reads the raw columns and encodes them as in training. With
    --target, a label outside the model's classes is an error.
    """
    from sklearn.base import ClassifierMixin

    from ..models.persist import load_model

    if use_dask:
        _check_dask_options(data, out)
    elif scheduler is not None:
        raise ValueError("--scheduler is for --dask")
    if out is not None:
        _check_output(out, force=force, mkdir=mkdir)
    if data != "adult" and not use_dask:
        data = str(input_file(data, "--data"))
    model = load_model(model_file)
    final = model[-1] if hasattr(model, "steps") else model
    regression = not isinstance(final, ClassifierMixin)
    if use_dask:
        summary = _predict_dask(model_file, model, data, target, out, scheduler)
        _emit({"model_file": str(model_file), "data": str(data), **summary}, as_json)
        return
    X, y = _predict_rows(model_file, model, data, target, regression)
    if y is not None and not regression:
        check_target_classes(y, final.classes_, Path(data).name, target)
    predictions = model.predict(X)
    summary = {"model_file": str(model_file), "data": str(data), "n_rows": int(len(predictions))}
    if y is not None:
        summary.update(_scores(predictions, y, regression))
    plain = [jsonable(v) for v in predictions]
    if out is not None:
        Path(out).write_text("prediction\n" + "".join(f"{v}\n" for v in plain))
        summary["predictions_file"] = str(out)
        _emit(summary, as_json)
    elif as_json:
        click.echo(json.dumps({**summary, "predictions": plain}, indent=2))
    else:
        click.echo("\n".join(safe_text(v) for v in plain))
        scores = {k: summary[k] for k in ("accuracy", "r2", "rmse") if k in summary}
        if scores:
            shown = ", ".join(f"{k} {v:.6g}" for k, v in scores.items())
            click.echo(f"{shown} on {len(plain)} rows", err=True)


def _check_dask_options(data: str, out) -> None:
    if out is None:
        raise ValueError(
            "--dask writes the predictions to a file: give --out FILE (a table larger than "
            "memory has too many predictions to print)"
        )
    if data == "adult":
        raise ValueError("--dask reads a CSV or Parquet file; predict on adult without --dask")


def _predict_dask(model_file, model, data: str, target, out: str, scheduler) -> dict:
    """The summary of ``predict --dask``: the predictions written to ``out``."""
    from ..models.persist import read_model_record

    schema = hasattr(model, "steps")
    if schema:
        names = [c.name for c in model[0].schema_.columns]
    else:
        names = read_model_record(model_file).get("feature_names")
        if names is None:
            raise ValueError(f"{model_file} does not list its feature columns; cannot read a file")
    summary = predict_out_of_core(
        model, list(names), data, target, out, schema=schema, scheduler=scheduler
    )
    return {**summary, "predictions_file": str(out)}


def _predict_rows(model_file, model, data: str, target, regression: bool):
    """(X, y) for ``predict``: raw cells for a pipeline, numeric features otherwise."""
    from ..datasets import load_adult, load_csv_features
    from ..datasets.files import load_csv_cells
    from ..datasets.parquet import is_parquet, load_parquet_cells, load_parquet_features
    from ..models.persist import read_model_record

    parquet = data != "adult" and is_parquet(data)
    if hasattr(model, "steps"):
        if data == "adult":
            raise ValueError(
                f"{model_file} reads raw columns; give a CSV or Parquet file as --data"
            )
        names = [c.name for c in model[0].schema_.columns]
        load = load_parquet_cells if parquet else load_csv_cells
        return load(data, names, target, numeric_target=regression)
    names = read_model_record(model_file).get("feature_names")
    if data == "adult":
        dataset = load_adult()
        if names is not None and list(names) != list(dataset.feature_names):
            raise ValueError(f"{model_file} was not trained on the bundled Adult data")
        return dataset.X, dataset.y
    if names is None:
        raise ValueError(f"{model_file} does not list its feature columns; cannot read a CSV")
    if parquet:
        X, y = load_parquet_features(data, list(names), target, numeric_target=regression)
    else:
        X, y = load_csv_features(data, names, target)
    if regression and y is not None and y.dtype.kind not in "fiu":
        raise ValueError(f"the target column {target!r} must hold numbers for a regression")
    return X, y
