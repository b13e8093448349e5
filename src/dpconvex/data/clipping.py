"""Per-example gradient clipping: the factor, and the clipped GLM gradient built from it.

Clipping per example to norm C (Abadi et al., "Deep Learning with Differential
Privacy", CCS 2016, arXiv 1607.00133, Algorithm 1) bounds each example's contribution
to a sum of gradients by C, whatever the data. For a GLM loss the gradient of example i
is f'(x_i^T theta; y_i) x_i, of norm |f'_i| ||x_i||, so clipping is one scalar per row
and a clipped batch sum is one matrix-vector product.
"""

from __future__ import annotations

import numpy as np

from ..losses import GLMLoss


def clip_factors(norms, clip, *, nan_factor: float = 1.0) -> np.ndarray:
    """min(1, C / norm_i) per example: the factor that scales gradient i to norm <= C.

    ``norms`` and ``clip`` broadcast (one clip per run is a row of clips). A norm of 0
    gets 1 and an infinite norm 0. A NaN norm gets ``nan_factor``: 1.0 (the factor
    leaves the NaN in the gradient, which the callers refuse or diverge on), 0.0 (the
    example contributes nothing) or NaN.
    """
    norms = np.asarray(norms)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):  # (unused where)
        factors = np.where(norms > clip, clip / norms, 1.0)
    if nan_factor != 1.0:
        factors = np.where(np.isnan(norms), nan_factor, factors)
    return factors


def clipped_weights(margins, y, norms, loss: GLMLoss, clip) -> np.ndarray:
    """f'_i * min(1, C / (|f'_i| ||x_i||)): the clipped gradient of example i is weight_i x_i.

    ``margins`` x_i^T theta, labels ``y`` and row norms ``norms`` broadcast (one column
    per run for several runs at once).
    """
    deriv = loss.derivative(margins, y)
    return deriv * clip_factors(np.abs(deriv) * norms, clip)


def clipped_gradient_sum(xb, yb, norms_b, loss: GLMLoss, theta: np.ndarray, clip: float):
    """sum_i clip_C(f'(x_i^T theta; y_i) x_i), each per-example gradient scaled to norm <= C."""
    return xb.T @ clipped_weights(xb @ theta, yb, norms_b, loss, clip)
