"""One step from a raw table to a private model: :func:`make_table_model`.

The documented default recipe: a :class:`~dpconvex.preprocessing.TableEncoder` for the
declared schema (bounds it leaves open estimated privately), then a linear model that
clips rows at the schema's public row bound, in one :class:`~dpconvex.PrivatePipeline`
whose guarantee covers both steps. The total epsilon is split by the derived default
:func:`~dpconvex.preprocessing.split_epsilon` (which needs the public number of rows):
the encoder's pure (e_b, 0)-DP and the model's (e_m, delta)-DP compose to
(e_b + e_m, delta) = (epsilon, delta) by basic composition (Dwork & Roth 2014, "The
algorithmic foundations of differential privacy", Thm 3.16); the pipeline reports the
tighter accountant figure and refuses a plan above ``epsilon``.

Regression without a public target range: ``y_search_range`` (a generous public range)
with ``y_bounds=None`` or an end ``None`` estimates the open ends with the same
quantile mechanism (:class:`TargetBoundsRegressor`), priced in the pipeline's event.
The defaults were derived by ``benchmarks/derive_target_bounds.py`` on synthetic
tables (n 300 to 3000, epsilon 0.5 to 4, a positive lognormal target of unknown scale
searched in a range 1000 times its scale; 4 seeds, R^2 floored at -1):

* the target's ends are searched on the log scale when the range starts at 0 or above
  (:func:`_target_scale`): on the linear scale a generous range made the estimate land
  far beyond the data, and predictions scale with the bound (R^2 of -2,700 on a
  436-row house table at epsilon 1, against 0.15 on the log scale);
* quantiles: the features' rule (:data:`TARGET_MAX_QUANTILE` = 0.25 as cap; caps 0.05
  and 0.1 had mean regret 0.22-0.25 R^2 against 0.02-0.06, landing outside the data
  at small epsilon times n);
* :data:`TARGET_WEIGHT` = 2: a target end gets twice a feature end's epsilon (mean
  regret 0.021 R^2, against 0.031 for 1, 0.039 for 4 and 0.058 for 8).

A positive target with both ends open is centred at its private median instead
(:class:`TargetBoundsRegressor`, :data:`TARGET_SPREAD` = 3), and so is a feature with
both ends open (:data:`~dpconvex.preprocessing.encoder.FEATURE_SPREAD`), from two
quantile mechanisms each: the median m, then the median u of the distances to m; the
range is m +- 3 u. Derived by ``benchmarks/derive_target_centring.py`` on synthetic
tables (n 300 to 1000, epsilon 0.5 to 4, four target families: lognormal with
log-noise 0.2 and 0.6, and a level 3 or 8 times the spread; 5 seeds, 36 cells): mean R^2
0.398 (mean regret 0.010) against 0.349 (regret 0.059) when the spread is m minus the
lower quartile (the first centred rule: the quartile, n / 4 values from the data's end,
often landed far below the data at the bounds' small epsilon) and 0.109 (regret 0.299)
for the two ends' quantiles; 0.298 with only the target centred (first rule); spread 4 instead of 3:
regret 0.018; target weight 1: regret 0.106; one median and (0, 2 m) (a single
quantile): regret 0.228, failing on targets far from 0. The bounds' default share of
epsilon (derived for the two ends' rule) was rechecked with this rule against fixed
shares (``--shares 0.2 0.3``, same cells): mean R^2 0.398 against -0.007 and 0.164; a
smaller share leaves the medians too little epsilon at small n epsilon.
"""

from __future__ import annotations

import math

import numpy as np
from dp_accounting.dp_event import ComposedDpEvent, SelfComposedDpEvent
from sklearn.base import BaseEstimator, RegressorMixin, clone

from . import _validation as v
from ._random import make_rng
from .models import DPLinearRegression, DPLogisticRegression
from .models.charge import charge
from .models.linear import MIN_TARGET_WIDTH
from .pipeline import PrivatePipeline, _n_columns
from .preprocessing import Schema, TableEncoder, schema_from_dict, split_epsilon
from .preprocessing.centring import centred_range, prefer_centred
from .preprocessing.defaults import default_quantiles
from .preprocessing.quantile import (
    check_range,
    private_centre,
    private_quantile,
    quantile_event,
)

__all__ = ["TargetBoundsRegressor", "make_table_model"]

TASKS = ("classification", "regression")


