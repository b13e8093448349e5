"""``method="auto"``: pick a plan from public quantities only, by a rule derived on synthetic data.

The choice reads the task (the loss), the number of rows n, the number of columns d
(intercept included), the number of one-vs-rest problems K, epsilon, delta and whether
the rows are a dask array or a secret subsample. It never reads the data, so the method
a fit runs is itself a function of public values and reveals nothing. The rule and the
benchmark that derived it (``benchmarks/derive_auto_method.py``, synthetic logistic and
linear models, n from 300 to 1e5, d from 5 to 200, epsilon from 0.1 to 30) are
described in :func:`ranking`.
"""

from __future__ import annotations

import math
import warnings

from ..losses import GLMLoss, HuberLoss, SquaredLoss
from .adassp import AdasspPlan
from .amp import AmpPlan
from .dpgd import DpgdPlan
from .dpsgd import DpsgdPlan
from .output_perturbation import OutputPlan
from .plan import Plan, PlanInputs

_CANDIDATES: dict[str, type[Plan]] = {
    p.name: p for p in (AmpPlan, OutputPlan, DpsgdPlan, DpgdPlan, AdasspPlan)
}
#: the methods each task may use (AdaSSP fits least squares only)
TASK_METHODS = {
    "classification": ("amp", "output", "dpsgd", "dpgd"),
    "regression": ("amp", "output", "dpsgd", "dpgd", "adassp"),
    "huber": ("amp", "output", "dpsgd", "dpgd"),
}


class ConstantModelWarning(UserWarning):
    """The public sizes predict a private model no better than a constant prediction."""


def task_of(loss: GLMLoss, k: int = 1) -> str:
    """The task's name: "regression" (least squares, one problem), "huber" or "classification"."""
    if isinstance(loss, HuberLoss):
        return "huber"
    if isinstance(loss, SquaredLoss) and k == 1:
        return "regression"
    return "classification"


def gaussian_multiplier(epsilon: float, delta: float, k: int = 1) -> float:
    """z = sqrt(2 K log(1.25 / delta)) / epsilon: the classical Gaussian mechanism's noise
    multiplier (Dwork & Roth, "The Algorithmic Foundations of Differential Privacy",
    Thm. A.1), with K problems composed as one Gaussian of multiplier z / sqrt(K) (the
    K-fold composition of Gaussians is a Gaussian, Dong, Roth & Su, "Gaussian
    Differential Privacy", arXiv:1905.02383, Cor. 3.3). A scale for comparing public
    sizes, not a calibration: every plan calibrates its own noise exactly.
    """
    return math.sqrt(2.0 * k * math.log(1.25 / delta)) / epsilon


def signal_to_noise(task: str, n: int, d: int, epsilon: float, delta: float, k: int = 1) -> float:
    """n / (z d): the summed gradient's signal over the noise's effect on predictions.

    A sum of n gradients of norm up to L carries signal of order n L; the Gaussian
    noise that hides one row has norm z L sqrt(d) over d coordinates, and its effect on
    a prediction x.theta grows with sqrt(d) again (each coordinate's error meets a
    feature), so the ratio that decides whether the fit beats a constant is n / (z d).
    ``task`` is accepted for symmetry with :func:`ranking` (the ratio is the same).
    """
    del task
    return n / (gaussian_multiplier(epsilon, delta, k) * d)


#: DP-GD is chosen for least squares below this n / (z d), whatever the columns
REGRESSION_SNR = 150.0
#: for classification and Huber, DP-GD is chosen only with at least this many columns ...
MIN_DPGD_COLUMNS = 15
#: ... and below this n / (z d), for classification
CLASSIFICATION_SNR = 60.0
#: ... and for Huber
HUBER_SNR = 100.0


