"""Synthetic-L and Synthetic-H: the exact recipes of Iyengar et al. 2019 (their dpml-benchmark).

Both come from scikit-learn's ``make_classification`` with a fixed ``random_state``
(legacy MT19937), so they are reproducible bit for bit. Labels are {0, 1}; the
estimators map them to {-1, +1}.
"""

from __future__ import annotations

from sklearn.datasets import make_classification

from .base import Dataset


def load_synthetic_l() -> Dataset:
    """Synthetic-L: 10,000 x 40, 30 informative features, class_sep 2 (random_state 1000)."""
    X, y = make_classification(
        n_samples=10_000,
        n_features=40,
        n_informative=30,
        n_classes=2,
        class_sep=2.0,
        random_state=1000,
    )
    return Dataset(
        "synthetic-l",
        X,
        y,
        [f"x{i}" for i in range(40)],
        ["0", "1"],
        load_synthetic_l.__doc__ or "",
    )


def load_synthetic_h() -> Dataset:
    """Synthetic-H: 2,000 x 2,000, 10 informative features, no redundant ones (random_state 1)."""
    X, y = make_classification(
        n_samples=2_000,
        n_features=2_000,
        n_informative=10,
        n_redundant=0,
        n_classes=2,
        class_sep=2.0,
        random_state=1,
    )
    return Dataset(
        "synthetic-h",
        X,
        y,
        [f"x{i}" for i in range(2000)],
        ["0", "1"],
        load_synthetic_h.__doc__ or "",
    )
