"""AMP against scikit-learn's L-BFGS logistic regression in memory: wall time and accuracy.

Run:  python benchmarks/bench_inmemory.py [--data adult synthetic] [--synthetic-rows 1e6]
                                          [--repeats 5] [--epsilon 1] [--markdown F]
                                          [--fig2 [--fig2-quick] [--fig2-out DIR]]

Ours: ``DPLogisticRegression(epsilon=..., random_state=s).fit(X, y)`` with its defaults
(method AMP, solver "auto", PLD calibration; the calibration is inside the timed call,
and dpconvex's process-wide accounting caches are emptied before each fit so that every
repeat pays for it, unless --keep-accounting-cache; the table also gives the calibration
alone, ``privacy_event(n, d)`` from empty caches).
AMP minimizes sum_i l(theta; x_i~, y_i) + (lam/2)||theta||^2 + b^T theta over the
transformed rows x_i~ = (x_i / ||x_i||, 1): the default row policy normalizes each row,
and the intercept is an extra feature of value ``intercept_scaling`` = 1 whose weight is
regularized like the others. scikit-learn: ``LogisticRegression(solver="lbfgs",
C=1/lam, fit_intercept=False, tol, max_iter=1000)`` on that same augmented design (its
objective C sum_i l + ||w||^2/2 is ours without the noise term, divided by lam), with lam
= ``mechanism_params_["lam"]`` of our fitted model (lam depends only on epsilon, delta
and the public shape, not on the seed or the data). scikit-learn's time is given in two
parts: its ``fit`` on the design, and building that design from the raw rows (row
normalization and the intercept column, ``design_rows``: one new array), which our fit
does inside ``fit`` (it reads the raw rows in place). The first part is the stricter
comparison; the second depends on the process's memory state (a fresh 800 MB array
faults its pages: 0.3-1.9 s measured on 10^6 x 100). Test accuracy: ours with
``model.score`` on the raw test rows (it applies the same transform), scikit-learn's on
the transformed test rows.

Data: Adult (``load_adult().split(0.2, seed=0)``, as the demo) and the synthetic
logistic model of ``dpconvex.scale.data.synthetic_glm`` (rows N(0, I_100), labels +-1
with P(y = 1) = sigmoid(3 x.w/||x||)), --synthetic-rows training rows (default 1e6) plus
a quarter as many test rows, generated in memory. The two tools are interleaved repeat
by repeat (--repeats, default 5, noise seed s = repeat index; the order alternates),
after one untimed warm-up fit of each on 1,000 rows; the table gives median wall times,
their ratio, ours' median test accuracy (with min-max over the seeds) and
scikit-learn's, and the gradient norm of the noiseless objective at scikit-learn's
solution (it stops when the largest coordinate of the gradient of its objective divided
by n is below tol, 1e-4 by default, --sklearn-tol; ours certifies ||grad|| <= tau =
mechanism_params_["tau"] on the perturbed objective, a much tighter stop).

--fig2 also times ``dpconvex reproduce fig2`` end to end as a subprocess (about 15-18
minutes on 2 cores; --fig2-quick passes --quick, a smoke run). BLAS threads are pinned
to 1 and printed.
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import statistics  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
import warnings  # noqa: E402

import numpy as np  # noqa: E402
from scipy.special import expit  # noqa: E402
from sklearn.exceptions import ConvergenceWarning  # noqa: E402
from sklearn.linear_model import LogisticRegression  # noqa: E402

from dpconvex import DPLogisticRegression  # noqa: E402
from dpconvex.datasets import load_adult  # noqa: E402
from dpconvex.mechanisms import design_rows  # noqa: E402
from dpconvex.scale.data import synthetic_glm  # noqa: E402

D_SYNTHETIC = 100


def synthetic_split(n: int):
    """(X_train, X_test, y_train, y_test): n + n // 4 synthetic_glm rows, the last n // 4 test."""
    X, y = synthetic_glm(n + n // 4, D_SYNTHETIC, chunk_rows=100_000, seed=0)
    X, y = X.compute(scheduler="synchronous"), y.compute(scheduler="synchronous")
    return X[:n], X[n:], y[:n], y[n:]


def design(model: DPLogisticRegression, X) -> np.ndarray:
    """The rows AMP sees: the model's row policy and the intercept column, in one new array."""
    return design_rows(
        X, model.row_norm, model.row_bound, model.fit_intercept, model.intercept_scaling
    )


def forget_accounting() -> bool:
    """Empty dpconvex's process-wide accounting caches; False if they are not found.

    A second fit with the same settings in one process reuses the first one's
    calibration (the cached answers of the accountant); clearing them before each
    timed fit makes every repeat pay for its calibration, as a fresh process would.
    """
    from dpconvex.accounting import accountants

    results, plds = getattr(accountants, "_RESULTS", None), getattr(accountants, "_BASE_PLDS", None)
    if results is None or plds is None:
        return False
    results.clear()
    plds.clear()
    return True


def fit_ours(X, y, classes, epsilon: float, seed: int, fresh: bool = True):
    model = DPLogisticRegression(epsilon=epsilon, classes=classes, random_state=seed)
    if fresh and not forget_accounting():
        raise RuntimeError("dpconvex's accounting caches moved; use --keep-accounting-cache")
    start = time.perf_counter()
    model.fit(X, y)
    return model, time.perf_counter() - start


def fit_sklearn(template: DPLogisticRegression, lam: float, X, y, tol: float = 1e-4):
    """scikit-learn on the design AMP sees, C = 1/lam: (model, design s, fit s, Z, converged)."""
    start = time.perf_counter()
    Z = design(template, X)
    built = time.perf_counter()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ConvergenceWarning)
        model = LogisticRegression(
            solver="lbfgs", C=1.0 / lam, fit_intercept=False, tol=tol, max_iter=1000
        )
        model.fit(Z, y)
    seconds = time.perf_counter() - built
    converged = not any(issubclass(w.category, ConvergenceWarning) for w in caught)
    return model, built - start, seconds, Z, converged


