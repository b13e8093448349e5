"""Certified solvers: each stops on ||grad F||_2 <= tau computed in float64 on the full objective.

* ``"lbfgs"`` — scipy's L-BFGS-B, with its infinity-norm tolerance set so that
  its own stop implies the l2 certificate;
* ``"newton"`` — scipy's trust-region Newton-CG with exact Hessian-vector products;
* ``"svrg"`` — mini-batch SVRG (Johnson & Zhang 2013), the variance-reduced
  stochastic method of Redberg, Koskela & Wang (arXiv 2401.00583), App. G
  (O(n log n) per-example gradients when lam is comparable to n*beta); its
  full-gradient snapshot each epoch *is* the certificate check;
* ``"auto"`` — Newton, then L-BFGS from where Newton stopped if it did not certify.

For moderate d (at most :data:`IN_MEMORY_EXACT_MAX_D` in memory,
:data:`EXACT_HESSIAN_MAX_D` when every evaluation is a pass over data that does not
fit in memory, ``obj.passes_are_expensive``), ``"newton"`` and ``"auto"`` form the
d x d Hessian in the same pass as the gradient and take damped Newton steps
(:func:`_newton_exact`): one pass per iteration, 3 to 7 on logistic objectives, and the
pass that finds ||grad|| <= tau is itself the certificate (float64, full objective).
Out of core, L-BFGS with its polish needed 62 passes on 2e5 x 100 synthetic rows where
this needed 4; on Adult in memory (36,178 x 105, sparse) it replaces about 500
Hessian-vector products of trust-region Newton-CG. From n >= 4 x :data:`WARM_START_ROWS`
rows Newton starts at the solution on a subsample, and its first Hessian is formed from
every k-th row only (:data:`FIRST_HESSIAN_MAX_STRIDE`): on 10^6-10^7 x 100 synthetic
rows still 4 passes, with one full Hessian fewer (out of core 13.0 s instead of 17.2 s
at 10^7 rows held in memory by dask).

Every method ends, if it has not certified, with plain Newton steps accepted on a
smaller gradient norm (:func:`_newton_polish`), which reach certificates near float64's
floor (about n u L) where trust-region and first-order methods stall. ``max_iter``
bounds the chosen method's iterations; the polish is allowed at least
:data:`POLISH_STEPS` steps whatever ``max_iter`` (together: the *fast phase*).

If the fast phase has not certified (not seen on valid input, even with ``max_iter=1``),
a *provable phase* follows, whatever ``max_iter``: Nesterov's accelerated gradient method
for strongly convex smooth functions (:func:`~dpconvex.optim.accelerated.accelerated_phase`),
with the objective's known constants (strong convexity lam; smoothness
sup f'' sum_i ||x_i||^2 + lam <= n beta + lam), from the better of the fast phase's point
and the start. Its iteration budget (:func:`~dpconvex.optim.accelerated.accelerated_budget`)
is derived from the theorem's rate: in exact arithmetic
||grad F|| <= tau is reached within it on every valid input (finite rows, labels in range,
lam > 0, a loss of finite curvature), so certification does not depend on the data. In
float64 it can fail only when tau is below the rounding error of the computed gradient
(the default tau = 1e-12 n L is about 10^4 above it). The budget is about
sqrt(kappa) (ln(18 kappa^2) + 2 ln(||grad F(start)|| / tau)) gradient evaluations,
kappa = (n beta + lam)/lam; it is never released.

Whatever the method, :func:`solve` returns only a point at which it computed
||grad F|| <= tau (float64, full objective), and raises :class:`CertificateError`
otherwise, with a fixed message (no gradient norm, tau or iteration count: they depend on
the data): AMP releases nothing that its proof does not cover. Solver randomness (SVRG's
batches) does not touch the privacy guarantee, which holds for any point meeting the
certificate (Thm 4.1).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import partial
from numbers import Integral

import numpy as np
from scipy import optimize

from .accelerated import accelerated_phase, can_prove, provable_start
from .certificate import CERTIFICATE_MESSAGE, CertificateError
from .objective import PerturbedGLMObjective

SOLVERS = ("auto", "lbfgs", "newton", "svrg")
#: out of core, Newton forms the d x d Hessian in the gradient's pass up to this d
#: (its per-pass cost n d^2 / 2 flops stays near the cost of reading n d numbers)
EXACT_HESSIAN_MAX_D = 2000
#: rows of the subsample whose solution starts Newton on large problems (n >= 4x this)
WARM_START_ROWS = 100_000
#: the first Newton step from that start forms its Hessian from every k-th row,
#: k = min(this, n // WARM_START_ROWS): at least as many rows as the start used
FIRST_HESSIAN_MAX_STRIDE = 8
#: Newton polish steps allowed after the chosen method whatever ``max_iter`` (more when
#: ``max_iter`` leaves more)
POLISH_STEPS = 30
#: in memory, the exact Hessian (n d^2 / 2 flops dense) beats Newton-CG's Hessian-vector
#: products (4 n d flops each, tens per solve) up to about this d
IN_MEMORY_EXACT_MAX_D = 256


@dataclass(frozen=True)
class SolverResult:
    theta: np.ndarray
    grad_norm: float
    n_iter: int
    grad_evals: int
    method: str


def _lbfgs(obj: PerturbedGLMObjective, tau: float, theta0, max_iter: int):
    # L-BFGS-B's own test is max_i |g_i| <= gtol (implies ||g||_2 <= sqrt(d) gtol);
    # the callback stops earlier, as soon as the l2 certificate holds at an iterate.
    last = {}

    def fun(theta):
        value, grad = obj.value_and_gradient(theta)
        last["x"], last["g"] = theta.copy(), grad
        return value, grad

    def stop_when_certified(intermediate_result):
        x = intermediate_result.x
        if "x" in last and np.array_equal(x, last["x"]):
            if np.linalg.norm(last["g"]) <= 0.5 * tau:
                raise StopIteration

    res = optimize.minimize(
        fun,
        theta0,
        jac=True,
        method="L-BFGS-B",
        callback=stop_when_certified,
        options={
            "maxiter": max_iter,
            "gtol": 0.5 * tau / math.sqrt(obj.d),
            "ftol": 1e-15,
            "maxcor": 20,
        },
    )
    return res.x, int(res.nit)


def _newton(obj: PerturbedGLMObjective, tau: float, theta0, max_iter: int):
    res = optimize.minimize(
        obj.value_and_gradient,
        theta0,
        jac=True,
        hessp=obj.hessian_vector,
        method="trust-ncg",
        options={"maxiter": max_iter, "gtol": 0.5 * tau},
    )
    theta, nit = _newton_polish(obj, tau, res.x, max(POLISH_STEPS, max_iter - int(res.nit)))
    return theta, int(res.nit) + nit


def _newton_polish(obj: PerturbedGLMObjective, tau: float, theta, max_steps: int = 30):
    """Plain Newton steps accepted on a smaller gradient norm, for tight certificates.

    Near the optimum a trust-region method stalls once the predicted decrease of F falls
    below float64's resolution of F itself (about 1e-16 |F|): it cannot tell a good step
    from a bad one by F. The gradient keeps its resolution there, so these steps solve
    H p = -g by conjugate gradients (exact Hessian-vector products) and accept a step,
    halving it up to 30 times, when ||g|| drops. Newton converges quadratically in ||g||
    on these strongly convex objectives, so a few steps take ||g|| to its float64 floor.
    """
    from scipy.sparse.linalg import LinearOperator, cg

    grad = obj.gradient(theta)
    norm = float(np.linalg.norm(grad))
    steps = 0
    while norm > 0.5 * tau and steps < max_steps:
        hess = LinearOperator((obj.d, obj.d), matvec=partial(obj.hessian_vector, theta))
        direction, _ = cg(hess, -grad, rtol=1e-10, maxiter=10 * obj.d)
        steps += 1
        for _ in range(30):
            trial = theta + direction
            trial_grad = obj.gradient(trial)
            trial_norm = float(np.linalg.norm(trial_grad))
            if trial_norm < norm:
                theta, grad, norm = trial, trial_grad, trial_norm
                break
            direction = 0.5 * direction
        else:
            break  # no step lowers ||g||: float64's floor is reached
    return theta, steps


def _newton_exact(
    obj,
    tau: float,
    theta,
    max_iter: int,
    *,
    one_pass: bool = False,
    first_stride: int = 1,
    first_hessian: np.ndarray | None = None,
    hessian_cost: float | None = None,
):
    """Damped Newton steps with the exact Hessian.

    Returns (theta, iterations, ||g(theta)||, the last Hessian formed).

    The step p = -H^{-1} g (Cholesky; H >= lam I is positive definite) is tried at unit
    length and accepted if ||g|| falls (p is a descent direction for ||g||^2, since
    g^T H p = -||g||^2); otherwise it is halved from the same point. The norm returned
    is the one computed at the returned point, in float64 on the full objective: the
    certificate, with no extra evaluation.

    The Hessian costs about d/20 times the gradient in memory, so it is kept while it
    works (the last step cut ||g|| at least tenfold, and a step on the kept Hessian cut it
    more than the step before: near the optimum a kept Hessian still gives fast linear
    convergence) and recomputed otherwise, unless the last step's ratio, applied once
    more, already reaches tau: then the next step needs no new Hessian (on 10^6 x 100
    rows this saved a full Hessian, a third of the solve, at the same 4 steps). A kept
    Hessian gets the BFGS update of each step it took (:func:`_bfgs_update`): on 10^6 x 100
    synthetic rows the step after the exact Hessian's then certifies (3 steps instead of
    4 at epsilon 0.3, 1 and 8, three seeds each); on 10^6 rows drawn from Adult's
    one-hot rows it kept the Hessian one step longer (5 steps instead of 4 at epsilon
    0.1 and 1, the same two d x d Hessians). With
    ``one_pass`` (out of core, and the row kernels in memory, whose pass forms the
    Hessian from the margins it already has) the Hessian rides on the pass that
    evaluates the next trial point whenever it is due, so that no pass is spent on the
    Hessian alone except after a rejected step.
    (Skipping it on the first trial after the subsample start was measured: 7 passes
    instead of 4 on 10^6 x 100 rows, the kept Hessian converging only linearly.)

    ``hessian_cost`` (in memory: what an exact Hessian costs, in gradient passes; the
    row kernels' objective gives d/20) replaces that rule by a cost comparison: a kept or
    given Hessian is replaced when a step was slow (ratio above 0.1) or when the steps
    its last ratio predicts to tau, log(tau/||g||) / log(ratio), exceed the cost of a new
    Hessian and two steps; a given first Hessian serves the first step. Where passes are
    cheap this trades the full Hessian for more passes: on 10^6 x 100 dense rows (plain,
    correlated with condition number 100, badly scaled; epsilon 0.1, 1 and 8) 7 gradient
    passes and no full Hessian took 0.87-0.92 s against 0.97-1.11 s for 4 passes and one
    Hessian. Out of core (passes counted) ``solve`` passes no cost.

    ``first_stride`` k > 1 forms the first Hessian from every k-th row (sub-sampled
    Newton; see :meth:`PerturbedGLMObjective.hessian`). From a subsample's solution the
    first step's error is dominated by the start's distance to the optimum, so a Hessian
    from as many rows as the start costs nothing in passes and 1/k of the arithmetic;
    every later Hessian is exact, so the last steps stay quadratic. A step rejected on
    the subsampled Hessian recomputes the exact one before halving. ``first_hessian``,
    given, is used in the same way for the first step (then the first pass forms none).
    """
    from scipy.linalg import cho_factor, cho_solve

    if first_hessian is None:
        grad, hess = obj.gradient_hessian(theta, stride=first_stride)
    else:
        grad, _ = obj.gradient_hessian(theta, hessian=False)
        hess = first_hessian
    sampled = first_stride > 1 or first_hessian is not None  # hess is not theta's exact one
    fresh = not sampled  # hess is the exact Hessian at theta
    norm = float(np.linalg.norm(grad))
    direction, step, it, ratio, linear = None, 1.0, 0, 1.0, False

    def renew() -> bool:
        """Whether the next step should have a new exact Hessian: the last step was slow
        (or on the subsampled Hessian, or linear), unless the kept Hessian's rate already
        predicts the certificate after one more step (||g|| ratio <= tau). With a
        ``hessian_cost`` (in gradients), the kept Hessian is renewed only when a step was
        slow, or when the steps its last rate predicts to the certificate cost more than
        a new Hessian and two steps; a given first Hessian serves the first step."""
        if norm * ratio <= tau:
            return False
        if hessian_cost is None:
            return ratio > 0.1 or sampled or linear
        if ratio >= 1.0:  # no step taken yet
            return first_hessian is None
        steps = math.log(tau / norm) / math.log(ratio)
        return ratio > 0.1 or steps > hessian_cost + 2

    while norm > tau and it < max_iter:
        if direction is None:
            direction = -cho_solve(cho_factor(hess), grad)
            step = 1.0
        trial = theta + step * direction
        slow = renew()  # then the trial's pass brings the next (exact) Hessian
        trial_grad, trial_hess = obj.gradient_hessian(trial, hessian=one_pass and slow)
        it += 1
        trial_norm = float(np.linalg.norm(trial_grad))
        if trial_norm < norm:
            # a step on a kept Hessian that cut ||g|| no more than the step before it:
            # convergence has turned linear, and only a new Hessian makes it quadratic again
            linear = not fresh and trial_norm / norm >= ratio
            ratio = trial_norm / norm
            moved, change = trial - theta, trial_grad - grad
            theta, grad, norm, direction = trial, trial_grad, trial_norm, None
            if trial_hess is not None:
                hess, fresh, sampled, linear = trial_hess, True, False, False
            elif renew() and norm > tau and not one_pass:
                hess, fresh, sampled, linear = obj.hessian(theta), True, False, False
            else:  # keep the Hessian (out of core, the next pass brings a new one if slow)
                hess, fresh = _bfgs_update(hess, moved, change), False
        elif not fresh:  # a kept or subsampled Hessian may be the cause: recompute it here
            hess, fresh, sampled, linear = obj.hessian(theta), True, False, False
            direction, ratio = None, 1.0
        else:
            step *= 0.5
            if step < 1e-10:  # no step lowers ||g||: float64's floor is reached
                break
    return theta, it, norm, hess


def _bfgs_update(hess: np.ndarray, s: np.ndarray, y: np.ndarray) -> np.ndarray:
    """The BFGS update of a Hessian approximation by the step s and its gradient change y.

    H + y y^T / (y^T s) - H s s^T H / (s^T H s) (Nocedal & Wright, Numerical Optimization,
    2nd ed., eq. 6.19): symmetric, positive definite when H is and y^T s > 0 (always on a
    strongly convex objective), and it satisfies the secant equation H+ s = y, so a kept
    Hessian learns how the curvature changed along the last step (O(d^2), no pass).
    Returned unchanged if y^T s or s^T H s is not positive (rounding at the floor).
    """
    sy = float(s @ y)
    hs = hess @ s
    shs = float(s @ hs)
    if not (sy > 0 and shs > 0):
        return hess
    return hess + np.outer(y, y) / sy - np.outer(hs, hs) / shs


def _warm_start(obj, theta):
    """Newton's start: (the solution on a subsample, first Hessian's row stride, or its
    first Hessian).

    For small n (or an objective without ``subsample``): ``(theta, 1, None)``. The
    subsample's minimizer lies within about sqrt(d/m) (relative) of the full one, so the
    Hessian there is nearly the optimum's and the full problem needs only a few steps
    (out of core: passes). The certificate is checked on the full objective.

    In memory the subsample's rows are spread evenly over the data, and its last
    Hessian, rescaled by n/m, is the first Hessian of the full problem (as good as one
    from every k-th row, and free: 0.08 s of 1.3 s on 10^6 x 100 rows). Out of core the
    subsample is the first rows, which may not represent the rest (sorted files): when
    every pass reads the files, the first pass forms the Hessian from every k-th row of
    every chunk instead (:data:`FIRST_HESSIAN_MAX_STRIDE`), since a poor first step would
    cost a read of the files. When the rows are held in the workers' memory
    (``obj.rows_held``), a pass is cheap and the subsample's Hessian is used as in
    memory: if the first rows do not represent the rest, the first step is slow and the
    next pass brings the exact Hessian (on 10^6 x 100 rows held from Parquet files the
    first pass took 0.06 s instead of 0.18 s).

    The subsample is solved to ||g|| <= 1e-8 m: a looser stop (1% of its first gradient
    norm) saved a subsample step on 10^6 synthetic rows, but on 10^6 rows drawn from
    Adult's one-hot rows (ill-conditioned) the full problem then took 5 Newton steps
    instead of 4, with the same two d x d Hessians.
    """
    if obj.n < 4 * WARM_START_ROWS or not hasattr(obj, "subsample"):
        return theta, 1, None
    solve_sub = partial(_subsample_solution, theta=np.asarray(theta, dtype=np.float64))
    if hasattr(obj, "on_subsample"):  # the source may solve it where the rows are
        start, hess, m = obj.on_subsample(WARM_START_ROWS, solve_sub)
    else:
        start, hess, m = solve_sub(obj.subsample(WARM_START_ROWS))
    if not (np.all(np.isfinite(start)) and np.all(np.isfinite(hess))):
        return theta, 1, None
    if getattr(obj, "passes_are_expensive", False) and not getattr(obj, "rows_held", False):
        return start, min(FIRST_HESSIAN_MAX_STRIDE, obj.n // WARM_START_ROWS), None
    # sub's Hessian is sum_S f'' x x^T + (m/n) lam I: times n/m, the full one's estimate
    return start, 1, hess * (obj.n / m)


def _subsample_solution(sub, theta: np.ndarray):
    """(minimizer, its last Hessian, rows) of the subsample's objective ``sub`` (Newton's
    warm start), solved to ||g|| <= 1e-8 m from ``theta``."""
    # one_pass: the Hessian is formed at the first trial point and after every slow step,
    # never only at theta, so the one returned was formed within a step or two of start
    start, _, _, hess = _newton_exact(sub, 1e-8 * sub.n, theta, 50, one_pass=True)
    return start, hess, sub.n


def _svrg(
    obj: PerturbedGLMObjective,
    tau: float,
    theta0,
    max_iter: int,
    rng: np.random.Generator,
    batch_size: int | None,
):
    """Mini-batch SVRG on F/n; one epoch = n/B inner steps; stops at a certified snapshot.

    Step 1/(2(L_mean + L_max/B)). With a batch size B independent of n, each epoch
    contracts by roughly exp(-lam/(2 L_mean B)), so the number of epochs grows
    only with log(n/tau): O(n log n) per-example gradients (Redberg et al., App. G).
    Smaller B means fewer gradient evaluations but more Python-level steps.
    """
    n = obj.n
    batch = min(n, batch_size or 32)
    l_mean, l_max = obj.smoothness_bounds()
    step = 1.0 / (2.0 * (l_mean + l_max / batch))
    inner = max(1, n // batch)
    snapshot = np.array(theta0, dtype=np.float64)
    for epoch in range(1, max_iter + 1):
        full = obj.gradient(snapshot)
        if np.linalg.norm(full) <= 0.5 * tau:
            return snapshot, epoch
        mu = full / n
        theta = snapshot.copy()
        for _ in range(inner):
            rows = rng.integers(0, n, size=batch)
            xb = obj.X[rows]
            d_new = obj.derivatives(theta, rows)
            d_old = obj.derivatives(snapshot, rows)
            g = xb.T @ (d_new - d_old) / batch + (obj.lam / n) * (theta - snapshot) + mu
            theta -= step * g
        obj.grad_evals += 2 * inner * batch
        snapshot = theta
    return snapshot, max_iter


def solve(
    obj: PerturbedGLMObjective,
    tau: float,
    *,
    method: str = "auto",
    max_iter: int = 1000,
    rng: np.random.Generator | None = None,
    batch_size: int | None = None,
    theta0: np.ndarray | None = None,
) -> SolverResult:
    """Minimize ``obj`` until ||grad||_2 <= tau (checked in float64); raise if not reached.

    ``max_iter`` bounds the iterations of ``method`` only (SVRG: epochs); its Newton
    polish gets at least :data:`POLISH_STEPS` steps. If that fast phase has not
    certified, the provable phase (Nesterov's accelerated gradient,
    :func:`~dpconvex.optim.accelerated.accelerated_budget`) continues from the better of its
    point and the start, and certifies on every valid input unless tau is below float64's
    rounding of the gradient; :class:`CertificateError` (a fixed message) otherwise.
    """
    if method not in SOLVERS:
        raise ValueError(f"solver must be one of {SOLVERS}, got {method!r}")
    if not (math.isfinite(tau) and tau > 0):
        raise ValueError("tau must be a finite number > 0")
    if isinstance(max_iter, bool) or not isinstance(max_iter, Integral) or max_iter < 0:
        raise ValueError("max_iter must be an integer >= 0")
    start = np.zeros(obj.d) if theta0 is None else np.asarray(theta0, dtype=np.float64)
    if start.shape != (obj.d,) or not np.all(np.isfinite(start)):
        raise ValueError(f"theta0 must be a finite vector of length {obj.d}")
    expensive = getattr(obj, "passes_are_expensive", False)  # out of core: each is a pass
    if expensive and method == "svrg":
        raise ValueError("SVRG needs random access to rows; use 'lbfgs' on dask data")
    if method == "svrg" and hasattr(obj, "random_access"):
        obj = obj.random_access()  # rows read in place by passes: SVRG needs them in an array
    try:
        theta, n_iter, method, grad_norm = _fast_phase(
            obj, tau, method, max_iter, rng, batch_size, start, theta0 is None
        )
    except (np.linalg.LinAlgError, ArithmeticError):  # rounding broke a fast method
        theta, n_iter, grad_norm = None, 0, math.nan
    if not grad_norm <= tau and can_prove(obj):
        theta, grad = provable_start(obj, [theta, start])
        theta, grad_norm, extra = accelerated_phase(obj, tau, theta, grad)
        n_iter, method = n_iter + extra, "accelerated"
    if not grad_norm <= tau:
        raise CertificateError(CERTIFICATE_MESSAGE)
    return SolverResult(theta, grad_norm, n_iter, obj.grad_evals, method)


def _fast_phase(obj, tau, method, max_iter, rng, batch_size, theta, cold: bool):
    """(theta, iterations, method, ||grad F(theta)||) of the chosen method, its polish
    included, within ``max_iter``; ``cold``: started at 0 (Newton may warm-start)."""
    n_iter = 0
    expensive = getattr(obj, "passes_are_expensive", False)
    exact = hasattr(obj, "gradient_hessian") and obj.d <= (
        EXACT_HESSIAN_MAX_D if expensive else IN_MEMORY_EXACT_MAX_D
    )
    if method in ("auto", "newton") and exact:
        stride, first = 1, None
        if cold:
            theta, stride, first = _warm_start(obj, theta)
        one_pass = expensive or getattr(obj, "hessian_rides_on_pass", False)
        theta, n_iter, grad_norm, _ = _newton_exact(
            obj,
            tau,
            theta,
            max_iter,
            one_pass=one_pass,
            first_stride=stride,
            first_hessian=first,
            hessian_cost=None if expensive else getattr(obj, "hessian_cost", None),
        )
        if grad_norm <= tau:  # certified by the pass that computed this gradient
            return theta, n_iter, "newton", grad_norm
        method = "lbfgs"  # (not seen on strongly convex objectives) finish with L-BFGS
    elif expensive and method == "auto":
        method = "lbfgs"  # far fewer passes than Newton's Hessian-vector products
    if method in ("auto", "newton"):
        theta, n_iter = _newton(obj, tau, theta, max_iter)
    if method == "lbfgs" or (method == "auto" and obj.gradient_norm(theta) > tau):
        theta, extra = _lbfgs(obj, tau, theta, max_iter)
        n_iter += extra
    if method == "svrg":
        rng = np.random.default_rng() if rng is None else rng
        theta, n_iter = _svrg(obj, tau, theta, max_iter, rng, batch_size)
    if method in ("lbfgs", "svrg") and obj.gradient_norm(theta) > tau:
        # first-order methods stall far above float64's floor; finish with Newton steps
        steps = max(POLISH_STEPS, max_iter - n_iter)
        theta, extra = _newton_polish(obj, tau, theta, steps)
        n_iter += extra
    return theta, n_iter, method, obj.gradient_norm(theta)
