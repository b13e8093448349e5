"""The privacy plan of a private random search: its settings, its event and its per-run budget.

:class:`SearchPricing` holds what :class:`~dpconvex.tuning.PrivateRandomSearch` decides
before it reads any row: the settings (given, or by the rules of
:mod:`dpconvex.tuning.defaults`), which hyperparameters are priced, the event of the whole
search (Papernot & Steinke, ICLR 2022, arXiv 2110.03620, Thms 2 and 6, for
repeat-and-select; Koskela & Kulkarni, NeurIPS 2023, for the subsample strategy, amplified
by Zhu & Wang 2019, Thm 6) and the largest per-run epsilon whose search meets the budget.
"""

from __future__ import annotations

import itertools
import math

from dp_accounting.dp_event import ComposedDpEvent, NoOpDpEvent, PoissonSampledDpEvent
from sklearn.base import clone

from .. import _validation as v
from ..accounting import (
    MIN_EPSILON,
    CalibrationError,
    DiscreteGaussianDpEvent,
    PrivacyAccountant,
    RandomChoiceDpEvent,
    calibrate,
    tuned_event,
)
from ..mechanisms import PLANS
from .defaults import FALLBACK_STEPS, resolve_settings
from .targets import Target, is_pipeline, target_of

#: hyperparameters of dpconvex estimators that do not change their privacy cost
PRIVACY_FREE_PARAMS = frozenset({"solver", "max_iter", "learning_rate", "optimizer"})


class SearchPricing:
    """The privacy plan of :class:`~dpconvex.tuning.PrivateRandomSearch` (a mixin)."""

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
        if tuning and self._subsample_rows() is not None:
            return self._tuned_target().shaped_for_subsample(est, rows, self._cfg["n"])
        return est

    def _subsample_rows(self) -> int | None:
        """The tuning runs' ``public_n``: on a secret subsample, its public expected number
        of training rows, which every run is priced and fitted for; else None."""
        return self._cfg["tune_rows"] if self._cfg["strategy"] == "subsample" else None

    def _subsample_fit_params(self) -> dict:
        """A tuning run's fit parameters: ``public_n`` on a secret subsample, else none."""
        rows = self._subsample_rows()
        return {} if rows is None else {"public_n": rows}

    def _run_event(self, run_epsilon: float, score_noise: float | None = None):
        """Event of one tuning run at per-run budget ``run_epsilon``: training plus scoring."""
        cfg = self._cfg
        sized = {"subsample": True} if self._subsample_rows() is not None else {}
        events = [
            ComposedDpEvent([
                est.privacy_event(cfg["tune_rows"], cfg["d"], **sized),
                self._score_event(score_noise),
            ])
            for est in self._runs(run_epsilon, cfg["tune_rows"], tuning=True)
        ]  # fmt: skip
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

    # -- settings -----------------------------------------------------------------
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
