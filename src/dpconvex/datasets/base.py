"""A small container for data sets, and the deterministic train/test split used everywhere."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np


@dataclass(frozen=True)
class Dataset:
    name: str
    X: np.ndarray
    y: np.ndarray
    feature_names: list[str] = field(default_factory=list)
    target_names: list[str] = field(default_factory=list)
    description: str = ""

    def split(self, test_size: float = 0.2, seed: int = 0):
        """(X_train, X_test, y_train, y_test): a seeded shuffle; the last ``test_size`` rows test.

        The split is public (it does not depend on labels), as in the 80/20 splits of
        seed 000 §5 and Iyengar et al. 2019.
        """
        if not 0 < test_size < 1:
            raise ValueError(f"test_size must be in (0, 1), got {test_size}")
        n = self.y.shape[0]
        order = np.random.default_rng(seed).permutation(n)
        n_test = int(round(test_size * n))
        train, test = order[: n - n_test], order[n - n_test :]
        return self.X[train], self.X[test], self.y[train], self.y[test]
