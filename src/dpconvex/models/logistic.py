"""(epsilon, delta)-DP logistic regression, one-vs-rest for more than two declared classes."""

from __future__ import annotations

import numpy as np
from scipy.special import expit
from sklearn.base import ClassifierMixin, _fit_context

from .. import _validation as v
from ..losses import LogisticLoss
from .data_kinds import data_kind
from .estimator import _COMMON_CONSTRAINTS, _DPLinearModel
from .labels import check_labels, declared_classes


class DPLogisticRegression(ClassifierMixin, _DPLinearModel):
    """(epsilon, delta)-DP logistic regression.

    The label set is public and declared (``classes``); it is never read off y.

    Parameters
    ----------
    epsilon, delta : float
        Privacy budget of the whole fit (all classes together).
    method : {"auto", "amp", "output", "dpsgd", "dpgd"}
        "auto" (default: AMP or DP-GD, chosen from the public sizes and the budget by
        :func:`dpconvex.mechanisms.auto.ranking`), "amp", "output", "dpsgd" or "dpgd"; see the
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
    def fit(self, X, y, *, public_n=None):
        """Fit on (X, y); labels must lie in the declared ``classes`` (default {0, 1}).

        The label set, and so ``classes_`` and the shape of ``coef_``, is public:
        it comes from ``classes``, never from ``y`` (a class may be absent from y).

        Parameters
        ----------
        X : {array-like, sparse matrix, dask array} of shape (n_samples, n_features)
            The rows (a dask array or DataFrame chunked by rows is read lazily).
        y : array-like of shape (n_samples,)
            The labels.
        public_n : int, optional
            When ``X`` is a secret subsample (e.g. a Poisson sample in a private search),
            the public expected number of rows it was drawn for: the model is calibrated
            for ``public_n``, never for X's actual row count, and a method whose
            guarantee depends on the row count refuses (``ValueError``). Default None:
            calibrated for X's rows.

        Returns
        -------
        self : DPLogisticRegression
            The fitted model.
        """
        public_n = v.public_n(public_n)
        X, y, kind = self._validated(X, y)
        classes = declared_classes(self.classes)
        kind.check_classification_targets(y)
        check_labels(y, classes, declared=self.classes is not None)
        self._warn_if_clipped(X, y, kind)
        self.classes_ = classes
        if self.classes_.size == 2:
            targets = [np.where(y == self.classes_[1], 1.0, -1.0)]
        else:
            targets = [np.where(y == c, 1.0, -1.0) for c in self.classes_]
        theta, events, n_iter = self._fit_problems(X, targets, kind, public_n)
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
        classes = self.classes_
        return data_kind(scores).map_scores(
            scores,
            lambda s: classes[pick(s)],
            dtype=classes.dtype,
            drop_axis=None if scores.ndim == 1 else 1,
        )

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
