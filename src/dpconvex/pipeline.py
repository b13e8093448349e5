"""Private pipelines: one privacy event for every step that reads the rows.

A :class:`PrivatePipeline` is a scikit-learn :class:`~sklearn.pipeline.Pipeline` whose
``dp_event_`` is the composition of the events of every step that read the data, and
whose ``epsilon_`` is what the accountant reports for it (adaptive sequential
composition: each step is chosen before the data are seen and reads the output of the
earlier ones; Dwork, Rothblum & Vadhan 2010, "Boosting and Differential Privacy", Thm
III.3, and for the privacy-loss-distribution accountant Dong, Roth & Su 2022, arXiv
1905.02383, Thm 3.2). Every step is one of:

* **private**: it has ``privacy_event(n_samples, n_features)`` (its event, planned from
  public values before fit) and sets ``dp_event_`` when fitted (the dpconvex estimators,
  :mod:`dpconvex.preprocessing`'s encoder); to run on a secret subsample
  (``fit(X, y, public_n=...)``) it also takes ``privacy_event(..., subsample=True)`` and
  ``fit(..., public_n=...)``;
* **public**: wrapped in :class:`Public`, named in ``public=``, ``"passthrough"``, or one
  of the few scikit-learn transformers that learn nothing but the number of columns
  (:data:`~dpconvex.models.session.STATELESS_TRANSFORMERS`).

Any other step learns from the rows without a price, and the pipeline refuses it before
anything is fitted or charged.
"""

from __future__ import annotations

import inspect
from contextlib import contextmanager
from dataclasses import dataclass
from numbers import Real

import numpy as np
from dp_accounting.dp_event import ComposedDpEvent, DpEvent
from sklearn.base import BaseEstimator, TransformerMixin, clone
from sklearn.pipeline import Pipeline, _name_estimators
from sklearn.utils._param_validation import Interval, InvalidParameterError, StrOptions
from sklearn.utils.validation import _num_samples, check_is_fitted

from . import _validation as v
from .accounting import MAX_EPSILON, MIN_EPSILON, PrivacyAccountant, pld_grid
from .models.charge import charge
from .models.session import PURE_DELTA, observe, priced_by_caller, step_reads_rows

__all__ = ["Public", "PrivatePipeline", "make_private_pipeline"]


class Public(TransformerMixin, BaseEstimator):
    """Declare a step public: it learns nothing private from the rows it is fitted on.

    Use it for a transformer fitted on public data (``prefit=True``: the pipeline only
    applies it, never refits it) or one whose fit learns nothing from these rows (a
    row-wise ``FunctionTransformer``, a column selection). The declaration is yours:
    the pipeline cannot check it, and its guarantee assumes it.
    """

    _declared_public = True

    def __init__(self, transformer, *, prefit=False):
        self.transformer = transformer
        self.prefit = prefit

    def fit(self, X, y=None, **params):
        """Fit a clone of ``transformer`` (or, with ``prefit=True``, check it is fitted)."""
        if self.prefit:
            check_is_fitted(self.transformer)
            self.transformer_ = self.transformer
        else:
            self.transformer_ = clone(self.transformer).fit(X, y, **params)
        if hasattr(self.transformer_, "n_features_in_"):
            self.n_features_in_ = self.transformer_.n_features_in_
        return self

    def transform(self, X):
        check_is_fitted(self, "transformer_")
        return self.transformer_.transform(X)

    def get_feature_names_out(self, input_features=None):
        check_is_fitted(self, "transformer_")
        return self.transformer_.get_feature_names_out(input_features)

    def public_n_features_out(self, n_features: int) -> int | None:
        """Columns out for ``n_features`` in, when public settings alone say (else None)."""
        if self.prefit:
            try:
                return len(self.transformer.get_feature_names_out())
            except Exception:  # noqa: BLE001 - unknown: the pipeline then cannot plan
                return None
        return _output_width(self.transformer, n_features)


