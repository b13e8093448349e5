"""What a private search tunes: one dpconvex estimator, or a PrivatePipeline of private steps.

:class:`~dpconvex.tuning.PrivateRandomSearch` treats both through :class:`Target`: the
steps that read the rows (one for an estimator; for a pipeline, every private step,
e.g. a ``TableEncoder`` then the estimator), the share of each run's budget each one
gets, and the model step the search scores.

**The split of a run's budget.** The search calibrates one per-run epsilon (the
``run_epsilon_`` it reports). A pipeline's private steps keep the proportions of their
own declared epsilons: a step declared with epsilon e_i runs at
``e_i / sum_j e_j * run_epsilon`` (a step whose event is empty, such as an encoder
whose schema declares every bound, gets no share). The model step runs at the search's
delta. The split is a choice of which mechanism runs, made from public settings before
the data are read; the search then prices exactly the composed event of the steps so
configured (adaptive sequential composition: Dwork, Rothblum & Vadhan 2010, "Boosting
and Differential Privacy", Thm III.3), so no split can spend more than the accountant
reports. Basic composition (Dwork & Roth 2014, "The algorithmic foundations of
differential privacy", Thm 3.16) makes the shares add up to at most the run epsilon at
the model's delta; the PLD accountant usually reports less.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from numbers import Real

from dp_accounting.dp_event import NoOpDpEvent
from sklearn.base import ClassifierMixin

from ..accounting import MIN_EPSILON, CalibrationError
from ..preprocessing.defaults import default_quantiles
from ..preprocessing.encoder import TableEncoder
from ..preprocessing.schema import schema_from_dict

#: settings of every private step that the search itself sets
STEP_RESERVED = frozenset({"epsilon", "delta", "random_state", "budget"})
#: settings of a searched pipeline itself that the search sets
PIPELINE_RESERVED = frozenset({"epsilon", "delta", "budget", "steps", "public"})


def is_pipeline(estimator) -> bool:
    """Whether ``estimator`` is a :class:`~dpconvex.PrivatePipeline` (it composes steps)."""
    return bool(getattr(estimator, "_composes_steps", False)) and hasattr(estimator, "steps")


def model_of(estimator):
    """The step the search scores: the estimator itself, or a pipeline's last step."""
    return estimator.steps[-1][1] if is_pipeline(estimator) else estimator


def is_classifier_target(estimator) -> bool:
    return isinstance(model_of(estimator), ClassifierMixin)


def _step(estimator, prefix: str):
    return estimator if not prefix else estimator.named_steps[prefix[:-2]]


