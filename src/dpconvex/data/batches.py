"""Which rows a noisy step reads: Poisson subsamples of the row indices.

Poisson subsampling (each row kept independently with probability q) is the sampling
that the subsampled-Gaussian analyses price (Abadi et al., arXiv 1607.00133; Mironov,
Talwar & Zhang, arXiv 1908.10530; Zhu, Dong & Wang 2022): DP-SGD of the linear core,
DP-MBCD's NMF and DP-SGD on a network draw their batches here.
"""

from __future__ import annotations

import math

import numpy as np


def poisson_batches(
    rng: np.random.Generator, n: int, q: float, runs: int
) -> tuple[np.ndarray, np.ndarray]:
    """Independent Poisson subsamples of range(n), one per run: (rows, sizes).

    Each row is kept with probability q independently. Kept positions are drawn as
    partial sums of Geometric(q) gaps (the gaps between successes of a Bernoulli
    process), which is exact; a run whose draws end before n is extended, never
    redrawn. ``rows`` lists the runs' rows one run after another.
    """
    if runs == 1:  # K ~ Binomial(n, q), then a uniform K-subset: the same distribution
        rows = rng.choice(n, size=rng.binomial(n, q), replace=False)
        return rows, np.array([rows.size])
    if runs == 2:
        chunks = [rng.choice(n, size=rng.binomial(n, q), replace=False) for _ in range(runs)]
        return np.concatenate(chunks), np.array([c.size for c in chunks])
    mean = n * q
    width = int(mean + 6.0 * math.sqrt(mean + 1.0) + 16)
    pos = np.cumsum(rng.geometric(q, size=(runs, width)), axis=1) - 1
    if np.all(pos[:, -1] >= n):  # no run needs more draws: cut every run at n at once
        kept = pos < n
        return pos[kept], kept.sum(axis=1)
    chunks = []
    for r in range(runs):
        row = pos[r]
        while row[-1] < n:  # rare: extend the same Bernoulli process
            more = row[-1] + np.cumsum(rng.geometric(q, size=width))
            row = np.concatenate([row, more])
        chunks.append(row[row < n])
    sizes = np.array([c.size for c in chunks])
    return np.concatenate(chunks), sizes
