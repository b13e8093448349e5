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
        Redberg, Koskela & Wang (arXiv 2401.00583), §5, and Iyengar et al. 2019.
        """
        if not 0 < test_size < 1:
            raise ValueError(f"test_size must be in (0, 1), got {test_size}")
        n = self.y.shape[0]
        n_test = int(round(test_size * n))
        if n_test < 1 or n_test >= n:
            need = _rows_to_split(test_size)
            raise ValueError(
                f"{self.name or 'the data'} has {n} row{'s' if n != 1 else ''}: too few to split "
                f"into training and test rows with test_size={test_size:g}; it needs at least "
                f"{need if need < 10**15 else format(float(need), '.3g')} rows (or a test_size "
                "that leaves at least one row on each side)"
            )
        order = np.random.default_rng(seed).permutation(n)
        train, test = order[: n - n_test], order[n - n_test :]
        return self.X[train], self.X[test], self.y[train], self.y[test]


def _rows_to_split(test_size: float) -> int:
    """The fewest rows n whose split leaves at least one training and one test row.

    Larger n may still fail for test_size near 1; this is what the error message quotes.
    """
    n = max(2, int(0.5 / test_size), int(0.5 / (1 - test_size)))
    for _ in range(1000):  # a few steps; bounded, since past 2^53 rows n + 1 rounds to n
        if 1 <= int(round(test_size * n)) < n:
            break
        n += 1
    return n