@dataclass(frozen=True)
class Target:
    """The tuned object's private steps and the split of a run's budget between them."""

    prefixes: tuple[str, ...]  # "" for an estimator; "<step name>__" for a pipeline step
    shares: tuple[float, ...]  # each private step's share of the per-run epsilon
    model: str  # prefix of the scored model step ("" for an estimator)
    pipeline: bool

    @property
    def min_run_epsilon(self) -> float:
        """Smallest per-run epsilon at which every step with a share gets MIN_EPSILON."""
        smallest = min(s for s in self.shares if s > 0)
        return MIN_EPSILON / smallest * (1 + 1e-12)

    def reserved(self) -> frozenset:
        """Names of the search space that the search itself sets."""
        if not self.pipeline:
            return STEP_RESERVED | {"accounting", "classes"}
        names = set(PIPELINE_RESERVED)
        for prefix in self.prefixes:
            names |= {prefix + name for name in STEP_RESERVED}
        names |= {self.model + "accounting", self.model + "classes"}
        return frozenset(names)

    def free_name(self, name: str, free: frozenset) -> bool:
        """Whether search-space ``name`` is a free (privacy-neutral) setting of the model."""
        return name.startswith(self.model) and name[len(self.model) :] in free

    def model_param(self, name: str) -> str:
        return self.model + name

    def step_epsilons(self, run_epsilon: float) -> dict:
        """Each private step's epsilon in a run at ``run_epsilon`` (prefix -> epsilon)."""
        return {
            p: share * run_epsilon
            for p, share in zip(self.prefixes, self.shares, strict=True)
            if share > 0
        }

    def configure(self, est, run_epsilon: float, delta: float):
        """``est`` (a clone) set to run at ``run_epsilon`` and ``delta``, nothing charged."""
        each = self.step_epsilons(run_epsilon)
        if any(e < MIN_EPSILON for e in each.values()):
            raise CalibrationError(  # the search's calibration reads this as "too small"
                f"a per-run epsilon of {run_epsilon:.3g} gives a step less than {MIN_EPSILON:g}"
            )
        params = {p + "epsilon": e for p, e in each.items()}
        params[self.model + "delta"] = delta
        if self.pipeline:
            params.update(epsilon=None, delta=delta, budget=None)
        return est.set_params(**params)

    def seeded(self, est, stream):
        """``est`` with each private step drawing from its own child of ``stream``, and no
        ledger of its own (the search's event was charged once, before any run)."""
        if not self.pipeline:
            return est.set_params(random_state=stream, budget=None)
        children = stream.spawn(len(self.prefixes))
        params = {"budget": None}
        for prefix, child in zip(self.prefixes, children, strict=True):
            step_params = _step(est, prefix).get_params(deep=False)
            if "random_state" in step_params:
                params[prefix + "random_state"] = child
            if "budget" in step_params:
                params[prefix + "budget"] = None
        return est.set_params(**params)

    def unseeded(self, est) -> None:
        """Drop every noise stream from the released object (it would reveal the run count)."""
        for prefix in self.prefixes:
            step = _step(est, prefix)
            if "random_state" in step.get_params(deep=False):
                step.set_params(random_state=None)

    def shaped_for_subsample(self, est, rows: int, n: int):
        """A tuning run on a secret subsample of public expected size ``rows`` out of n.

        Every choice a step makes from the number of rows is made from ``rows``, never
        from the subsample's actual (secret) size: the run is priced with
        ``privacy_event(rows, d, subsample=True)`` and fitted with ``public_n=rows`` (the
        model is calibrated for it, the pipeline plans for it); here DP-SGD keeps its
        sampling rate (its batch scaled by rows / n) and an encoder's default quantiles
        are fixed from ``rows``.
        """
        model = model_of(est)
        params = model.get_params(deep=False)
        if params.get("method") == "dpsgd" and "batch_size" in params:
            model.set_params(batch_size=max(1, round(params["batch_size"] * rows / n)))
        for prefix in self.prefixes:
            step = _step(est, prefix)
            if isinstance(step, TableEncoder) and step.quantiles is None:
                m = schema_from_dict(step.schema).n_estimated
                if m and isinstance(step.epsilon, Real):
                    step.set_params(quantiles=default_quantiles(step.epsilon / m, rows))
        return est


def check_model_step(estimator) -> None:
    """Refuse a pipeline whose last step is not a dpconvex estimator (the scored model)."""
    if not is_pipeline(estimator):
        return
    last = estimator.steps[-1][1]
    if not callable(getattr(last, "chosen_method", None)):
        raise TypeError(
            "the searched pipeline's last step must be a dpconvex estimator (the model the "
            f"search scores); got {type(last).__name__}"
        )


def target_of(estimator, n: int, d: int) -> Target:
    """The :class:`Target` of ``estimator`` for n rows of d columns, or a clear refusal."""
    if not is_pipeline(estimator):
        return Target(("",), (1.0,), "", False)
    steps = estimator.reading_steps()
    check_model_step(estimator)
    events = estimator.privacy_event(n, d).events  # refuses a pipeline it cannot plan
    prefixes, declared = [], []
    for (name, step), event in zip(steps, events, strict=True):
        if is_pipeline(step) or hasattr(step, "param_distributions"):
            raise TypeError(
                f"step {name!r} is a pipeline or search of its own: the search cannot split "
                "a run's budget inside it; put its steps in the searched pipeline directly"
            )
        if "epsilon" not in step.get_params(deep=False):
            raise TypeError(
                f"step {name!r} ({type(step).__name__}) has no epsilon setting, so the "
                "search cannot give it a share of each run's budget"
            )
        epsilon = 0.0 if isinstance(event, NoOpDpEvent) else step.epsilon
        if not isinstance(epsilon, Real) or isinstance(epsilon, bool) or not epsilon >= 0:
            raise ValueError(f"step {name!r} needs a numeric epsilon (its share of the budget)")
        prefixes.append(f"{name}__")
        declared.append(float(epsilon))
    total = math.fsum(declared)
    if not total > 0:
        raise ValueError("the pipeline's private steps declare no epsilon to share")
    shares = tuple(e / total for e in declared)
    return Target(tuple(prefixes), shares, prefixes[-1], True)


def model_width(estimator, d: int) -> int:
    """Columns the model step sees for d input columns (public, from the pipeline plan)."""
    if not is_pipeline(estimator):
        return d
    width = estimator.final_n_features_in(d)
    if width is None:
        raise ValueError("the pipeline's output width is not known before fit")
    return int(width)
