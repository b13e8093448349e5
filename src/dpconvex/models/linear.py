"""Private linear models as scikit-learn estimators.

Methods (``method=``):

* ``"auto"`` (the default) — one of the methods below, chosen from public quantities
  only (the task, n, d, the number of classes, epsilon, delta, whether the rows are a
  dask array) by the rule of :mod:`dpconvex.plans.auto`, derived on synthetic data.
  The fitted model states its choice (``method_``) and why (``method_reason_``).
* ``"amp"`` — Algorithm 1 of Redberg, Koskela & Wang (arXiv 2401.00583), approximate
  minima perturbation with gradient clipping at C = R (R the row bound including the
  intercept, sqrt 2 for unit rows plus a bias). (sigma, lam) by the paper's rule with
  noise factor f = 1.3 unless ``lam`` is given; the certificate tau and the output
  noise follow the derived defaults of :mod:`dpconvex.plans.amp` (tau = 1e-12 n L,
  so neither puts a floor under accuracy; the paper's tau = 0.01, sigma_out = 0.15
  are ``PAPER_SETTINGS`` there, for its experiments); PLD accounting by default.
* ``"output"`` — output perturbation of a tau-certified regularized minimizer
  (Wang's lecture notes on objective perturbation, CS291A, UC Santa Barbara, 2021),
  Gaussian noise for sensitivity (L + 2 tau)/lam by the analytic Gaussian calibration.
* ``"dpsgd"`` — DP-SGD with Poisson subsampling (expected batch ``batch_size``,
  ``epochs`` passes), per-example clipping at C, Adam or plain steps.
* ``"dpgd"`` — full-batch DP-GD for ``epochs`` steps (default: derived from epsilon,
  see :class:`dpconvex.plans.gradient.DpgdPlan`).

Rows are transformed without privacy cost and never measured to set a bound:
``row_norm="normalize"`` (x/||x||), ``"clip"`` (to ``row_bound``) or ``"error"``
(refuse rows above ``row_bound``). The intercept is an augmented feature of value
``intercept_scaling``, regularized and perturbed like every other coordinate;
:meth:`decision_function` applies the same row transform before the linear map.

Multiclass classification is one-vs-rest: K binary problems, each run on all
the data, whose events are composed by the accountant. Noise is calibrated so
that the K-fold composition meets (epsilon, delta). ``epsilon_`` is what the
accountant reports for the composed ``dp_event_``; it never exceeds ``epsilon``.
The number of training rows n is treated as public (it sets DP-SGD's sampling
rate q = batch_size / n, as in every DP-SGD implementation).
"""

from __future__ import annotations

import warnings
from numbers import Integral, Real
from types import MappingProxyType

import numpy as np
from dp_accounting.dp_event import ComposedDpEvent, SelfComposedDpEvent
from scipy.special import expit
from sklearn.base import BaseEstimator, ClassifierMixin, RegressorMixin, _fit_context
from sklearn.utils._param_validation import Interval, InvalidParameterError, StrOptions
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_is_fitted, validate_data

from .. import _validation as v
from .._arrays import row_norms
from .._random import RANDOM_STATE_CONSTRAINT, make_rng
from ..accounting import MAX_EPSILON, MIN_EPSILON, PrivacyAccountant, pld_grid
from ..data.dask_rows import is_dask_array
from ..data.sources import InMemoryRows
from ..losses import HuberLoss, LogisticLoss, SquaredLoss
from ..mechanisms import design_bound, transform_rows
from ..optim import SOLVERS
from ..plans import PLANS, Plan, PlanInputs
from ..plans.auto import resolve as resolve_auto
from ..plans.auto import task_of, warn_if_constant
from .charge import charge
from .clipping import ClippingWarning, warn_if_clipped
from .labels import check_labels, declared_classes

