"""Peer rows for the frontier benchmark: diffprivlib and Opacus on bench_frontier's data.

Run in the peer's own environment (see README.md in this folder), from the repository root:

    python benchmarks/peers/bench_frontier_peers.py --peer diffprivlib|opacus [--seeds 10]
        [--epsilons 0.1,0.3,1,3,8,30,100] [--data adult,synthetic-l,regression]
        [--sizes 4000x5,16000x10,16000x30] [--lrs 0.005,0.02,0.08] [--out ROWS.json]

The rows are written to ``--out`` as JSON in ``benchmarks/bench_frontier.py``'s format,
``[data, method, epsilon, [score per seed], non-private reference, seconds, unit]``, so
that ``bench_frontier.py --load ours.json,peers.json`` prints and plots them beside our
methods. The data sets, splits, row transforms and non-private references are
bench_frontier's own: its ``regression_family``, ``classification_sets``, ``EPSILONS`` and
``DELTA`` are imported from that file by path, and the references are fitted the same way
(scikit-learn ``LogisticRegression(C=1e4)`` on unit rows, ``LinearRegression`` on the
regression family) in this environment.

* ``--peer diffprivlib`` (method "diffprivlib"): ``diffprivlib.models.LogisticRegression(
  epsilon, data_norm=1.0)`` on the rows scaled to unit L2 norm (adult, synthetic-l), and
  ``diffprivlib.models.LinearRegression(epsilon, bounds_X=(-1, 1) per feature,
  bounds_y=(-1, 1))`` on the regression family (rows already in the unit ball, targets
  in [-1, 1]); ``random_state`` = seed, a fresh BudgetAccountant per fit. diffprivlib is
  pure epsilon-DP (delta = 0), a stricter guarantee than our (epsilon, 1e-5): its rows
  sit at the same epsilon but pay for the stronger guarantee. Its LinearRegression is the
  functional mechanism (Laplace noise on each of the 1 + d + d(d+1)/2 coefficients of the
  squared loss, no regularization): where the noisy quadratic is not convex its minimizer
  runs off, and R^2 falls far below zero.
* ``--peer opacus`` (method "opacus (best lr on test)"; classification sets only):
  DP-SGD in Opacus at our DPLogisticRegression(method="dpsgd") defaults, read from one fit
  of ours per epsilon: unit rows with a constant-1 column, bias-free linear model started
  at 0, per-example clipping at C = sqrt(2), Poisson sampling at q = 256 / n, ceil(60 / q)
  steps (60 epochs), Adam. The noise multiplier is Opacus's own, calibrated by its
  ``get_noise_multiplier`` with its PRV accountant (``--accountant``) at (epsilon, 1e-5)
  for those q and steps. Each seed is run at three Adam learning rates (``--lrs``) and the
  row keeps the learning rate whose mean TEST accuracy over the seeds is best: a choice
  made on the test data, which favours Opacus (it is how the issue's reference numbers
  were made); ours uses its default 0.02 untuned. The model and training loop are
  bench_opacus.py's (``train_opacus`` with the in-memory Poisson loop). The row's seconds
  are those of the chosen learning rate's runs; the search took three times as long.

Seconds are wall clock over all seeds of a row (as in bench_frontier). BLAS threads (and
torch's) are pinned to 1 before numpy is imported; the setting and versions are printed.
The JSON file is rewritten after every row, so an interrupted run keeps what finished.
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_var] = "1"

import argparse  # noqa: E402
import importlib.util  # noqa: E402
import json  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402
from peercommon import header_lines, run_stamp, unit_rows, unit_rows_with_one  # noqa: E402
from sklearn.linear_model import LinearRegression, LogisticRegression  # noqa: E402
from sklearn.metrics import r2_score  # noqa: E402


def _load_frontier():
    """benchmarks/bench_frontier.py, imported by path (it is not a package module)."""
    path = Path(__file__).resolve().parents[1] / "bench_frontier.py"
    spec = importlib.util.spec_from_file_location("bench_frontier", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


frontier = _load_frontier()
regression_family = frontier.regression_family
classification_sets = frontier.classification_sets
EPSILONS, DELTA = frontier.EPSILONS, frontier.DELTA

DEFAULT_SIZES = "4000x5,16000x10,16000x30"  # bench_frontier's --sizes default
DEFAULT_LRS = "0.005,0.02,0.08"
ACCURACY, R2 = "accuracy %", "R^2"
OPACUS_METHOD = "opacus (best lr on test)"


def classification_reference(Xn_train, y_train, Xn_test, y_test) -> float:
    """bench_frontier's non-private classifier: scikit-learn, C = 1e4, on the unit rows."""
    model = LogisticRegression(C=1e4, max_iter=5000).fit(Xn_train, y_train)
    return 100 * model.score(Xn_test, y_test)


