"""Certified solves: gradient evaluations to reach ||grad F|| <= tau, the provable phase,
and the cost of the clipped loss's evaluation routes.

Run:  python benchmarks/bench_solvers.py [--quick] [--fallback] [--clip-routes]

Default: synthetic logistic data (d = 20 unit rows plus a bias, labels from a logistic
model), the AMP objective sum_i l_C + (lam/2)||theta||^2 + b^T theta with lam = 3
and b ~ N(0, 5^2 I), tau = 0.01, for n = 10^4, 10^5, 10^6 (10^4, 10^5 with
--quick). For each solver: gradient evaluations / n, evaluations / (n log n)
(flat for an O(n log n) method: seed 000, App. G) and wall time.

--fallback: on Adult (``load_adult().split(0.2, seed=0)``), how often the estimators'
default fits (AMP and output perturbation, epsilon 0.1 / 1 / 8, 5 seeds) enter the
provable phase of :func:`dpconvex.optim.solve` (Nesterov's accelerated gradient after the
fast phase), and how often fits with ``max_iter=1`` (each solver) do; then fits with
``solver="lbfgs", max_iter=1`` and the Newton polish off (``POLISH_STEPS = 0``), which
enter it: its gradient evaluations against its budget, and seconds; then the float64 floor of the
accelerated method alone (its smallest ||grad|| over 3 x its budget for tau = 1e-12 n L,
from 0), against tau.

--clip-routes: seconds per evaluation of the three routes of a clipped loss
(:func:`dpconvex.optim.objective.clipping_kappa`): the base loss (every kappa_i >= sup|f'|),
:class:`~dpconvex.optim.objective.RarelyClippedLoss` (kappa_i within 1e-12 below it, e.g.
rows normalized to R with C = sup|f'| R, where the clip used to be skipped) and the full
ClippedLoss, on 10^6 x 100 dense rows (2 x 10^5 with --quick): gradient, value and
gradient (L-BFGS), gradient and Hessian (Newton's pass) through the row kernels in
memory, through the design's objective, and through dask chunks (the out-of-core
kernels, synchronous scheduler). Min / median of interleaved repeats.

BLAS threads pinned to 1 and printed.
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import math  # noqa: E402
import time  # noqa: E402
import warnings  # noqa: E402

import numpy as np  # noqa: E402

from dpconvex.losses import ClippedLoss, LogisticLoss  # noqa: E402
from dpconvex.optim import PerturbedGLMObjective, solve  # noqa: E402


def problem(n: int, d: int, rng: np.random.Generator):
    X = rng.normal(size=(n, d))
    X /= np.linalg.norm(X, axis=1, keepdims=True)
    X = np.hstack([X, np.ones((n, 1))])
    w = rng.normal(size=d + 1)
    y = np.where(rng.random(n) < 1 / (1 + np.exp(-3 * X @ w)), 1.0, -1.0)
    return X, y


def solvers_table(quick: bool) -> None:
    sizes = [10**4, 10**5] if quick else [10**4, 10**5, 10**6]
    solvers = [
        ("lbfgs", {}),
        ("newton", {}),
        ("svrg", {"batch_size": 8}),
        ("svrg", {"batch_size": 32}),
    ]
    threads = os.environ["OMP_NUM_THREADS"]
    print(f"certified solve, d=21, lam=3, tau=0.01 | OMP_NUM_THREADS={threads}")
    print(
        f"{'n':>9} {'solver':>10} {'grad evals':>12} {'evals/n':>8} {'evals/(n ln n)':>15} "
        f"{'iters':>6} {'seconds':>8} {'||grad||':>9}"
    )
    for n in sizes:
        rng = np.random.default_rng(n)
        X, y = problem(n, 20, rng)
        b = rng.normal(0, 5.0, X.shape[1])
        for name, kw in solvers:
            obj = PerturbedGLMObjective(X, y, ClippedLoss(LogisticLoss(), math.sqrt(2)), 3.0, b)
            start = time.perf_counter()
            res = solve(obj, 0.01, method=name, rng=np.random.default_rng(0), **kw)
            secs = time.perf_counter() - start
            label = name + (f"/B={kw['batch_size']}" if kw else "")
            print(
                f"{n:>9} {label:>10} {res.grad_evals:>12} {res.grad_evals / n:>8.1f} "
                f"{res.grad_evals / (n * math.log(n)):>15.3f} {res.n_iter:>6} {secs:>8.2f} "
                f"{res.grad_norm:>9.2e}"
            )


def fallback(quick: bool) -> None:
    import dpconvex.optim.accelerated as accelerated
    import dpconvex.optim.solvers as solvers
    from dpconvex import DPLogisticRegression
    from dpconvex.datasets import load_adult

    entered = []
    original = solvers.accelerated_phase

    def spy(obj, tau, theta, grad):
        kappa = accelerated.SMOOTHNESS_ALLOWANCE * obj.smoothness() / obj.lam
        budget = accelerated.accelerated_budget(kappa, float(np.linalg.norm(grad)), tau)
        out = original(obj, tau, theta, grad)
        entered.append((kappa, budget, out[2], out[1] <= tau))
        return out

    solvers.accelerated_phase = spy
    X, _, y, _ = load_adult().split(0.2, seed=0)
    seeds = range(2 if quick else 5)
    print(f"Adult {X.shape} | OMP_NUM_THREADS={os.environ['OMP_NUM_THREADS']}")
    fits = 0
    for method in ("amp", "output"):
        for eps in (0.1, 1.0, 8.0):
            for seed in seeds:
                DPLogisticRegression(epsilon=eps, method=method, random_state=seed).fit(X, y)
                fits += 1
    print(f"default fits: {fits}, provable phase entered {len(entered)} times")
    entered.clear()
    for method in ("amp", "output"):
        for eps in (0.1, 1.0, 8.0):
            for solver in ("auto", "lbfgs", "newton", "svrg"):
                DPLogisticRegression(
                    epsilon=eps, method=method, solver=solver, max_iter=1, random_state=0
                ).fit(X, y)
    print(f"max_iter=1 fits (4 solvers): 24, provable phase entered {len(entered)} times")
    solvers.POLISH_STEPS = 0  # forces the provable phase below
    print(f"{'method':>7} {'eps':>5} {'kappa':>8} {'budget':>7} {'steps':>6} {'seconds':>8} ok")
    for method in ("amp", "output"):
        for eps in (0.1, 1.0, 8.0):
            entered.clear()
            start = time.perf_counter()
            DPLogisticRegression(
                epsilon=eps, method=method, solver="lbfgs", max_iter=1, random_state=0
            ).fit(X, y)
            secs = time.perf_counter() - start
            kappa, budget, steps, ok = entered[0]
            print(f"{method:>7} {eps:>5} {kappa:>8.0f} {budget:>7} {steps:>6} {secs:>8.2f} {ok}")
    floor(X, y)


def floor(X, y) -> None:
    """The accelerated method's smallest ||grad|| (float64) against tau = 1e-12 n L."""
    import dpconvex.optim.accelerated as accelerated
    import dpconvex.optim.solvers as solvers
    from dpconvex.mechanisms import add_intercept, transform_rows

    design = add_intercept(transform_rows(np.asarray(X, dtype=float), "normalize", 1.0), 1.0)
    labels = np.where(np.asarray(y) == 1, 1.0, -1.0)
    n = design.shape[0]
    tau = 1e-12 * n * math.sqrt(2)
    for lam in (26.0, 2.65):  # AMP's lam at epsilon 0.1 and 1 on Adult
        rng = np.random.default_rng(0)
        obj = PerturbedGLMObjective(
            design, labels, ClippedLoss(LogisticLoss(), math.sqrt(2)), lam, rng.normal(0, 10, 105)
        )
        grad = obj.gradient(np.zeros(105))
        kappa = accelerated.SMOOTHNESS_ALLOWANCE * obj.smoothness() / lam
        budget = accelerated.accelerated_budget(kappa, float(np.linalg.norm(grad)), tau)
        best = math.inf  # the smallest norm seen over 3 x the budget
        m = (math.sqrt(kappa) - 1) / (math.sqrt(kappa) + 1)
        L = kappa * lam
        x = yy = np.zeros(105)
        g = grad
        for _ in range(3 * budget):
            x_new = yy - g / L
            yy = x_new + m * (x_new - x)
            x = x_new
            g = obj.gradient(yy)
            best = min(best, float(np.linalg.norm(g)))
        polished, _ = solvers._newton_polish(obj, 1e-300, solve(obj, tau).theta, 30)
        newton = obj.gradient_norm(polished)  # Newton's own floor
        print(
            f"floor lam={lam}: kappa {kappa:.0f}, budget {budget}, smallest ||grad|| "
            f"{best:.2e} (tau {tau:.2e}: {tau / best:.0f}x above; Newton's floor {newton:.2e})"
        )


