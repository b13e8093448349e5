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
CLEAR = ("ValueError", "TypeError", "CalibrationError", "CertificateError", "InvalidParameterError",
         "BudgetExceededError", "LedgerError", "LedgerTamperedError")  # fmt: skip


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
                if kind == "logistic" and covered:
                    # no classes= given: covered iff the labels drawn lie in {0, 1} (one row of
                    # the three-class case draws a single label, which may be 0)
                    rng = np.random.default_rng(0)
                    X = X_CASES[x_case](rng)
                    labels = np.unique(np.asarray(Y_CASES[y_case](rng, X.shape[0]), dtype=object))
                    covered = all(
                        isinstance(v, int | float | np.integer | np.floating) and v in (0, 1)
                        for v in labels
                    )
                yield f"estimator {name}", f"X {x_case} / y {y_case}", call, covered


def declared_classes_cases():
    """Classifiers with a declared label set: covered iff every label is declared.

    A release must have one problem per declared class whatever labels the data holds
    (the neighbour who adds a row of a new label cannot change the model's shape).
    """
    bad = {"'ab' (a string)": "ab", "[1, 1] (repeat)": [1, 1], "[0] (one label)": [0],
           "[nan, 1]": [float("nan"), 1.0], "[] (empty)": [], "3 (not a list)": 3}  # fmt: skip
    good = {"[0, 1, 2]": [0, 1, 2], "['no', 'yes']": ["no", "yes"], "[-1, 1]": [-1, 1],
            "[0, 1, 2, 7]": [0, 1, 2, 7]}  # fmt: skip
    for method in ("amp", "output", "dpsgd"):
        for label, classes in {**bad, **good}.items():
            for y_case in ("binary", "signed", "strings", "three classes", "one class"):

                def call(method=method, classes=classes, y_case=y_case):
                    rng = np.random.default_rng(0)
                    X = rng.normal(size=(60, 4))
                    y = Y_CASES[y_case](rng, 60)
                    model = DPLogisticRegression(
                        epsilon=1.0, delta=1e-5, method=method, epochs=2, classes=classes,
                        random_state=0,
                    ).fit(X, y)  # fmt: skip
                    k = len(classes)
                    assert model.coef_.shape == ((1 if k == 2 else k), 4), "shape off declared"
                    assert list(model.classes_) == sorted(classes), "classes_ not the declared"
                    assert model.epsilon_ <= 1.0
                    return model

                labels = set(np.unique(Y_CASES[y_case](np.random.default_rng(0), 60)).tolist())
                covered = label in good and labels <= set(classes)
                yield f"classes logistic-{method}", f"classes {label} / y {y_case}", call, covered


