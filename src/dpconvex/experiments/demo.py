"""The main job: AMP on the bundled Adult data, next to non-private and DP-SGD baselines."""

from __future__ import annotations

import time

from ..datasets import load_adult
from ..mechanisms import transform_rows
from ..models import DPLogisticRegression


def run_demo(epsilon: float = 1.0, delta: float = 1e-5, seed: int | None = None) -> dict:
    """Fit AMP and DP-SGD at (epsilon, delta) and non-private logistic regression on Adult.

    All on the same public 80/20 split; DP-SGD uses its fixed default learning
    rate (no tuning on the data, so its budget is honest). A comparison of methods on
    public data, not a release: each fit's epsilon is its own, and the session's
    warning that the two fits read the same rows is not shown.
    """
    import warnings

    from sklearn.linear_model import LogisticRegression

    from ..models.session import RepeatedFitWarning

    data = load_adult()
    X_train, X_test, y_train, y_test = data.split(0.2, seed=0)
    rows = []
    for label, method in (
        ("AMP (objective perturbation, PLD accounting)", "amp"),
        ("DP-SGD (Poisson, batch 256, 60 epochs, Adam)", "dpsgd"),
    ):
        model = DPLogisticRegression(epsilon=epsilon, delta=delta, method=method, random_state=seed)
        start = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RepeatedFitWarning)
            model.fit(X_train, y_train)
        rows.append(
            {
                "method": label,
                "accuracy": float(model.score(X_test, y_test)),
                "epsilon": model.epsilon_,
                "delta": model.delta_,
                "fit_seconds": time.perf_counter() - start,
            }
        )
    Xn_train = transform_rows(X_train, "normalize", 1.0)
    Xn_test = transform_rows(X_test, "normalize", 1.0)
    start = time.perf_counter()
    baseline = LogisticRegression(max_iter=1000).fit(Xn_train, y_train)
    rows.append(
        {
            "method": "non-private logistic regression (scikit-learn)",
            "accuracy": float(baseline.score(Xn_test, y_test)),
            "epsilon": None,
            "delta": None,
            "fit_seconds": time.perf_counter() - start,
        }
    )
    return {
        "data": "UCI Adult (bundled)",
        "n_train": int(len(y_train)),
        "n_test": int(len(y_test)),
        "target_epsilon": epsilon,
        "target_delta": delta,
        "results": rows,
    }
