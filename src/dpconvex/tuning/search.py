"""Private random search for any dpconvex estimator: on a subsample, or repeat-and-select.

With ``strategy="subsample"`` (the default on data of a few thousand rows or more) the
search below runs on a secret Poisson subsample of the rows and the chosen settings
train one final model on all rows (Koskela & Kulkarni, NeurIPS 2023); the search is
then priced as an event on a Poisson subsample (Zhu & Wang 2019, Thm 6) composed with
the final run.

Papernot & Steinke, "Hyperparameter Tuning with Renyi Differential Privacy"
(ICLR 2022, arXiv 2110.03620): run a private algorithm M a random number K of
times (K ~ Poisson(mu), or truncated negative binomial) and release only the best
run; if M is (alpha, eps)-RDP the selection is RDP with the bounds of their
Thms 2 and 6, priced here by ``dp_accounting.RepeatAndSelectDpEvent``.

One run of M = draw hyperparameters i.i.d. from the given distributions, fit the
estimator on the training part, and score it. The score that picks the best run
must itself be private: by default the number of correct predictions on a
held-out validation part plus discrete Gaussian noise (sensitivity 1, parameter
``score_noise``; an exact integer sampler, so no floating-point leak),
whose event is composed into every run; or the accuracy on data the caller
declares public (``scoring="public"``), which costs nothing. Only the best run's
model, hyperparameters and noisy score are released, not the others, and not the
number of runs K (the theorems hold for the selected output alone; see the Notes of
:class:`PrivateRandomSearch`).

Hyperparameters that do not touch the privacy guarantee are tuned for free:
the solver and its iteration limit (any AMP output meeting the gradient
certificate is covered by Redberg, Koskela & Wang, arXiv 2401.00583, Thm 4.1), and
DP-SGD's learning rate and optimizer (post-processing of noisy gradients). Any other
hyperparameter (lam, noise settings, clipping, epochs, ...) changes the mechanism, so it
must be given as a finite list; M is then a data-independent random choice among those
mechanisms, priced by the pointwise maximum of their RDP curves
(:class:`~dpconvex.accounting.RandomChoiceDpEvent`). Each run's own budget is
calibrated so that the whole search meets (epsilon, delta).
"""

from __future__ import annotations

import itertools
import math
import numbers
import sys
import warnings

import numpy as np
from dp_accounting.dp_event import ComposedDpEvent, NoOpDpEvent, PoissonSampledDpEvent
from sklearn.base import BaseEstimator, MetaEstimatorMixin, clone
from sklearn.utils.validation import check_is_fitted

from .. import _validation as v
from .._random import make_rng
from ..accounting import (
    MIN_EPSILON,
    CalibrationError,
    DiscreteGaussianDpEvent,
    PrivacyAccountant,
    RandomChoiceDpEvent,
    calibrate,
    tuned_event,
)
from ..discrete_noise import discrete_gaussian
from ..models.charge import charge
from ..models.clipping import ClippingWarning
from ..models.labels import check_labels, declared_classes
from ..models.session import priced_by_caller
from ..plans import PLANS
from .defaults import FALLBACK_STEPS, extrapolate, resolve_settings
from .runs import sample_number_of_runs
from .targets import (
    Target,
    check_model_step,
    is_classifier_target,
    is_pipeline,
    model_of,
    model_width,
    target_of,
)

#: hyperparameters of dpconvex estimators that do not change their privacy cost
PRIVACY_FREE_PARAMS = frozenset({"solver", "max_iter", "learning_rate", "optimizer"})
#: the one message of a search that selects nothing (repeat-and-select's output "bottom")
NOTHING_SELECTED = (
    "the search selected nothing: the random number of runs was 0 (probability exp(-mu) "
    "with Poisson runs) or no run produced a model; the budget is spent, nothing else is "
    "released"
)


class NothingSelectedError(RuntimeError):
    """Repeat-and-select released its "nothing" output: no run was drawn or none produced a
    model. The budget is spent (this outcome is part of the priced mechanism)."""


def _is_distribution(value) -> bool:
    return hasattr(value, "rvs")


def _draw(name: str, value, rng: np.random.Generator):
    """One draw of hyperparameter ``name``: uniform from a list, or ``value.rvs()``."""
    if isinstance(value, list | tuple):  # non-empty: checked by _check_free_values
        return value[int(rng.integers(len(value)))]
    try:
        draw = value.rvs(random_state=rng)
    except Exception as exc:  # noqa: BLE001 - the caller's distribution, named
        raise ValueError(
            f"drawing {name!r} from its distribution failed ({type(exc).__name__}: {exc})"
        ) from None
    return draw.item() if isinstance(draw, np.generic) else draw