def noiseless_gradient_norm(Z, y, positive, theta: np.ndarray, lam: float) -> float:
    """||grad|| of sum_i log(1 + exp(-y_i z_i^T theta)) + (lam/2)||theta||^2 (labels +-1)."""
    s = np.where(y == positive, 1.0, -1.0)
    weights = -s * expit(-s * (Z @ theta))
    return float(np.linalg.norm(Z.T @ weights + lam * theta))


def run(name: str, split, classes, args) -> tuple[str, dict]:
    X_train, X_test, y_train, y_test = split
    n, d = X_train.shape
    # untimed warm-up of both code paths (imports, first calls) on 1,000 rows
    warm, _ = fit_ours(X_train[:1000], y_train[:1000], classes, args.epsilon, 0)
    fit_sklearn(warm, warm.mechanism_params_["lam"], X_train[:1000], y_train[:1000])

    ours_s, sk_s, sk_design_s, ours_acc, lams, taus = [], [], [], [], set(), set()
    sk = sk_acc = sk_grad = sk_iter = sk_converged = None
    lam = None
    for r in range(args.repeats):
        order = ("ours", "sklearn") if r % 2 == 0 or lam is None else ("sklearn", "ours")
        for tool in order:
            if tool == "ours":
                model, seconds = fit_ours(
                    X_train, y_train, classes, args.epsilon, r, not args.keep_accounting_cache
                )
                ours_s.append(seconds)
                ours_acc.append(float(model.score(X_test, y_test)))
                lam = model.mechanism_params_["lam"]
                lams.add(lam)
                taus.add(model.mechanism_params_["tau"])
                template = model
            else:
                sk, built, seconds, Z, sk_converged = fit_sklearn(
                    template, lam, X_train, y_train, args.sklearn_tol
                )
                sk_s.append(seconds)
                sk_design_s.append(built)
                sk_acc = float(sk.score(design(template, X_test), y_test))
                sk_iter = int(sk.n_iter_[0])
                sk_grad = noiseless_gradient_norm(Z, y_train, sk.classes_[1], sk.coef_[0], lam)
                del Z
            extra = f" (+ design {built:.2f} s)" if tool == "sklearn" else ""
            print(
                f"  {name} repeat {r}: {tool} {seconds:.2f} s{extra}", file=sys.stderr, flush=True
            )
    if len(lams) != 1:
        raise RuntimeError(f"lam changed across seeds: {sorted(lams)}")
    if not args.keep_accounting_cache:
        forget_accounting()
    start = time.perf_counter()  # the calibration alone, from empty caches (no data)
    DPLogisticRegression(epsilon=args.epsilon, classes=classes).privacy_event(n, d)
    calibration = time.perf_counter() - start
    ours_med, sk_med = statistics.median(ours_s), statistics.median(sk_s)
    both = statistics.median([a + b for a, b in zip(sk_s, sk_design_s, strict=True)])
    row = (
        f"| {name} | {n} x {d} | {lam:.4g} | {ours_med:.2f} | {calibration:.2f} | {sk_med:.2f} | "
        f"{statistics.median(sk_design_s):.2f} | {ours_med / sk_med:.2f} | {ours_med / both:.2f} "
        f"| {100 * statistics.median(ours_acc):.2f} "
        f"({100 * min(ours_acc):.2f}-{100 * max(ours_acc):.2f}) | {100 * sk_acc:.2f} | "
        f"{sk_iter}{'' if sk_converged else ' (not converged)'} | {sk_grad:.1e} | "
        f"{max(taus):.1e} |"
    )
    return row, {"ours": ours_s, "sklearn": sk_s}