def _output_width(step, n_features: int) -> int | None:
    """Columns a step outputs for ``n_features`` in, known before fit, or None."""
    if step is None or isinstance(step, str):
        return n_features
    own = getattr(step, "public_n_features_out", None)
    if callable(own):
        width = own(n_features)
        return None if width is None else int(width)
    if not step_reads_rows(step):
        try:  # it learns only the column count: fitting it on one zero row is exact
            zeros = np.zeros((1, n_features))
            return int(clone(step).fit(zeros).transform(zeros).shape[1])
        except Exception:  # noqa: BLE001 - unknown
            return None
    return None


@dataclass(frozen=True)
class _Plan:
    private: tuple[str, ...]  # names of the steps that read the rows, in order
    events: tuple[DpEvent, ...] | None  # their planned events (None: not plannable)
    delta: float
    scales: list  # the private steps' own epsilons (the finest PLD grid to report on)
    why_not: str = ""  # why the events could not be planned before fit


_positive_or_none = [None, Interval(Real, 0, None, closed="neither")]


class PrivatePipeline(Pipeline):
    """A scikit-learn Pipeline whose privacy guarantee covers every step that reads the rows.

    Parameters
    ----------
    steps : list of (name, estimator)
        As for :class:`~sklearn.pipeline.Pipeline`. Each step is private (it prices what
        it reads: ``privacy_event`` and ``dp_event_``) or public (see the module doc);
        any other step is refused before anything is fitted.
    epsilon, delta : float, optional
        The total the pipeline must meet. The steps keep their own budgets (their shares:
        e.g. an encoder with ``epsilon=0.1`` and an estimator with ``epsilon=0.9``);
        before any step runs, the composition of their planned events is priced at
        ``delta`` and the fit is refused if it exceeds ``epsilon``. Without ``epsilon``
        nothing is checked; ``delta`` defaults to the largest delta of the private steps.
    budget : None, Budget or path
        A :class:`dpconvex.Budget` ledger charged once with the composition of the
        planned events before any step reads the data; the private steps must then have
        no ``budget`` of their own (it would charge them again).
    public : list of str, optional
        Names of steps declared public, as if wrapped in :class:`Public`.
    accounting : {"pld", "rdp"}
        The accountant that prices the composition (default "pld").
    memory, verbose
        As for :class:`~sklearn.pipeline.Pipeline`.

    Attributes
    ----------
    dp_event_ : ComposedDpEvent
        The events of the steps that read the rows, in order.
    epsilon_, delta_ : float
        What the accountant reports for ``dp_event_``.
    private_steps_ : list of str
        The names of those steps.
    """

    _composes_steps = True  # the session record does not warn about our own steps

    _parameter_constraints: dict = {
        **Pipeline._parameter_constraints,
        "epsilon": [None, Interval(Real, MIN_EPSILON, MAX_EPSILON, closed="both")],
        "delta": [None, Interval(Real, 0, 1, closed="neither")],
        "budget": "no_validation",
        "public": [None, list, tuple],
        "accounting": [StrOptions({"pld", "rdp"})],
    }

    def __init__(
        self,
        steps,
        *,
        epsilon=None,
        delta=None,
        budget=None,
        public=None,
        accounting="pld",
        memory=None,
        verbose=False,
    ):
        super().__init__(steps, memory=memory, verbose=verbose)
        self.epsilon = epsilon
        self.delta = delta
        self.budget = budget
        self.public = public
        self.accounting = accounting

    # -- the plan, before any step reads the data --------------------------------------
    def _check_settings(self) -> set:
        self._validate_params()
        for name in ("epsilon", "delta"):
            if isinstance(getattr(self, name), bool | np.bool_):
                raise InvalidParameterError(f"{name} must be a number, not a bool")
        self._validate_steps()
        public = set(self.public or ())
        names = {name for name, _ in self.steps}
        if not all(isinstance(p, str) for p in public) or not public <= names:
            raise ValueError(
                f"public must list step names of this pipeline ({sorted(names)}); "
                f"got {sorted(map(str, public))}"
            )
        return public

    def _private_steps(self, public: set) -> list:
        """(name, step) of the steps that read the rows; refuse a step that reads unpriced."""
        out = []
        for name, step in self.steps:
            if name in public or not step_reads_rows(step):
                continue
            if not callable(getattr(step, "privacy_event", None)):
                raise ValueError(
                    f"step {name!r} ({type(step).__name__}) learns from the rows without a "
                    "privacy event: use a private step (dpconvex.preprocessing for scaling "
                    f"and encoding), or declare it public with dpconvex.Public(step) or "
                    f"public=[{name!r}] if it was fitted on public data or learns nothing "
                    "from these rows"
                )
            if self.budget is not None and getattr(step, "budget", None) is not None:
                raise ValueError(
                    f"step {name!r} has a budget of its own; with budget= on the pipeline "
                    "the pipeline charges every step once: remove the step's budget"
                )
            out.append((name, step))
        return out

    def reading_steps(self) -> list:
        """(name, step) of the steps that read the rows and price it, in order.

        Checks the settings first and refuses, with one ``ValueError`` naming it, a step
        that learns from the rows without a privacy event (nothing is fitted).
        """
        return self._private_steps(self._check_settings())

    def _plan(self, n_samples: int, n_features: int, subsample: bool = False) -> _Plan:
        """Every private step's event from public values (n, the column counts, settings).

        ``subsample``: the rows will be a secret subsample of public expected size
        n_samples; every private step must be able to run there (see the module doc).
        """
        public = self._check_settings()
        private = self._private_steps(public)
        if subsample:
            _check_subsample_steps(private)
        names = [name for name, _ in private]
        deltas = [float(getattr(step, "delta", None) or 0.0) for _, step in private]
        delta = float(self.delta) if self.delta is not None else max(deltas, default=0.0)
        delta = delta if delta > 0 else PURE_DELTA
        scales = [getattr(step, "epsilon", None) for _, step in private]
        scales = [float(e) for e in scales if isinstance(e, Real) and not isinstance(e, bool)]
        events, width, why_not = [], n_features, ""
        for index, (name, step) in enumerate(self.steps):
            if width is None and name in names:
                why_not = f"step {name!r} follows a step whose number of output columns "
                why_not += "is not known before fit"
                return _Plan(tuple(names), None, delta, scales, why_not)
            if name in names:
                sized = {"subsample": True} if subsample else {}
                events.append(step.privacy_event(n_samples, width, **sized))
            if index < len(self.steps) - 1:
                width = _output_width(_public_view(step, name in public), width)
        return _Plan(tuple(names), tuple(events), delta, scales)

    def _spent(self, events, delta: float, scales: list[float]) -> float:
        """epsilon at ``delta`` of the events' composition, on the PLD grid of the target
        epsilon or, without one, the finest grid the steps calibrated on (``scales``: their
        epsilons); discretization only ever overestimates."""
        event = ComposedDpEvent(list(events))
        scale = self.epsilon if self.epsilon is not None else min(scales, default=1.0)
        h = pld_grid(scale)
        accountant = PrivacyAccountant(self.accounting, value_discretization_interval=h)
        return float(accountant.compose(event).get_epsilon(delta))

    def _checked_plan(self, X, public_n: int | None = None) -> _Plan:
        # a run on a secret subsample is planned for its public expected size, never for
        # the subsample's actual size
        n = _num_samples(X) if public_n is None else public_n
        d = _n_columns(X)
        plan = self._plan(n, d, subsample=public_n is not None)
        needs_plan = self.epsilon is not None or self.budget is not None
        if plan.events is None and needs_plan:
            raise ValueError(
                f"the pipeline cannot price its steps before fitting ({plan.why_not}); "
                "give that step a public_n_features_out method, or drop epsilon= and "
                "budget= from the pipeline and check epsilon_ after the fit"
            )
        if self.epsilon is not None:
            spent = self._spent(plan.events, plan.delta, plan.scales)
            if spent > self.epsilon * (1 + 1e-9):
                raise ValueError(
                    f"the steps' own budgets compose to epsilon={spent:.4g} at "
                    f"delta={plan.delta:g}, above the pipeline's epsilon={self.epsilon:g}: "
                    "lower the steps' epsilon (their shares of the total) so that they "
                    "compose within it"
                )
        return plan

    def privacy_event(self, n_samples: int, n_features: int, *, subsample: bool = False) -> DpEvent:
        """The composition the pipeline would spend on data of this shape (no data read).

        ``subsample=True``: what ``fit(X, y, public_n=n_samples)`` spends on a secret
        subsample of public expected size n_samples (each private step is asked with
        ``subsample=True``).
        """
        plan = self._plan(int(n_samples), int(n_features), subsample=bool(subsample))
        if plan.events is None:
            raise ValueError(f"the pipeline cannot price its steps before fitting ({plan.why_not})")
        return ComposedDpEvent(list(plan.events))

    def public_n_features_out(self, n_features: int) -> int | None:
        """Columns out for ``n_features`` in, when public settings alone say (else None)."""
        return self._width(n_features, len(self.steps))

    def final_n_features_in(self, n_features: int) -> int | None:
        """Columns the last step receives for ``n_features`` in (None: not known before fit)."""
        return self._width(n_features, len(self.steps) - 1)

    def _width(self, n_features: int, n_steps: int) -> int | None:
        public = set(self.public or ())
        width = n_features
        for name, step in self.steps[:n_steps]:
            if width is None:
                return None
            width = _output_width(_public_view(step, name in public), width)
        return width

    # -- fitting --------------------------------------------------------------------
    @contextmanager
    def _priced(self, X, public_n):
        """Plan and charge before any step reads X; fit the steps; compose their events.

        Yields the fit parameters that give ``public_n`` (checked here) to every private
        step, in Pipeline's ``<step>__<parameter>`` form; none without it.
        """
        public_n = v.public_n(public_n)
        plan = self._checked_plan(X, public_n)
        if plan.events is not None and self.budget is not None:
            self._check_input(X)  # a table the first step refuses spends nothing
        if plan.events is not None:
            charge(
                self.budget,
                ComposedDpEvent(list(plan.events)),
                mechanism=f"PrivatePipeline({', '.join(plan.private)})",
                label=f"fit on {_num_samples(X)} rows x {_n_columns(X)} columns",
                rows=X,
                delta=plan.delta,
            )
        routed = {"__".join((name, "public_n")): public_n for name in plan.private}
        with priced_by_caller():  # the steps' own fits are this pipeline's event
            yield routed if public_n is not None else {}
        self._set_privacy(plan)
        if plan.events is None:  # recorded once the events are known
            observe(self.dp_event_, rows=X, delta=plan.delta)

    def _check_input(self, X) -> None:
        """The first step's own input check (``check_input``, e.g. the encoder's), if any."""
        first = self.steps[0][1] if self.steps else None
        if isinstance(first, Public):
            return
        check = getattr(first, "check_input", None)
        if callable(check):
            check(X)

    def _set_privacy(self, plan: _Plan) -> None:
        steps = dict(self.steps)
        events = []
        for i, name in enumerate(plan.private):
            event = getattr(steps[name], "dp_event_", None)
            if not isinstance(event, DpEvent):
                raise RuntimeError(f"step {name!r} set no dp_event_ when fitted; not released")
            if plan.events is not None and event != plan.events[i]:
                raise RuntimeError(
                    f"step {name!r} ran an event other than the one planned and charged; "
                    "not released"
                )
            events.append(event)
        self.dp_event_ = ComposedDpEvent(events)
        spent = self._spent(events, plan.delta, plan.scales) if events else 0.0
        if self.epsilon is not None and spent > self.epsilon * (1 + 1e-9):
            raise RuntimeError(  # the plan was checked with the same accountant
                f"the accountant reports epsilon={spent} above {self.epsilon}; not released"
            )
        self.epsilon_ = spent
        self.delta_ = plan.delta
        self.private_steps_ = list(plan.private)

    def fit(self, X, y=None, *, public_n=None, **params):
        """Check and price every step, charge the budget once, then fit as a Pipeline.

        Parameters
        ----------
        X : table
            What the first step reads.
        y : array-like of shape (n_samples,), optional
            The targets of the last step.
        public_n : int, optional
            When ``X`` is a secret subsample (e.g. a Poisson sample in a private search),
            the public expected number of rows it was drawn for: the steps are planned
            and calibrated for ``public_n``, never for X's actual row count. Every step
            that reads the rows is fitted with ``public_n=public_n``; one that cannot run
            on a subsample (its ``fit`` takes no ``public_n``, or its method's guarantee
            depends on the row count) is refused before anything is charged.
        **params
            Fit parameters of the steps, as for :class:`~sklearn.pipeline.Pipeline`.

        Returns
        -------
        self : PrivatePipeline
            The fitted pipeline.
        """
        with self._priced(X, public_n) as routed:
            super().fit(X, y, **params, **routed)
        return self

    def fit_transform(self, X, y=None, *, public_n=None, **params):
        """Fit every step as :meth:`fit` does (one priced event, ``public_n`` as there),
        then transform ``X``."""
        with self._priced(X, public_n) as routed:
            out = super().fit_transform(X, y, **params, **routed)
        return out

    def fit_predict(self, X, y=None, *, public_n=None, **params):
        """Fit every step as :meth:`fit` does (one priced event, ``public_n`` as there),
        then predict on ``X``."""
        with self._priced(X, public_n) as routed:
            out = super().fit_predict(X, y, **params, **routed)
        return out


