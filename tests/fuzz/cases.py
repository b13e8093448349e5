"""The input cases of the hardening suite (shared by the tests and benchmarks/fuzz_report.py)."""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

N, D = 60, 4


def _base(rng):
    return rng.normal(size=(N, D))


X_CASES = {
    "normal": lambda rng: _base(rng),
    "nan": lambda rng: np.where(rng.random((N, D)) < 0.05, np.nan, _base(rng)),
    "inf": lambda rng: np.where(rng.random((N, D)) < 0.05, np.inf, _base(rng)),
    "empty": lambda rng: np.zeros((0, D)),
    "one row": lambda rng: _base(rng)[:1],
    "constant columns": lambda rng: np.ones((N, D)),
    "duplicate columns": lambda rng: np.repeat(_base(rng)[:, :2], 2, axis=1),
    "huge norms": lambda rng: _base(rng) * 1e300,
    "integer dtype": lambda rng: np.round(_base(rng) * 10).astype(np.int64),
    "float32": lambda rng: _base(rng).astype(np.float32),
    "sparse csr": lambda rng: sp.csr_matrix(np.where(np.abs(_base(rng)) > 1, _base(rng), 0)),
    "zero rows": lambda rng: np.zeros((N, D)),
    "1-d array": lambda rng: _base(rng)[:, 0],
}

Y_CASES = {
    "binary": lambda rng, n: np.arange(n) % 2,
    "signed": lambda rng, n: np.where(np.arange(n) % 2 == 0, -1, 1),
    "strings": lambda rng, n: np.where(np.arange(n) % 2 == 0, "no", "yes"),
    "three classes": lambda rng, n: np.arange(n) % 3,
    "continuous": lambda rng, n: rng.normal(size=n),
    "one class": lambda rng, n: np.zeros(n, dtype=int),
    "nan labels": lambda rng, n: np.where(np.arange(n) == 0, np.nan, np.arange(n) % 2),
    "wrong length": lambda rng, n: np.arange(n + 3) % 2,
}

EPSILONS = [1e-6, 1e-4, 0.5, 8.0, 100.0, 1e3, 0.0, -1.0, float("nan"), float("inf")]
DELTAS = [1e-5, 0.0, 1.0, 1.5, -0.1, float("nan")]