class PrivateRandomSearch(MetaEstimatorMixin, BaseEstimator):
    """(epsilon, delta)-DP hyperparameter search whose budget includes the tuning.

    Two strategies. ``"subsample"`` (Koskela & Kulkarni, NeurIPS 2023, "Practical
    differentially private hyperparameter tuning with subsampling"): the search runs on
    a secret Poisson subsample of the rows (each row in with probability ``subsample``),
    then the final model is trained once on all rows with the chosen settings; the
    search is priced as a subsampled event (Zhu & Wang 2019, Thm 6) composed with the
    final run. ``"repeat"`` (Papernot & Steinke, ICLR 2022, Thms 2 and 6): the search
    runs on all training rows and the best run's model is released. ``"auto"`` (default)
    takes the subsample when its tuning part has at least ``MIN_TUNING_ROWS`` expected
    training rows and the estimator's guarantee does not depend on the number of rows.

    Parameters
    ----------
    estimator : estimator or PrivatePipeline
        A dpconvex estimator (its epsilon and delta are set by the search), or a
        :class:`~dpconvex.PrivatePipeline` whose last step is one (e.g. a
        ``TableEncoder`` then the estimator; it may be fitted on a pandas DataFrame).
        For a pipeline every run's event is the pipeline's composed event, and the
        per-run epsilon is split between its private steps in the proportions of their
        own epsilons (:mod:`dpconvex.tuning.targets`); the pipeline's own epsilon,
        delta and budget are replaced by the search's. Search a step's settings by
        their pipeline names (``"dplogisticregression__lam"``). A model with
        ``method="auto"`` runs one method, picked once from public sizes (``method_``).
    param_distributions : dict
        Name -> list (uniform choice) or frozen scipy
        distribution; each run draws every hyperparameter i.i.d. Privacy-relevant
        hyperparameters must be lists (see the module docstring).
    epsilon, delta : float
        Budget of the whole search, tuning and final model included.
    strategy : {"auto", "subsample", "repeat"}
        See above.
    subsample : float, optional
        Share of the rows the search runs on (strategy "subsample"); default
        2,500 / n, kept in [0.02, 0.5].
    mu : float, optional
        Mean number of runs K (>= 1); default 3.
    shape : float, optional
        inf (K Poisson, may be 0) or >= 0 (truncated negative binomial, K >= 1; 1 is
        geometric, 0 logarithmic); default inf for "subsample" (K = 0 trains the final
        model with the estimator's own free settings and priced ones drawn from their
        lists, as a run would), 1 for "repeat".
    default_share : float, optional
        Probability that a run keeps the estimator's own settings for the free
        hyperparameters (instead of drawing them); default 0.5. A wide search space
        then cannot make the released model much worse than the untuned estimator.
    scoring : {"noisy_validation", "public"}
        "noisy_validation" (default, classifiers) or "public" (pass X_public,
        y_public to fit; accuracy for classifiers, R^2 for regressors).
    validation_fraction : float, optional
        Share of the search's rows held out for the noisy validation score; default 0.2.
    score_noise : float, optional
        Scale of the discrete Gaussian noise on the validation count of correct
        predictions (about its standard deviation); default 2 sqrt(v) for v expected
        validation rows.
    run_epsilon : float, optional
        Per-run epsilon; None (default) calibrates it to meet ``epsilon``.
    random_state : None, int or numpy.random.Generator
        None (OS entropy), an int, or a numpy Generator.
    budget : None, Budget or path
        None, a :class:`dpconvex.Budget` or the path of its ledger; the whole
        search's event is charged before any run touches the data.
    n_jobs : int or None
        Runs fitted in parallel (joblib; -1: all cores, None or 1: one at a time).
        Every run's hyperparameters, random stream and score noise are drawn before
        any run starts, so the result for a given ``random_state`` is the same
        whatever ``n_jobs`` is.
    verbose : False (default) or True: report progress on stderr (a line while the
        per-run budget is calibrated, then a progress bar over the K runs). It changes
        nothing that is computed, but it shows the number of runs, which the guarantee
        does not cover: keep the log to the data owner (see the Notes).

    The defaults are derived in :mod:`dpconvex.tuning.defaults`; when they cannot meet
    ``epsilon`` the settings left to them are relaxed (fewer runs, more score noise)
    until they do, so any epsilon that pays for one run of the estimator is met.

    Attributes
    ----------
    best_estimator_, best_params_, best_score_
        The released model and its hyperparameters (subsample: the final model on all
        rows; its learning rate is the chosen one carried over by
        :func:`~dpconvex.tuning.defaults.extrapolate`), and the best run's noisy score.
    tuned_params_ : dict
        Subsample only: the hyperparameters the search chose, before carrying over.
    strategy_, settings_
        The strategy and settings used (the given ones and the defaults).
    run_epsilon_, dp_event_, epsilon_, delta_
        The per-run budget, the event of the whole search and what it spent.
    step_epsilons_ : dict
        Pipeline only: each private step's epsilon in every run (its share of
        ``run_epsilon_``; a step whose event is empty gets none and is not listed).
    method_, method_reason_ : str
        Only when the model's method is "auto": the method every run and the released
        model run, and why it was picked.
    free_params_, priced_params_ : list of str
        The searched hyperparameters that cost no privacy (post-processing of the
        mechanism's noisy output: AMP's solver settings, DP-SGD's learning rate and
        optimizer) and those that change the mechanism, so that the search is priced
        as a random choice among them.

    Notes
    -----
    What is released is what the selection theorems cover: the best run's model,
    settings and noisy score (subsample: then the final model), or, when no run was
    drawn (K = 0) or none produced a model, nothing (repeat: an error with one fixed
    message; subsample: the final model with settings drawn from the search space). The
    number of runs K is not released: Papernot and Steinke's guarantee is for the
    selected output alone, and (K, output) together can cost far more. So the fitted
    search stores no run count, the released model carries no noise stream
    (``best_estimator_.random_state`` is None) and one failed run neither stops the
    search nor is reported (it scores below every run that produced a model), and no run
    issues a warning (one per run would count them; one computed on the secret subsample,
    its size). Two
    things do reveal K to whoever can see them, and are not covered: the ``verbose``
    progress log (the number of runs and the progress bar; keep it to the data owner),
    and the search's running time (about K times a run's).

    Everything that can be refused is refused before the budget is charged: the inputs,
    every priced candidate (each is calibrated to the per-run budget), every listed
    value of a free setting. The label set of a classifier is the estimator's declared
    ``classes`` (default [0, 1]); labels outside it are refused then too. Which rows
    form the subsample, and how many, is never released (the score is divided by the
    expected number of validation rows, and clipping is reported once, on the rows the
    released model is trained on, never per run).
    """

    def __init__(
        self,
        estimator,
        param_distributions,
        *,
        epsilon=1.0,
        delta=1e-5,
        strategy="auto",
        subsample=None,
        mu=None,
        shape=None,
        default_share=None,
        scoring="noisy_validation",
        validation_fraction=None,
        score_noise=None,
        run_epsilon=None,
        random_state=None,
        budget=None,
        n_jobs=None,
        verbose=False,
    ):
        self.estimator = estimator
        self.param_distributions = param_distributions
        self.epsilon = epsilon
        self.delta = delta
        self.strategy = strategy
        self.subsample = subsample
        self.mu = mu
        self.shape = shape
        self.default_share = default_share
        self.scoring = scoring
        self.validation_fraction = validation_fraction
        self.score_noise = score_noise
        self.run_epsilon = run_epsilon
        self.random_state = random_state
        self.budget = budget
        self.n_jobs = n_jobs
        self.verbose = verbose

    # -- privacy plan ------------------------------------------------------------
    def _relevant_choices(self) -> dict:
        space = dict(self.param_distributions)
        target = self._tuned_target()
        bad = target.reserved() & set(space)
        if bad:
            raise ValueError(
                f"{sorted(bad)} are set by the search itself (it calibrates each run's budget "
                "and splits it between the private steps); remove them"
            )
        valid = set(self._tuned().get_params())
        unknown = set(space) - valid
        if unknown:
            raise ValueError(f"{sorted(unknown)} are not parameters of the estimator")
        if target.pipeline:
            steps = {name for name, _ in self._tuned().steps}
            whole = sorted(steps & set(space))
            if whole:
                raise ValueError(
                    f"{whole} would replace whole steps of the pipeline, whose budget shares "
                    "the search reads from the steps given; search their settings instead "
                    "(e.g. 'step__lam')"
                )
        method = target.model_param("method")
        if isinstance(space.get(method), list | tuple) and "auto" in space[method]:
            raise ValueError(
                f'{method!r} lists "auto": list the concrete methods to compare (the '
                'estimator\'s own method="auto" is resolved once from the public sizes)'
            )
        relevant = {}
        for name, value in space.items():
            if target.free_name(name, PRIVACY_FREE_PARAMS):
                continue
            if not isinstance(value, list | tuple) or not value:
                raise ValueError(
                    f"{name!r} changes the privacy cost of a run: give it as a finite list of "
                    "values, not a distribution"
                )
            relevant[name] = list(value)
        return relevant

    def _score_event(self, score_noise: float | None = None):
        """The validation score's event; ``score_noise`` overrides the setting (inf: free)."""
        noise = self._cfg["score_noise"] if score_noise is None else score_noise
        if self.scoring == "public" or noise == math.inf:
            return NoOpDpEvent()
        # the count of correct predictions is an integer with sensitivity 1: exact
        # discrete Gaussian noise (CKS 2020) has no floating-point leak (Mironov 2012)
        # and the same RDP as the continuous Gaussian (CKS 2020, Prop. 5)
        return DiscreteGaussianDpEvent(v.positive("score_noise", noise), 1.0, 1)

    def _runs(self, run_epsilon: float, rows: int, tuning: bool) -> list:
        """One configured estimator per combination of the priced hyperparameters.

        ``rows`` is the public number of rows the run is calibrated for. A tuning run on
        the secret subsample keeps DP-SGD's sampling rate (its ``batch_size`` scaled by
        rows / n), so that it takes the steps of the final run with the same noise.
        """
        relevant = self._relevant_choices()
        names = sorted(relevant)
        target = self._tuned_target()
        out = []
        for values in itertools.product(*(relevant[k] for k in names)):
            est = clone(self._tuned()).set_params(**dict(zip(names, values, strict=True)))
            est = target.configure(est, run_epsilon, self.delta)
            out.append(self._shaped(est, rows, tuning))
        return out

    def _tuned(self):
        """The estimator the runs clone: ``estimator``, its method="auto" resolved."""
        return getattr(self, "_base", None) or self.estimator

    def _tuned_target(self) -> Target:
        """How a run's budget is split between the private steps (see ``targets``)."""
        target = getattr(self, "_target", None)
        if target is None:
            if is_pipeline(self.estimator):
                raise RuntimeError("the search's target is set when it is configured")
            target = target_of(self.estimator, 1, 1)
        return target

    def _shaped(self, est, rows: int, tuning: bool):
        """``est`` calibrated for ``rows`` public rows; on the subsample, its batch scaled."""
        if tuning and self._cfg["strategy"] == "subsample":
            return self._tuned_target().shaped_for_subsample(est, rows, self._cfg["n"])
        return est

    def _run_event(self, run_epsilon: float, score_noise: float | None = None):
        """Event of one tuning run at per-run budget ``run_epsilon``: training plus scoring."""
        cfg = self._cfg
        events = [
            ComposedDpEvent(
                [est.privacy_event(cfg["tune_rows"], cfg["d"]), self._score_event(score_noise)]
            )
            for est in self._runs(run_epsilon, cfg["tune_rows"], tuning=True)
        ]
        return events[0] if len(events) == 1 else RandomChoiceDpEvent(events)

    def _final_event(self, run_epsilon: float):
        """Event of the final run on all rows (subsample strategy): any reachable setting."""
        cfg = self._cfg
        events = [
            est.privacy_event(cfg["n"], cfg["d"])
            for est in self._runs(run_epsilon, cfg["n"], tuning=False)
        ]
        return events[0] if len(events) == 1 else RandomChoiceDpEvent(events)

    def _search_event(self, run_epsilon: float, score_noise: float | None = None):
        """The whole search's event.

        repeat: Papernot-Steinke repeat-and-select over the tuning runs. subsample
        (Koskela & Kulkarni 2023, NeurIPS, "Practical differentially private
        hyperparameter tuning with subsampling", their variant that trains the final
        model on all rows): the same selection run on a secret Poisson subsample of rate
        q (:class:`PoissonSampledDpEvent`, amplified by Zhu & Wang 2019, Thm 6), composed
        with one final run on all rows at the same per-run budget.
        """
        cfg = self._cfg
        tuned = tuned_event(self._run_event(run_epsilon, score_noise), cfg["mu"], cfg["shape"])
        if cfg["strategy"] == "repeat":
            return tuned
        return ComposedDpEvent(
            [PoissonSampledDpEvent(cfg["q"], tuned), self._final_event(run_epsilon)]
        )

    def _total_epsilon(self, run_epsilon: float, score_noise=None) -> float:
        try:
            event = self._search_event(run_epsilon, score_noise)
        except CalibrationError:  # some candidate cannot be calibrated to run_epsilon
            return math.inf
        return PrivacyAccountant("rdp").compose(event).get_epsilon(self.delta)

    def _infeasible(self) -> CalibrationError:
        """The error for a search no per-run budget fits: what binds, and what would work.

        As the per-run budget goes to 0 the search still costs the score noise and the
        repeat-and-select overhead (Papernot-Steinke Thm 6: mu delta_hat + log(mu) /
        (lambda - 1)); that floor is the smallest epsilon these settings can meet.
        """
        cfg = self._cfg
        floor = self._total_epsilon(self._min_run())
        if not math.isfinite(floor):
            return CalibrationError(
                f"no per-run budget lets this search meet epsilon={self.epsilon}: some "
                "candidate cannot be calibrated even with the whole budget; drop candidates "
                "that need a large per-run epsilon (a lam close to the loss's curvature)"
            )
        message = (
            f"no per-run budget lets this search meet epsilon={self.epsilon}: with these "
            f"settings the smallest epsilon it can meet is {floor:.3g} (what the score "
            f"noise and the {cfg['mu']:g} runs on average cost even when each run spends "
            "almost nothing)"
        )
        if self.scoring == "noisy_validation":
            free_score = self._total_epsilon(self._min_run(), math.inf)
            noise = cfg["score_noise"]
            if free_score < self.epsilon:
                try:
                    needed = calibrate(
                        lambda s: self._total_epsilon(self._min_run(), s),
                        self.epsilon, noise, 2 * noise, decreasing=True, rtol=1e-2,
                    )  # fmt: skip
                    message += (
                        f"; the validation-score noise binds: score_noise={noise:g} "
                        f"is too small, score_noise >= {needed:.3g} makes it feasible (or pass "
                        'public validation data with scoring="public")'
                    )
                except CalibrationError:
                    pass
            else:
                message += (
                    f"; the number of runs binds (a free score still costs {free_score:.3g}): "
                    "lower mu, or use a truncated negative binomial (shape=1) with a mean "
                    "close to 1, or raise epsilon"
                )
        return CalibrationError(message)

    def _min_run(self) -> float:
        """Smallest per-run epsilon that gives every step with a share MIN_EPSILON."""
        return max(MIN_EPSILON, self._tuned_target().min_run_epsilon)

    def _calibrate_run_epsilon(self) -> float:
        """Largest per-run epsilon whose search meets the total budget.

        The total is +inf below some per-run epsilon (candidates that cannot be
        calibrated, e.g. lam with -log(1 - beta/lam) above it) and increasing above.
        From a first guess (epsilon / 4 for repeat-and-select: a search of mean 10
        runs costs about 4-7 times its runs' epsilon; epsilon / 2 on a subsample), halve
        until the search meets the budget or double until it does not, then refine
        between the two by Brent's method on log(total epsilon), nearly linear in
        log(run epsilon): five to eight pricings of the search in all.
        """
        total = self._total_epsilon
        run = self.epsilon / (4.0 if self._cfg["strategy"] == "repeat" else 2.0)
        if total(run) <= self.epsilon:
            good, bad = run, None
            while bad is None:
                nxt = min(2.0 * good, self.epsilon)
                if nxt == good:
                    return good  # even the whole budget per run is within the total
                if total(nxt) <= self.epsilon:
                    good = nxt
                else:
                    bad = nxt
        else:
            bad, good = run, None
            while good is None:
                run = bad / 2.0
                if run < self._min_run():
                    raise self._infeasible()
                if total(run) <= self.epsilon:
                    good = run
                else:
                    bad = run
        return calibrate(
            total, self.epsilon, good, bad, decreasing=False, floor=good, ceiling=bad, rtol=1e-3
        )

    def _calibrate_with_fallback(self) -> float:
        """The per-run budget; default settings that cannot meet epsilon are relaxed.

        When the preferred defaults cannot meet the budget, the mean number of runs
        (if not given) is halved, down to 1, and the score noise (if not given) doubled,
        up to ``FALLBACK_STEPS`` times: fewer, better-scored runs cost less. With one run
        on average the search costs about what one run costs, so every epsilon that
        can pay for one run of the estimator is met by the defaults. The steps depend
        on (epsilon, delta, n, the search space) only, never on the data.
        """
        try:
            return self._calibrate_run_epsilon()
        except CalibrationError as first:
            if self.mu is not None and self.score_noise is not None:
                raise
            error = first
        cfg = self._cfg
        for _ in range(FALLBACK_STEPS):
            if self.mu is None:
                cfg["mu"] = max(1.0, cfg["mu"] / 2.0)
            if self.score_noise is None:
                cfg["score_noise"] *= 2.0
            if self._total_epsilon(self._min_run()) > self.epsilon:
                continue  # even runs that spend nothing cost too much
            try:
                return self._calibrate_run_epsilon()
            except CalibrationError:
                continue
        raise error

    # -- fit -----------------------------------------------------------------------
    def _configure(self, n: int, d: int) -> dict:
        """The settings of this search: the given ones, the rest by the default rules.

        Also fixes what the runs clone: for a pipeline, the split of a run's budget
        between its private steps (:mod:`dpconvex.tuning.targets`); for a model with
        method="auto", the concrete method (see :meth:`_resolve_method`).
        """
        self._base = self._method = None
        self._target = target_of(self.estimator, n, d)
        relevant = self._relevant_choices()
        method = self._target.model_param("method")
        methods = [self.estimator.get_params().get(method)]
        if method in relevant:
            methods = relevant[method]
        size_free = all(getattr(PLANS.get(m), "size_free", False) for m in methods)
        size_free = size_free and all(
            self._step_size_free(prefix) for prefix in self._target.prefixes[:-1]
        )
        cfg = resolve_settings(
            strategy=self.strategy,
            subsample=self.subsample,
            mu=self.mu,
            shape=self.shape,
            default_share=self.default_share,
            score_noise=self.score_noise,
            validation_fraction=self.validation_fraction,
            scoring=self.scoring,
            epsilon=float(self.epsilon),
            n=n,
            size_free=size_free,
        )
        cfg.update(n=n, d=d)
        self._cfg = cfg
        frac = cfg["validation_fraction"] if self.scoring == "noisy_validation" else 0.0
        if cfg["strategy"] == "repeat":
            n_val = max(1, int(round(frac * n))) if frac else 0
            cfg.update(tune_rows=n - n_val, val_rows=n_val)
        else:  # expected (public) sizes of the secret subsample's parts
            cfg.update(
                tune_rows=max(1, int(round(cfg["q"] * (1 - frac) * n))),
                val_rows=cfg["q"] * frac * n,
            )
        if self.run_epsilon is None:
            self._resolve_method(v.positive("epsilon", self.epsilon))
        else:
            self._resolve_method(v.positive("run_epsilon", self.run_epsilon))
        return cfg

    def _step_size_free(self, prefix: str) -> bool:
        """Whether a pipeline step before the model prices the same whatever the number of
        rows (the encoder's quantiles do: their guarantee does not involve n)."""
        from ..preprocessing.encoder import TableEncoder

        return isinstance(self.estimator.named_steps[prefix[:-2]], TableEncoder)

    def _resolve_method(self, run_epsilon: float) -> bool:
        """Fix a model's method="auto" to the method it picks for the released model's run.

        The pick is :meth:`chosen_method` of the model at the rows the released model is
        trained on (all n rows on a subsample; the runs' training rows for repeat-and-
        select, whose best run is released), its columns, and its share of ``run_epsilon``
        at the search's delta: public quantities only. Every run and the final model then
        run that one method, and the search prices and shapes them for it.
        Returns whether the method changed. ``fit`` resolves first at the total epsilon
        (or the given ``run_epsilon``) and once more at the calibrated per-run epsilon,
        recalibrating if the pick changes.
        """
        target, cfg = self._target, self._cfg
        if model_of(self.estimator).get_params().get("method") != "auto":
            return False
        probe = target.configure(clone(self.estimator), run_epsilon, self.delta)
        model = model_of(probe)
        rows = cfg["tune_rows"]
        if cfg["strategy"] == "subsample":
            rows = model._public_n = cfg["n"]  # among methods that can run on a subsample
        method, reason = model.chosen_method(rows, model_width(self.estimator, cfg["d"]))
        previous = self._tuned()
        self._base = clone(self.estimator).set_params(**{target.model_param("method"): method})
        self._method = (method, reason)  # reported as method_ once the search is fitted
        return model_of(previous).get_params().get("method") != method

    def _checked_inputs(self, X, y, X_public, y_public):
        """(X, y, declared classes or None), refused before anything is spent."""
        v.positive("epsilon", self.epsilon)
        v.probability_open("delta", self.delta)
        if self.scoring not in ("noisy_validation", "public"):
            raise ValueError(
                f"scoring must be 'noisy_validation' or 'public', got {self.scoring!r}"
            )
        if not hasattr(self.estimator, "privacy_event"):
            raise TypeError("estimator must be a dpconvex estimator (it needs privacy_event)")
        check_model_step(self.estimator)
        classifier = is_classifier_target(self.estimator)
        if self.scoring == "noisy_validation" and not classifier:
            raise ValueError(
                'scoring="noisy_validation" needs a classifier; for regressors '
                'pass public validation data with scoring="public"'
            )
        if self.scoring == "public" and (X_public is None or y_public is None):
            raise ValueError('scoring="public" needs X_public and y_public')
        if self.n_jobs is not None and (
            isinstance(self.n_jobs, bool)
            or not isinstance(self.n_jobs, numbers.Integral)
            or self.n_jobs == 0
        ):
            raise ValueError(f"n_jobs must be a non-zero integer (or -1 for all cores), got "
                             f"{self.n_jobs!r}")  # fmt: skip
        if not (is_pipeline(self.estimator) and hasattr(X, "iloc")):  # a pipeline takes tables
            X = np.asarray(X) if not hasattr(X, "tocsr") else X.tocsr()
        y = np.asarray(y)
        if X.ndim != 2 or y.ndim != 1 or X.shape[0] != y.shape[0]:
            raise ValueError(
                f"X must be 2-D and y 1-D with one label per row; got X {X.shape}, y {y.shape}"
            )
        classes = None
        if classifier:  # the label set is the estimator's declared one, never y's
            declared = model_of(self.estimator).get_params().get("classes")
            classes = declared_classes(declared)
            check_labels(y, classes, declared=declared is not None)
        return X, y, classes

    def _check_free_values(self) -> None:
        """Every listed value of a free setting is one the estimator accepts.

        Checked before the charge, so that no run can be refused for a listed setting
        after it. (A value a distribution draws is only known after the charge: a run that
        fails on it scores as a failed run; see :meth:`_one_run`.)
        """
        for name, space in self.param_distributions.items():
            if _is_distribution(space):
                continue
            if not isinstance(space, list | tuple) or not space:
                raise ValueError(
                    f"each search space entry must be a non-empty list or a distribution "
                    f"with .rvs(); {name!r} is {space!r}"
                )
            if self._tuned_target().free_name(name, PRIVACY_FREE_PARAMS):
                for value in space:
                    probe = clone(self.estimator).set_params(**{name: value})
                    model_of(probe)._validate_params()

    def _split(self, rng: np.random.Generator, n: int) -> tuple[np.ndarray, np.ndarray]:
        """Indices of the tuning runs' training and validation rows.

        repeat: a data-independent split of public sizes. subsample: a secret Poisson(q)
        subsample (each row independently), split row by row; no size is released.
        """
        cfg = self._cfg
        if cfg["strategy"] == "repeat":
            order = rng.permutation(n)
            return order[cfg["val_rows"] :], order[: cfg["val_rows"]]
        noisy = self.scoring == "noisy_validation"
        chosen = np.flatnonzero(rng.random(n) < cfg["q"])
        to_val = rng.random(chosen.size) < (cfg["validation_fraction"] if noisy else 0.0)
        return chosen[~to_val], chosen[to_val]

    def _draw_plans(self, rng: np.random.Generator, k: int) -> list:
        """Each run's (hyperparameters, random stream, score noise), drawn before any run.

        Everything random is drawn here, in the order a sequential search draws it, so
        that the runs can go to any number of workers and give the same result. With
        probability default_share a run keeps the estimator's own settings for the free
        hyperparameters (one data-independent mixture, so the runs stay i.i.d. as the
        selection theorems require); priced ones are always drawn from their lists.
        """
        noisy = self.scoring == "noisy_validation"
        free = set(self.param_distributions) - set(self._relevant_choices())
        own = self._tuned().get_params()
        plans = []
        for _ in range(k):
            drawn = {
                name: _draw(name, space, rng) for name, space in self.param_distributions.items()
            }
            keep = rng.random() < self._cfg["default_share"]
            params = {name: own[name] if keep and name in free else drawn[name] for name in drawn}
            stream = rng.spawn(1)[0]
            noise = 0 if not noisy else int(discrete_gaussian(self._cfg["score_noise"], rng=rng))
            plans.append((params, stream, noise))
        return plans

    def fit(self, X, y, X_public=None, y_public=None):
        """Run the search on (X, y); ``X_public``, ``y_public`` only with scoring="public".

        ``X`` is a matrix, or for a pipeline any table its first step reads (a pandas
        DataFrame keeps its column names; rows are taken by position).

        Everything that can be refused is checked before the budget is charged: the
        inputs and labels, every priced candidate's calibration and every listed value of
        a free setting. After the charge the search releases only what the selection
        theorems cover (the best run's model, settings and noisy score, or nothing when
        no run was drawn), and nothing that reveals the number of runs: see the Notes.
        """
        X, y, classes = self._checked_inputs(X, y, X_public, y_public)
        n = y.shape[0]
        self._cfg = cfg = self._configure(n, X.shape[1])
        self._check_free_values()
        rng = make_rng(self.random_state)
        train, val = self._split(rng, n)
        X_train, y_train = _take(X, train), y[train]
        noisy = self.scoring == "noisy_validation"
        validation = (_take(X, val), y[val]) if noisy else (X_public, y_public)
        run_epsilon = self._run_budget()
        event = self._search_event(run_epsilon)
        spent = PrivacyAccountant("rdp").compose(event).get_epsilon(self.delta)
        if spent > self.epsilon * (1 + 1e-9):
            raise ValueError(
                f"run_epsilon={run_epsilon} makes the search spend epsilon={spent:.6g} > "
                f"{self.epsilon}"
            )
        # the data owner hears once how much the declared bounds clip on the rows the
        # released model is trained on; the runs themselves say nothing (a count on the
        # secret subsample would reveal its size, and one warning per run the runs' number)
        subsample = cfg["strategy"] == "subsample"
        if not is_pipeline(self.estimator):  # a pipeline's model sees rows only once fitted
            self.estimator._warn_if_clipped(*((X, y) if subsample else (X_train, y_train)))
        # the number of runs and every run's settings are drawn before the charge (they do
        # not depend on the data), so that a distribution that cannot be drawn from is
        # refused before anything is spent
        k = sample_number_of_runs(rng, cfg["mu"], cfg["shape"])
        plans = self._draw_plans(rng, k)
        final_stream = rng.spawn(1)[0]
        charge(
            self.budget,
            event,
            mechanism=f"PrivateRandomSearch({type(self.estimator).__name__})",
            label=f"search on {X.shape[0]} rows x {X.shape[1]} features",
            rows=X,  # the session records the search once; its runs are priced inside it
            delta=self.delta,
        )
        if k == 0 and not subsample:
            raise NothingSelectedError(NOTHING_SELECTED)
        # with workers to spare, the final run with the estimator's own settings (the
        # most likely choice) is fitted beside the tuning runs, and kept only if chosen:
        # the same fit, with the same stream, that would follow them (only the time changes)
        priced = sorted(self._relevant_choices())
        free = sorted(set(self.param_distributions) - set(priced))
        own = self._tuned().get_params()
        speculate = None
        if subsample and not priced:
            guess = extrapolate({name: own[name] for name in free}, self._tuned(), cfg)
            speculate = (guess, run_epsilon, final_stream, X, y)
        runs, speculated = self._run_all(
            plans, run_epsilon, X_train, y_train, validation, k, speculate
        )
        best = (None, {}, None)
        for score, params, est in runs:  # the first best run wins, as in a sequential scan
            if est is not None and (best[2] is None or score > best[0]):
                best = (score, params, est)
        if best[2] is None and not subsample:
            raise NothingSelectedError(NOTHING_SELECTED)
        self.best_score_, self.best_params_, self.best_estimator_ = best
        if subsample:
            # the final model: once, on all rows, with the chosen settings carried over;
            # when nothing was selected (K = 0, or no run produced a model) its priced
            # settings are a fresh draw from their lists and its free ones the estimator's
            # own, a data-independent choice among the settings the final event prices
            if best[2] is None:
                self.best_params_ = {name: _draw(name, self.param_distributions[name], rng)
                                     for name in priced}  # fmt: skip
                self.best_params_.update({name: own[name] for name in free})
            self.tuned_params_ = dict(self.best_params_)
            self.best_params_ = extrapolate(self.tuned_params_, self._tuned(), cfg)
            if speculated is not None and speculate[0] == self.best_params_:
                self.best_estimator_ = speculated
            else:
                self.best_estimator_ = self._final_fit(
                    self.best_params_, run_epsilon, final_stream, X, y
                )
        # the noise stream is not released: a spawned stream's key counts the streams
        # drawn before it, and so reveals the number of runs (and a seed the noise)
        self._tuned_target().unseeded(self.best_estimator_)
        if is_pipeline(self.estimator):
            self._warn_if_pipeline_clips(*((X, y) if subsample else (X_train, y_train)))
        self.priced_params_, self.free_params_ = priced, free
        self.strategy_ = cfg["strategy"]
        self.settings_ = {
            key: cfg[key]
            for key in (
                "strategy",
                "subsample",
                "mu",
                "shape",
                "score_noise",
                "validation_fraction",
            )
            if key in cfg
        }
        self.run_epsilon_ = float(run_epsilon)
        for name in ("method_", "method_reason_", "step_epsilons_"):
            self.__dict__.pop(name, None)  # from an earlier fit of another estimator
        if self._method is not None:
            self.method_, self.method_reason_ = self._method
        if is_pipeline(self.estimator):
            self.step_epsilons_ = {
                prefix[:-2]: float(e)
                for prefix, e in self._tuned_target().step_epsilons(run_epsilon).items()
            }
        self.dp_event_ = event
        self.epsilon_ = float(spent)
        self.delta_ = float(self.delta)
        if classes is not None:
            self.classes_ = classes
        return self

    def _run_budget(self) -> float:
        """The per-run epsilon: given, or calibrated so that the search meets epsilon.

        With method="auto" the method is resolved again at the calibrated budget; if the
        pick changes, the budget is calibrated afresh for the new method (from the same
        default settings), and that method is kept.
        """
        if self.run_epsilon is not None:
            return v.positive("run_epsilon", self.run_epsilon)
        self._say("calibrating the per-run budget to the total epsilon ...")
        settings = dict(self._cfg)
        run_epsilon = self._calibrate_with_fallback()
        if self._resolve_method(run_epsilon):
            self._cfg.clear()
            self._cfg.update(settings)
            run_epsilon = self._calibrate_with_fallback()
        return run_epsilon

    def _warn_if_pipeline_clips(self, X, y) -> None:
        """The one clipping report of a pipeline: its model's row bound on the rows the
        released model was trained on, as the released preprocessing maps them."""
        released = self.best_estimator_
        model = model_of(released)
        if not callable(getattr(model, "_warn_if_clipped", None)):
            return
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the transform's own remarks: not the report
            rows = released[:-1].transform(X) if len(released.steps) > 1 else X
        model._warn_if_clipped(rows, y)

    def _one_run(self, plan, run_epsilon, X_train, y_train, validation):
        """Fit one run and score it: (score, params, fitted estimator).

        A run that fails, whatever the reason, returns (-inf, params, None): it loses to
        every run that produced a model, and its error is neither raised nor kept, so one
        run cannot stop the search or say anything about the runs that were not selected.
        The runs' ``ClippingWarning``s are dropped (the search warns once, see ``fit``).
        BLAS runs on one thread, as in joblib's workers: the order of a product's
        additions then does not depend on n_jobs, and neither do the last bits of the fit.
        """
        from threadpoolctl import threadpool_limits

        params, stream, noise = plan
        target = self._tuned_target()
        try:
            est = clone(self._tuned()).set_params(**params)
            est = target.configure(est, run_epsilon, self.delta)
            # no ledger of its own: the search's event was charged once, before any run
            est = target.seeded(est, stream)
            est = self._shaped(est, self._cfg["tune_rows"], tuning=True)
            X_val, y_val = validation
            with (
                threadpool_limits(limits=1, user_api="blas"),
                warnings.catch_warnings(),
                priced_by_caller(),  # in any worker: the search's event prices this run
            ):
                # a run says nothing: a warning per run would count the runs, and one
                # computed on the secret subsample (clipping, thin bounds) its size
                warnings.simplefilter("ignore")
                est.fit(X_train, y_train)
                if self.scoring == "public":
                    return float(est.score(X_val, y_val)), params, est
                correct = int(np.sum(est.predict(X_val) == y_val)) if len(y_val) else 0
        except Exception:  # noqa: BLE001 - any failure is a failed run, never an abort
            return -math.inf, params, None
        # divided by the public (expected) validation size: the actual size of a secret
        # subsample's validation part is not released
        return (correct + noise) / max(self._cfg["val_rows"], 1.0), params, est

    def _final_fit(self, params, run_epsilon, stream, X, y):
        """The final model on all rows (subsample strategy), on one BLAS thread."""
        from threadpoolctl import threadpool_limits

        target = self._tuned_target()
        final = target.configure(clone(self._tuned()).set_params(**params), run_epsilon, self.delta)
        final = target.seeded(final, stream)  # the search's event was charged before any run
        with (
            threadpool_limits(limits=1, user_api="blas"),
            warnings.catch_warnings(),
            priced_by_caller(),  # the search's event prices the final run
        ):
            warnings.simplefilter("ignore", ClippingWarning)  # the search warned once
            return final.fit(X, y)

    def _run_all(self, plans, run_epsilon, X_train, y_train, validation, k, speculate=None):
        """(the runs' (score, params, estimator), the speculative final model or None)."""
        n_jobs = 1 if self.n_jobs is None else int(self.n_jobs)
        if n_jobs == 1 or k == 0 or (k == 1 and speculate is None):
            bar = self._progress(k)
            out = []
            for plan in plans:
                out.append(self._one_run(plan, run_epsilon, X_train, y_train, validation))
                bar.update(1)
            bar.close()
            return out, None
        from joblib import Parallel, delayed

        self._say(f"{k} runs on {n_jobs if n_jobs > 0 else 'all'} workers ...")
        tasks = [
            delayed(self._one_run)(plan, run_epsilon, X_train, y_train, validation)
            for plan in plans
        ]
        if speculate is not None:  # first: the longest task starts at once
            tasks.insert(0, delayed(self._final_fit)(*speculate))
        out = Parallel(n_jobs=n_jobs)(tasks)
        return (out[1:], out[0]) if speculate is not None else (out, None)

    # -- progress (stderr only; never touches rng or results) --------------------
    def _say(self, message: str) -> None:
        if self.verbose:
            print(f"PrivateRandomSearch: {message}", file=sys.stderr, flush=True)

    def _progress(self, k: int):
        from tqdm import tqdm

        return tqdm(
            total=k,
            desc=f"PrivateRandomSearch: {k} runs",
            unit="run",
            file=sys.stderr,
            disable=not self.verbose,
        )

    # -- delegation ----------------------------------------------------------------
    def predict(self, X):
        check_is_fitted(self)
        return self.best_estimator_.predict(X)

    def decision_function(self, X):
        check_is_fitted(self)
        return self.best_estimator_.decision_function(X)

    def predict_proba(self, X):
        check_is_fitted(self)
        return self.best_estimator_.predict_proba(X)

    def score(self, X, y):
        check_is_fitted(self)
        return self.best_estimator_.score(X, y)


def _take(X, rows: np.ndarray):
    """Rows of a matrix or, for a pipeline, of a table (a pandas DataFrame by position)."""
    return X.iloc[rows] if hasattr(X, "iloc") else X[rows]