METHODS = ("amp", "output", "dpsgd", "dpgd")
#: largest declared row norm (and intercept scaling) the estimators accept
MAX_ROW_BOUND = 1e8
#: largest |lo|, |hi| of declared target bounds: coefficients stay far inside float64
MAX_TARGET_BOUND = 1e15
#: smallest (hi - lo) / max(|lo|, |hi|) of declared target bounds: the centre and
#: half-width keep about 40 of float64's 53 bits for the scaled targets
MIN_TARGET_WIDTH = 1e-4

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
        plan that can run there.
        """
        return PLANS[self.method](self._plan_inputs(n, n_features, k, dask, subsample))

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

    def privacy_event(self, n_samples: int, n_features: int, *, dask: bool = False):
        """The event a fit on data of this shape would produce (calibration only, no data).

        n_samples sets DP-SGD's sampling rate and, with ``method="auto"``, the choice of
        method (as does ``dask``: whether the rows will be a dask array). For classifiers
        the number of one-vs-rest problems comes from the declared ``classes``.
        """
        self._validate_params()
        n_samples = v.positive_int("n_samples", n_samples)
        n_features = v.positive_int("n_features", n_features)
        k = self._n_problems()
        subsample = getattr(self, "_public_n", None) is not None
        plan = self._plan(n_samples, n_features, k, dask=bool(dask), subsample=subsample)
        return _composed([plan.event] * k)

    def chosen_method(self, n_samples: int, n_features: int, *, dask: bool = False):
        """(method, reason): what a fit on data of this shape would run (no data read).

        The method given, or for ``method="auto"`` the choice of
        :mod:`dpconvex.plans.auto` from these public sizes and the budget.
        """
        self._validate_params()
        n_samples = v.positive_int("n_samples", n_samples)
        n_features = v.positive_int("n_features", n_features)
        subsample = getattr(self, "_public_n", None) is not None
        if self.method != "auto":
            return self.method, f'given: method="{self.method}"'
        inputs = self._plan_inputs(n_samples, n_features, self._n_problems(), bool(dask), subsample)
        return resolve_auto(inputs)

    def _fit_problems(self, X, targets: list[np.ndarray]):
        """Run the mechanism once per target vector; return (thetas, events, n_iters)."""
        k = len(targets)
        # a run on a secret subsample is calibrated for the subsample's public expected
        # size (set by PrivateRandomSearch on its own clones), never for its actual size
        public_n = getattr(self, "_public_n", None)
        rows = X.shape[0] if public_n is None else public_n
        plan = self._plan(
            rows, X.shape[1], k, dask=is_dask_array(X), subsample=public_n is not None
        )
        method, reason = _method_of(plan)
        if public_n is not None and not plan.size_free:
            raise ValueError(
                f"method={method!r} cannot run on a secret subsample: its guarantee "
                "depends on the number of rows"
            )
        # public sizes only: whether the noise is expected to swamp any signal
        task = task_of(plan.inputs.loss, k)
        warn_if_constant(task, rows, plan.inputs.d, plan.inputs.epsilon, plan.inputs.delta, k)
        params, run, planned = plan.params, plan.run, plan.event
        if is_dask_array(X):  # out of core: the row policy is applied chunk by chunk
            from ..optim.solvers import WARM_START_ROWS
            from ..scale.fit import cache_rows, dask_rows, row_policy

            if not plan.dask:  # refuse before anything is charged
                raise ValueError(
                    f"method={method!r} is not available on dask data; use one of "
                    f"{sorted(name for name, p in PLANS.items() if p.dask)}"
                )
            source = dask_rows
            # held in memory when small enough, the rows Newton's warm start reads first
            X, targets, scales = cache_rows(X, targets, WARM_START_ROWS, row_policy(self))
        else:
            # raw rows and the row policy: dense rows are read in place by every pass
            # (never copied into a transformed design); "error" refuses here, before
            # anything is charged
            in_memory = InMemoryRows.from_raw(
                X,
                targets[0],
                row_norm=self.row_norm,
                row_bound=self.row_bound,
                fit_intercept=self.fit_intercept,
                intercept_scaling=self.intercept_scaling,
            )
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
        if is_dask_array(X):  # the same mechanism, reading a dask row source
            releases = [run(source(self, X, t, scales), None, rng) for t in targets]
        else:
            releases = [run(in_memory.with_labels(t), None, rng) for t in targets]
        if any(r.event != planned for r in releases):  # the accounting must match the run
            raise RuntimeError("mechanism event differs from the calibrated plan; not released")
        self.mechanism_params_ = params
        self.method_, self.method_reason_ = method, reason
        if is_dask_array(X):  # passes over the data, for the out-of-core benchmark
            self.n_passes_ = int(sum(r.info.get("passes", 0) for r in releases))
        return (
            np.vstack([r.theta for r in releases]),
            [r.event for r in releases],
            np.array([r.info["n_iter"] for r in releases]),
        )

    def _warn_if_clipped(self, X, y) -> None:
        """Tell the data owner how many rows the declared ``row_bound`` clips (in memory).

        A ``ClippingWarning`` with the count goes to whoever runs the fit; it is not part
        of the release and is never written to a model file (:mod:`dpconvex.models.clipping`).
        """
        if self.row_norm == "clip" and not is_dask_array(X):
            warn_if_clipped(row_norms(X), self.row_bound, what="rows", setting="row_bound")

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
        """validate_data for in-memory input; row-chunked dask arrays pass through lazily
        (dask DataFrames and Series as such arrays, the columns' names kept)."""
        X, y = _dask_inputs(self, X, y, reset=True)
        if is_dask_array(X):
            from ..optim.solvers import WARM_START_ROWS
            from ..scale.fit import cache_inputs, check_dask_inputs

            X, y = check_dask_inputs(X, y)
            # the labels load first (the label check reads y alone), the rows meanwhile
            X, y = cache_inputs(X, y, WARM_START_ROWS)
            self.n_features_in_ = int(X.shape[1])
            return X, y
        # text, missing or infinite values: name the column, not the cell (and when that
        # read found every value finite, scikit-learn does not read X again)
        finite = v.numeric_features(X)
        return validate_data(
            self,
            X,
            y,
            accept_sparse="csr",
            dtype=np.float64,
            ensure_all_finite=not finite,
            **kwargs,
        )

    def _linear(self, X) -> np.ndarray:
        check_is_fitted(self)
        X, _ = _dask_inputs(self, X, None, reset=False)
        if is_dask_array(X):
            from ..scale.fit import linear_scores

            if X.shape[1] != self.n_features_in_:
                raise ValueError(f"X has {X.shape[1]} features, expected {self.n_features_in_}")
            return linear_scores(self, X)
        finite = v.numeric_features(X)
        X = validate_data(
            self,
            X,
            accept_sparse="csr",
            dtype=np.float64,
            reset=False,
            ensure_all_finite=not finite,
        )
        Xt = transform_rows(X, self.row_norm, self.row_bound, check=False)
        return np.asarray(Xt @ self.coef_.T) + self.intercept_

    def _split_theta(self, theta: np.ndarray, scale: float = 1.0):
        if self.fit_intercept:
            return scale * theta[:, :-1], scale * self.intercept_scaling * theta[:, -1]
        return scale * theta, np.zeros(theta.shape[0])

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        return tags


class DPLogisticRegression(ClassifierMixin, _DPLinearModel):
    """(epsilon, delta)-DP logistic regression.

    The label set is public and declared (``classes``); it is never read off y.

    Parameters
    ----------
    epsilon, delta : float
        Privacy budget of the whole fit (all classes together).
    method : {"auto", "amp", "output", "dpsgd", "dpgd"}
        "auto" (default: AMP or DP-GD, chosen from the public sizes and the budget by
        :func:`dpconvex.plans.auto.ranking`), "amp", "output", "dpsgd" or "dpgd"; see the
        module docstring.
    classes : list, optional
        The labels, declared without looking at the data (they are released with
        the model); default [0, 1]. Labels in y outside this set are an error. More than
        two classes are fitted one-vs-rest, one problem per declared class.
    accounting : {"pld", "rdp"}
        "pld" (default, tighter) or "rdp" (as in Redberg et al.'s experiments).
    fit_intercept, intercept_scaling : bool, float
        Augmented constant feature, regularized and perturbed.
    row_norm, row_bound : {"normalize", "clip", "error"}, float
        Row policy "normalize" (default), "clip" or "error", and the bound.
    clip : float, optional
        Gradient clipping threshold C; default: the row bound R (sqrt 2 for unit rows
        plus a bias), which leaves the logistic loss unclipped.
    lam : float, optional
        Regularization; default: the paper's rule (amp), a noise-scale rule (output),
        0 (dpsgd, dpgd).
    tau, sigma_out, noise_factor : float
        AMP's certificate (the solver must reach ||grad|| <= tau),
        output noise, and the f of the lam rule. The output step costs privacy through
        2 tau / (lam sigma_out) only, so by default tau is tiny (1e-12 n L, which the
        solver reaches in float64) and sigma_out tiny with it, taking 1e-4 of the budget:
        no noise floor as epsilon grows. Output perturbation uses tau (default 1e-12 n L)
        too. The paper's settings are tau=0.01, sigma_out=0.15, noise_factor=1.3.
    solver, max_iter : str, int
        AMP / output-perturbation solver ("auto", "lbfgs", "newton", "svrg").
        ``max_iter`` bounds the chosen solver's iterations only: if it has not certified,
        Newton steps (at least 30) and then Nesterov's accelerated gradient, run for an
        iteration budget proven from public constants (the loss's curvature, the row
        bound, lam), always follow, so no valid fit fails because of ``max_iter``. A
        given ``tau`` below 1e-14 x rows x gradient bound (what float64 may not reach) is
        refused before anything is spent.
    epochs, batch_size, learning_rate, optimizer : int, int, float, {"adam", "sgd"}
        DP-SGD / DP-GD settings (epochs:
        None = 60 passes for DP-SGD, and for DP-GD a step count that grows with
        epsilon, min(1000, max(100, n^2 eps^2 / (2 d log(1/delta))));
        learning_rate default 0.02 for Adam, 0.5 for SGD).
    random_state : None, int or numpy.random.Generator
        None (OS entropy, the default), an int seed, or a numpy Generator.
    budget : None, Budget or path
        None, a :class:`dpconvex.Budget` or the path of its ledger; the fit charges
        its planned event to the ledger before it uses the data, and raises
        ``BudgetExceededError`` (training nothing) if the charge would overspend.

    Attributes
    ----------
    classes_, coef_, intercept_ : ndarray
        The declared labels and the fitted linear model.
    epsilon_, delta_ : float
        Spent, from the accountant.
    dp_event_ : DpEvent
        The event pricing the fit.
    mechanism_params_ : dict
        Calibrated noise, lam, ...
    method_, method_reason_ : str
        The method that ran and why (for ``method="auto"``, the public quantities that
        chose it); both are functions of public values and are written to model files.
    n_iter_ : ndarray
        A diagnostic for the data owner, **not covered by the guarantee** for
        "amp" and "output" (the solver's iteration count, with any Newton and
        accelerated-gradient steps that followed, depends on the data); it is never
        written to model files. For "dpgd"/"dpsgd" it is the public step count.
    """

    _parameter_constraints: dict = {**_COMMON_CONSTRAINTS, "classes": "no_validation"}

    def __init__(
        self,
        epsilon=1.0,
        delta=1e-5,
        method="auto",
        *,
        classes=None,
        accounting="pld",
        fit_intercept=True,
        intercept_scaling=1.0,
        row_norm="normalize",
        row_bound=1.0,
        clip=None,
        lam=None,
        tau=None,
        sigma_out=None,
        noise_factor=1.3,
        solver="auto",
        max_iter=1000,
        epochs=None,
        batch_size=256,
        learning_rate=None,
        optimizer="adam",
        random_state=None,
        budget=None,
    ):
        self.epsilon = epsilon
        self.delta = delta
        self.method = method
        self.classes = classes
        self.accounting = accounting
        self.fit_intercept = fit_intercept
        self.intercept_scaling = intercept_scaling
        self.row_norm = row_norm
        self.row_bound = row_bound
        self.clip = clip
        self.lam = lam
        self.tau = tau
        self.sigma_out = sigma_out
        self.noise_factor = noise_factor
        self.solver = solver
        self.max_iter = max_iter
        self.epochs = epochs
        self.batch_size = batch_size
        self.learning_rate = learning_rate
        self.optimizer = optimizer
        self.random_state = random_state
        self.budget = budget

    def _loss(self):
        return LogisticLoss()

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y):
        """Fit on (X, y); labels must lie in the declared ``classes`` (default {0, 1}).

        The label set, and so ``classes_`` and the shape of ``coef_``, is public:
        it comes from ``classes``, never from ``y`` (a class may be absent from y).
        """
        X, y = self._validated(X, y)
        classes = declared_classes(self.classes)
        if not is_dask_array(y):
            check_classification_targets(y)
        check_labels(y, classes, declared=self.classes is not None)
        self._warn_if_clipped(X, y)
        self.classes_ = classes
        if self.classes_.size == 2:
            targets = [np.where(y == self.classes_[1], 1.0, -1.0)]
        else:
            targets = [np.where(y == c, 1.0, -1.0) for c in self.classes_]
        theta, events, n_iter = self._fit_problems(X, targets)
        self.coef_, self.intercept_ = self._split_theta(theta)
        self.n_iter_ = n_iter
        self._set_privacy(events)
        return self

    def decision_function(self, X):
        scores = self._linear(X)
        return scores.ravel() if scores.shape[1] == 1 else scores

    def predict(self, X):
        scores = self.decision_function(X)
        pick = (
            (lambda s: (s > 0).astype(int))
            if scores.ndim == 1
            else (lambda s: np.argmax(s, axis=1))
        )
        if is_dask_array(scores):
            classes = self.classes_
            return scores.map_blocks(
                lambda s: classes[pick(s)],
                dtype=classes.dtype,
                drop_axis=None if scores.ndim == 1 else 1,
            )
        return self.classes_[pick(scores)]

    def predict_proba(self, X):
        """Logistic probabilities; one-vs-rest scores are normalized across classes."""
        scores = self.decision_function(X)
        if scores.ndim == 1:
            p = expit(scores)
            return np.column_stack([1 - p, p])
        p = expit(scores)
        return p / p.sum(axis=1, keepdims=True)

    def predict_log_proba(self, X):
        return np.log(self.predict_proba(X))


