"""The shared fitting logic of the private linear estimators (scikit-learn conventions).

An estimator picks a calibrated plan (:mod:`dpconvex.mechanisms`) from public quantities,
charges its event before the rows are read, runs the plan's mechanism on a row source
(in memory or on dask, :mod:`~.data_kinds`) once per one-vs-rest problem, checks that
every run's event is the planned one and reports the accountant's epsilon.
"""

from __future__ import annotations

from numbers import Integral, Real
from types import MappingProxyType

import numpy as np
from dp_accounting.dp_event import ComposedDpEvent, SelfComposedDpEvent
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.utils._param_validation import Interval, InvalidParameterError, StrOptions
from sklearn.utils.validation import check_is_fitted

from .. import _validation as v
from .._random import RANDOM_STATE_CONSTRAINT, make_rng
from ..accounting import MAX_EPSILON, MIN_EPSILON, PrivacyAccountant, pld_grid
from ..mechanisms import PLANS, Plan, PlanInputs, design_bound
from ..mechanisms.auto import resolve as resolve_auto
from ..mechanisms.auto import task_of, warn_if_constant
from ..optim import SOLVERS
from .charge import charge
from .clipping import warn_if_clipped
from .data_kinds import dask_inputs, data_kind
from .labels import declared_classes

METHODS = ("amp", "output", "dpsgd", "dpgd")
#: largest declared row norm (and intercept scaling) the estimators accept
MAX_ROW_BOUND = 1e8

_positive = [Interval(Real, 0, None, closed="neither")]
_COMMON_CONSTRAINTS = {
    "epsilon": [Interval(Real, MIN_EPSILON, MAX_EPSILON, closed="both")],
    "delta": [Interval(Real, 0, 1, closed="neither")],
    "method": [StrOptions({*METHODS, "auto"})],
    "accounting": [StrOptions({"pld", "rdp"})],
    "fit_intercept": ["boolean"],
    # bounds of 1e8 keep R^2, lam and the noise scales far inside float64 (rows of
    # larger declared norm: rescale the features, a public map)
    "intercept_scaling": [Interval(Real, 0, MAX_ROW_BOUND, closed="right")],
    "row_norm": [StrOptions({"normalize", "clip", "error"})],
    "row_bound": [Interval(Real, 0, MAX_ROW_BOUND, closed="right")],
    "clip": [None, *_positive],
    "lam": [None, *_positive],
    "tau": [None, *_positive],
    "sigma_out": [None, *_positive],
    "noise_factor": _positive,
    "solver": [StrOptions(set(SOLVERS))],
    "max_iter": [Interval(Integral, 1, None, closed="left")],
    "epochs": [Interval(Integral, 1, None, closed="left"), None],
    "batch_size": [Interval(Integral, 1, None, closed="left")],
    "learning_rate": [None, *_positive],
    "optimizer": [StrOptions({"adam", "sgd"})],
    "random_state": RANDOM_STATE_CONSTRAINT,
    # a dpconvex.Budget or a path to its ledger; checked by charge.open_budget
    "budget": "no_validation",
}


def _composed(events: list):
    """One event for the K one-vs-rest problems, in the form calibration priced them.

    K identical events become ``SelfComposedDpEvent(event, K)`` — exactly what the
    calibrators composed (PLD then prices them by one exact rescaling or K-fold
    self-composition, not K separate convolutions, so the report matches the plan).
    """
    if len(events) == 1:
        return events[0]
    if all(e == events[0] for e in events):
        return SelfComposedDpEvent(events[0], len(events))
    return ComposedDpEvent(list(events))


def _method_of(plan: Plan) -> tuple[str, str]:
    """(method run, why): the plan's own name, or what ``method="auto"`` chose and why."""
    chosen = getattr(plan, "chosen", None)
    if chosen is None:
        return plan.name, f'given: method="{plan.name}"'
    return chosen.name, plan.reason

