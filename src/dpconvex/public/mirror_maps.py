"""Mirror maps built from public data (Ganesh's thesis, UC Berkeley EECS-2022-53, §4.3-4.5).

Algorithm 1 (PDA-DPMD) takes the public loss as the mirror map,
Psi(theta) = (1/n_pub) sum_d l_pub(theta; d) (line 1). The unconstrained mirror
step theta' = argmin <eta g, theta> + B_Psi(theta, theta_t) solves
grad Psi(theta') = grad Psi(theta_t) - eta g (§4.3; C = R^k: the Bregman projection
onto the theory's constraint set is not implemented, as in the thesis's own
experiment, Figure 4.1). Everything here touches public data only.

* :class:`EuclideanMirrorMap` — Psi = ||theta||^2 / 2: the step is a gradient step,
  Algorithm 1 is DP-GD.
* :class:`QuadraticMirrorMap` — Psi = theta^T H theta / 2 - b^T theta: the step is
  theta - eta H^-1 g (preconditioned DP-GD, §4.5); Cholesky factor computed once.
* :class:`GLMMirrorMap` — the average public GLM loss plus a ridge term, for general
  convex losses (§4.6): grad Psi is inverted by L-BFGS on Psi(theta) - <z, theta>
  (strongly convex thanks to the ridge).
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from scipy import linalg, optimize
from scipy.sparse.linalg import LinearOperator, eigsh

from .. import _validation as v
from ..losses import GLMLoss


def _as_matrix(X) -> np.ndarray | sp.csr_matrix:
    if sp.issparse(X):
        X = sp.csr_matrix(X, dtype=np.float64)
        if not np.all(np.isfinite(X.data)):
            raise ValueError("public features must be finite (no NaN or inf)")
        return X
    X = np.asarray(X, dtype=np.float64)
    if X.ndim != 2:
        raise ValueError(f"public features must be a 2-D array, got shape {X.shape}")
    if not np.all(np.isfinite(X)):
        raise ValueError("public features must be finite (no NaN or inf)")
    return X


def _as_targets(y, n: int) -> np.ndarray:
    y = np.asarray(y, dtype=np.float64)
    if y.shape != (n,):
        raise ValueError(f"targets must have shape ({n},), got {y.shape}")
    if not np.all(np.isfinite(y)):
        raise ValueError("targets must be finite (no NaN or inf)")
    return y


class EuclideanMirrorMap:
    """Psi(theta) = ||theta||^2 / 2 (with minimizer ``center``): Algorithm 1 becomes DP-GD."""

    def __init__(self, dim: int, center=None):
        self.dim = v.positive_int("dim", dim)
        self.center = np.zeros(dim) if center is None else np.asarray(center, dtype=float)
        if self.center.shape != (dim,) or not np.all(np.isfinite(self.center)):
            raise ValueError(f"center must be a finite vector of length {dim}")

    def minimizer(self) -> np.ndarray:
        return self.center.copy()

    def step(self, theta: np.ndarray, gradient: np.ndarray, learning_rate) -> np.ndarray:
        """theta - eta g (columns of ``gradient`` may be separate runs)."""
        return theta - learning_rate * gradient


class QuadraticMirrorMap:
    """Psi(theta) = theta^T H theta / 2 - b^T theta, H symmetric positive definite.

    The mirror step is theta - eta H^-1 g. ``scale`` divides H and b (Psi/scale),
    which only rescales the learning rate; :meth:`normalized` picks
    scale = lambda_min(H) so that the preconditioner H^-1 has largest eigenvalue 1,
    as in the thesis's experiment (§4.5: with H proportional to I, PDA-DPMD and
    DP-GD then coincide for the same hyperparameters).
    """

    def __init__(self, H: np.ndarray, b: np.ndarray, scale: float = 1.0):
        H = np.asarray(H, dtype=float)
        k = H.shape[0]
        if H.ndim != 2 or H.shape != (k, k):
            raise ValueError(f"H must be a square matrix, got shape {H.shape}")
        if not np.all(np.isfinite(H)):
            raise ValueError("H must be finite")
        self.dim = k
        self.scale = v.positive("scale", scale)
        self.b = np.asarray(b, dtype=float) / self.scale
        if self.b.shape != (k,):
            raise ValueError(f"b must have shape ({k},), got {self.b.shape}")
        try:
            self._chol = linalg.cho_factor(H / self.scale, lower=False, check_finite=False)
        except linalg.LinAlgError:
            raise ValueError("H must be positive definite (add a ridge term)") from None
        if not np.all(np.diag(self._chol[0]) > 0):
            raise ValueError("H must be positive definite (add a ridge term)")
        self._H = H

    @property
    def hessian(self) -> np.ndarray:
        return self._H / self.scale

    def precondition(self, gradient: np.ndarray) -> np.ndarray:
        """H^-1 g (the scaled H); ``gradient`` may be (k,) or (k, B)."""
        return linalg.cho_solve(self._chol, gradient, check_finite=False)

    def minimizer(self) -> np.ndarray:
        """argmin Psi = H^-1 b (the public least-squares solution, theta_0 of line 2)."""
        return self.precondition(self.b)

    def step(self, theta: np.ndarray, gradient: np.ndarray, learning_rate) -> np.ndarray:
        return theta - learning_rate * self.precondition(gradient)

    def largest_preconditioner_eigenvalue(self) -> float:
        """lambda_max(H^-1) by Lanczos on H^-1 (cheap with the Cholesky factor)."""
        if self.dim <= 200:
            return float(1.0 / linalg.eigvalsh(self.hessian, subset_by_index=[0, 0])[0])
        op = LinearOperator((self.dim, self.dim), matvec=self.precondition, dtype=float)
        return float(eigsh(op, k=1, which="LA", tol=1e-10, return_eigenvectors=False)[0])

    def normalized(self) -> QuadraticMirrorMap:
        """The same map scaled so that the preconditioner has largest eigenvalue 1."""
        top = self.largest_preconditioner_eigenvalue()
        return QuadraticMirrorMap(self._H, self.b * self.scale, self.scale / top)


def ridge_value(H: np.ndarray, ridge: float) -> float:
    """The ridge added to a public Hessian: ``ridge`` times its mean eigenvalue tr(H)/k."""
    return float(ridge * np.trace(H) / H.shape[0])


def linear_regression_mirror_map(
    X_pub, y_pub, ridge: float = 1e-3, normalize: bool = True
) -> QuadraticMirrorMap:
    """Psi from the public squared loss (1/2n) ||y - X theta||^2 plus a ridge (§4.5, §4.7).

    H = X^T X / n + lam I with lam = ``ridge`` * tr(X^T X / n) / k ("a small
    constant times the identity ... for numerical stability", thesis §4.5), b = X^T y / n.
    ``normalize`` scales Psi so that H^-1 has largest eigenvalue 1 (thesis §4.5).
    """
    X = _as_matrix(X_pub)
    n, k = X.shape
    y = _as_targets(y_pub, n)
    ridge = v.positive("ridge", ridge)
    gram = X.T @ X
    H = (gram.toarray() if sp.issparse(gram) else np.asarray(gram)) / n
    H[np.diag_indices(k)] += ridge_value(H, ridge)
    b = np.asarray(X.T @ y).ravel() / n
    mirror = QuadraticMirrorMap(H, b)
    return mirror.normalized() if normalize else mirror


class GLMMirrorMap:
    """Psi(theta) = (1/n) sum_i f(x_i^T theta; y_i) + (ridge/2) ||theta||^2 for a GLM loss f.

    For general convex losses (Ganesh's thesis, §4.6; Thm 83 takes l_pub strongly
    convex, which the ridge guarantees). The mirror step inverts grad Psi by
    L-BFGS on Psi(theta) - <z, theta>, warm-started at the current iterate, to
    a gradient norm of ``tol``.
    """

    def __init__(self, X_pub, y_pub, loss: GLMLoss, ridge: float, tol: float = 1e-10):
        if not isinstance(loss, GLMLoss):
            raise TypeError(f"loss must be a GLMLoss, got {type(loss).__name__}")
        self.X = _as_matrix(X_pub)
        n, self.dim = self.X.shape
        self.y = _as_targets(y_pub, n)
        self.loss = loss
        self.ridge = v.positive("ridge", ridge)
        self.tol = v.positive("tol", tol)

    def value_and_grad(self, theta: np.ndarray) -> tuple[float, np.ndarray]:
        u = np.asarray(self.X @ theta).ravel()
        n = self.y.size
        value = float(np.mean(self.loss.value(u, self.y))) + 0.5 * self.ridge * theta @ theta
        grad = np.asarray(self.X.T @ self.loss.derivative(u, self.y)).ravel() / n
        return value, grad + self.ridge * theta

    def grad(self, theta: np.ndarray) -> np.ndarray:
        return self.value_and_grad(theta)[1]

    def inverse_grad(self, z: np.ndarray, start: np.ndarray) -> np.ndarray:
        """theta with grad Psi(theta) = z (unique: Psi is strongly convex)."""

        def objective(theta):
            value, grad = self.value_and_grad(theta)
            return value - z @ theta, grad - z

        res = optimize.minimize(
            objective,
            start,
            jac=True,
            method="L-BFGS-B",
            options={"gtol": self.tol, "ftol": 0.0, "maxiter": 10_000, "maxcor": 30},
        )
        if np.linalg.norm(objective(res.x)[1]) > 1e3 * self.tol:
            raise RuntimeError("mirror step did not converge (grad Psi(theta) = z not solved)")
        return res.x

    def minimizer(self) -> np.ndarray:
        """theta_0 = argmin Psi (Algorithm 1, line 2)."""
        return self.inverse_grad(np.zeros(self.dim), np.zeros(self.dim))

    def step(self, theta: np.ndarray, gradient: np.ndarray, learning_rate) -> np.ndarray:
        if gradient.ndim != 1:
            raise ValueError("GLMMirrorMap steps one run at a time")
        return self.inverse_grad(self.grad(theta) - learning_rate * gradient, theta)