def _dask_inputs(est, X, y, *, reset: bool):
    """(X, y) with a dask DataFrame ``X`` as a row-chunked dask array and a dask Series
    ``y`` as a dask array; the frame's column names checked or kept as scikit-learn does
    for pandas (``feature_names_in_``). Anything else is returned as given."""
    from ..scale.fit import frame_rows, is_dask_frame, series_labels

    if is_dask_frame(y):
        y = series_labels(y)
    if is_dask_frame(X):
        _frame_names(est, [c for c in X.columns] if X.ndim == 2 else [], reset)
        X = frame_rows(X)
    elif is_dask_array(X) and reset:  # no names: a fit forgets earlier ones
        _frame_names(est, [None], reset)
    return X, y


def _frame_names(est, columns: list, reset: bool) -> None:
    """Set (``reset``) or check ``feature_names_in_`` as scikit-learn does for a pandas
    DataFrame: the column names when every one is a string, else none."""
    names = np.asarray(columns, dtype=object) if all(isinstance(c, str) for c in columns) else None
    if reset:
        if names is not None:
            est.feature_names_in_ = names
        elif hasattr(est, "feature_names_in_"):
            del est.feature_names_in_
        return
    fitted = getattr(est, "feature_names_in_", None)
    if fitted is not None and names is not None and not np.array_equal(names, fitted):
        raise ValueError(
            "the columns of X differ from those seen in fit (names or order); give X the "
            "fitted columns, in the order of feature_names_in_"
        )