def make_table_model(
    schema: Schema | dict,
    *,
    n_samples: int,
    epsilon: float,
    delta: float,
    task: str = "classification",
    classes=None,
    y_bounds: tuple[float | None, float | None] | None = None,
    y_search_range: tuple[float, float] | None = None,
    method: str = "auto",
    accounting: str = "pld",
    encoder_share: float | None = None,
    random_state=None,
    budget=None,
) -> PrivatePipeline:
    """A private pipeline (encoder, model) for a raw table, within (epsilon, delta) in total.

    Parameters
    ----------
    schema : Schema or dict
        The declared columns (see :mod:`dpconvex.preprocessing.schema`). Bounds left open
        are estimated privately and paid from ``epsilon``.
    n_samples : int
        The number of training rows. It is public in dpconvex's guarantee (as everywhere
        in the library) and sets the encoder's default share of ``epsilon``.
    epsilon, delta : float
        The total budget of the fitted pipeline (encoder and model together).
    task : {"classification", "regression"}
        Logistic regression (labels in ``classes``) or least-squares regression (targets
        clipped to ``y_bounds``).
    classes : list, optional
        The declared label set for classification (default ``[0, 1]``).
    y_bounds : (low, high), optional
        For regression: the public range the targets are clipped to, chosen without
        looking at the data. An end given as ``None`` (or ``y_bounds=None``) is
        estimated privately inside ``y_search_range`` (:class:`TargetBoundsRegressor`),
        paid from the bounds' share of ``epsilon`` like the encoder's.
    y_search_range : (low, high), optional
        A generous public range of the target (e.g. (0, 1e7) for a house price in
        dollars), needed when an end of ``y_bounds`` is estimated.
    method : str
        The training method (default ``"auto"``: chosen from public sizes).
    accounting : {"pld", "rdp"}
        How the model's noise is calibrated and the pipeline's total is priced.
    encoder_share : float, optional
        Share of ``epsilon`` for the estimated bounds (the features' and the target's
        together), in (0, 1); default the derived
        :func:`~dpconvex.preprocessing.default_share`.
    random_state : None, int or SeedSequence
        Seeds both steps (independent child streams); None draws from OS entropy.
    budget : Budget, path or None
        A ledger charged once with the pipeline's composed event before any step reads
        the data.
    """
    if task not in TASKS:
        raise ValueError(f"task must be one of {list(TASKS)}, got {task!r}")
    parsed = schema_from_dict(schema)
    if isinstance(n_samples, bool) or not isinstance(n_samples, int | np.integer):
        raise TypeError("n_samples must be an integer (the number of training rows)")
    if n_samples < 1:
        raise ValueError("n_samples must be at least 1")
    y_open = _open_target_ends(task, classes, y_bounds, y_search_range)
    m_x = parsed.n_estimated
    eps_bounds, eps_model = split_epsilon(
        epsilon, m_x + y_open, int(n_samples), share=encoder_share
    )
    eps_x, eps_y = _share_bounds(eps_bounds, m_x, y_open)
    seeds = _child_seeds(random_state, 3)
    common = {
        "epsilon": eps_model,
        "delta": delta,
        "method": method,
        "accounting": accounting,
        "row_norm": "clip",
        "row_bound": parsed.row_bound(),
        "random_state": seeds[1],
    }
    if task == "classification":
        model = DPLogisticRegression(classes=classes, **common)
    elif y_open:
        model = TargetBoundsRegressor(
            DPLinearRegression(**common),
            y_bounds=(None, None) if y_bounds is None else tuple(y_bounds),
            y_search_range=tuple(y_search_range),
            epsilon=eps_y,
            random_state=seeds[2],
        )
    else:
        model = DPLinearRegression(y_bounds=y_bounds, **common)
    encoder = TableEncoder(parsed, epsilon=eps_x if m_x else None, random_state=seeds[0])
    return PrivatePipeline(
        [("encoder", encoder), ("model", model)],
        epsilon=epsilon,
        delta=delta,
        budget=budget,
        accounting=accounting,
    )