def time_fig2(quick: bool, out: str | None) -> str:
    out = out or tempfile.mkdtemp(prefix="dpconvex-fig2-")
    command = [sys.executable, "-m", "dpconvex", "reproduce", "fig2", "--out", out]
    if quick:
        command.append("--quick")
    print("running: " + " ".join(command), file=sys.stderr, flush=True)
    start = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True)
    seconds = time.perf_counter() - start
    if done.returncode != 0:
        sys.stderr.write(done.stdout + done.stderr)
        raise SystemExit(f"dpconvex reproduce fig2 failed (exit {done.returncode})")
    last = done.stdout.strip().splitlines()[-1] if done.stdout.strip() else ""
    return (
        f"`dpconvex reproduce fig2{' --quick' if quick else ''} --out {out}`: "
        f"{seconds:.1f} s wall ({seconds / 60:.1f} min) end to end; it printed: {last}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", nargs="+", choices=("adult", "synthetic"))
    parser.add_argument("--synthetic-rows", type=float, default=1e6)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--epsilon", type=float, default=1.0)
    parser.add_argument(
        "--sklearn-tol", type=float, default=1e-4, help="scikit-learn's tol (its default 1e-4)"
    )
    parser.add_argument(
        "--keep-accounting-cache",
        action="store_true",
        help="do not empty the accounting caches before each fit (repeats then skip calibration)",
    )
    parser.add_argument("--fig2", action="store_true", help="also time dpconvex reproduce fig2")
    parser.add_argument("--fig2-quick", action="store_true", help="pass --quick to it")
    parser.add_argument("--fig2-out", help="its --out directory (default: a temporary one)")
    parser.add_argument("--markdown", help="also write the table as markdown")
    args = parser.parse_args()
    data = args.data if args.data is not None else ["adult", "synthetic"]
    lines = [
        f"AMP (DPLogisticRegression(epsilon={args.epsilon:g}), defaults) against scikit-learn "
        'LogisticRegression(solver="lbfgs", C=1/lam, fit_intercept=False, '
        f"tol={args.sklearn_tol:g}) on the same augmented design; median of {args.repeats} "
        "interleaved repeats; "
        f"OMP_NUM_THREADS={os.environ['OMP_NUM_THREADS']}",
        "",
        "| data | train rows x features | lam | ours s | of which calibration s "
        "| sklearn fit s | sklearn design s | ours / sklearn fit | ours / sklearn design + fit "
        "| ours test acc % (min-max) | sklearn test acc % | sklearn iters "
        "| sklearn noiseless grad norm | ours tau |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    print("\n".join(lines), flush=True)
    for name in data:
        if name == "adult":
            split, classes = load_adult().split(0.2, seed=0), None
        else:
            split, classes = synthetic_split(int(args.synthetic_rows)), [-1, 1]
        row, _ = run(name, split, classes, args)
        del split
        lines.append(row)
        print(row, flush=True)
    if args.fig2:
        note = time_fig2(args.fig2_quick, args.fig2_out)
        lines += ["", note]
        print("\n" + note, flush=True)
    if args.markdown:
        with open(args.markdown, "w") as handle:
            handle.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