def _target_bounds(y_bound, y_bounds) -> tuple[float, float]:
    """The declared (lo, hi) of the targets: ``y_bounds``, or (-y_bound, y_bound), or (-1, 1).

    Giving both is an error (one rule, no silent precedence).
    """
    if y_bounds is None:
        bound = 1.0 if y_bound is None else float(y_bound)
        return -bound, bound
    if y_bound is not None:
        raise ValueError(
            "give either y_bound (targets in [-y_bound, y_bound]) or y_bounds=(lo, hi), not both"
        )
    if isinstance(y_bounds, str | bytes) or not hasattr(y_bounds, "__len__") or len(y_bounds) != 2:
        raise ValueError(f"y_bounds must be a pair (lo, hi) of numbers, got {y_bounds!r}")
    if not all(isinstance(b, Real) and not isinstance(b, bool | np.bool_) for b in y_bounds):
        raise ValueError(f"y_bounds must be a pair (lo, hi) of numbers, got {y_bounds!r}")
    lo, hi = float(y_bounds[0]), float(y_bounds[1])
    if not (abs(lo) <= MAX_TARGET_BOUND and abs(hi) <= MAX_TARGET_BOUND):
        raise ValueError(f"y_bounds must be finite numbers of at most {MAX_TARGET_BOUND:g} in "
                         "absolute value; rescale the target (a public map)")  # fmt: skip
    if not hi - lo >= MIN_TARGET_WIDTH * max(abs(lo), abs(hi)) or not lo < hi:
        raise ValueError(
            f"y_bounds=(lo, hi) needs lo < hi and hi - lo at least {MIN_TARGET_WIDTH:g} x "
            f"max(|lo|, |hi|); got ({lo:g}, {hi:g})"
        )
    return lo, hi


