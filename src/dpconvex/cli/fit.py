"""``dpconvex fit``: train a private model on a CSV file (or bundled Adult) and save it."""

from __future__ import annotations

import os

import click

from ..budget import safe_text
from .fit_dask import _fit_dask
from .fit_run import _FitRun, _load_data, _save_and_report, _scores
from .options import (
    EPSILON,
    EPSILON_TARGET_HELP,
    SEED,
    Bounds,
    InputFile,
    NumberRange,
    _check_output,
    delta_option,
    force_option,
    input_file,
    json_option,
    mkdir_option,
    positive,
)
from .progress import _progress


def _ledger_file(path: str) -> str:
    """``--budget PATH``: an existing ledger file (a missing one is not created here)."""
    if not os.path.lexists(path):
        raise ValueError(
            f"--budget: no ledger at {path!r}; create one first with `dpconvex budget init "
            "PATH --epsilon E --delta D`"
        )
    return str(input_file(path, "--budget"))


#: Most labels ``fit --classes`` accepts.
MAX_CLASSES = 1000


def _parse_classes(text: str | None):
    """``--classes 0,1,2`` -> [0, 1, 2]; numbers where they parse, else strings."""
    if text is None:
        return None
    from ..datasets.files import MAX_LABEL

    labels = [t.strip() for t in text.split(",", MAX_CLASSES)]
    if len(labels) < 2 or any(not t for t in labels):
        raise click.BadParameter(f"give at least two comma-separated labels, got {text!r}")
    if len(labels) > MAX_CLASSES:
        raise click.BadParameter(
            f"at most {MAX_CLASSES} labels (beyond two, one model is trained for each, on a "
            "share of the budget)"
        )
    if any(len(t) > MAX_LABEL for t in labels):
        raise click.BadParameter(f"a label has more than {MAX_LABEL} characters")
    if any(safe_text(t) != t for t in labels):
        raise click.BadParameter("labels must be printable (no control characters)")
    parsed = []
    for t in labels:
        for kind in (int, float):
            try:
                parsed.append(kind(t))
                break
            except ValueError:
                continue
        else:
            parsed.append(t)
    return parsed


TASKS = ("classification", "regression")
DATA_HELP = (
    '"adult" for the bundled UCI Adult census data, or the path of a CSV file with a header '
    "row, or of a Parquet file (.parquet, .pq; needs pyarrow, in the dask extra), with a "
    "target column (see --target): with --schema, the schema's columns (text and missing "
    "cells allowed; other columns ignored), else numeric feature columns only."
)


