"""Per-example clipped block steps of DP-MBCD: explicit (eq. 6) and implicit (eq. 17, corrected).

Every block's per-example gradient is a rank-one matrix a_i b_i^T (least-squares
blocks (gamma/2)||W x_i - t_i||^2 have a_i = gamma (W x_i - t_i), b_i = x_i; scalar
GLM-type losses have b_i = x_i as well), so its Frobenius norm is ||a_i|| ||b_i||
and clipping it to C is a per-example scalar: the clipped batch sum is one matrix
product. For a least-squares block the clipped gradient is the gradient of a
Huber-ized loss gamma H_{C/(gamma ||x_i||)}(W x_i - t_i), which is convex and
gamma ||x_i||^2-smooth, so clipping keeps the block convex (Algorithms 3-4 of
Chen & Liu, arXiv 2407.08233, clip the whole batch or nothing; we clip per example so
that Assumption 4.4 holds with S_g = C for add/remove neighbours).
"""

from __future__ import annotations

import numpy as np

from ..data import clipping


def clip_factors(a: np.ndarray, b: np.ndarray, clip: float) -> np.ndarray:
    """min(1, C / (||a_i|| ||b_i||)) for each example i (1 where the gradient is 0).

    Norms are computed without overflow; an example whose norm is still not finite
    (inf or NaN entries) gets factor 0: it contributes nothing, so the sensitivity C
    holds for every input.
    """
    norms = _row_norms(a) * _row_norms(b)
    return clipping.clip_factors(norms, clip, nan_factor=0.0)


def _row_norms(m: np.ndarray) -> np.ndarray:
    """Euclidean row norms, scaled by the row maximum so that 1e200-sized rows do not overflow."""
    with np.errstate(over="ignore", invalid="ignore"):
        scale = np.max(np.abs(m), axis=1, initial=0.0)
        safe = np.where((scale > 0) & np.isfinite(scale), scale, 1.0)
        norms = np.linalg.norm(m / safe[:, None], axis=1) * safe
    return np.where(np.isfinite(scale), norms, np.inf)


def clipped_gradient_sum(a: np.ndarray, b: np.ndarray, clip: float) -> np.ndarray:
    """sum_i clip_C(a_i b_i^T), shape (p, q); each example contributes at most C in norm."""
    if a.shape[0] == 0:
        return np.zeros((a.shape[1], b.shape[1]))
    return (a * clip_factors(a, b, clip)[:, None]).T @ b


class ImplicitStepError(RuntimeError):
    """The implicit step did not reach its certificate; nothing is released."""


def implicit_least_squares_step(
    weights: np.ndarray,
    inputs: np.ndarray,
    targets: np.ndarray,
    *,
    gamma: float,
    step: float,
    clip: float,
    batch_size: float,
    ridge: float = 0.0,
    tol: float,
    max_iter: int = 500,
) -> tuple[np.ndarray, float, int]:
    """Certified proximal-point step on the Huber-ized least-squares batch loss.

    Returns (V, ||grad G(V)||, iterations) with V an approximate minimizer of

        G(V) = (1/b) sum_i h_i(V) + (ridge/2) ||V||^2 + ||V - W||^2 / (2 step),

    where grad h_i(V) = clip_C(gamma (V x_i - t_i) x_i^T). It is the corrected form of
    the paper's "variant of Algorithm 4" (Chen & Liu, eqs. 15-18, whose printed
    transposes and signs are corrected here): with
    no example clipped, V = (W + step gamma T^T X / b)(I + step gamma X^T X / b)^-1
    is its closed form. G is (1/step)-strongly convex, so adding or removing one
    example moves the exact minimizer by at most step * C / b, and a point with
    ||grad G|| <= tol lies within step * tol of it: the step's add/remove
    sensitivity is step * (C / b + 2 tol). Solved by iteratively reweighted least
    squares (majorize-minimize for the Huber terms); raises
    :class:`ImplicitStepError` if the certificate is not reached in ``max_iter``.
    """
    p, q = weights.shape
    inv_step = 1.0 / step
    eye = np.eye(q)
    v = weights.copy()
    grad_norm = np.inf
    for it in range(1, max_iter + 1):
        resid = inputs @ v.T - targets  # (n_b, p)
        w = clip_factors(gamma * resid, inputs, clip)
        grad = (gamma / batch_size) * (resid * w[:, None]).T @ inputs
        grad += ridge * v + inv_step * (v - weights)
        grad_norm = float(np.linalg.norm(grad))
        if grad_norm <= tol:
            return v, grad_norm, it - 1
        xw = inputs * w[:, None]
        lhs = (inv_step + ridge) * eye + (gamma / batch_size) * (xw.T @ inputs)
        rhs = inv_step * weights + (gamma / batch_size) * (targets.T @ xw)
        v = np.linalg.solve(lhs, rhs.T).T  # lhs is symmetric
    resid = inputs @ v.T - targets
    w = clip_factors(gamma * resid, inputs, clip)
    grad = (gamma / batch_size) * (resid * w[:, None]).T @ inputs
    grad += ridge * v + inv_step * (v - weights)
    grad_norm = float(np.linalg.norm(grad))
    if grad_norm <= tol:
        return v, grad_norm, max_iter
    raise ImplicitStepError(
        f"implicit step not certified: ||grad|| = {grad_norm:.3g} > tol = {tol:.3g} after "
        f"{max_iter} iterations; nothing released (raise max_iter or the tolerance)"
    )
