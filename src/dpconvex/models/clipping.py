"""Telling the data owner how much of the data a declared bound clipped.

Clipping rows to ``row_bound`` or targets to ``y_bound`` keeps the guarantee but biases
the fit when the bounds are too small. The count of clipped values is a function of the
data; it goes to whoever runs the fit as a warning (it is not part of the release, and
is not written into the model), so that a bound that is far too tight is noticed.
"""

from __future__ import annotations

import warnings

import numpy as np


class ClippingWarning(UserWarning):
    """Some rows or targets were clipped to their declared bound."""


def warn_if_clipped(values: np.ndarray, bound: float, *, what: str, setting: str) -> int:
    """Warn with the number of |values| above ``bound``; return that number."""
    count = int(np.count_nonzero(np.abs(values) > bound))
    if count:
        share = count / max(1, values.shape[0])
        warnings.warn(
            f"{count} of {values.shape[0]} {what} ({share:.1%}) exceeded {setting}={bound:g} "
            f"and were clipped to it; if that is many, declare a larger {setting} "
            "(chosen without looking at the data) to reduce the bias",
            ClippingWarning,
            stacklevel=3,
        )
    return count
