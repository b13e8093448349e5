"""The settings of one ``dpconvex fit``, its data loading, scores and saved report."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .options import (
    _emit,
    input_file,
)


def _load_data(data: str, target: str | None):
    from ..datasets import load_adult, load_csv

    if data == "adult":
        return load_adult()
    path = input_file(data, "--data")
    if target is None:
        raise ValueError("--target is required with a CSV file")
    return load_csv(path, target)


@dataclass
class _FitRun:
    """The settings of one ``dpconvex fit``, checked against each other before any work."""

    data: str
    target: str | None
    epsilon: float
    delta: float
    as_json: bool
    task: str
    schema_file: str | None
    y_bounds: tuple[float | None, float | None] | None
    y_search_range: tuple[float, float] | None
    row_bound: float | None
    method: str
    accounting: str
    test_size: float
    split_seed: int
    seed: int | None
    out: str
    force: bool
    mkdir: bool
    use_dask: bool
    scheduler: str | None
    budget: str | None
    classes: list | None

    @property
    def regression(self) -> bool:
        return self.task == "regression"

    def table_model(self, schema, n_samples: int):
        """The :func:`~dpconvex.make_table_model` pipeline of these settings."""
        from ..table_model import make_table_model

        return make_table_model(
            schema,
            n_samples=n_samples,
            epsilon=self.epsilon,
            delta=self.delta,
            task=self.task,
            classes=self.classes,
            y_bounds=self.y_bounds,
            y_search_range=self.y_search_range,
            method=self.method,
            accounting=self.accounting,
            random_state=self.seed,
            budget=self.budget,
        )

    def check(self) -> None:
        if self.regression:
            self._check_target_range()
            if self.classes is not None:
                raise ValueError("--classes is for classification; regression takes --y-bounds")
        else:
            for flag, value in (("--y-bounds", self.y_bounds),
                                ("--y-search-range", self.y_search_range)):  # fmt: skip
                if value is not None:
                    raise ValueError(
                        f"{flag} is for regression: add --task regression for a numeric target"
                    )
            if self.method == "adassp":
                raise ValueError("--method adassp is for regression (--task regression)")
        if self.schema_file is not None:
            if self.row_bound is not None:
                raise ValueError(
                    "--row-bound is set by the schema (the square root of its number of "
                    "columns); drop --row-bound"
                )
            if self.data == "adult":
                raise ValueError("--schema reads a CSV file; --data adult is already encoded")
        if self.scheduler is not None and not self.use_dask:
            raise ValueError("--scheduler needs --dask")

    def _check_target_range(self) -> None:
        """Exactly one of --y-bounds LOW,HIGH and --y-search-range (which --y-bounds with one
        end empty may join); the search range only with --schema and without --dask."""
        bounds, search = self.y_bounds, self.y_search_range
        if search is None:
            if bounds is None:
                raise ValueError(
                    "--task regression needs --y-bounds LOW,HIGH, the public range of the "
                    "target, or (with --schema) --y-search-range LOW,HIGH, a generous public "
                    "range in which that range is estimated privately"
                )
            if None in bounds:
                raise ValueError(
                    "--y-bounds with an empty end needs --y-search-range LOW,HIGH: the "
                    "generous public range in which that end is estimated"
                )
            return
        if bounds is not None and None not in bounds:
            raise ValueError(
                "give --y-bounds LOW,HIGH or --y-search-range LOW,HIGH, not both (to estimate "
                "one end only, leave it empty: --y-bounds 0,)"
            )
        if self.schema_file is None:
            raise ValueError(
                "--y-search-range needs --schema (the target's range is estimated in the "
                "schema's pipeline): write one with `dpconvex schema template`, or give "
                "--y-bounds LOW,HIGH"
            )
        if self.use_dask:
            raise ValueError(
                "--y-search-range is not available with --dask in this version: give "
                "--y-bounds LOW,HIGH, or drop --dask"
            )
        if any(b is not None and not search[0] <= b <= search[1] for b in bounds or ()):
            raise ValueError("the given end of --y-bounds must lie inside --y-search-range")

    def estimator(self):
        """The estimator for the numeric path (no schema)."""
        from ..models import DPLinearRegression, DPLogisticRegression

        common = {
            "epsilon": self.epsilon,
            "delta": self.delta,
            "method": self.method,
            "accounting": self.accounting,
            "random_state": self.seed,
            "budget": self.budget,
        }
        if self.row_bound is not None:
            common.update(row_norm="clip", row_bound=self.row_bound)
        if self.regression:
            return DPLinearRegression(y_bounds=self.y_bounds, **common)
        return DPLogisticRegression(classes=self.classes, **common)


def _scores(predicted, truth, regression: bool) -> dict:
    """Accuracy, or R^2 and RMSE, of ``predicted`` against ``truth`` (numpy arrays)."""
    predicted, truth = np.asarray(predicted), np.asarray(truth)
    if not regression:
        return {"accuracy": float(np.mean(predicted == truth))}
    residual = float(np.sum((truth - predicted) ** 2))
    spread = float(np.sum((truth - truth.mean()) ** 2))
    r2 = 1.0 - residual / spread if spread > 0 else float("nan")
    return {"r2": r2, "rmse": float(np.sqrt(residual / truth.size))}


def _save_and_report(model, run: _FitRun, extra: dict, *, scores, seconds, details) -> None:
    """Write the fitted model as JSON to ``run.out`` and print the summary of ``dpconvex fit``.

    The table and ``--json`` carry the same fields.
    """
    from ..models.persist import save_model

    final = model[-1] if hasattr(model, "steps") else model
    if hasattr(final, "mechanism_params_") and not hasattr(model, "steps"):
        extra = {**extra, "mechanism_params": dict(final.mechanism_params_)}
    save_model(model, run.out, overwrite=True, extra=extra)
    summary = {
        **scores,
        "epsilon": model.epsilon_,
        "delta": model.delta_,
        "task": run.task,
        "method": getattr(final, "method_", run.method),
        "fit_seconds": seconds,
        **details,
        "model_file": str(run.out),
    }
    if hasattr(model, "steps"):
        summary["encoder_epsilon"] = model[0].epsilon_
    _emit(summary, run.as_json)
