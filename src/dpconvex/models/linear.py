"""Private linear models as scikit-learn estimators.

Methods (``method=``):

* ``"auto"`` (the default) — one of the methods below, chosen from public quantities
  only (the task, n, d, the number of classes, epsilon, delta, whether the rows are a
  dask array) by the rule of :mod:`dpconvex.mechanisms.auto`, derived on synthetic data.
  The fitted model states its choice (``method_``) and why (``method_reason_``).
* ``"amp"`` — Algorithm 1 of Redberg, Koskela & Wang (arXiv 2401.00583), approximate
  minima perturbation with gradient clipping at C = R (R the row bound including the
  intercept, sqrt 2 for unit rows plus a bias). (sigma, lam) by the paper's rule with
  noise factor f = 1.3 unless ``lam`` is given; the certificate tau and the output
  noise follow the derived defaults of :mod:`dpconvex.mechanisms.amp` (tau = 1e-12 n L,
  so neither puts a floor under accuracy; the paper's tau = 0.01, sigma_out = 0.15
  are ``PAPER_SETTINGS`` there, for its experiments); PLD accounting by default.
* ``"output"`` — output perturbation of a tau-certified regularized minimizer
  (Wang's lecture notes on objective perturbation, CS291A, UC Santa Barbara, 2021),
  Gaussian noise for sensitivity (L + 2 tau)/lam by the analytic Gaussian calibration.
* ``"dpsgd"`` — DP-SGD with Poisson subsampling (expected batch ``batch_size``,
  ``epochs`` passes), per-example clipping at C, Adam or plain steps.
* ``"dpgd"`` — full-batch DP-GD for ``epochs`` steps (default: derived from epsilon,
  see :class:`dpconvex.mechanisms.dpgd.DpgdPlan`).

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
from numbers import Real

import numpy as np
from sklearn.base import RegressorMixin, _fit_context
from sklearn.utils._param_validation import Interval, StrOptions

from .. import _validation as v
from ..losses import HuberLoss, SquaredLoss
from .clipping import ClippingWarning, warn_if_clipped
from .data_kinds import data_kind
from .estimator import _COMMON_CONSTRAINTS, MAX_ROW_BOUND, METHODS, _DPLinearModel, _positive
from .logistic import DPLogisticRegression

__all__ = [
    "MAX_ROW_BOUND",
    "MAX_TARGET_BOUND",
    "MIN_TARGET_WIDTH",
    "DPHuberRegressor",
    "DPLinearRegression",
    "DPLogisticRegression",
]

#: largest |lo|, |hi| of declared target bounds: coefficients stay far inside float64
MAX_TARGET_BOUND = 1e15
#: smallest (hi - lo) / max(|lo|, |hi|) of declared target bounds: the centre and
#: half-width keep about 40 of float64's 53 bits for the scaled targets
MIN_TARGET_WIDTH = 1e-4


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
    def fit(self, X, y, *, public_n=None):
        """Fit on (X, y); targets are clipped to the declared [lo, hi] and mapped to [-1, 1].

        The map y -> (y - centre) / half_width uses the public centre (lo + hi) / 2 and
        half-width (hi - lo) / 2; ``coef_`` and ``intercept_`` are mapped back, so
        predictions are in the original units.

        Parameters
        ----------
        X : {array-like, sparse matrix, dask array} of shape (n_samples, n_features)
            The rows (a dask array or DataFrame chunked by rows is read lazily).
        y : array-like of shape (n_samples,)
            The targets.
        public_n : int, optional
            When ``X`` is a secret subsample (e.g. a Poisson sample in a private search),
            the public expected number of rows it was drawn for: the model is calibrated
            for ``public_n``, never for X's actual row count, and a method whose
            guarantee depends on the row count refuses (``ValueError``). Default None:
            calibrated for X's rows.

        Returns
        -------
        self
            The fitted model.
        """
        public_n = v.public_n(public_n)
        X, y, kind = self._validated(X, y, y_numeric=True)
        lo, hi = _target_bounds(self.y_bound, self.y_bounds)
        centre, half = _centre_and_half_width(lo, hi)
        y = kind.float_targets(y)
        self._warn_if_clipped(X, y, kind)
        # stays lazy for dask labels; the last clip is a no-op in exact arithmetic and
        # keeps every scaled target in [-1, 1] whatever the rounding
        target = np.clip((np.clip(y, lo, hi) - centre) / half, -1.0, 1.0)
        theta, events, n_iter = self._fit_problems(X, [target], kind, public_n)
        coef, intercept = self._split_theta(theta, half)
        self.coef_, self.intercept_ = coef.ravel(), float(intercept[0]) + centre
        self.n_iter_ = int(n_iter[0])
        self._set_privacy(events)
        return self

    def _warn_if_clipped(self, X, y, kind=None) -> None:
        """As for rows, and the number of targets outside the declared bounds (in memory)."""
        kind = data_kind(X) if kind is None else kind
        if not kind.dask:  # the count goes to the data owner, not into the model
            y = np.asarray(y, dtype=np.float64)
            if self.y_bounds is None:
                bound = 1.0 if self.y_bound is None else float(self.y_bound)
                warn_if_clipped(y, bound, what="targets", setting="y_bound")
            else:
                _warn_outside(y, *_target_bounds(None, self.y_bounds))
        super()._warn_if_clipped(X, y, kind)

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
    n, d and the noise multiplier z: :func:`dpconvex.mechanisms.dpgd.default_dpgd_clip`).
"""


class DPLinearRegression(_DPRegressor):
    _parameter_constraints: dict = {
        **_DPRegressor._parameter_constraints,
        "method": [StrOptions({*METHODS, "adassp", "auto"})],
    }

    __doc__ = (
        """(epsilon, delta)-DP least squares.

    ``method="auto"`` (default) runs AMP or DP-GD as :func:`dpconvex.mechanisms.auto.ranking`
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
