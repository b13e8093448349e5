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

import warnings

from sklearn.base import BaseEstimator, MetaEstimatorMixin, clone
from sklearn.utils.validation import check_is_fitted

from .._random import make_rng
from ..accounting import PrivacyAccountant
from ..models.charge import charge
from .defaults import extrapolate
from .inputs import SearchInputs
from .pricing import SearchPricing
from .run_fits import SearchRuns, draw_value, take_rows
from .runs import sample_number_of_runs
from .targets import is_pipeline, model_of, model_width

#: the one message of a search that selects nothing (repeat-and-select's output "bottom")
NOTHING_SELECTED = (
    "the search selected nothing: the random number of runs was 0 (probability exp(-mu) "
    "with Poisson runs) or no run produced a model; the budget is spent, nothing else is "
    "released"
)


class NothingSelectedError(RuntimeError):
    """Repeat-and-select released its "nothing" output: no run was drawn or none produced a
    model. The budget is spent (this outcome is part of the priced mechanism)."""


class PrivateRandomSearch(
    SearchPricing, SearchRuns, SearchInputs, MetaEstimatorMixin, BaseEstimator
):
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
        subsample = cfg["strategy"] == "subsample"  # among methods that can run there
        rows = cfg["n"] if subsample else cfg["tune_rows"]
        width = model_width(self.estimator, cfg["d"])
        method, reason = model.chosen_method(rows, width, subsample=subsample)
        previous = self._tuned()
        self._base = clone(self.estimator).set_params(**{target.model_param("method"): method})
        self._method = (method, reason)  # reported as method_ once the search is fitted
        return model_of(previous).get_params().get("method") != method

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
        X_train, y_train = take_rows(X, train), y[train]
        noisy = self.scoring == "noisy_validation"
        validation = (take_rows(X, val), y[val]) if noisy else (X_public, y_public)
        run_epsilon = self._run_budget()
        event, spent = self._priced_search(run_epsilon)
        # the data owner hears once how much the declared bounds clip on the rows the
        # released model is trained on; the runs themselves say nothing (a count on the
        # secret subsample would reveal its size, and one warning per run the runs' number)
        subsample = cfg["strategy"] == "subsample"
        released_rows = (X, y) if subsample else (X_train, y_train)
        if not is_pipeline(self.estimator):  # a pipeline's model sees rows only once fitted
            self.estimator._warn_if_clipped(*released_rows)
        # the number of runs and every run's settings are drawn before the charge (they do
        # not depend on the data), so that a distribution that cannot be drawn from is
        # refused before anything is spent
        k = sample_number_of_runs(rng, cfg["mu"], cfg["shape"])
        plans = self._draw_plans(rng, k)
        final_stream = rng.spawn(1)[0]
        self._charge_search(event, X)
        if k == 0 and not subsample:
            raise NothingSelectedError(NOTHING_SELECTED)
        priced, free = self._priced_and_free()
        final_args = (run_epsilon, final_stream, X, y)
        speculate = final_args if subsample and not priced else None
        best, speculated = self._best_run(
            plans, run_epsilon, X_train, y_train, validation, k, speculate
        )
        if best[2] is None and not subsample:
            raise NothingSelectedError(NOTHING_SELECTED)
        self.best_score_, self.best_params_, self.best_estimator_ = best
        if subsample:
            self._release_final_model(best[2] is None, priced, free, rng, final_args, speculated)
        # the noise stream is not released: a spawned stream's key counts the streams
        # drawn before it, and so reveals the number of runs (and a seed the noise)
        self._tuned_target().unseeded(self.best_estimator_)
        if is_pipeline(self.estimator):
            self._warn_if_pipeline_clips(*released_rows)
        self._record_fit(run_epsilon, event, spent, priced, free)
        if classes is not None:
            self.classes_ = classes
        return self

    def _priced_search(self, run_epsilon: float) -> tuple:
        """(the whole search's event, its epsilon by the RDP accountant), within epsilon."""
        event = self._search_event(run_epsilon)
        spent = PrivacyAccountant("rdp").compose(event).get_epsilon(self.delta)
        if spent > self.epsilon * (1 + 1e-9):
            raise ValueError(
                f"run_epsilon={run_epsilon} makes the search spend epsilon={spent:.6g} > "
                f"{self.epsilon}"
            )
        return event, spent

    def _charge_search(self, event, X) -> None:
        """Charge the whole search's event once, before any run reads the rows."""
        charge(
            self.budget,
            event,
            mechanism=f"PrivateRandomSearch({type(self.estimator).__name__})",
            label=f"search on {X.shape[0]} rows x {X.shape[1]} features",
            rows=X,  # the session records the search once; its runs are priced inside it
            delta=self.delta,
        )

    def _priced_and_free(self) -> tuple[list, list]:
        """The searched hyperparameters that change the mechanism, and the free ones."""
        priced = sorted(self._relevant_choices())
        return priced, sorted(set(self.param_distributions) - set(priced))

    def _best_run(self, plans, run_epsilon, X_train, y_train, validation, k, final_args):
        """(score, params, estimator) of the best run, and the speculative final model.

        With workers to spare and ``final_args`` given (a subsample search with no priced
        setting), the final run with the estimator's own settings (the most likely choice)
        is fitted beside the tuning runs, and kept only if chosen: the same fit, with the
        same stream, that would follow them (only the time changes). The speculative model
        is returned with the settings it was fitted with, or None.
        """
        speculate = None
        if final_args is not None:
            own = self._tuned().get_params()
            free = self._priced_and_free()[1]
            guess = extrapolate({name: own[name] for name in free}, self._tuned(), self._cfg)
            speculate = (guess, *final_args)
        runs, speculated = self._run_all(
            plans, run_epsilon, X_train, y_train, validation, k, speculate
        )
        best = (None, {}, None)
        for score, params, est in runs:  # the first best run wins, as in a sequential scan
            if est is not None and (best[2] is None or score > best[0]):
                best = (score, params, est)
        return best, None if speculated is None else (speculate[0], speculated)

    def _release_final_model(self, nothing, priced, free, rng, final_args, speculated) -> None:
        """The subsample strategy's released model: once, on all rows, with the chosen
        settings carried over.

        When nothing was selected (K = 0, or no run produced a model) its priced settings
        are a fresh draw from their lists and its free ones the estimator's own, a
        data-independent choice among the settings the final event prices.
        """
        if nothing:
            own = self._tuned().get_params()
            self.best_params_ = {name: draw_value(name, self.param_distributions[name], rng)
                                 for name in priced}  # fmt: skip
            self.best_params_.update({name: own[name] for name in free})
        self.tuned_params_ = dict(self.best_params_)
        self.best_params_ = extrapolate(self.tuned_params_, self._tuned(), self._cfg)
        if speculated is not None and speculated[0] == self.best_params_:
            self.best_estimator_ = speculated[1]
        else:
            self.best_estimator_ = self._final_fit(self.best_params_, *final_args)

    def _record_fit(self, run_epsilon, event, spent, priced, free) -> None:
        """The fitted attributes that describe the search (not the released model)."""
        cfg = self._cfg
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
