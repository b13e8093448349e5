"""Per-example gradient evaluations to reach the certificate ||grad F|| <= tau, vs n.

Run:  python benchmarks/bench_solvers.py [--quick]

Synthetic logistic data (d = 20 unit rows plus a bias, labels from a logistic
model), the AMP objective sum_i l_C + (lam/2)||theta||^2 + b^T theta with lam = 3
and b ~ N(0, 5^2 I), tau = 0.01, for n = 10^4, 10^5, 10^6 (10^4, 10^5 with
--quick). For each solver: gradient evaluations / n, evaluations / (n log n)
(flat for an O(n log n) method: seed 000, App. G) and wall time. BLAS threads
pinned to 1 and printed.
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import math  # noqa: E402
import time  # noqa: E402

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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    sizes = [10**4, 10**5] if args.quick else [10**4, 10**5, 10**6]
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


if __name__ == "__main__":
    main()