def _open_target_ends(task: str, classes, y_bounds, y_search_range) -> int:
    """How many ends of the target's bounds are estimated (0 for classification)."""
    if task == "classification":
        if y_bounds is not None or y_search_range is not None:
            raise ValueError(
                "y_bounds and y_search_range are for regression; classification takes classes"
            )
        return 0
    if classes is not None:
        raise ValueError("classes is for classification; regression takes y_bounds")
    if y_bounds is None and y_search_range is None:
        raise ValueError(
            "regression needs y_bounds=(low, high), the public range of the target, or "
            "y_search_range=(low, high), a generous public range in which the bounds are "
            "estimated privately (both chosen without looking at the data)"
        )
    if y_bounds is not None and (
        isinstance(y_bounds, str | bytes) or not hasattr(y_bounds, "__len__") or len(y_bounds) != 2
    ):
        raise ValueError(f"y_bounds must be a pair (low, high), got {y_bounds!r}")
    open_ends = 2 if y_bounds is None else sum(b is None for b in y_bounds)
    if open_ends and y_search_range is None:
        raise ValueError("an end of y_bounds left as None needs y_search_range=(low, high)")
    if not open_ends and y_search_range is not None:
        raise ValueError("y_search_range is only used when an end of y_bounds is None")
    return open_ends


#: Largest default quantile distance from an end for the target's estimated bounds.
TARGET_MAX_QUANTILE = 0.25
#: Weight of one estimated target end against one estimated feature end in the split.
TARGET_WEIGHT = 2.0


def target_quantiles(epsilon_each: float, n: int) -> tuple[float, float]:
    """(q, 1 - q) for the target: the features' rule (:func:`~dpconvex.preprocessing.
    default_quantiles`) capped at :data:`TARGET_MAX_QUANTILE`."""
    q = min(TARGET_MAX_QUANTILE, default_quantiles(epsilon_each, n)[0])
    return q, 1.0 - q


#: The half-width of a positive target's default range in units of its private median
#: absolute deviation (:func:`centred_target_bounds`; 3 is ~2 standard deviations of a
#: normal).
TARGET_SPREAD = 3.0


def centred_target_bounds(
    median: float, unit: float, lower: float, upper: float
) -> tuple[float, float]:
    """The default range of a positive target from its private median and spread.

    :func:`~dpconvex.preprocessing.centring.centred_range` at :data:`TARGET_SPREAD`: the
    median +- TARGET_SPREAD x unit (the private median absolute deviation,
    :func:`~dpconvex.preprocessing.centring.private_centre`), within [lower, upper]
    (post-processing of the two released quantiles, no privacy cost). Centred at the
    median, it clips a skewed target about evenly on both sides instead of a quarter of
    the targets at each end.
    """
    return centred_range(median, unit, lower, upper, TARGET_SPREAD)


def _share_bounds(eps_bounds: float, m_x: int, m_y: int) -> tuple[float, float]:
    """The bounds' epsilon split between the encoder and the target: each target end
    weighs :data:`TARGET_WEIGHT` feature ends."""
    if not m_y:
        return eps_bounds, 0.0
    if not m_x:
        return 0.0, eps_bounds
    eps_x = eps_bounds * m_x / (m_x + TARGET_WEIGHT * m_y)
    eps_y = eps_bounds - eps_x
    while eps_x + eps_y > eps_bounds:  # never above the bounds' share after rounding
        eps_y = math.nextafter(eps_y, 0.0)
    return eps_x, eps_y


def _child_seeds(random_state, count: int) -> tuple:
    """Independent seeds for the steps (encoder, model, target bounds); None: OS entropy.

    The first two are the children an earlier version drew for (encoder, model), so a
    seeded classification pipeline is reproduced exactly.
    """
    if random_state is None:
        return (None,) * count
    if isinstance(random_state, np.random.Generator | np.random.SeedSequence):
        return tuple(random_state.spawn(count))
    if isinstance(random_state, int | np.integer) and not isinstance(random_state, bool):
        if random_state < 0:
            raise ValueError(f"random_state must be >= 0, got {random_state}")
        return tuple(np.random.SeedSequence(int(random_state)).spawn(count))
    raise TypeError(
        "random_state must be None (OS entropy), a non-negative int, a numpy SeedSequence "
        f"or a numpy Generator; got {type(random_state).__name__}"
    )


