"""Preconditions shared by the mechanisms: they refuse rather than release."""

from __future__ import annotations

import math

from ..losses import GLMLoss


def gradient_bound(loss: GLMLoss, clip: float | None, row_bound: float) -> float:
    """L = min(C, sup|f'| * R): the per-example gradient-norm bound actually enforced."""
    bound = loss.derivative_bound * row_bound
    if clip is not None:
        if not (math.isfinite(clip) and clip > 0):
            raise ValueError(f"clip must be a finite number > 0, got {clip}")
        bound = min(bound, clip)
    if not math.isfinite(bound):
        raise ValueError(
            f"the {loss.name} loss has an unbounded gradient: give a clipping threshold"
        )
    return bound