def _interleaved(calls: dict, repeats: int) -> dict:
    """{name: (min, median) seconds}, the calls interleaved repeat by repeat."""
    times = {name: [] for name in calls}
    for _ in range(repeats):
        for name, fn in calls.items():
            start = time.perf_counter()
            fn()
            times[name].append(time.perf_counter() - start)
    return {name: (min(t), float(np.median(t))) for name, t in times.items()}


def clip_routes(quick: bool) -> None:
    from dpconvex.data.sources import InMemoryRows
    from dpconvex.optim.objective import RarelyClippedLoss, clipping_kappa

    rng = np.random.default_rng(0)
    n, d = (2 * 10**5 if quick else 10**6), 100
    X = rng.normal(size=(n, d))
    X /= np.linalg.norm(X, axis=1, keepdims=True)
    y = np.where(rng.random(n) < 0.5, 1.0, -1.0)
    theta = rng.normal(size=d) * 3
    base = LogisticLoss()
    routes = {
        "base": ClippedLoss(base, 2.0),  # kappa = 2 >= 1: the base loss
        "rarely": ClippedLoss(base, 1.0 - 1e-13),  # kappa within 1e-12 of 1
        "clipped": ClippedLoss(base, 0.5),
    }
    expected = {"base": "LogisticLoss", "rarely": RarelyClippedLoss.__name__}
    norms = np.linalg.norm(X, axis=1)
    calls = {}
    dask_x = None
    try:
        import dask
        import dask.array as da

        from dpconvex.data.dask_rows import DaskRows

        dask.config.set(scheduler="synchronous")
        dask_x, dask_y = da.from_array(X, chunks=(125_000, d)), da.from_array(y, chunks=125_000)
    except ImportError:
        pass
    for name, loss in routes.items():
        chosen = type(clipping_kappa(loss, norms)[0]).__name__
        assert chosen == expected.get(name, "ClippedLoss"), chosen
        kernels = InMemoryRows(X, y, None, 1.0).objective(loss, 1.0)
        design = PerturbedGLMObjective(X, y, loss, 1.0)
        calls[("kernels grad", name)] = lambda o=kernels: o.gradient(theta)
        calls[("kernels value+grad", name)] = lambda o=kernels: o.value_and_gradient(theta)
        calls[("kernels grad+Hessian", name)] = lambda o=kernels: o.gradient_hessian(theta)
        calls[("design grad", name)] = lambda o=design: o.gradient(theta)
        calls[("design value+grad", name)] = lambda o=design: o.value_and_gradient(theta)
        if dask_x is not None:
            rows = DaskRows(dask_x, dask_y, row_norm=None, row_bound=1.0, fit_intercept=False)
            obj = rows.objective(loss, 1.0)
            calls[("dask grad", name)] = lambda o=obj: o.gradient(theta)
    times = _interleaved(calls, 5 if quick else 9)
    print(f"{n} x {d} dense, seconds min / median of interleaved repeats "
          f"| OMP_NUM_THREADS={os.environ['OMP_NUM_THREADS']}")  # fmt: skip
    print(f"{'evaluation':>22} " + " ".join(f"{r:>17}" for r in routes))
    for what in dict.fromkeys(k[0] for k in calls):
        cells = [f"{times[(what, r)][0]:>8.4f}/{times[(what, r)][1]:<8.4f}" for r in routes]
        print(f"{what:>22} " + " ".join(cells))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--fallback", action="store_true")
    parser.add_argument("--clip-routes", action="store_true")
    args = parser.parse_args()
    warnings.simplefilter("ignore")
    if args.fallback:
        fallback(args.quick)
    elif args.clip_routes:
        clip_routes(args.quick)
    else:
        solvers_table(args.quick)


if __name__ == "__main__":
    main()