class TargetBoundsRegressor(RegressorMixin, BaseEstimator):
    """A :class:`~dpconvex.DPLinearRegression` whose target bounds are estimated privately.

    The ends of ``y_bounds`` given as ``None`` are exponential-mechanism quantiles of the
    targets inside the public ``y_search_range`` (Smith 2011; Gillenwater, Joseph &
    Kulesza 2021, arXiv 2102.08244, Sec. 3; :mod:`dpconvex.preprocessing.quantile`), each
    (epsilon_bounds / m, 0)-DP at the default quantiles
    :func:`~dpconvex.preprocessing.default_quantiles`; the model then fits with those
    bounds at its own (epsilon, delta).

    A positive target (``y_search_range`` starting at 0 or above) with both ends open and
    no ``quantiles`` given is centred instead: the two mechanisms estimate its median
    and the median distance of the targets to it, and the range is symmetric about the
    median (:func:`centred_target_bounds`). Same event (two (epsilon / 2, 0)-DP
    quantiles), the range is post-processing. Derived on synthetic tables
    (``benchmarks/derive_target_centring.py``; the module doc has the numbers): the two
    ends' quantiles clip up to a quarter of the targets at each end at small n epsilon,
    which cost more R^2 than the noise of a wider range.

    The event is the quantiles' and the model's composed (basic composition: Dwork &
    Roth 2014, "The algorithmic foundations of differential privacy", Thm 3.16, bounds
    the sum; the accountant prices it exactly).
    Used as the last step of a :class:`~dpconvex.PrivatePipeline`
    (:func:`make_table_model` builds it), which charges a ledger once for every step.
    """

    #: share of ``y_search_range`` a narrower estimate is widened to (see
    #: :func:`widened_target_bounds`)
    MIN_WIDTH = 1e-6

    def __init__(
        self,
        model,
        *,
        y_bounds=(None, None),
        y_search_range=None,
        epsilon=None,
        quantiles=None,
        random_state=None,
    ):
        self.model = model
        self.quantiles = quantiles
        self.y_bounds = y_bounds
        self.y_search_range = y_search_range
        self.epsilon = epsilon
        self.random_state = random_state

    @property
    def delta(self):
        """The model's delta (the quantiles are pure DP): what a pipeline reports at."""
        return getattr(self.model, "delta", None)

    def _todo(self) -> list[int]:
        return [k for k in (0, 1) if self.y_bounds[k] is None]

    def _centred(self, lower: float) -> bool:
        """The default rule for a positive target (see the class doc): both ends open, no
        quantiles given, a search range starting at 0 or above."""
        return self.quantiles is None and len(self._todo()) == 2 and lower >= 0.0

    def _each(self) -> float:
        """The epsilon of each estimated end (never composing above ``epsilon``)."""
        m = len(self._todo())
        total = v.positive("epsilon", self.epsilon)
        each = total / m
        while each * m > total:
            each = math.nextafter(each, 0.0)
        return each

    def _check(self) -> tuple[float, float]:
        if len(self.y_bounds) != 2 or not self._todo():
            raise ValueError("y_bounds must be a pair (low, high) with an end left as None")
        if self.y_search_range is None:
            raise ValueError(
                "an estimated target bound needs y_search_range=(low, high): a generous "
                "public range of the target, known without the data"
            )
        lower, upper = check_range(*self.y_search_range)
        if not minimum_target_width(lower, upper) <= upper - lower:
            raise ValueError(
                "y_search_range is too narrow for the size of its numbers (the bounds' width "
                f"must be at least {2 * MIN_TARGET_WIDTH:g} x their magnitude); shift the "
                "target by a public constant or widen the range"
            )
        for x in self.y_bounds:
            if x is not None and not lower <= v.finite("y_bounds", x) <= upper:
                raise ValueError("a declared end of y_bounds must lie in y_search_range")
        return lower, upper

    def _quantile_event(self):
        event = quantile_event(self._each())
        m = len(self._todo())
        return event if m == 1 else SelfComposedDpEvent(event, m)

    def privacy_event(self, n_samples: int, n_features: int, *, subsample: bool = False):
        """The quantiles' and the model's events composed (public sizes only).

        ``subsample=True``: the event of ``fit(X, y, public_n=n_samples)`` on a secret
        subsample (the model's, asked the same way; the quantiles' does not depend on it).
        """
        self._check()
        sized = {"subsample": True} if subsample else {}
        model_event = self.model.privacy_event(n_samples, n_features, **sized)
        return ComposedDpEvent([self._quantile_event(), model_event])

    def fit(self, X, y, *, public_n=None):
        """Estimate the open ends of ``y_bounds`` privately, then fit the model with them.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            The rows, as the model reads them.
        y : array-like of shape (n_samples,)
            The targets.
        public_n : int, optional
            When ``X`` is a secret subsample (e.g. a Poisson sample in a private search),
            the public expected number of rows it was drawn for: the default quantiles
            and the model are calibrated for ``public_n``, never for X's actual row
            count; a model method whose guarantee depends on the row count refuses.

        Returns
        -------
        self : TargetBoundsRegressor
            The fitted regressor.
        """
        public_n = v.public_n(public_n)
        lower, upper = self._check()
        y = np.asarray(y, dtype=np.float64).ravel()
        if y.size == 0 or not np.all(np.isfinite(y)):
            raise ValueError("y must be finite numbers (drop or fill missing targets)")
        rows = y.size if public_n is None else public_n  # what the quantiles are chosen for
        if public_n is not None:  # a model that cannot run there: refused before the quantiles
            bounded = clone(self.model).set_params(y_bounds=(lower, upper), y_bound=None)
            bounded.privacy_event(public_n, _n_columns(X), subsample=True)
        each = self._each()
        event = self._quantile_event()
        charge(
            None,
            event,
            mechanism=type(self).__name__,
            label="private target bounds",
            rows=X,
            delta=0.0,
        )
        rng = make_rng(self.random_state)
        fwd, back = _target_scale(lower)
        clipped = np.clip(y, lower, upper)
        if self._centred(lower) and prefer_centred(
            target_quantiles(each, rows)[0], TARGET_SPREAD
        ):  # the default, while the two ends' quantiles would clip more
            median, unit = private_centre(clipped, each, lower, upper, rng, (fwd, back))
            low, high = centred_target_bounds(median, unit, lower, upper)
        else:
            a, b = fwd(lower), fwd(upper)
            scaled = np.clip(fwd(clipped), a, b)
            qs = self.quantiles or target_quantiles(each, rows)
            ends = list(self.y_bounds)
            for k in self._todo():
                ends[k] = float(back(private_quantile(scaled, qs[k], each, a, b, rng)))
            low, high = sorted(float(e) for e in ends)  # post-processing
        self.y_bounds_ = widened_target_bounds(low, high, lower, upper)
        self.model_ = clone(self.model).set_params(y_bounds=self.y_bounds_, y_bound=None)
        self.model_.fit(X, y, public_n=public_n)
        self.dp_event_ = ComposedDpEvent([event, self.model_.dp_event_])
        self.n_features_in_ = self.model_.n_features_in_
        for name in ("coef_", "intercept_", "method_", "method_reason_"):
            if hasattr(self.model_, name):
                setattr(self, name, getattr(self.model_, name))
        return self

    def predict(self, X):
        return self.model_.predict(X)


