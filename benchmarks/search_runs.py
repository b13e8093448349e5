"""The number of runs of a private search, for the data owner's benchmarks.

A fitted :class:`dpconvex.PrivateRandomSearch` does not store K (the number of runs is
not covered by the selection theorems, so nothing it keeps may reveal it); the data
owner who runs a benchmark may count the runs, as the ``verbose`` log would show them.
"""

from __future__ import annotations


def fit_counting_runs(search, *args, **kwargs) -> int:
    """Fit ``search`` on ``args`` and return its number of runs K."""
    seen = []
    run_all = search._run_all

    def counting(plans, *rest, **options):
        seen.append(len(plans))
        return run_all(plans, *rest, **options)

    search._run_all = counting
    try:
        search.fit(*args, **kwargs)
    finally:
        del search._run_all
    return seen[0] if seen else 0