def _centre_and_half_width(lo: float, hi: float) -> tuple[float, float]:
    """The public affine map of targets onto [-1, 1]: (y - centre) / half_width."""
    return (lo + hi) / 2.0, (hi - lo) / 2.0


class _DPRegressor(RegressorMixin, _DPLinearModel):
    _parameter_constraints: dict = {
        **_COMMON_CONSTRAINTS,
        "y_bound": [None, Interval(Real, 0, MAX_TARGET_BOUND, closed="right")],
        "y_bounds": [None, tuple, list, np.ndarray],
    }

    def _validate_params(self) -> None:
        """The shared checks, and the target bounds (one of y_bound, y_bounds)."""
        super()._validate_params()
        _target_bounds(self.y_bound, self.y_bounds)

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y):
        """Fit on (X, y); targets are clipped to the declared [lo, hi] and mapped to [-1, 1].

        The map y -> (y - centre) / half_width uses the public centre (lo + hi) / 2 and
        half-width (hi - lo) / 2; ``coef_`` and ``intercept_`` are mapped back, so
        predictions are in the original units.
        """
        X, y = self._validated(X, y, y_numeric=True)
        lo, hi = _target_bounds(self.y_bound, self.y_bounds)
        centre, half = _centre_and_half_width(lo, hi)
        y = y.astype(np.float64) if is_dask_array(y) else np.asarray(y, dtype=np.float64)
        self._warn_if_clipped(X, y)
        # stays lazy for dask labels; the last clip is a no-op in exact arithmetic and
        # keeps every scaled target in [-1, 1] whatever the rounding
        target = np.clip((np.clip(y, lo, hi) - centre) / half, -1.0, 1.0)
        theta, events, n_iter = self._fit_problems(X, [target])
        coef, intercept = self._split_theta(theta, half)
        self.coef_, self.intercept_ = coef.ravel(), float(intercept[0]) + centre
        self.n_iter_ = int(n_iter[0])
        self._set_privacy(events)
        return self

    def _warn_if_clipped(self, X, y) -> None:
        """As for rows, and the number of targets outside the declared bounds (in memory)."""
        if not is_dask_array(y):  # the count goes to the data owner, not into the model
            y = np.asarray(y, dtype=np.float64)
            if self.y_bounds is None:
                bound = 1.0 if self.y_bound is None else float(self.y_bound)
                warn_if_clipped(y, bound, what="targets", setting="y_bound")
            else:
                _warn_outside(y, *_target_bounds(None, self.y_bounds))
        super()._warn_if_clipped(X, y)

    def predict(self, X):
        return self._linear(X)

    def __sklearn_tags__(self):
        # scikit-learn's check_regressors_train asks for R^2 > 0.5 on 200 rows; at the
        # default epsilon = 1 with targets clipped to y_bound = 1 and lam > beta forced
        # by objective perturbation, a private fit gets R^2 of about 0.4 there.
        tags = super().__sklearn_tags__()
        tags.regressor_tags.poor_score = True
        return tags


