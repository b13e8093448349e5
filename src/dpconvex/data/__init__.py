"""The data layer below the mechanisms: what rows a mechanism sees, and where they live.

* :mod:`~.policy` — the frozen :class:`RowPolicy` (row norm, bound, intercept) and the
  free per-row transformations it names;
* :mod:`~.clipping` — per-example clipping factors and the clipped GLM gradient;
* :mod:`~.batches` — Poisson subsamples of the rows (the batches of DP-SGD-type steps);
* :mod:`~.kernels` — the per-chunk kernels (objective, clipped sums, sufficient statistics);
* :mod:`~.sources` — the :class:`RowSource` protocol (``reduce``, ``subsample``,
  ``objective``) and the in-memory source; :mod:`~.dask_rows` — the dask source.

Nothing here knows about privacy accounting; the mechanisms import this layer and are
never imported by it.
"""

from .policy import RowPolicy
from .sources import InMemoryRows, RowSource, as_rows

__all__ = ["InMemoryRows", "RowPolicy", "RowSource", "as_rows"]
