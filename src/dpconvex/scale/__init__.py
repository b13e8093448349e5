"""Fits on data larger than memory, with Dask (optional extra ``dpconvex[dask]``).

AMP, output perturbation and DP-GD accept dask arrays: every objective evaluation
is a pass over the row chunks, each chunk is transformed (row policy, intercept)
and reduced where it lives, and only d-vectors travel. The privacy accounting is
the in-memory one: same events, same calibration, same certificate.
"""

from .objective import DaskGLMObjective, is_dask_array

__all__ = ["DaskGLMObjective", "is_dask_array"]
