"""The certified solvers (AMP, output perturbation, DP-SCO): failures after the charge,
their messages, iteration limits, and the clipped loss's evaluation routes.

A release counts as covered when the model is finite, the accountant's epsilon is within
the budget and, where the probe can see the solver's point, its gradient norm recomputed
on a fresh objective is <= tau (the certificate the privacy proof needs), and no
per-example derivative exceeds kappa_i = C/||x_i||. A refusal counts as clear only if its
message carries no digit (every number a solver could print after the charge depends on
the data: a gradient norm, tau = 1e-12 n L, an iteration count).
"""

from __future__ import annotations

import math
import warnings

import numpy as np

from . import Probe, Violation

AREA = "solver"


def _numberless(exc: BaseException) -> BaseException:
    """Re-raise ``exc`` after checking that its message has no digit."""
    if any(ch.isdigit() for ch in str(exc)):
        raise Violation(f"a message after the charge carries numbers: {exc}")
    return exc


def _data(n=300, d=4, seed=0, regression=False, scale=1.0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d)) * scale
    w = rng.normal(size=d)
    if regression:
        return X, np.clip(X @ w / (3 * np.sqrt(d)) + 0.1 * rng.normal(size=n), -1, 1)
    return X, (X @ w + 0.3 * rng.normal(size=n) > 0).astype(int)


def _check_model(model, epsilon=1.0):
    if not np.all(np.isfinite(model.coef_)) or not np.all(np.isfinite(model.intercept_)):
        raise Violation("non-finite coefficients released")
    if not model.epsilon_ <= epsilon * (1 + 1e-9):
        raise Violation(f"spent {model.epsilon_} > {epsilon}")
    return model


