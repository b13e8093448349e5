"""Secret, fixed mini-batches for DP-MBCD under add/remove neighbours.

Chen & Liu (arXiv 2407.08233, Cor. 4.5, Thm 4.6) cycle a fixed disjoint partition every epoch and
needs the differing example i0 at one uniformly random position j0, with every
other example in the same batch in both runs. A random permutation cut into equal
batches cannot give that for add/remove neighbours (removing a row shifts every
later one). A *slot assignment* can: ``n_batches * capacity`` slots, each example
takes a distinct uniformly random slot, batch j is the examples in slots
[j b, (j + 1) b). Removing an example from a uniform injection leaves a uniform
injection of the rest (averaging over the freed slot), so neighbouring runs can be
coupled with identical batches except i0's, whose batch is uniform over the m
positions. Every batch holds at most b = capacity examples, so the batch loss
(sum of per-example losses divided by b) is never smoother than one example's bound.
"""

from __future__ import annotations

import math

import numpy as np

from .. import _validation as v


def batch_count(n: int, batch_size: int) -> int:
    """m = ceil((n + 1) / b): room for the n rows and for one more (the add neighbour)."""
    n = int(n)
    if n < 0:
        raise ValueError(f"number of rows must be >= 0, got {n}")
    b = v.positive_int("batch_size", batch_size)
    return max(1, math.ceil((n + 1) / b))


def secret_batches(
    rng: np.random.Generator, n: int, batch_size: int, n_batches: int | None = None
) -> list[np.ndarray]:
    """The m fixed batches (index arrays, each of size <= batch_size) of one run.

    Drawn once from ``rng`` and kept secret; the caller cycles them in order every
    epoch. ``n_batches`` defaults to :func:`batch_count` (n is treated as public, as
    in DP-SGD: the same m then serves a neighbour with one more row); an explicit
    value must hold the n rows.
    """
    b = v.positive_int("batch_size", batch_size)
    m = batch_count(n, b) if n_batches is None else v.positive_int("n_batches", n_batches)
    if m * b < n:
        raise ValueError(f"{m} batches of capacity {b} cannot hold n = {n} rows")
    slots = rng.choice(m * b, size=n, replace=False)
    owner = slots // b
    order = np.argsort(owner, kind="stable")
    bounds = np.searchsorted(owner[order], np.arange(m + 1))
    return [np.sort(order[bounds[j] : bounds[j + 1]]) for j in range(m)]