def _warn_outside(y: np.ndarray, lo: float, hi: float) -> int:
    """ClippingWarning with the number of targets outside [lo, hi] (to the data owner)."""
    count = int(np.count_nonzero((y < lo) | (y > hi)))
    if count:
        warnings.warn(
            f"{count} of {y.shape[0]} targets ({count / max(1, y.shape[0]):.1%}) fell outside "
            f"y_bounds=({lo:g}, {hi:g}) and were clipped to them; if that is many, declare "
            "wider y_bounds (chosen without looking at the data) to reduce the bias",
            ClippingWarning,
            stacklevel=4,
        )
    return count


_REGRESSOR_DOC = """
    Targets are clipped to their declared bounds and mapped to [-1, 1] before training
    (a public map): ``y_bounds=(lo, hi)`` maps y to (y - c) / h with the centre
    c = (lo + hi) / 2 and half-width h = (hi - lo) / 2, which suits targets that are not
    centred at 0 (prices, counts); ``y_bound=b`` is the symmetric case (-b, b); giving
    both is an error, giving neither means (-1, 1). ``coef_`` and ``intercept_`` are
    mapped back to the original units (with ``fit_intercept=False`` the intercept is the
    public centre c). The ``ClippingWarning`` counts the targets outside the bounds.
    Rows are clipped to the declared ``row_bound`` (default ``row_norm="clip"``;
    how many were clipped is reported in a ``ClippingWarning`` to the data owner):
    normalizing rows, the classifiers' default, would change the regression
    function itself. Other parameters and attributes as in
    :class:`DPLogisticRegression`; the gradient clip C defaults to the row bound R
    (kappa = 1 on rows of norm R), except that DP-GD with Adam on least squares clips
    lower when its noise dominates (C = R clip((1/64) n / (z sqrt d), 1/8, 1), from public
    n, d and the noise multiplier z: :func:`dpconvex.plans.gradient.default_dpgd_clip`).
"""