@click.command("fit")
@click.option("--data", required=True, help=DATA_HELP)
@click.option(
    "--target",
    default=None,
    help="Name of the label column of the file (needed with a CSV or Parquet file).",
)
@click.option("--epsilon", type=EPSILON, required=True, help=EPSILON_TARGET_HELP)
@delta_option
@click.option(
    "--task",
    type=click.Choice(TASKS),
    default="classification",
    show_default=True,
    help="classification: logistic regression on the labels of --classes; regression: "
    "least squares on a numeric target clipped to --y-bounds (or to bounds estimated "
    "privately inside --y-search-range).",
)
@click.option(
    "--schema",
    "schema_file",
    type=InputFile(),
    default=None,
    help="A JSON schema file declaring how each column becomes features (numbers with "
    "bounds, categories, missing values): then text and missing cells are fine, bounds "
    "left open are estimated privately, and the model file keeps the schema. Start from "
    "`dpconvex schema template`.",
)
@click.option(
    "--y-bounds",
    type=Bounds(open_end=True),
    default=None,
    help="Regression only: LOW,HIGH, the public range of the target, chosen without "
    "looking at the data; targets outside are clipped to it. Give it or --y-search-range. "
    "With --y-search-range, one end may be left empty (--y-bounds 0, keeps the lower end "
    "at 0): the other end alone is estimated.",
)
@click.option(
    "--y-search-range",
    type=Bounds(),
    default=None,
    help="Regression with --schema, when the target's range is not known: LOW,HIGH, a "
    "generous public range of the target (e.g. 0,1e7 for a price in dollars), chosen "
    "without looking at the data. The bounds the target is clipped to are estimated "
    "inside it privately (paid from --epsilon) and released in the model file.",
)
@click.option(
    "--row-bound",
    type=positive(),
    default=None,
    help="Without --schema: clip each row to this Euclidean norm instead of scaling every "
    "row to norm 1 (choose it without looking at the data). With --schema the schema "
    "sets it.",
)
@click.option(
    "--method",
    type=click.Choice(["auto", "amp", "output", "dpsgd", "dpgd", "adassp"]),
    default="auto",
    show_default=True,
    help="Training algorithm. auto: chosen from the public sizes (rows, features, epsilon, "
    "delta); amp: noise in the objective, solved to high precision; output: noise added to "
    "the exact regularized solution; dpsgd: noisy stochastic gradients; dpgd: noisy "
    "full-batch gradients; adassp: noisy sufficient statistics (regression only).",
)
@click.option(
    "--accounting",
    type=click.Choice(["pld", "rdp"]),
    default="pld",
    show_default=True,
    help="How the privacy cost is computed: pld (privacy-loss distribution) is tighter, so the "
    "same budget buys less noise; rdp (Renyi DP) is looser but widely used.",
)
@click.option(
    "--test-size",
    type=NumberRange(0, 1, min_open=True, max_open=True),
    default=0.2,
    show_default=True,
    help="Share of the rows held out to measure the model (accuracy, or R^2 for "
    "regression), in (0, 1).",
)
@click.option(
    "--split-seed",
    type=SEED,
    default=0,
    show_default=True,
    help="Seed of the train/test shuffle (the split does not look at the data, so it costs "
    "no privacy).",
)
@click.option(
    "--seed",
    type=SEED,
    default=None,
    help="Seed of the privacy noise, to repeat a run exactly. Default: fresh randomness from "
    "the operating system; keep that for a model you release (the seed is never written to "
    "the model file, but anyone who guesses it can replay the noise).",
)
@click.option(
    "--out",
    type=click.Path(dir_okay=False),
    default="dpconvex-model.json",
    show_default=True,
    help="File to write the trained model to, as JSON; read it back with `dpconvex predict` "
    "or dpconvex.load_model. An existing file is kept unless --force is given.",
)
@force_option
@mkdir_option
@click.option(
    "--dask",
    "use_dask",
    is_flag=True,
    help="For data larger than memory: read a Parquet or CSV file with dask and train on a "
    'dask cluster (needs: pip install "dpconvex[dask]").',
)
@click.option(
    "--scheduler",
    default=None,
    help="With --dask: address of a running dask scheduler (default: start a local cluster "
    "with 2 workers).",
)
@click.option(
    "--budget",
    type=click.Path(dir_okay=False),
    default=None,
    help="A privacy budget ledger (made with `dpconvex budget init`) to charge before "
    "training; training is refused if it would overspend the ledger.",
)
@click.option(
    "--classes",
    "classes",
    default=None,
    callback=lambda ctx, param, value: _parse_classes(value),
    help="Classification: the label set, comma separated, chosen without looking at the data "
    "(it is released with the model); default 0,1. Rows with other labels are an error.",
)
@json_option
def fit(data, target, epsilon, delta, as_json, **options):
    """Train a private linear model (classification or regression) and save it.

    Splits the data into training and test rows, trains on the training rows within
    the privacy budget (epsilon, delta), prints the test accuracy (R^2 and RMSE for
    regression) and the privacy actually spent, and writes the model to --out. With
    --schema, the CSV may hold text and missing cells: the schema's encoder and the
    model are one pipeline, priced together within (epsilon, delta).
    """
    run = _FitRun(data=data, target=target, epsilon=epsilon, delta=delta, as_json=as_json,
                  **options)  # fmt: skip
    _check_output(run.out, force=run.force, mkdir=run.mkdir)
    run.check()
    run.budget = None if run.budget is None else _ledger_file(run.budget)
    if run.use_dask:
        _fit_dask(run)
    elif run.schema_file is not None:
        _fit_table(run)
    else:
        _fit_numeric(run)


