"""The private search (PrivateRandomSearch): the review's reproducers and careless settings.

A release counts as covered when the search spent at most its epsilon, the released
model is finite and carries no noise stream, and the fitted search stores no run count.
"""

from __future__ import annotations

import math
import warnings

import numpy as np

from . import Probe, Violation

EPSILON = 1.0


def _data(n=1500, d=5, seed=0, regression=False):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    w = rng.normal(size=d)
    if regression:
        return X / np.sqrt(d), X @ w / (2 * np.sqrt(d))
    return X, (X @ w + 0.3 * rng.normal(size=n) > 0).astype(int)


def _check(search, epsilon=EPSILON):
    if hasattr(search, "n_candidates_"):
        raise Violation("the fitted search stores the number of runs")
    if not search.epsilon_ <= epsilon * (1 + 1e-9):
        raise Violation(f"spent {search.epsilon_} > {epsilon}")
    best = search.best_estimator_
    if best.random_state is not None:
        raise Violation("the released model carries its noise stream")
    if not np.all(np.isfinite(best.coef_)):
        raise Violation("non-finite coefficients released")
    return search


def _fit(estimator, space, *, regression=False, n=1500, with_runs=None, **settings):
    from dpconvex import PrivateRandomSearch
    from dpconvex.tuning import NothingSelectedError
    from dpconvex.tuning import search as module

    if with_runs is not None:  # a forked child: patching the module touches nothing else
        module.sample_number_of_runs = lambda rng, mu, shape: with_runs
    settings.setdefault("epsilon", EPSILON)
    settings.setdefault("random_state", 0)
    X, y = _data(n=n, regression=regression)
    search = PrivateRandomSearch(estimator, space, **settings)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            if settings.get("scoring") == "public":
                Xp, yp = _data(n=200, seed=1, regression=regression)
                search.fit(X, y, X_public=Xp, y_public=yp)
            else:
                search.fit(X, y)
        except NothingSelectedError:  # repeat-and-select's priced "nothing" output
            if hasattr(search, "n_candidates_") or hasattr(search, "best_estimator_"):
                raise Violation("a search that selected nothing kept a model") from None
            return search
    return _check(search, settings["epsilon"])


def _k_hidden(tmp):
    """Review item 1: (K, best model) must not be released; fits with K = 1 and 5 agree."""
    from dpconvex import DPLinearRegression
    from dpconvex.models.persist import model_record

    seen = []
    for k in (1, 5):
        search = _fit(
            DPLinearRegression(method="output", lam=1e7, fit_intercept=False),
            {"solver": ["newton"]}, regression=True, n=2000, with_runs=k, strategy="repeat",
            scoring="public", mu=6.0, shape=1.0,
        )  # fmt: skip
        record = model_record(search.best_estimator_)
        record.pop("coef"), record.pop("intercept")
        public = {k: repr(v) for k, v in vars(search).items() if not k.startswith("best_")}
        seen.append((public, sorted(vars(search.best_estimator_)), repr(record)))
    if seen[0] != seen[1]:
        raise Violation("something stored or written depends on the number of runs")


def _dpsgd_lr(tmp):
    from scipy.stats import loguniform

    from dpconvex import DPLogisticRegression

    _fit(DPLogisticRegression(method="dpsgd", epochs=1),
         {"learning_rate": loguniform(1e-4, 10.0)}, strategy="repeat", mu=3.0)  # fmt: skip


class _Weird:
    """A distribution whose draws an estimator refuses, or that raises itself."""

    def __init__(self, values):
        self.values, self.calls = values, 0

    def rvs(self, random_state=None):
        self.calls += 1
        value = self.values[self.calls % len(self.values)]
        if isinstance(value, BaseException):
            raise value
        return value


