"""The perturbed GLM objective sum_i l(theta; z_i) + (lam/2)||theta||^2 + b^T theta.

Everything is computed in float64 on the full objective; the gradient norm it
reports is the certificate that AMP's privacy proof relies on (Redberg,
Koskela & Wang, arXiv 2401.00583, Alg. 1 step 4 and Thm 4.1: ||theta~ - theta^P|| <= tau/lam).
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from .._arrays import row_norms
from ..losses import ClippedLoss, GLMLoss

#: rows whose kappa_i = C/||x_i|| is at least the loss's derivative bound times this get
#: :class:`RarelyClippedLoss` (the clipped loss by a faster route) instead of
#: :class:`~dpconvex.losses.ClippedLoss`: rows normalized to norm R carry norms R (1 +- 1e-16),
#: so that a clip C = sup|f'| R falls a rounding error short of the bound on some of them.
#: It only picks the route: both compute the clipped loss's derivative, exactly.
NEARLY_UNCLIPPED = 1.0 - 1e-12


class RarelyClippedLoss(ClippedLoss):
    """The clipped loss of ``clipped`` on rows where the clip can bind only near sup|f'|.

    The same function as :class:`~dpconvex.losses.ClippedLoss` (its derivative is
    ClippedLoss's own, clip(f', -kappa, kappa), so every per-example gradient has norm
    |f'_C| ||x_i|| <= kappa_i ||x_i|| = C); only the value and the curvature take a
    shortcut: they are the base loss's wherever |f'(u)| <= kappa (there the clipped loss
    *is* the base loss) and ClippedLoss's on the few rows where the clip binds, instead of
    locating every row's breakpoints.
    """

    def __init__(self, clipped: ClippedLoss):
        super().__init__(clipped.base, clipped.clip)

    def _binding(self, u, y, kappa) -> np.ndarray:
        return np.abs(self.base.derivative(u, y)) > kappa

    def value(self, u, y, kappa):
        out = self.base.value(u, y)
        bind = self._binding(u, y, kappa)
        if bind.any():
            out = np.array(out, dtype=np.float64)
            out[bind] = super().value(u[bind], y[bind], kappa[bind])
        return out

    def second_derivative(self, u, y, kappa):
        out = self.base.second_derivative(u, y)
        bind = self._binding(u, y, kappa)
        return np.where(bind, 0.0, out) if bind.any() else out


def clipping_kappa(loss: GLMLoss, norms: np.ndarray) -> tuple[GLMLoss, np.ndarray | None]:
    """(the loss to evaluate, kappa_i = C/||x_i|| or None) for rows of these norms.

    A :class:`ClippedLoss` is evaluated as its base loss, without kappa, only when every
    kappa_i is at least the base loss's derivative bound sup|f'|: then |f'| <= kappa_i on
    every row and the clip cannot change a number. When every kappa_i is within
    :data:`NEARLY_UNCLIPPED` of that bound it is evaluated as a :class:`RarelyClippedLoss`
    (the same loss, computed faster); otherwise as itself. Whichever route, the derivative
    is clip(f', -kappa_i, kappa_i) or provably equal to it, so no per-example gradient
    exceeds C.
    """
    if not isinstance(loss, ClippedLoss):
        return loss, None
    kappa = loss.kappa(norms)
    bound = loss.base.derivative_bound
    if np.all(kappa >= bound):
        return loss.base, None  # |f'| <= sup|f'| <= kappa_i: the clip never binds
    if np.all(kappa >= bound * NEARLY_UNCLIPPED):
        return RarelyClippedLoss(loss), kappa
    return loss, kappa


def gram_matrix(A: np.ndarray) -> np.ndarray:
    """A^T A for a dense (m x d) array, by a symmetric rank-k update (half a matrix product).

    Either memory layout is used in place (BLAS reads A or A^T as stored), never copied.
    """
    from scipy.linalg.blas import dsyrk

    if A.shape[0] == 0:
        return np.zeros((A.shape[1], A.shape[1]))
    if A.flags.f_contiguous:  # columns contiguous (Parquet chunks): A^T A with no copy
        upper = dsyrk(1.0, A, trans=1, lower=0)
    else:  # rows contiguous: A.T is F-ordered, A.T (A.T)^T with no copy
        upper = dsyrk(1.0, np.asfortranarray(A.T), trans=0, lower=0)
    return np.triu(upper) + np.triu(upper, 1).T


def weighted_gram(A: np.ndarray, root: np.ndarray, scratch: np.ndarray | None = None):
    """A^T diag(root^2) A for a dense block A, via :func:`gram_matrix` on diag(root) A.

    The weighted copy is written, in A's own layout, into ``scratch`` (a flat float64
    array of at least A.size numbers that the caller reuses from block to block), so a
    Hessian accumulated over blocks allocates it once: in dask's workers every large
    new array is a fresh mapping whose pages fault on first touch.
    """
    if scratch is None or scratch.size < A.size:
        scratch = np.empty(A.size)
    order = "F" if A.strides[0] < A.strides[1] else "C"
    weighted = scratch[: A.size].reshape(A.shape, order=order)
    return gram_matrix(np.multiply(A, root[:, None], out=weighted))


class PerturbedGLMObjective:
    """F(theta) = sum_i f(x_i^T theta; y_i) + (lam/2)||theta||^2 + b^T theta.

    ``loss`` is a :class:`GLMLoss` or a :class:`ClippedLoss` (then its per-example
    kappa = C/||x_i|| is precomputed). ``X`` is a dense array or CSR matrix; it is
    used in float64. ``b`` defaults to zero (the unperturbed objective of output
    perturbation). ``grad_evals`` counts per-example gradient evaluations
    (a full gradient or a Hessian-vector product costs n).
    """

    #: a dense X with at most this fraction of non-zeros is stored as CSR
    #: (one-hot designs such as Adult: ~15 of 105 entries per row)
    SPARSE_DENSITY = 0.3
    #: rows per block when the dense Hessian is accumulated (bounds the temporary copy)
    HESSIAN_BLOCK_ROWS = 32768

    def __init__(self, X, y, loss: GLMLoss, lam: float, b: np.ndarray | None = None):
        if not sp.issparse(X):
            X = np.asarray(X, dtype=np.float64)
            if X.size and np.count_nonzero(X) <= self.SPARSE_DENSITY * X.size:
                X = sp.csr_matrix(X)
        if sp.issparse(X):
            self.X = sp.csr_matrix(X, dtype=np.float64)
        else:
            self.X = np.ascontiguousarray(X, dtype=np.float64)
        self.row_norms = row_norms(self.X)
        self.y = np.asarray(y, dtype=np.float64)
        self.n, self.d = self.X.shape
        self.given_loss = loss
        self.lam = float(lam)
        self.b = np.zeros(self.d) if b is None else np.asarray(b, dtype=np.float64)
        self._hess_cache: tuple[bytes, np.ndarray] | None = None
        self.loss, self._kappa = clipping_kappa(loss, self.row_norms)
        self.grad_evals = 0

    # per-example scalars, optionally on a subset of rows ----------------------
    def _args(self, rows):
        y = self.y if rows is None else self.y[rows]
        if self._kappa is None:
            return (y,)
        return (y, self._kappa if rows is None else self._kappa[rows])

    def _margins(self, theta, rows=None):
        X = self.X if rows is None else self.X[rows]
        return X @ theta

    def loss_values(self, theta, rows=None) -> np.ndarray:
        return self.loss.value(self._margins(theta, rows), *self._args(rows))

    def derivatives(self, theta, rows=None) -> np.ndarray:
        """f'(x_i^T theta; y_i) for the selected rows (the per-example gradient is f' x_i)."""
        return self.loss.derivative(self._margins(theta, rows), *self._args(rows))

    # full objective -------------------------------------------------------------
    def value(self, theta) -> float:
        theta = np.asarray(theta, dtype=np.float64)
        return float(
            self.loss_values(theta).sum() + 0.5 * self.lam * theta @ theta + self.b @ theta
        )

    def gradient(self, theta) -> np.ndarray:
        theta = np.asarray(theta, dtype=np.float64)
        self.grad_evals += self.n
        return self.X.T @ self.derivatives(theta) + self.lam * theta + self.b

    def value_and_gradient(self, theta) -> tuple[float, np.ndarray]:
        theta = np.asarray(theta, dtype=np.float64)
        u = self.X @ theta
        args = self._args(None)
        self.grad_evals += self.n
        value = self.loss.value(u, *args).sum() + 0.5 * self.lam * theta @ theta + self.b @ theta
        grad = self.X.T @ self.loss.derivative(u, *args) + self.lam * theta + self.b
        return float(value), grad

    def hessian_vector(self, theta, v) -> np.ndarray:
        """(X^T diag(f'') X + lam I) v; the f'' weights are cached per theta."""
        theta = np.asarray(theta, dtype=np.float64)
        key = theta.tobytes()
        if self._hess_cache is None or self._hess_cache[0] != key:
            w = self.loss.second_derivative(self.X @ theta, *self._args(None))
            self._hess_cache = (key, w)
        self.grad_evals += self.n
        return self.X.T @ (self._hess_cache[1] * (self.X @ v)) + self.lam * v

    def hessian(self, theta, stride: int = 1) -> np.ndarray:
        """The d x d Hessian X^T diag(f'') X + lam I (a BLAS rank-k update, ~n d^2 / 2 flops).

        With ``stride`` k > 1 the sum runs over every k-th row only, times (n / rows used):
        the subsampled Hessian of sub-sampled Newton methods (Byrd, Chin, Neveitt & Nocedal,
        SIAM J. Optim. 2011; Roosta-Khorasani & Mahoney, Math. Program. 2019), k times
        cheaper. It only steers the solver; the gradient and the certificate stay exact.
        """
        theta = np.asarray(theta, dtype=np.float64)
        rows = slice(None, None, stride) if stride > 1 else None
        X = self.X if rows is None else self.X[rows]
        weights = np.maximum(self.loss.second_derivative(X @ theta, *self._args(rows)), 0.0)
        if rows is not None:
            weights *= self.n / X.shape[0]
        if sp.issparse(X):
            hess = np.asarray((X.T @ (sp.diags(weights) @ X)).toarray())
        else:  # in row blocks, so that the weighted copy stays small (and is reused)
            root = np.sqrt(weights)
            hess = np.zeros((self.d, self.d))
            scratch = np.empty(min(X.shape[0], self.HESSIAN_BLOCK_ROWS) * self.d)
            for start in range(0, X.shape[0], self.HESSIAN_BLOCK_ROWS):
                stop = start + self.HESSIAN_BLOCK_ROWS
                hess += weighted_gram(X[start:stop], root[start:stop], scratch)
        hess[np.diag_indices_from(hess)] += self.lam
        return hess

    def gradient_hessian(self, theta, hessian: bool = True, stride: int = 1):
        """(grad F, Hessian or None): the interface of the out-of-core objective's pass.

        ``stride`` > 1 subsamples the Hessian's rows (see :meth:`hessian`), never the
        gradient's.
        """
        grad = self.gradient(theta)
        return grad, self.hessian(theta, stride) if hessian else None

    def subsample(self, m: int) -> PerturbedGLMObjective:
        """The objective on m evenly spaced rows, rescaled to have about the same minimizer.

        (n/m) sum_{i in S} l_i + (lam/2)||theta||^2 + b^T theta has the minimizer of
        sum_{i in S} l_i + (m/n)((lam/2)||theta||^2 + b^T theta). Used only to start
        the solver near the optimum: the certificate is always checked on the full
        objective, so where the solver starts does not touch the privacy guarantee.
        """
        rows = np.linspace(0, self.n - 1, m).astype(np.int64)
        share = m / self.n
        return PerturbedGLMObjective(
            self.X[rows], self.y[rows], self.given_loss, self.lam * share, self.b * share
        )

    def gradient_norm(self, theta) -> float:
        """||grad F(theta)||_2 in float64 on the full objective: the certificate."""
        return float(np.linalg.norm(self.gradient(theta)))

    def smoothness(self) -> float:
        """A smoothness constant of F: sup f'' sum_i ||x_i||^2 + lam (<= n beta + lam).

        The Hessian X^T diag(f'') X + lam I is at most sup f'' lambda_max(X^T X) + lam, and
        lambda_max(X^T X) <= trace(X^T X) = sum_i ||x_i||^2.
        """
        return float(self.loss.curvature * np.sum(self.row_norms**2) + self.lam)

    def smoothness_bounds(self) -> tuple[float, float]:
        """(mean, max) over examples of the smoothness of f_i = l_i + lam/(2n)|.|^2 + b^T./n."""
        curv = self.loss.curvature
        sq = self.row_norms**2
        return float(curv * sq.mean() + self.lam / self.n), float(
            curv * sq.max() + self.lam / self.n
        )