def regression_reference(X_train, y_train, X_test, y_test) -> float:
    """bench_frontier's non-private regressor: ordinary least squares, held-out R^2."""
    return r2_score(y_test, LinearRegression().fit(X_train, y_train).predict(X_test))


def row(name, method, eps, scores, reference, seconds, unit) -> list:
    return [name, method, eps, [float(s) for s in scores], float(reference), seconds, unit]


# -- diffprivlib ---------------------------------------------------------------------------


def diffprivlib_classification(name, split, epsilons, seeds, emit) -> None:
    from bench_diffprivlib import fit_diffprivlib  # LogisticRegression(eps, data_norm=1.0)

    X_train, X_test, y_train, y_test = split
    Xn_train, Xn_test = unit_rows(X_train), unit_rows(X_test)
    reference = classification_reference(Xn_train, y_train, Xn_test, y_test)
    for eps in epsilons:
        scores, capped, start = [], 0, time.perf_counter()
        for seed in range(seeds):
            _, model, hit_cap = fit_diffprivlib(eps, seed, Xn_train, y_train)
            capped += hit_cap
            scores.append(100 * model.score(Xn_test, y_test))
        seconds = time.perf_counter() - start
        emit(row(name, "diffprivlib", eps, scores, reference, seconds, ACCURACY))
        if capped:
            print(f"  {name} eps {eps:g}: {capped}/{seeds} fits hit L-BFGS max_iter")


def diffprivlib_regression(n, d, epsilons, seeds, emit) -> None:
    from diffprivlib.accountant import BudgetAccountant
    from diffprivlib.models import LinearRegression as DiffprivlibLinear

    X_train, X_test, y_train, y_test = regression_family(n, d)
    reference = regression_reference(X_train, y_train, X_test, y_test)
    bounds_X = (-np.ones(d), np.ones(d))  # rows lie in the unit ball: every feature in [-1, 1]
    for eps in epsilons:
        scores, start = [], time.perf_counter()
        for seed in range(seeds):
            model = DiffprivlibLinear(
                epsilon=eps,
                bounds_X=bounds_X,
                bounds_y=(-1.0, 1.0),
                random_state=seed,
                accountant=BudgetAccountant(),
            ).fit(X_train, y_train)
            scores.append(r2_score(y_test, model.predict(X_test)))
        seconds = time.perf_counter() - start
        emit(row(f"regression n={n} d={d}", "diffprivlib", eps, scores, reference, seconds, R2))


# -- Opacus --------------------------------------------------------------------------------


def opacus_noise_multiplier(eps: float, q: float, steps: int, accountant: str) -> tuple:
    """Opacus's calibration at (eps, DELTA) and the epsilon its accountant reports for it."""
    from opacus.accountants import create_accountant
    from opacus.accountants.utils import get_noise_multiplier

    z = get_noise_multiplier(
        target_epsilon=eps,
        target_delta=DELTA,
        sample_rate=q,
        steps=steps,
        accountant=accountant,
        epsilon_tolerance=min(0.01, 0.01 * eps),
    )
    check = create_accountant(accountant)
    check.history = [(z, q, steps)]
    return z, check.get_epsilon(delta=DELTA)


def opacus_classification(name, split, epsilons, seeds, lrs, accountant, emit) -> None:
    from bench_opacus import accuracy, fit_ours, train_opacus

    X_train, X_test, y_train, y_test = split
    reference = classification_reference(unit_rows(X_train), y_train, unit_rows(X_test), y_test)
    A_train, A_test = unit_rows_with_one(X_train), unit_rows_with_one(X_test)
    for eps in epsilons:
        _, ours = fit_ours(eps, 0, X_train, y_train)  # our defaults: q, steps, clip, Adam
        params = dict(ours.mechanism_params_)
        z, reported = opacus_noise_multiplier(
            eps, params["sampling_rate"], params["steps"], accountant
        )
        assert reported <= eps * (1 + 1e-9), (reported, eps)
        params["noise_multiplier"] = z
        runs = {}
        for lr in lrs:
            scores, start = [], time.perf_counter()
            for seed in range(seeds):
                w = train_opacus("opacus-tensor", A_train, y_train, {**params, "learning_rate": lr},
                                 seed)  # fmt: skip
                scores.append(accuracy(w, A_test, y_test))
            runs[lr] = (scores, time.perf_counter() - start)
        best = max(lrs, key=lambda lr: np.mean(runs[lr][0]))
        print(
            f"  {name} eps {eps:g}: z Opacus {accountant} {z:.4f} (its epsilon {reported:.4f}), "
            f"ours pld {ours.mechanism_params_['noise_multiplier']:.4f}; q "
            f"{params['sampling_rate']:.6f}, {params['steps']} steps, C {params['clip']:.4f}; "
            "mean test acc by lr: "
            + ", ".join(f"{lr:g}: {np.mean(runs[lr][0]):.2f}" for lr in lrs)
            + f"; chosen {best:g}; search {sum(t for _, t in runs.values()):.0f} s"
        )
        emit(row(name, OPACUS_METHOD, eps, runs[best][0], reference, runs[best][1], ACCURACY))