def _takes(method, name: str) -> bool:
    """Whether ``method`` accepts the keyword argument ``name`` (or any keyword)."""
    try:
        parameters = inspect.signature(method).parameters.values()
    except (TypeError, ValueError):  # no signature to read: not known to take it
        return False
    return any(
        p.name == name and p.kind is not p.POSITIONAL_ONLY or p.kind is p.VAR_KEYWORD
        for p in parameters
    )


def _check_subsample_steps(private: list) -> None:
    """Refuse a private step that cannot run on a secret subsample: its ``fit`` must take
    ``public_n`` and its ``privacy_event`` ``subsample`` (it is calibrated for the public
    size, never the subsample's)."""
    for name, step in private:
        if not (_takes(step.fit, "public_n") and _takes(step.privacy_event, "subsample")):
            raise ValueError(
                f"step {name!r} ({type(step).__name__}) cannot run on a secret subsample: "
                "its fit takes no public_n (or its privacy_event no subsample), so it "
                "would be calibrated for the subsample's actual row count"
            )


def _public_view(step, declared: bool):
    """A step named in ``public=`` is treated as if wrapped in :class:`Public`."""
    return Public(step) if declared and not isinstance(step, Public | str) else step


def _n_columns(X) -> int:
    shape = getattr(X, "shape", None)
    if shape is not None and len(shape) == 2:
        return int(shape[1])
    try:
        return int(np.shape(X)[1])
    except Exception:  # noqa: BLE001 - one clear error for a table that is not 2-D
        raise ValueError("X must be a 2-D table (rows x columns)") from None