def minimum_target_width(lower: float, upper: float) -> float:
    """The public width the estimated target bounds are widened to when narrower.

    ``TargetBoundsRegressor.MIN_WIDTH`` of the search range, and at least twice the
    regressors' smallest relative width (``MIN_TARGET_WIDTH`` x max(|lo|, |hi|), with the
    search range's magnitude bounding the pair's), so that the model never refuses the
    bounds after the quantiles have run (a refusal there would depend on the data).
    """
    magnitude = max(abs(lower), abs(upper))
    return max(TargetBoundsRegressor.MIN_WIDTH * (upper - lower), 2 * MIN_TARGET_WIDTH * magnitude)


def widened_target_bounds(low: float, high: float, lower: float, upper: float) -> tuple:
    """(low, high) widened about its centre to :func:`minimum_target_width` when narrower,
    then moved back inside [lower, upper] (post-processing of the released quantiles:
    Dwork & Roth 2014, Prop. 2.1). The result contains the given pair."""
    width = minimum_target_width(lower, upper)
    if high - low >= width:
        return low, high
    centre = low / 2 + high / 2
    low, high = centre - width / 2, centre + width / 2
    if low < lower:
        low, high = lower, lower + width
    elif high > upper:
        low, high = upper - width, upper
    return float(low), float(high)


def _target_scale(lower: float):
    """(forward, back): the scale the target's quantiles are searched on.

    log1p when the public search range starts at 0 or above (a positive target: prices,
    counts, amounts), else the identity. A quantile searched on a monotone transform of
    the values is the same mechanism with the same guarantee (its utility counts ranks);
    what changes is the chance of a draw in the empty part of the range beyond the data,
    about (range / spread of the tail) exp(-epsilon m / 2): for a price in dollars
    searched in [0, 1e7] with a tail spread of 3e4 that ratio is ~300 on the linear scale
    and ~ln(1e7) / 0.5 ~ 30 on the log scale, so a generous range costs ~2.3 / epsilon
    fewer rows of margin (Smith 2011; Gillenwater, Joseph & Kulesza 2021, Sec. 3).
    """
    if lower >= 0.0:
        return np.log1p, np.expm1
    return (lambda x: x), (lambda x: x)