class _DPLinearModel(BaseEstimator):
    """Shared fitting logic; subclasses define the loss and the targets."""

    _parameter_constraints: dict = dict(_COMMON_CONSTRAINTS)

    def _validate_params(self) -> None:
        """scikit-learn's constraints, and no bool where a number or a seed is expected
        (scikit-learn's ``Interval`` takes ``True`` for 1: ``epsilon=True`` is a mistake)."""
        super()._validate_params()
        for name, value in self.get_params(deep=False).items():
            if name != "fit_intercept" and isinstance(value, bool | np.bool_):
                raise InvalidParameterError(
                    f"The {name!r} parameter of {type(self).__name__} must not be a bool; "
                    f"got {value!r}"
                )

    # -- hooks -------------------------------------------------------------------
    def _loss(self):
        raise NotImplementedError

    def _default_clip(self, bound: float) -> float:
        """C when ``clip=None``: the largest gradient the loss can have on rows of norm ``bound``,
        capped at ``bound`` (so kappa = C/||x|| >= 1 on the bound)."""
        return min(bound, self._loss().derivative_bound * bound)

    # -- fitting -----------------------------------------------------------------
    def _plan(
        self, n: int, n_features: int, k: int, *, dask: bool = False, subsample: bool = False
    ) -> Plan:
        """The calibrated plan for n rows, n_features columns and K problems (public shapes).

        ``dask`` (the rows are a dask array) and ``subsample`` (a run on a secret subsample
        of public expected size n) are public too; ``method="auto"`` reads them to pick a
        plan that can run there; a method whose guarantee depends on the number of rows
        cannot run there and is refused.
        """
        plan = PLANS[self.method](self._plan_inputs(n, n_features, k, dask, subsample))
        if subsample and not plan.size_free:
            raise ValueError(
                f"method={plan.name!r} cannot run on a secret subsample: its guarantee "
                "depends on the number of rows"
            )
        return plan

    def _plan_inputs(
        self, n: int, n_features: int, k: int, dask: bool, subsample: bool
    ) -> PlanInputs:
        v.positive("epsilon", self.epsilon)
        v.probability_open("delta", self.delta)
        bound = design_bound(
            self.row_norm, self.row_bound, self.fit_intercept, self.intercept_scaling
        )
        clip = self._default_clip(bound) if self.clip is None else float(self.clip)
        inputs = PlanInputs(
            epsilon=float(self.epsilon),
            delta=float(self.delta),
            accounting=self.accounting,
            loss=self._loss(),
            n=n,
            d=n_features + int(bool(self.fit_intercept)),
            k=k,
            row_bound=bound,
            clip=clip,
            settings=MappingProxyType(self.get_params(deep=False)),
            dask=dask,
            subsample=subsample,
        )
        return inputs

    def _n_problems(self) -> int:
        """Binary problems of one fit: 1, or K one-vs-rest problems for K > 2 declared classes."""
        if not isinstance(self, ClassifierMixin):
            return 1
        k = declared_classes(self.classes).size
        return 1 if k <= 2 else k

    def privacy_event(
        self, n_samples: int, n_features: int, *, dask: bool = False, subsample: bool = False
    ):
        """The event a fit on data of this shape would produce (calibration only, no data).

        n_samples sets DP-SGD's sampling rate and, with ``method="auto"``, the choice of
        method (as does ``dask``: whether the rows will be a dask array). For classifiers
        the number of one-vs-rest problems comes from the declared ``classes``.
        ``subsample=True``: the event of ``fit(X, y, public_n=n_samples)`` on a secret
        subsample of public expected size n_samples (a method that cannot run there is
        refused, and ``method="auto"`` picks among those that can).
        """
        self._validate_params()
        n_samples = v.positive_int("n_samples", n_samples)
        n_features = v.positive_int("n_features", n_features)
        k = self._n_problems()
        plan = self._plan(n_samples, n_features, k, dask=bool(dask), subsample=bool(subsample))
        return _composed([plan.event] * k)

    def chosen_method(
        self, n_samples: int, n_features: int, *, dask: bool = False, subsample: bool = False
    ):
        """(method, reason): what a fit on data of this shape would run (no data read).

        The method given, or for ``method="auto"`` the choice of
        :mod:`dpconvex.mechanisms.auto` from these public sizes and the budget (with
        ``subsample=True``, among the methods that can run on a secret subsample of
        public expected size n_samples, as ``fit(X, y, public_n=n_samples)``).
        """
        self._validate_params()
        n_samples = v.positive_int("n_samples", n_samples)
        n_features = v.positive_int("n_features", n_features)
        if self.method != "auto":
            return self.method, f'given: method="{self.method}"'
        inputs = self._plan_inputs(
            n_samples, n_features, self._n_problems(), bool(dask), bool(subsample)
        )
        return resolve_auto(inputs)

    def _fit_problems(self, X, targets: list[np.ndarray], kind, public_n: int | None = None):
        """Run the mechanism once per target vector; return (thetas, events, n_iters).

        ``kind``: where the rows live (:func:`~.data_kinds.data_kind`). ``public_n``: on a
        secret subsample, the public expected size the run is calibrated for (checked by
        the caller), never the subsample's actual size."""
        k = len(targets)
        rows = X.shape[0] if public_n is None else public_n
        plan = self._plan(rows, X.shape[1], k, dask=kind.dask, subsample=public_n is not None)
        method, reason = _method_of(plan)
        # public sizes only: whether the noise is expected to swamp any signal
        task = task_of(plan.inputs.loss, k)
        warn_if_constant(task, rows, plan.inputs.d, plan.inputs.epsilon, plan.inputs.delta, k)
        params, run, planned = plan.params, plan.run, plan.event
        # refused here (method not on dask, rows above the bound), before any charge
        X, targets, source_for = kind.sources(self, X, targets, plan, method)
        # spend before release: the planned event is charged before the mechanism runs
        charge(
            self.budget,
            _composed([planned] * k),
            mechanism=f"{type(self).__name__}(method={method})",
            label=f"fit on {X.shape[0]} rows x {X.shape[1]} features",
            rows=X,  # the session record: a warning when earlier fits read the same rows
            delta=self.delta,
        )
        rng = make_rng(self.random_state)
        releases = [run(source_for(t), None, rng) for t in targets]
        if any(r.event != planned for r in releases):  # the accounting must match the run
            raise RuntimeError("mechanism event differs from the calibrated plan; not released")
        self.mechanism_params_ = params
        self.method_, self.method_reason_ = method, reason
        kind.record(self, releases)
        return (
            np.vstack([r.theta for r in releases]),
            [r.event for r in releases],
            np.array([r.info["n_iter"] for r in releases]),
        )

    def _warn_if_clipped(self, X, y, kind=None) -> None:
        """Tell the data owner how many rows the declared ``row_bound`` clips (in memory).

        A ``ClippingWarning`` with the count goes to whoever runs the fit; it is not part
        of the release and is never written to a model file (:mod:`dpconvex.models.clipping`).
        """
        kind = data_kind(X) if kind is None else kind
        if self.row_norm == "clip" and not kind.dask:
            warn_if_clipped(kind.row_norms(X), self.row_bound, what="rows", setting="row_bound")

    def _set_privacy(self, events) -> None:
        self.dp_event_ = _composed(events)
        # DP-SGD is calibrated on the grid pld_grid(epsilon); report with the same accountant
        h = pld_grid(self.epsilon)  # the grid every calibration above used
        accountant = PrivacyAccountant(self.accounting, value_discretization_interval=h)
        spent = accountant.compose(self.dp_event_).get_epsilon(self.delta)
        if spent > self.epsilon * (1 + 1e-9):  # calibration guarantees this never happens
            raise RuntimeError(
                f"accountant reports epsilon={spent} above the target {self.epsilon}; "
                "refusing to release the model"
            )
        self.epsilon_ = float(spent)
        self.delta_ = float(self.delta)

    def _validated(self, X, y, **kwargs):
        """(X, y, kind): validate_data for in-memory input; row-chunked dask arrays pass
        through lazily (dask DataFrames and Series as such arrays, the columns' names kept)."""
        X, y = dask_inputs(self, X, y, reset=True)
        kind = data_kind(X)
        X, y = kind.validated(self, X, y, **kwargs)
        return X, y, kind

    def _linear(self, X) -> np.ndarray:
        check_is_fitted(self)
        X, _ = dask_inputs(self, X, None, reset=False)
        return data_kind(X).scores(self, X)

    def _split_theta(self, theta: np.ndarray, scale: float = 1.0):
        if self.fit_intercept:
            return scale * theta[:, :-1], scale * self.intercept_scaling * theta[:, -1]
        return scale * theta, np.zeros(theta.shape[0])

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        return tags