def _fit(cls_name, data_kw=None, fit_X=None, **params):
    import dpconvex
    from dpconvex.optim import CertificateError

    cls = getattr(dpconvex, cls_name)
    regression = cls_name != "DPLogisticRegression"
    X, y = _data(regression=regression, **(data_kw or {}))
    if fit_X is not None:
        X = fit_X(X)
    params.setdefault("random_state", 0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            model = cls(**params).fit(X, y)
        except CertificateError as exc:
            raise _numberless(exc) from None
    return _check_model(model, params.get("epsilon", 1.0))


def _objective(loss_name="logistic", n=400, d=5, lam=1.0, sparse=False, seed=0, clip=None):
    import scipy.sparse as sp

    from dpconvex.losses import ClippedLoss, require_glm
    from dpconvex.optim import PerturbedGLMObjective

    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    X /= np.linalg.norm(X, axis=1, keepdims=True)
    base = require_glm(loss_name)
    y = np.where(rng.random(n) < 0.5, 1.0, -1.0) if base.binary else rng.normal(size=n)
    if sparse:
        X = sp.csr_matrix(np.where(np.abs(X) > 0.4, X, 0.0))
    bound = base.derivative_bound if math.isfinite(base.derivative_bound) else 1.0
    loss = ClippedLoss(base, bound if clip is None else clip)
    b = rng.normal(0, 3.0, d)
    return lambda: PerturbedGLMObjective(X, y, loss, lam, b)


def _certified(make, tau, **kw):
    """solve() on a fresh objective; the certificate rechecked on another fresh one."""
    from dpconvex.optim import CertificateError, solve

    try:
        res = solve(make(), tau, rng=np.random.default_rng(0), **kw)
    except CertificateError as exc:
        raise _numberless(exc) from None
    norm = make().gradient_norm(res.theta)
    if not norm <= tau:
        raise Violation(f"returned a point with ||grad|| {norm:.3g} > tau {tau:.3g}")
    return res


def _polish_off(make, tau):
    """The provable phase alone after one L-BFGS step (the Newton polish off)."""
    import dpconvex.optim.solvers as solvers

    solvers.POLISH_STEPS = 0  # (a forked child)
    res = _certified(make, tau, method="lbfgs", max_iter=1)
    if res.method != "accelerated":
        raise Violation(f"expected the provable phase, got {res.method}")


def _same_failure_for_two_sizes(tmp):
    """tau below float64's floor on two data sets of different n: one message, no number."""
    from dpconvex.mechanisms import amp
    from dpconvex.optim import CertificateError

    messages = []
    for n in (40, 95):
        X, y = _data(n=n, d=3, seed=n)
        X = X / np.linalg.norm(X, axis=1, keepdims=True)
        y = np.where(y == 1, 1.0, -1.0)
        try:
            amp(X, y, "logistic", lam=60.0, sigma=1.0, tau=1e-300, sigma_out=0.1, clip=1.0,
                row_bound=1.0, rng=np.random.default_rng(0), max_iter=2)  # fmt: skip
        except CertificateError as exc:
            messages.append(str(_numberless(exc)))
    if len(messages) != 2 or messages[0] != messages[1]:
        raise Violation(f"the failures differ with n: {messages}")
    raise CertificateError(messages[0])


def _per_row_gradients_within_c(loss_name, excess, kernels):
    """Rows (1 + excess) R, clip C = sup|f'| R, margins where |f'| = sup|f'|: no per-row
    derivative above kappa_i (the design's objective, or the row kernels)."""
    from dpconvex.data.kernels import RowChunk
    from dpconvex.losses import ClippedLoss, require_glm
    from dpconvex.optim import PerturbedGLMObjective

    rng = np.random.default_rng(1)
    base = require_glm(loss_name)
    X = rng.normal(size=(300, 4))
    X *= (1 + excess) / np.linalg.norm(X, axis=1, keepdims=True)
    y = np.where(rng.random(300) < 0.5, 1.0, -1.0) if base.binary else rng.normal(size=300) * 1e4
    C = base.derivative_bound
    theta = rng.normal(size=4) * 1e4
    loss = ClippedLoss(base, C)
    if kernels:
        rows = {"row_norm": None, "row_bound": 1.0, "fit_intercept": False,
                "intercept_scaling": 1.0}  # fmt: skip
        chunk = RowChunk(X, y, loss, rows)
        d = chunk.loss.derivative(chunk.times(theta), *chunk.args)
        norms = chunk.norms
    else:
        obj = PerturbedGLMObjective(X, y, loss, 1.0)
        d, norms = obj.derivatives(theta), obj.row_norms
    worst = float(np.max(np.abs(d) * norms))
    if worst > C * (1 + 4e-16):
        raise Violation(f"a per-example gradient of norm {worst!r} > C = {C!r}")


def _broken_fast_phase(kind):
    def run(tmp):
        import dpconvex.optim.solvers as solvers

        solvers.POLISH_STEPS = 0  # (a forked child) the Newton polish would mend some

        if kind == "linalg":
            def broken(*a, **k):
                raise np.linalg.LinAlgError("not positive definite")

            solvers._newton_exact = broken
        elif kind == "nan":
            solvers._lbfgs = lambda obj, tau, theta, max_iter: (np.full(obj.d, np.nan), 1)
        elif kind == "overflow":
            def overflow(*a, **k):
                raise FloatingPointError("overflow")

            solvers._lbfgs = overflow
        method = "auto" if kind == "linalg" else "lbfgs"
        res = _certified(_objective(), 1e-8, method=method)
        if res.method != "accelerated":
            raise Violation(f"expected the provable phase, got {res.method}")

    return run


def _sco_small_max_iter(tmp):
    from dpconvex.optim import CertificateError
    from dpconvex.sco import L1Ball, approx_objective_perturbation

    X, y = _data(n=500, d=4, seed=3)
    X = X / np.linalg.norm(X, axis=1, keepdims=True)
    y = np.where(y == 1, 1.0, -1.0)
    try:
        rel = approx_objective_perturbation(X, y, "logistic", L1Ball(4, 1.0), epsilon=0.5,
                                            delta=1e-5, row_bound=1.0, random_state=0,
                                            max_iter=1)  # fmt: skip
    except CertificateError as exc:
        raise _numberless(exc) from None
    if not rel.info["certified_gap"] <= rel.info["accuracy"]:
        raise Violation("released without the certified accuracy")


def _sco_below_allowance(tmp):
    from dpconvex.optim import CertificateError
    from dpconvex.sco import L2Ball, certified_minimize

    Q = np.diag([1.0, 0.1, 0.01])
    try:
        certified_minimize(lambda w: Q @ w - 1.0, L2Ball(3, 10.0).project, np.zeros(3),
                           smoothness=1.0, strong_convexity=0.01, accuracy=1e-40)  # fmt: skip
    except CertificateError as exc:
        raise _numberless(exc) from None


def _no_curvature_loss(tmp):
    from dpconvex.losses import GLMLoss, LogisticLoss
    from dpconvex.mechanisms import output_perturbation

    class Unbounded(GLMLoss):  # a user's loss without a declared curvature bound
        name = "unbounded"
        derivative_bound = 1.0
        binary = True
        value, derivative = LogisticLoss.value, LogisticLoss.derivative
        second_derivative, breakpoints = LogisticLoss.second_derivative, LogisticLoss.breakpoints

    X, y = _data(n=200, d=3)
    X = X / np.linalg.norm(X, axis=1, keepdims=True)
    y = np.where(y == 1, 1.0, -1.0)
    output_perturbation(X, y, Unbounded(), lam=1.0, sigma=1.0, tau=1e-9, clip=1.0,
                        row_bound=1.0, rng=np.random.default_rng(0))  # fmt: skip


def _dask_amp(solver, max_iter):
    def run(tmp):
        import dask
        import dask.array as da

        from dpconvex.data.dask_rows import DaskRows
        from dpconvex.mechanisms import amp

        dask.config.set(scheduler="synchronous")
        X, y = _data(n=2000, d=5, seed=4)
        rows = DaskRows(da.from_array(X, chunks=(500, 5)),
                        da.from_array(np.where(y == 1, 1.0, -1.0), chunks=500),
                        row_norm="normalize", row_bound=1.0, fit_intercept=True)  # fmt: skip
        rel = amp(rows, None, "logistic", lam=2.0, sigma=1.0, tau=1e-9, sigma_out=0.1,
                  clip=math.sqrt(2), row_bound=math.sqrt(2), rng=np.random.default_rng(0),
                  solver=solver, max_iter=max_iter)  # fmt: skip
        if not (rel.info["grad_norm"] <= 1e-9 and np.all(np.isfinite(rel.theta))):
            raise Violation("dask AMP released without its certificate")

    return run


def _invalid_solve(kind):
    def run(tmp):
        from dpconvex.optim import solve

        obj = _objective()()
        args = {"tau": 1e-6}
        if kind.startswith("tau"):
            args["tau"] = {"tau nan": math.nan, "tau inf": math.inf, "tau 0": 0.0,
                           "tau -1": -1.0}[kind]  # fmt: skip
        elif kind == "max_iter -1":
            args["max_iter"] = -1
        elif kind == "max_iter 1.5":
            args["max_iter"] = 1.5
        elif kind == "theta0 nan":
            args["theta0"] = np.full(obj.d, np.nan)
        elif kind == "theta0 wrong length":
            args["theta0"] = np.zeros(obj.d + 2)
        elif kind == "unknown method":
            args["method"] = "sgd"
        elif kind == "svrg out of core":
            obj.passes_are_expensive = True
            args["method"] = "svrg"
        solve(obj, args.pop("tau"), **args)

    return run


def probes() -> list[Probe]:
    out = []

    def add(name, run, timeout=120.0):
        out.append(Probe(AREA, name, run, timeout=timeout))

    # review item 3: a small max_iter made valid fits fail after the charge
    for method in ("amp", "output"):
        for solver in ("auto", "lbfgs", "newton", "svrg"):
            for max_iter in (1, 2):
                add(f"{method} {solver} max_iter={max_iter}",
                    lambda t, m=method, s=solver, k=max_iter: _fit(
                        "DPLogisticRegression", method=m, solver=s, max_iter=k))  # fmt: skip
    for cls in ("DPHuberRegressor", "DPLinearRegression"):
        for method in ("amp", "output"):
            add(f"{cls} {method} lbfgs max_iter=1",
                lambda t, c=cls, m=method: _fit(c, method=m, solver="lbfgs",
                                                max_iter=1))  # fmt: skip
    add("amp lbfgs max_iter=1, 3000 rows, eps 8",
        lambda t: _fit("DPLogisticRegression", {"n": 3000}, solver="lbfgs", max_iter=1,
                       epsilon=8.0))  # fmt: skip
    add("amp lbfgs max_iter=1, one-hot rows",
        lambda t: _fit("DPLogisticRegression", {"n": 2000, "d": 30}, solver="lbfgs",
                       max_iter=1, fit_X=lambda X: (X > 1.0).astype(float)))  # fmt: skip
    add("amp 3 classes lbfgs max_iter=1",
        lambda t: _fit("DPLogisticRegression", {"n": 600}, solver="lbfgs", max_iter=1,
                       classes=[0, 1, 2]))  # fmt: skip
    add("output lam 0.01 (kappa ~ 2e4) lbfgs max_iter=1",
        lambda t: _fit("DPLogisticRegression", {"n": 500}, method="output", lam=0.01,
                       solver="lbfgs", max_iter=1))  # fmt: skip
    for solver in ("auto", "lbfgs", "newton", "svrg"):
        add(f"output lam 1e-8 (kappa ~ 1e11), {solver} max_iter=1",
            lambda t, s=solver: _fit("DPLogisticRegression", {"n": 2000}, method="output",
                                     lam=1e-8, solver=s, max_iter=1))  # fmt: skip
    add("output lam 1e-6, default max_iter",
        lambda t: _fit("DPLogisticRegression", {"n": 2000}, method="output", lam=1e-6))
    add("amp lam 1e6", lambda t: _fit("DPLogisticRegression", lam=1e6, max_iter=1))
    add("amp rows of norm 1e8 (row_bound 1e8, clip)",
        lambda t: _fit("DPLogisticRegression", {"scale": 1e8}, row_norm="clip", row_bound=1e8,
                       solver="lbfgs", max_iter=1))  # fmt: skip
    add("amp rows of norm 1e-150", lambda t: _fit("DPLogisticRegression", {"scale": 1e-150},
                                                  row_norm="clip", max_iter=1))  # fmt: skip
    add("amp all-zero rows, no intercept",
        lambda t: _fit("DPLogisticRegression", fit_X=lambda X: 0 * X, fit_intercept=False,
                       row_norm="clip", max_iter=1))  # fmt: skip
    add("amp one row", lambda t: _fit("DPLogisticRegression", {"n": 2, "seed": 3}, max_iter=1))
    add("huber regression labels 1e300 (y_bound 1e300)",
        lambda t: _fit("DPHuberRegressor", y_bound=1e300, solver="lbfgs", max_iter=1))
    add("user tau 1e300", lambda t: _fit("DPLogisticRegression", tau=1e300, sigma_out=1.0))
    add("user tau 10", lambda t: _fit("DPLogisticRegression", tau=10.0))
    # failures: fixed messages, no numbers
    for tau in (1e-300, 1e-90, 1e-30):
        for method in ("amp", "output"):
            add(f"user tau {tau:g} (below float64's floor), {method}",
                lambda t, m=method, u=tau: _fit("DPLogisticRegression", {"n": 60}, method=m,
                                                tau=u, lam=50.0, max_iter=1))  # fmt: skip
    add("same failure message for two n", _same_failure_for_two_sizes)
    # the solver API directly: every method, loss and layout certifies whatever max_iter
    for loss in ("logistic", "huber", "squared", "smoothed_hinge"):
        for method in ("auto", "lbfgs", "newton", "svrg"):
            add(f"solve {loss} {method} max_iter=0",
                lambda t, ls=loss, m=method: _certified(_objective(ls), 1e-8, method=m,
                                                         max_iter=0))  # fmt: skip
    add("solve sparse rows lbfgs max_iter=1",
        lambda t: _certified(_objective(sparse=True), 1e-8, method="lbfgs", max_iter=1))
    add("solve clip 0.05 (clip binds everywhere) max_iter=1",
        lambda t: _certified(_objective(clip=0.05), 1e-8, method="lbfgs", max_iter=1))
    add("solve d=1, n=1", lambda t: _certified(_objective(n=1, d=1), 1e-10, max_iter=1))
    add("solve, polish off: provable phase from L-BFGS's first step",
        lambda t: _polish_off(_objective(lam=0.05, n=2000), 1e-9))
    add("solve, polish off, huber clip binding",
        lambda t: _polish_off(_objective("huber", clip=0.1), 1e-9))
    add("solve theta0 far away (1e6)",
        lambda t: _certified(_objective(), 1e-8, method="lbfgs", max_iter=1,
                             theta0=np.full(5, 1e6)))  # fmt: skip
    for kind in ("linalg", "nan", "overflow"):
        add(f"fast phase broken ({kind})", _broken_fast_phase(kind))
    for kind in ("tau nan", "tau inf", "tau 0", "tau -1", "max_iter -1", "max_iter 1.5",
                 "theta0 nan", "theta0 wrong length", "unknown method",
                 "svrg out of core"):  # fmt: skip
        add(f"solve {kind}", _invalid_solve(kind))
    add("output: a loss without a curvature bound", _no_curvature_loss)
    # out of core (dask chunks, synchronous)
    add("dask amp lbfgs max_iter=1", _dask_amp("lbfgs", 1), timeout=300)
    add("dask amp auto max_iter=1", _dask_amp("auto", 1), timeout=300)
    # DP-SCO's certified optimizer
    add("sco App-ObjP max_iter=1", _sco_small_max_iter, timeout=300)
    add("sco accuracy below the allowance", _sco_below_allowance)
    # review item 11: rows a rounding error above R, clip at sup|f'| R
    for loss in ("logistic", "huber", "smoothed_hinge"):
        for excess in (1e-13, 1e-16, 1e-9):
            for kernels in (False, True):
                where = "row kernels" if kernels else "design"
                add(f"clip route {loss}, rows (1+{excess:g}) R, {where}",
                    lambda t, ls=loss, e=excess, k=kernels: _per_row_gradients_within_c(
                        ls, e, k))  # fmt: skip
    return out
