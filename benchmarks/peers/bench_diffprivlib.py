"""diffprivlib LogisticRegression (pure eps-DP) next to our DPLogisticRegression(method="amp").

Run in the diffprivlib environment (see README.md in this folder):

    python benchmarks/peers/bench_diffprivlib.py [--eps 0.1 1 8] [--seeds 10] [--markdown FILE]

Both see the same UCI Adult split (bundled, 80/20, split seed 0) with rows scaled
to unit L2 norm. diffprivlib gets the unit rows and data_norm=1.0 (a declared
bound, never read off the data) and adds its own intercept; ours normalizes the
raw rows itself and appends a constant-1 feature. diffprivlib runs at epsilon
(pure DP, no delta); ours at (epsilon, 1e-5). For each epsilon and seed both are
fitted once, interleaved, and timed by wall clock; accuracy is the mean +- s.e.
over the seeds of the privacy noise, time the median over the same fits.
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_var] = "1"

import argparse  # noqa: E402
import warnings  # noqa: E402

from diffprivlib.accountant import BudgetAccountant  # noqa: E402
from diffprivlib.models import LogisticRegression as DiffprivlibLR  # noqa: E402
from peercommon import (  # noqa: E402
    DELTA,
    adult_split,
    header_lines,
    mean_se,
    median,
    report,
    run_stamp,
    timed,
    unit_rows,
)
from sklearn.exceptions import ConvergenceWarning  # noqa: E402
from sklearn.linear_model import LogisticRegression  # noqa: E402

from dpconvex import DPLogisticRegression  # noqa: E402

HEADERS = [
    "eps",
    "diffprivlib acc %",
    "ours AMP acc %",
    "diffprivlib s",
    "ours s",
    "time ratio dpl/ours",
    "dpl L-BFGS capped",
]


def fit_diffprivlib(eps: float, seed: int, X, y):
    """One diffprivlib fit; returns (seconds, model, hit the L-BFGS iteration cap)."""
    model = DiffprivlibLR(
        epsilon=eps, data_norm=1.0, random_state=seed, accountant=BudgetAccountant()
    )
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ConvergenceWarning)
        seconds, _ = timed(lambda: model.fit(X, y))
    capped = any(issubclass(w.category, ConvergenceWarning) for w in caught)
    return seconds, model, capped


def fit_ours(eps: float, seed: int, X, y):
    model = DPLogisticRegression(epsilon=eps, delta=DELTA, method="amp", random_state=seed)
    seconds, _ = timed(lambda: model.fit(X, y))
    assert model.epsilon_ <= eps
    return seconds, model


def compare_at(eps: float, seeds: int, data) -> list[str]:
    """One table row: both estimators fitted once per seed, interleaved."""
    X_train, X_test, y_train, y_test = data
    Xn_train, Xn_test = unit_rows(X_train), unit_rows(X_test)
    acc_dpl, acc_ours, t_dpl, t_ours, capped = [], [], [], [], 0
    for seed in range(seeds):
        seconds, model, hit_cap = fit_diffprivlib(eps, seed, Xn_train, y_train)
        t_dpl.append(seconds)
        acc_dpl.append(100 * model.score(Xn_test, y_test))
        capped += hit_cap
        seconds, model = fit_ours(eps, seed, X_train, y_train)
        t_ours.append(seconds)
        acc_ours.append(100 * model.score(X_test, y_test))
    (m_dpl, se_dpl), (m_ours, se_ours) = mean_se(acc_dpl), mean_se(acc_ours)
    return [
        f"{eps:g}",
        f"{m_dpl:.2f} +- {se_dpl:.2f}",
        f"{m_ours:.2f} +- {se_ours:.2f}",
        f"{median(t_dpl):.3f}",
        f"{median(t_ours):.3f}",
        f"{median(t_dpl) / median(t_ours):.2f}",
        f"{capped}/{seeds}",
    ]


def nonprivate_accuracy(data) -> float:
    X_train, X_test, y_train, y_test = data
    model = LogisticRegression(max_iter=1000).fit(unit_rows(X_train), y_train)
    return 100 * model.score(unit_rows(X_test), y_test)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--eps", type=float, nargs="+", default=[0.1, 1.0, 8.0])
    parser.add_argument("--seeds", type=int, default=10, help="fits per epsilon and library")
    parser.add_argument("--markdown", metavar="FILE", help="also write the table as markdown")
    args = parser.parse_args()
    stamp = run_stamp()

    data = adult_split()
    n, d = data[0].shape
    settings = [
        f"data: UCI Adult (bundled), {n} train / {data[1].shape[0]} test rows, {d} features, "
        "rows scaled to unit L2 norm",
        "diffprivlib: LogisticRegression(epsilon, data_norm=1.0, C=1.0, max_iter=100), "
        "pure eps-DP objective perturbation, own intercept (norm bound sqrt(2))",
        f"ours: DPLogisticRegression(epsilon, delta={DELTA:g}, method='amp'), defaults "
        "(PLD accounting, constant-1 intercept feature, C = sqrt(2))",
        f"{args.seeds} seeds per epsilon; accuracy mean +- s.e.; fit time median wall clock",
    ]
    lines = header_lines(
        "diffprivlib vs dpconvex AMP on UCI Adult",
        settings,
        ("dpconvex", "diffprivlib", "scikit-learn", "numpy", "scipy"),
        stamp,
    )
    rows = [compare_at(eps, args.seeds, data) for eps in args.eps]
    notes = [
        f"Non-private scikit-learn LogisticRegression on the same unit rows: "
        f"{nonprivate_accuracy(data):.2f} %.",
        "'dpl L-BFGS capped': diffprivlib fits that raised ConvergenceWarning (hit max_iter).",
    ]
    report(lines, HEADERS, rows, args.markdown, notes)


if __name__ == "__main__":
    main()