# -- driver --------------------------------------------------------------------------------


def settings_for(args, epsilons) -> tuple[list[str], tuple[str, ...]]:
    common = [
        f"peer: {args.peer}; our delta (bench_frontier): {DELTA:g}; "
        f"{args.seeds} seeds; epsilons {', '.join(f'{e:g}' for e in epsilons)}",
        f"data: {args.data} (regression sizes {args.sizes}); bench_frontier's splits, "
        "transforms and non-private references",
    ]
    if args.peer == "diffprivlib":
        common.append(
            "diffprivlib: pure epsilon-DP (delta = 0); LogisticRegression(epsilon, "
            "data_norm=1.0) on unit rows; LinearRegression(epsilon, bounds_X=(-1, 1) per "
            "feature, bounds_y=(-1, 1))"
        )
        return common, ("dpconvex", "diffprivlib", "scikit-learn", "numpy", "scipy")
    import torch

    common.append(
        f"opacus: DP-SGD at our dpsgd defaults, noise by Opacus's {args.accountant} "
        f"accountant at (eps, {DELTA:g}); Adam lr chosen on test from {args.lrs}; torch "
        f"threads {torch.get_num_threads()}"
    )
    return common, ("dpconvex", "opacus", "torch", "numpy", "scipy", "scikit-learn")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--peer", choices=("diffprivlib", "opacus"), required=True)
    parser.add_argument("--seeds", type=int, default=10)
    parser.add_argument("--epsilons", default=",".join(f"{e:g}" for e in EPSILONS))
    parser.add_argument("--data", default="adult,synthetic-l,regression")
    parser.add_argument("--sizes", default=DEFAULT_SIZES,
                        help="regression family: comma-separated n x d")  # fmt: skip
    parser.add_argument("--lrs", default=DEFAULT_LRS, help="opacus: Adam learning rates")
    parser.add_argument("--accountant", choices=("prv", "rdp"), default="prv",
                        help="opacus: the accountant that calibrates the noise")  # fmt: skip
    parser.add_argument("--out", help="write the rows to this JSON file (after every row)")
    args = parser.parse_args()
    stamp = run_stamp()
    epsilons = [float(e) for e in args.epsilons.split(",")]
    names = args.data.split(",")
    settings, packages = settings_for(args, epsilons)
    print("\n".join(header_lines("Frontier peer rows", settings, packages, stamp)))

    rows: list[list] = []

    def emit(new_row: list) -> None:
        rows.append(new_row)
        name, method, eps, scores, _, seconds, _ = new_row
        print(f"  {name} | {method} | eps {eps:g}: mean {np.mean(scores):.4g} ({seconds:.1f} s)",
              flush=True)  # fmt: skip
        if args.out:
            Path(args.out).write_text(json.dumps(rows))

    if args.peer == "opacus":
        lrs = [float(x) for x in args.lrs.split(",")]
        if "regression" in names:
            print("opacus: the regression family is skipped (classification sets only)")
        for name, split in classification_sets(names).items():
            opacus_classification(name, split, epsilons, args.seeds, lrs, args.accountant, emit)
    else:
        for name, split in classification_sets(names).items():
            diffprivlib_classification(name, split, epsilons, args.seeds, emit)
        if "regression" in names:
            for size in args.sizes.split(","):
                n, d = (int(x) for x in size.split("x"))
                diffprivlib_regression(n, d, epsilons, args.seeds, emit)
    for unit in (ACCURACY, R2):
        part = [r[:6] for r in rows if r[6] == unit]
        if part:
            frontier.print_table(part, unit)
    if args.out:
        print(f"\nwrote {len(rows)} rows to {args.out}")


if __name__ == "__main__":
    main()