class DPLinearRegression(_DPRegressor):
    _parameter_constraints: dict = {
        **_DPRegressor._parameter_constraints,
        "method": [StrOptions({*METHODS, "adassp", "auto"})],
    }

    __doc__ = (
        """(epsilon, delta)-DP least squares.

    ``method="auto"`` (default) runs AMP or DP-GD as :func:`dpconvex.plans.auto.ranking`
    chooses from the public sizes and the budget. ``"amp"`` minimizes the squared loss
    with clipped gradients by approximate objective perturbation; ``"output"``,
    ``"dpgd"`` and ``"dpsgd"`` do the same with other noise; clipped at C the squared
    loss is exactly a Huber loss with threshold C/||x|| (Redberg et al., Thm F.2), of
    curvature bound 1, so beta = R^2.
    ``"adassp"``: sufficient-statistics perturbation with an adaptive ridge (Wang,
    "Revisiting differentially private linear regression", arXiv:1803.02596, Alg. 2):
    noisy X^T X and X^T y and a private estimate of the smallest eigenvalue, priced
    together as three Gaussian mechanisms; no solver.

    Why AdaSSP is never auto's choice: on the synthetic regression family of
    ``benchmarks/bench_frontier.py`` (n = 4,000 to 64,000, d = 5 to 50, epsilon 0.3
    to 8, delta = 1e-5) AMP's held-out R^2 was at least AdaSSP's in every cell and far
    above it where n * epsilon is small against d (n = 16,000, d = 50, epsilon = 1:
    0.930 against 0.374; non-private 0.952): objective perturbation keeps X^T X exact
    and perturbs only the linear term, while AdaSSP's noisy Gram matrix needs a ridge
    that shrinks the fit (docs/frontier.md).
    """
        + _REGRESSOR_DOC
    )

    def __init__(
        self,
        epsilon=1.0,
        delta=1e-5,
        method="auto",
        *,
        y_bound=None,
        y_bounds=None,
        accounting="pld",
        fit_intercept=True,
        intercept_scaling=1.0,
        row_norm="clip",
        row_bound=1.0,
        clip=None,
        lam=None,
        tau=None,
        sigma_out=None,
        noise_factor=1.3,
        solver="auto",
        max_iter=1000,
        epochs=None,
        batch_size=256,
        learning_rate=None,
        optimizer="adam",
        random_state=None,
        budget=None,
    ):
        self.epsilon = epsilon
        self.delta = delta
        self.method = method
        self.y_bound = y_bound
        self.y_bounds = y_bounds
        self.accounting = accounting
        self.fit_intercept = fit_intercept
        self.intercept_scaling = intercept_scaling
        self.row_norm = row_norm
        self.row_bound = row_bound
        self.clip = clip
        self.lam = lam
        self.tau = tau
        self.sigma_out = sigma_out
        self.noise_factor = noise_factor
        self.solver = solver
        self.max_iter = max_iter
        self.epochs = epochs
        self.batch_size = batch_size
        self.learning_rate = learning_rate
        self.optimizer = optimizer
        self.random_state = random_state
        self.budget = budget

    def _loss(self):
        return SquaredLoss()