def ledger_cases():
    """The budget ledger: bad budgets and bad events are refused, never priced.

    A spend of an invalid event must record nothing (a negative count once refunded
    budget); "released" here means the spend was recorded.
    """
    import tempfile

    from dp_accounting.dp_event import (
        PoissonSampledDpEvent,
        SampledWithoutReplacementDpEvent,
        SelfComposedDpEvent,
    )

    from dpconvex import Budget
    from dpconvex.accounting import GaussianDpEvent

    g = GaussianDpEvent(5.0)
    budgets = {f"eps {e:g} / delta {d:g}": (e, d) for e in EPSILONS for d in DELTAS[:4]}
    budgets["eps 1e308 / delta 1e-300"] = (1e308, 1e-300)
    budgets["eps True"] = (True, 1e-5)
    budgets["eps float32(0.1)"] = (np.float32(0.1), 1e-5)
    budgets["delta '1e-5'"] = (1.0, "1e-5")
    for label, (eps, delta) in budgets.items():

        def call(eps=eps, delta=delta):
            with tempfile.TemporaryDirectory() as tmp:
                ledger = Budget(Path(tmp) / "l.db", eps, delta)
                ledger.spend(g, mechanism="fuzz")
                assert ledger.spent() <= ledger.epsilon
                return ledger

        ok = (
            type(eps) is float and math.isfinite(eps) and MIN_EPSILON <= eps <= MAX_EPSILON
            and type(delta) is float and 1e-100 <= delta < 1
        )  # fmt: skip
        ok = ok or label == "eps float32(0.1)"
        yield "ledger Budget(...)", label, call, ok

    events = {
        "Gaussian(5)": (lambda: g, True),
        "Gaussian(nan)": (lambda: GaussianDpEvent(float("nan")), False),
        "Gaussian(0)": (lambda: GaussianDpEvent(0.0), False),
        "Gaussian(-1)": (lambda: GaussianDpEvent(-1.0), False),
        "Gaussian(inf)": (lambda: GaussianDpEvent(float("inf")), False),
        "self-composed x0": (lambda: SelfComposedDpEvent(g, 0), False),
        "self-composed x-1": (lambda: SelfComposedDpEvent(g, -1), False),
        "self-composed x2.5": (lambda: SelfComposedDpEvent(g, 2.5), False),
        "self-composed xTrue": (lambda: SelfComposedDpEvent(g, True), False),
        "self-composed x3": (lambda: SelfComposedDpEvent(g, 3), True),
        "poisson q=0": (lambda: PoissonSampledDpEvent(0.0, g), False),
        "poisson q=1.5": (lambda: PoissonSampledDpEvent(1.5, g), False),
        "poisson q=nan": (lambda: PoissonSampledDpEvent(float("nan"), g), False),
        "poisson q=0.01": (lambda: PoissonSampledDpEvent(0.01, g), True),
        "sampled 10 of 5": (lambda: SampledWithoutReplacementDpEvent(5, 10, g), False),
        "not an event": (lambda: "gaussian", False),
        "unregistered event type": (lambda: _CustomEvent(), False),
    }
    for label, (make, ok) in events.items():

        def call(make=make):
            with tempfile.TemporaryDirectory() as tmp:
                ledger = Budget(Path(tmp) / "l.db", 4.0, 1e-5)
                ledger.spend(g, mechanism="fuzz")
                before = ledger.spent()
                try:
                    ledger.spend(make(), mechanism="fuzz")
                finally:
                    assert ledger.spent() >= before, "a spend lowered the ledger's total"
                    Budget(ledger.path).entries()  # the ledger must stay readable
                return ledger

        yield "ledger spend(event)", label, call, ok


def _custom_event_class():
    import attr
    from dp_accounting.dp_event import DpEvent

    @attr.define(frozen=True)
    class FuzzCustomDpEvent(DpEvent):
        """An event type the ledger does not know how to store."""

        value: float = 1.0

    return FuzzCustomDpEvent


def _CustomEvent():  # noqa: N802 - reads as a constructor in the case table
    return _custom_event_class()()


def row_bound_cases():
    """Declared row bounds from tiny to absurd, with clipping and normalization."""
    for row_norm in ("clip", "normalize"):
        for bound in (1e-300, 1e-8, 1.0, 1e4, 1e8, 1e9, 1e150, 1e300, float("inf"), 0.0, -1.0):

            def call(row_norm=row_norm, bound=bound):
                rng = np.random.default_rng(0)
                X, y = rng.normal(size=(60, 4)), np.arange(60) % 2
                model = DPLogisticRegression(
                    epsilon=1.0, delta=1e-5, row_norm=row_norm, row_bound=bound, random_state=0
                ).fit(X, y)
                assert model.epsilon_ <= 1.0 and np.all(np.isfinite(model.coef_))
                return model

            covered = 0 < bound <= 1e8
            yield f"row bound ({row_norm})", f"row_bound {bound:g}", call, covered


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
    parser.add_argument("--only", help="run only entry points whose name starts with this")
    args = parser.parse_args()
    start = time.perf_counter()
    groups = [estimator_cases(), declared_classes_cases(), row_bound_cases(), budget_cases(),
              ledger_cases(), sco_cases(), extra_cases()]  # fmt: skip
    if args.only:
        groups = [(c for group in groups for c in group if c[0].startswith(args.only))]
    table, notes = run(groups)
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
