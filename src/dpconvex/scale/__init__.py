"""Fits on data larger than memory, with Dask (optional extra ``dpconvex[dask]``).

The mechanisms are the in-memory ones: they read their rows from a row source, and
:class:`DaskRows` is the source over row-chunked dask arrays (each chunk transformed by
the row policy and reduced where it lives; only d-vectors, or the d x d Hessian, travel).
The privacy accounting is the in-memory one: same events, same calibration, same
certificate.
"""

from ..data.dask_rows import DaskRows, is_dask_array

__all__ = ["DaskRows", "is_dask_array"]
