"""What every plan is built from, and what it exposes.

A plan is one way of fitting a linear model (AMP, output perturbation, DP-SGD, DP-GD,
AdaSSP, ...). It is built from public inputs only — the estimator's settings, the loss,
the public shape of the data (n, d, the number of one-vs-rest problems K) and the
declared bounds — calibrates once, and exposes the calibrated ``params`` and the
``event`` that prices one problem. ``run(X, y, rng)`` then returns the release of one
problem; the estimator composes K of them and checks each run's event against the plan.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np
from dp_accounting.dp_event import DpEvent

from ..losses import GLMLoss
from ..release import Release


@dataclass(frozen=True)
class PlanInputs:
    """Public inputs of a plan: budget, loss, shapes and declared bounds, settings.

    ``d`` counts the intercept column; ``row_bound`` is the norm bound R of the rows
    the mechanism sees (intercept included); ``clip`` the gradient clipping threshold
    C; ``settings`` the estimator's hyperparameters (lam, tau, epochs, ...), read-only.
    ``dask`` says whether the rows are a row-chunked dask array and ``subsample`` whether
    the run is on a secret subsample of public expected size ``n``; both are public and
    read only by the plan that picks a method (:class:`dpconvex.mechanisms.auto.AutoPlan`).
    """

    epsilon: float
    delta: float
    accounting: str
    loss: GLMLoss
    n: int
    d: int
    k: int
    row_bound: float
    clip: float
    settings: Mapping[str, Any] = field(default_factory=dict)
    dask: bool = False
    subsample: bool = False


class Plan:
    """Base class: subclasses set ``params`` and ``event`` in ``__init__`` and define run."""

    #: the ``method=`` name that selects this plan
    name: ClassVar[str] = ""
    #: whether the plan can run on row-chunked dask arrays
    dask: ClassVar[bool] = False
    #: whether the plan's guarantee holds for input of any number of rows (its
    #: parameters fixed from the public n): needed to run it on a secret subsample
    size_free: ClassVar[bool] = False

    params: dict
    event: DpEvent

    def __init__(self, inputs: PlanInputs):
        self.inputs = inputs

    def run(self, X, y: np.ndarray, rng: np.random.Generator) -> Release:
        raise NotImplementedError

    def setting(self, name: str):
        return self.inputs.settings[name]
