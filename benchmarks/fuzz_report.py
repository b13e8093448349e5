"""Every input case of the hardening suite against every public entry point: a table of outcomes.

Run:  python benchmarks/fuzz_report.py [--markdown F]

The cases are those of tests/fuzz/cases.py (NaN, inf, empty, one row, constant and
duplicate columns, huge norms, integer/float32 dtypes, sparse, 1-d; labels of the wrong
kind or length; epsilon 1e-6 ... 1e3, 0, negative, NaN, inf; delta 0, 1, above 1,
negative, NaN). Each (entry point, case) is run once and classified:

* released: a result came back (then it must be finite and within budget);
* refused: ValueError/TypeError (or our CalibrationError/CertificateError) with a message;
* other: any other exception (a bug: the message may not name the problem);
* violation: released where the proofs do not cover the input (NaN/inf/empty data,
  wrong-length labels, a budget outside [1e-4, 100] x (0, 1)).
The hypothesis suite (tests/fuzz) asserts the same rules on random combinations.
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import math  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
import warnings  # noqa: E402
from collections import Counter, defaultdict  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from dpconvex import DPHuberRegressor, DPLinearRegression, DPLogisticRegression  # noqa: E402
from dpconvex.accounting import MAX_EPSILON, MIN_EPSILON  # noqa: E402
from tests.fuzz.cases import DELTAS, EPSILONS, X_CASES, Y_CASES  # noqa: E402

UNCOVERED_X = {"nan", "inf", "empty", "1-d array"}
UNCOVERED_Y = {"nan labels", "wrong length"}
CLEAR = ("ValueError", "TypeError", "CalibrationError", "CertificateError", "InvalidParameterError")


def _estimator(kind: str, method: str, eps: float, delta: float):
    cls = {"logistic": DPLogisticRegression, "linear": DPLinearRegression}.get(
        kind, DPHuberRegressor
    )
    return cls(epsilon=eps, delta=delta, method=method, epochs=2, random_state=0)


def estimator_cases():
    for name in ("logistic-amp", "logistic-output", "logistic-dpgd", "logistic-dpsgd",
                 "linear-amp", "huber-amp"):  # fmt: skip
        kind, method = name.split("-")
        for x_case in X_CASES:
            for y_case in Y_CASES:

                def call(kind=kind, method=method, x_case=x_case, y_case=y_case):
                    rng = np.random.default_rng(0)
                    X = X_CASES[x_case](rng)
                    y = Y_CASES[y_case](rng, X.shape[0])
                    model = _estimator(kind, method, 1.0, 1e-5).fit(X, y)
                    assert model.epsilon_ <= 1.0
                    assert np.all(np.isfinite(model.coef_))
                    return model

                covered = x_case not in UNCOVERED_X and y_case not in UNCOVERED_Y
                yield f"estimator {name}", f"X {x_case} / y {y_case}", call, covered


def budget_cases():
    for method in ("amp", "output", "dpgd", "dpsgd"):
        for eps in EPSILONS:
            for delta in DELTAS:

                def call(method=method, eps=eps, delta=delta):
                    rng = np.random.default_rng(0)
                    X, y = rng.normal(size=(60, 4)), np.arange(60) % 2
                    model = _estimator("logistic", method, eps, delta).fit(X, y)
                    assert model.epsilon_ <= eps
                    return model

                covered = math.isfinite(eps) and MIN_EPSILON <= eps <= MAX_EPSILON and 0 < delta < 1
                yield f"budget logistic-{method}", f"eps {eps:g} / delta {delta:g}", call, covered


def sco_cases():
    from dpconvex.sco import approx_objective_perturbation, phased_dpsgd
    from dpconvex.sco.sets import make_set

    for name in ("alg1", "alg6"):
        for x_case in X_CASES:
            for y_case in Y_CASES:

                def call(name=name, x_case=x_case, y_case=y_case):
                    rng = np.random.default_rng(0)
                    X = X_CASES[x_case](rng)
                    y = Y_CASES[y_case](rng, X.shape[0])
                    if name == "alg1":
                        d = X.shape[1] if X.ndim == 2 else 1
                        rel = approx_objective_perturbation(
                            X, y, "logistic", make_set("l1", d, 1.0), epsilon=0.5, delta=1e-5,
                            row_bound=10.0, random_state=0,
                        )  # fmt: skip
                    else:
                        rel = phased_dpsgd(
                            X, y, "logistic", p=4.0, epsilon=0.5, delta=1e-5, row_bound=10.0,
                            random_state=0,
                        )  # fmt: skip
                    assert rel.info["epsilon"] <= 0.5 and np.all(np.isfinite(rel.theta))
                    return rel

                covered = x_case not in UNCOVERED_X and y_case not in UNCOVERED_Y
                yield f"sco {name}", f"X {x_case} / y {y_case}", call, covered


def extra_cases():
    """Entry points of seed 004 (counting queries, Langevin, PDA-DPMD), when installed."""
    try:
        from tests.fuzz.test_seed004 import report_cases
    except ImportError:
        return []
    return report_cases()


def run(groups) -> tuple[dict, list]:
    table: dict[str, Counter] = defaultdict(Counter)
    notes = []
    for group in groups:
        for entry, case, call, covered in group:
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    call()
                outcome = "released" if covered else "violation"
                if not covered:
                    notes.append((entry, case, "released on an input the proofs do not cover"))
            except AssertionError as err:
                outcome = "violation"
                notes.append((entry, case, f"released but {err}"))
            except Exception as err:  # noqa: BLE001 - classifying every failure is the point
                name = type(err).__name__
                clear = name in CLEAR and str(err).strip()
                outcome = "refused" if clear else "other"
                if not clear:
                    notes.append((entry, case, f"{name}: {str(err)[:120]}"))
            table[entry][outcome] += 1
    return table, notes


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--markdown", help="also write the table as markdown")
    args = parser.parse_args()
    start = time.perf_counter()
    table, notes = run([estimator_cases(), budget_cases(), sco_cases(), extra_cases()])
    elapsed = time.perf_counter() - start
    lines = [
        f"`python benchmarks/fuzz_report.py` ({elapsed:.0f} s, "
        f"OMP_NUM_THREADS={os.environ['OMP_NUM_THREADS']}):",
        "",
        "| entry point | cases | released (covered input) | refused, clear error | other error "
        "| violations |",
        "|---|---|---|---|---|---|",
    ]
    total = Counter()
    for entry, counts in table.items():
        total.update(counts)
        lines.append(
            f"| {entry} | {sum(counts.values())} | {counts['released']} | {counts['refused']} "
            f"| {counts['other']} | {counts['violation']} |"
        )
    lines.append(
        f"| **all** | {sum(total.values())} | {total['released']} | {total['refused']} "
        f"| {total['other']} | {total['violation']} |"
    )
    if notes:
        lines += ["", "Cases that were not a clean release or a clear refusal:", ""]
        lines += [f"- {entry}, {case}: {note}" for entry, case, note in notes]
    text = "\n".join(lines)
    print(text)
    if args.markdown:
        Path(args.markdown).write_text(text + "\n")


if __name__ == "__main__":
    main()