def ranking(task: str, n: int, d: int, epsilon: float, delta: float, k: int = 1):
    """(methods best first, the reason in words), from public values only.

    Full-batch DP-GD when r = n / (z d) (:func:`signal_to_noise`) is below 150 for least
    squares (``task="regression"``), or when d >= 15 columns and r is below 60
    (classification) or 100 (Huber); AMP otherwise. Derived by
    ``benchmarks/derive_auto_method.py`` on synthetic logistic and linear models (n 300
    to 1e5, d 5 to 200 with n d <= 2e6, epsilon 0.1 to 30, delta 1e-5, 2 seeds, every
    method at its defaults; 90 cells per family). DP-GD won the cells of small r (its
    noisy full gradients degrade towards the constant model, while AMP's objective
    noise, of norm growing with sqrt(d), moves its exact minimizer), AMP the cells of
    large r, where DP-SGD and output perturbation at best tied with it; AdaSSP won only
    cells where every method was within noise of the constant, and stays a fallback.

    Classification: the thresholds minimize the mean regret (best method's score minus
    the choice's) over the grid, 0.15 accuracy points (AMP always: 1.12, DP-GD always:
    0.49), flat for thresholds between 20 and 200; columns 6 (d = 5) against 31 (d = 30)
    is where the grid separated "AMP wins at every r" from "DP-GD wins at small r". Huber
    keeps the rule the linear family gave before DP-GD's least-squares clip rule (mean
    regret 0.016 R^2 there, AMP always 0.049); the clip rule does not apply to it. Least
    squares, rerun after DP-GD's clip rule
    (:func:`~dpconvex.mechanisms.dpgd.default_dpgd_clip`): of the 58 cells with r < 150,
    at every width (d = 5 included), DP-GD was best or within one standard error of the
    best in 55 (the other 3 at r <= 0.31, where every method is at the constant) and beat
    AMP in 56; of the 32 cells with r >= 150 AMP was best or tied in 31. Mean regret
    0.0035 R^2 for any threshold in (103, 199] (none of the grid's r lies between), the
    old rule 0.0146, AMP always 0.085; larger thresholds and DP-GD always reach
    0.0033-0.0034 through a few small-n cells, but DP-GD lost to AMP in 25 of the 28
    cells with n >= 3000 and r >= 150 (by up to 0.0027), taking a median 13 times AMP's
    time.
    """
    snr = signal_to_noise(task, n, d, epsilon, delta, k)
    threshold = {"classification": CLASSIFICATION_SNR, "huber": HUBER_SNR}.get(task, REGRESSION_SNR)
    min_columns = 1 if task == "regression" else MIN_DPGD_COLUMNS
    signal = f"rows / (noise multiplier x columns) = {snr:.3g}"
    if d >= min_columns and snr < threshold:
        order = ("dpgd", "amp", "dpsgd", "output", "adassp")
        columns = f"{d} columns and " if task != "regression" else ""
        why = f"DP-GD: {columns}{signal}, below {threshold:g}"
    else:
        order = ("amp", "dpgd", "dpsgd", "output", "adassp")
        if d < min_columns:
            why = f"AMP: {d} columns, fewer than {min_columns}"
        else:
            why = f"AMP: {signal}, at least {threshold:g}"
    return order, why + " (the better method there on synthetic data)"


def choose_method(
    task: str,
    n: int,
    d: int,
    epsilon: float,
    delta: float,
    *,
    k: int = 1,
    methods: tuple[str, ...] | None = None,
) -> tuple[str, str]:
    """(method, reason): the first of :func:`ranking` among ``methods`` (default: the task's)."""
    allowed = TASK_METHODS[task] if methods is None else methods
    order, why = ranking(task, n, d, epsilon, delta, k)
    for i, method in enumerate(order):
        if method in allowed:
            if i:
                skipped = ", ".join(m for m in order[:i])
                why += f"; {skipped} not available here"
            return method, why
    raise ValueError(f"no method among {sorted(allowed)} can fit this model")


#: below this n / (z d) every method of the synthetic benchmark was within 0.04 R^2 (or
#: 1 accuracy point) of the constant model (benchmarks/derive_auto_method.py); since
#: DP-GD's least-squares clip rule its best linear cell there reaches 0.086 R^2 (r = 0.92)
CONSTANT_SNR = 1.0


def warn_if_constant(task: str, n: int, d: int, epsilon: float, delta: float, k: int = 1) -> bool:
    """Warn (``ConstantModelWarning``) when the public sizes predict a useless model."""
    snr = signal_to_noise(task, n, d, epsilon, delta, k)
    if snr >= CONSTANT_SNR:
        return False
    warnings.warn(
        f"with {n} rows, {d} columns and epsilon={epsilon:g} the privacy noise is expected "
        "to swamp the signal (the model may predict no better than a constant); use more "
        "rows, fewer features or a larger epsilon",
        ConstantModelWarning,
        stacklevel=4,
    )
    return True


def resolve(inputs: PlanInputs) -> tuple[str, str]:
    """(method, reason) for these public inputs, among the plans that can run there."""
    task = task_of(inputs.loss, inputs.k)
    allowed = tuple(
        m
        for m in TASK_METHODS[task]
        if (_CANDIDATES[m].dask or not inputs.dask)
        and (_CANDIDATES[m].size_free or not inputs.subsample)
    )
    return choose_method(
        task, inputs.n, inputs.d, inputs.epsilon, inputs.delta, k=inputs.k, methods=allowed
    )


class AutoPlan(Plan):
    """The plan :func:`choose_method` picks among those that can run here.

    On dask rows only plans that read dask sources qualify, on a secret subsample only
    size-free plans; the chosen plan's ``params``, ``event`` and ``run`` are this plan's.
    """

    name = "auto"
    # a plan that can run on dask and on a subsample always exists (AMP)
    dask = True
    size_free = True

    def __init__(self, inputs: PlanInputs):
        super().__init__(inputs)
        self.method, self.reason = resolve(inputs)
        self.chosen = _CANDIDATES[self.method](inputs)
        self.params, self.event = self.chosen.params, self.chosen.event

    def run(self, X, y, rng):
        return self.chosen.run(X, y, rng)
