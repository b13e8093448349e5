"""The dask branch of ``dpconvex fit``: data from Parquet/CSV, fit on a cluster."""

from __future__ import annotations

import numpy as np

from .fit_run import _FitRun, _load_data, _save_and_report
from .progress import _progress


def _fit_dask(run: _FitRun) -> None:
    """The dask branch of ``fit``: data from Parquet/CSV (or bundled Adult), fit on a cluster."""
    try:
        import dask.array as da
    except ImportError:
        raise ValueError('--dask needs the optional extra: pip install "dpconvex[dask]"') from None
    from ..scale.data import local_client, read_table

    if run.schema_file is not None:
        _fit_dask_table(run)
        return
    with local_client(run.scheduler):
        if run.data == "adult":
            split = _load_data(run.data, None).split(run.test_size, run.split_seed)
            # persist once on the cluster rather than shipping the array with every pass
            train = (da.from_array(split[0], chunks=(10_000, -1)).persist(), split[2])
            test = (da.from_array(split[1], chunks=(10_000, -1)).persist(), split[3])
        else:
            if run.target is None:
                raise ValueError("--target is required with a data file")
            train, test = read_table(
                run.data, run.target, test_size=run.test_size, seed=run.split_seed
            )
        model = run.estimator()
        with _progress(f"fitting ({run.method}, dask)", enabled=not run.as_json) as clock:
            model.fit(*train)
        predicted = model.predict(test[0])
        truth = test[1]
        if not hasattr(truth, "compute"):
            truth = da.from_array(np.asarray(truth), chunks=predicted.chunks)
        scores = _dask_scores(predicted, truth, run.regression)
    _save_and_report(
        model,
        run,
        {"data": str(run.data), "dask": True},
        scores=scores,
        seconds=clock.seconds,
        details={},
    )


def _fit_dask_table(run: _FitRun) -> None:
    """``--dask --schema``: the schema's columns as a dask DataFrame, one pipeline."""
    from ..preprocessing import load_schema
    from ..scale import data as scale_data

    if run.target is None:
        raise ValueError("--target is required with a data file")
    schema = load_schema(run.schema_file)
    names = [c.name for c in schema.columns]
    if run.target in names:
        raise ValueError(f"the target column {run.target!r} is also declared in the schema")
    frame = scale_data.read_frame(run.data, [*names, run.target])
    train, test = scale_data.split_frame(frame, run.test_size, run.split_seed)
    with scale_data.local_client(run.scheduler):
        n_train = int(len(train))  # the number of rows is public in dpconvex's guarantee
        y_train, y_test = (_dask_target(part[run.target], run) for part in (train, test))
        _check_dask_labels(y_train, run)
        pipe = run.table_model(schema, n_train)
        with _progress(f"fitting ({run.method}, dask)", enabled=not run.as_json) as clock:
            pipe.fit(train[names], y_train)
        predicted = pipe.predict(test[names])
        truth = y_test.to_dask_array(lengths=list(predicted.chunks[0]))
        scores = _dask_scores(predicted, truth, run.regression)
    _save_and_report(
        pipe,
        run,
        {"data": str(run.data), "target": run.target, "task": run.task},
        scores=scores,
        seconds=clock.seconds,
        details={"n_train": n_train},
    )


def _dask_target(series, run: _FitRun):
    """The target column as numbers (regression, or numeric classes) or as text."""
    import dask.dataframe as dd

    from ..models.labels import declared_classes

    if run.regression or declared_classes(run.classes).dtype.kind in "biuf":
        return dd.to_numeric(series, errors="coerce").astype("float64")
    return series.astype(str)


def _check_dask_labels(y, run: _FitRun) -> None:
    """Refuse missing or non-numeric regression targets, or labels outside the classes,
    before the pipeline charges a budget (one pass over the target column)."""
    from ..models.labels import check_labels, declared_classes

    if run.regression:
        if bool(y.isna().any().compute()):
            raise ValueError(
                f"the target column {run.target!r} holds a missing value or text; a "
                "regression target must be numbers (drop those rows)"
            )
        return
    values = y.to_dask_array(lengths=True)
    check_labels(values, declared_classes(run.classes), declared=run.classes is not None)


def _dask_scores(predicted, truth, regression: bool) -> dict:
    import dask

    if not regression:
        return {"accuracy": float((predicted == truth).mean().compute())}
    residual, total, square, count = dask.compute(
        ((truth - predicted) ** 2).sum(), truth.sum(), (truth**2).sum(), truth.size
    )
    spread = float(square) - float(total) ** 2 / count
    r2 = 1.0 - float(residual) / spread if spread > 0 else float("nan")
    return {"r2": r2, "rmse": float(np.sqrt(float(residual) / count))}