class DPHuberRegressor(_DPRegressor):
    __doc__ = (
        """(epsilon, delta)-DP Huber regression.

    ``huber_threshold`` is the Huber threshold on the scaled residual (targets in
    [-1, 1]); |f'| <= threshold, so the gradient bound is min(C, threshold * R).
    """
        + _REGRESSOR_DOC
    )

    _parameter_constraints: dict = {
        **_DPRegressor._parameter_constraints,
        "huber_threshold": _positive,
    }

    def __init__(
        self,
        epsilon=1.0,
        delta=1e-5,
        method="auto",
        *,
        huber_threshold=0.5,
        y_bound=None,
        y_bounds=None,
        accounting="pld",
        fit_intercept=True,
        intercept_scaling=1.0,
        row_norm="clip",
        row_bound=1.0,
        clip=None,
        lam=None,
        tau=None,
        sigma_out=None,
        noise_factor=1.3,
        solver="auto",
        max_iter=1000,
        epochs=None,
        batch_size=256,
        learning_rate=None,
        optimizer="adam",
        random_state=None,
        budget=None,
    ):
        self.epsilon = epsilon
        self.delta = delta
        self.method = method
        self.huber_threshold = huber_threshold
        self.y_bound = y_bound
        self.y_bounds = y_bounds
        self.accounting = accounting
        self.fit_intercept = fit_intercept
        self.intercept_scaling = intercept_scaling
        self.row_norm = row_norm
        self.row_bound = row_bound
        self.clip = clip
        self.lam = lam
        self.tau = tau
        self.sigma_out = sigma_out
        self.noise_factor = noise_factor
        self.solver = solver
        self.max_iter = max_iter
        self.epochs = epochs
        self.batch_size = batch_size
        self.learning_rate = learning_rate
        self.optimizer = optimizer
        self.random_state = random_state
        self.budget = budget

    def _loss(self):
        return HuberLoss(self.huber_threshold)