def probes() -> list[Probe]:
    from dpconvex import DPLinearRegression, DPLogisticRegression

    logistic = DPLogisticRegression
    out = [Probe("search", "K hidden (review reproducer)", _k_hidden, timeout=300)]

    def add(name, make_estimator, space, **settings):
        out.append(
            Probe("search", name, lambda tmp: _fit(make_estimator(), space, **settings),
                  timeout=300)  # fmt: skip
        )

    # review item 2: K = 0 on a subsample with the estimator's own priced settings
    add("K=0, own lam 1.2 outside the space", lambda: logistic(lam=1.2), {"lam": [5.0, 50.0]},
        n=3000, with_runs=0, strategy="subsample", mu=1.0)  # fmt: skip
    add("K=0, own lam 0.55 (not calibratable)", lambda: logistic(lam=0.55),
        {"lam": [5.0, 50.0]}, n=3000, with_runs=0, strategy="subsample", mu=1.0)  # fmt: skip
    add("own lam 0.55, lam not searched", lambda: logistic(lam=0.55), {"solver": ["newton"]})
    # review item 3: iteration limits searched for free; runs that fail
    for max_iter in ([1, 2, 3], [1], [5, 1000]):
        for solver in ("auto", "lbfgs", "newton", "svrg"):
            add(f"max_iter {max_iter} free, solver {solver}", lambda s=solver: logistic(solver=s),
                {"max_iter": max_iter}, strategy="repeat", mu=3.0)  # fmt: skip
    add("max_iter 1 on the subsample's final run", lambda: logistic(), {"max_iter": [1]},
        n=4000, strategy="subsample", mu=2.0)  # fmt: skip
    add("a distribution drawing invalid solvers", logistic,
        {"solver": _Weird(["newton", "bogus"])}, strategy="repeat", mu=4.0)  # fmt: skip
    add("a distribution that raises", logistic,
        {"solver": _Weird([KeyError("x"), "newton"])}, strategy="repeat", mu=4.0)  # fmt: skip
    add("every run fails (repeat)", logistic, {"solver": _Weird(["bogus"])},
        strategy="repeat", mu=3.0, default_share=0.0)  # fmt: skip
    add("every run fails (subsample)", logistic, {"solver": _Weird(["bogus"])},
        n=4000, strategy="subsample", mu=3.0, default_share=0.0)  # fmt: skip
    out.append(Probe("search", "DP-SGD learning rate up to 10", _dpsgd_lr, timeout=300))
    # careless settings: every one refused before the charge, with one line
    bad = {
        "empty list": ({"solver": []}, {}),
        "a string, not a list": ({"solver": "newton"}, {}),
        "lam as a distribution": ({"lam": _Weird([1.0])}, {}),
        "reserved name": ({"epsilon": [1.0]}, {}),
        "unknown name": ({"alpha": [1.0]}, {}),
        "invalid listed solver": ({"solver": ["newton", "bogus"]}, {}),
        "max_iter 0 listed": ({"max_iter": [0]}, {}),
        "mu 1e12": ({"solver": ["newton"]}, {"mu": 1e12}),
        "mu nan": ({"solver": ["newton"]}, {"mu": math.nan}),
        "mu 0.5": ({"solver": ["newton"]}, {"mu": 0.5}),
        "shape -1": ({"solver": ["newton"]}, {"shape": -1.0}),
        "shape nan": ({"solver": ["newton"]}, {"shape": math.nan}),
        "subsample 0": ({"solver": ["newton"]}, {"subsample": 0.0, "strategy": "subsample"}),
        "subsample 1": ({"solver": ["newton"]}, {"subsample": 1.0, "strategy": "subsample"}),
        "subsample nan": ({"solver": ["newton"]}, {"subsample": math.nan}),
        "validation_fraction 1": ({"solver": ["newton"]}, {"validation_fraction": 1.0}),
        "score_noise 0": ({"solver": ["newton"]}, {"score_noise": 0.0}),
        "score_noise nan": ({"solver": ["newton"]}, {"score_noise": math.nan}),
        "score_noise 1e-300": ({"solver": ["newton"]}, {"score_noise": 1e-300}),
        "run_epsilon 10": ({"solver": ["newton"]}, {"run_epsilon": 10.0}),
        "run_epsilon -1": ({"solver": ["newton"]}, {"run_epsilon": -1.0}),
        "epsilon 1e-300": ({"solver": ["newton"]}, {"epsilon": 1e-300}),
        "epsilon 1e300": ({"solver": ["newton"]}, {"epsilon": 1e300}),
        "epsilon nan": ({"solver": ["newton"]}, {"epsilon": math.nan}),
        "delta 1e-300": ({"solver": ["newton"]}, {"delta": 1e-300}),
        "delta 1": ({"solver": ["newton"]}, {"delta": 1.0}),
        "n_jobs 0": ({"solver": ["newton"]}, {"n_jobs": 0}),
        "n_jobs True": ({"solver": ["newton"]}, {"n_jobs": True}),
        "n_jobs '2'": ({"solver": ["newton"]}, {"n_jobs": "2"}),
        "strategy bogus": ({"solver": ["newton"]}, {"strategy": "bogus"}),
        "scoring bogus": ({"solver": ["newton"]}, {"scoring": "bogus"}),
        "default_share 1": ({"solver": ["newton"]}, {"default_share": 1.0}),
    }
    for name, (space, settings) in bad.items():
        add(f"refused: {name}", logistic, space, **settings)
    add("regression with noisy scoring", DPLinearRegression, {"solver": ["newton"]},
        regression=True)  # fmt: skip
    add("public scoring without public data", logistic, {"solver": ["newton"]},
        scoring="public_missing")  # fmt: skip
    return out