def _reader(path, *, cells: bool):
    """The loader of a --data file: Parquet by its suffix (.parquet, .pq), CSV otherwise."""
    from ..datasets.files import load_csv, load_csv_cells
    from ..datasets.parquet import is_parquet, load_parquet, load_parquet_cells

    if is_parquet(path):
        return load_parquet_cells if cells else load_parquet

    return load_csv_cells if cells else load_csv


def _fit_numeric(run: _FitRun) -> None:
    """No schema: numeric feature columns (or bundled Adult) and one estimator."""
    if run.data == "adult":
        dataset = _load_data(run.data, None)
    else:
        path = input_file(run.data, "--data")
        if run.target is None:
            raise ValueError("--target is required with a CSV or Parquet file")
        dataset = _reader(path, cells=False)(path, run.target, numeric_target=run.regression)
    X_train, X_test, y_train, y_test = dataset.split(run.test_size, run.split_seed)
    # --budget: the estimator charges its planned event before it touches the data
    model = run.estimator()
    with _progress(f"fitting ({run.method})", enabled=not run.as_json) as clock:
        model.fit(X_train, y_train)
    _save_and_report(
        model,
        run,
        {"data": dataset.name, "feature_names": list(dataset.feature_names)},
        scores=_scores(model.predict(X_test), y_test, run.regression),
        seconds=clock.seconds,
        details={"n_train": int(len(y_train)), "n_test": int(len(y_test))},
    )


def _fit_table(run: _FitRun) -> None:
    """With a schema: the declared columns as text cells, one encoder-and-model pipeline."""
    from ..datasets.base import Dataset
    from ..preprocessing import load_schema

    schema = load_schema(run.schema_file)
    path = input_file(run.data, "--data")
    if run.target is None:
        raise ValueError("--target is required with a CSV or Parquet file")
    names = [c.name for c in schema.columns]
    load = _reader(path, cells=True)
    cells, y = load(path, names, run.target, numeric_target=run.regression)
    _check_before_charge(schema, cells, y, run)  # training and test rows
    dataset = Dataset(name=path.stem, X=cells, y=y, feature_names=names)
    X_train, X_test, y_train, y_test = dataset.split(run.test_size, run.split_seed)
    pipe = run.table_model(schema, len(y_train))
    with _progress(f"fitting ({run.method})", enabled=not run.as_json) as clock:
        pipe.fit(X_train, y_train)
    _save_and_report(
        pipe,
        run,
        {"data": dataset.name, "target": run.target, "task": run.task},
        scores=_scores(pipe.predict(X_test), y_test, run.regression),
        seconds=clock.seconds,
        details={"n_train": int(len(y_train)), "n_test": int(len(y_test))},
    )


def _check_before_charge(schema, cells, y, run: _FitRun) -> None:
    """Refuse labels outside the classes and, with --budget, cells the encoder would refuse
    (in training or test rows), before the pipeline charges the ledger (it charges before
    its steps read the rows)."""
    from ..models.labels import check_labels, declared_classes
    from ..preprocessing.columns import category_codes, numeric_cells
    from ..preprocessing.schema import Numeric

    if not run.regression:
        check_labels(y, declared_classes(run.classes), declared=run.classes is not None)
    if run.budget is None:
        return
    markers = frozenset(schema.missing_values)
    for j, col in enumerate(schema.columns):
        if isinstance(col, Numeric):
            numeric_cells(cells[:, j], col, markers)
        elif col.missing == "refuse":
            category_codes(cells[:, j], col, markers)