def make_private_pipeline(*steps, **settings) -> PrivatePipeline:
    """A :class:`PrivatePipeline` whose steps are named after their classes (as
    :func:`sklearn.pipeline.make_pipeline` names them; ``Public(StandardScaler())`` is
    "public_standardscaler").

    ``settings`` are the keyword arguments of :class:`PrivatePipeline`, with its defaults
    (the signature shown is the pipeline's own: one definition of them).
    """
    unknown = [name for name in settings if name not in _SETTINGS]
    if unknown:
        raise TypeError(
            f"make_private_pipeline() got an unexpected keyword argument {unknown[0]!r}"
        )
    named = [
        (f"public_{type(step.transformer).__name__.lower()}" if name.startswith("public")
         and isinstance(step, Public) else name, step)
        for name, step in _name_estimators(steps)
    ]  # fmt: skip
    return PrivatePipeline(named, **settings)


def _settings() -> list[inspect.Parameter]:
    """The keyword arguments of PrivatePipeline after ``steps``: make_private_pipeline's."""
    return list(inspect.signature(PrivatePipeline).parameters.values())[1:]


_SETTINGS = frozenset(parameter.name for parameter in _settings())
make_private_pipeline.__signature__ = inspect.Signature(
    [inspect.Parameter("steps", inspect.Parameter.VAR_POSITIONAL), *_settings()],
    return_annotation=PrivatePipeline,
)
