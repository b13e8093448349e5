"""DP non-negative matrix factorization (Chen & Liu, arXiv 2407.08233, eq. 2, Alg. 3).

min_{X >= 0, Y >= 0} (1/2)||X Y - M||_F^2 with M (n x d_c), one row per user.
What is private and what is released (the paper's §4.1 and App. B.2.1):

* **Y** (items, d x d_c) is the released block. Each batch updates it once with the
  noisy projected step of eq. (6): per-row gradient x_i^T (x_i Y - m_i) clipped to C
  (Assumption 4.4 enforced per example; the paper clips the whole batch), divided
  by the batch capacity b, step min(eta, kappa / rho^2) with the certified bound
  rho^2 on the Y-block curvature, Gaussian noise, projection on Y >= 0 (the
  projection Algorithm 3 omits).
* **X** rows (users) are hidden per-user state: row i is refreshed only when its
  batch comes, from m_i and the current Y (a few HALS sweeps of non-negative least
  squares warm-started at the user's previous row, then projection on
  ||x_i|| <= rho). Each user can recompute its own row from the released Y, so
  the guarantee on Y is a joint-DP guarantee for the users (billboard model).

Privacy: the two blocks are coupled (Y's step depends on hidden rows computed from
Y), so only the composition accountant applies (:func:`dpconvex.bcd.dp_mbcd`
refuses the hidden-state one). Baselines in the layout of the paper's Table 2:
non-private MBCD (Algorithm 2), non-private SGD and DP-SGD (Poisson sampling,
:func:`dpconvex.accounting.dpsgd_event`).
"""

from __future__ import annotations

import math

import numpy as np

from .. import _validation as v
from .._random import make_rng
from ..accounting import dpsgd_event
from ..data.batches import poisson_batches
from ..release import Release
from ._checks import clip_rows, finite_matrix
from .engine import BlockSpec, MbcdProblem
from .prox import Prox
from .steps import clipped_gradient_sum


def synthetic_nmf(
    n_rows: int = 1000,
    n_cols: int = 200,
    rank: int = 10,
    *,
    random_state=None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """M = X Y with X (n_rows x rank), Y (rank x n_cols) i.i.d. Uniform[0, 1] (Xu & Yin 2013).

    The paper's setting (App. D.1.1) is 1000 x 10 times 10 x 200; it does not name
    the distribution, Uniform[0, 1] is our choice. Returns (M, X, Y).
    """
    rng = make_rng(random_state)
    X = rng.random((v.positive_int("n_rows", n_rows), v.positive_int("rank", rank)))
    Y = rng.random((rank, v.positive_int("n_cols", n_cols)))
    return X @ Y, X, Y


def hals_rows(
    M: np.ndarray, Y: np.ndarray, X: np.ndarray, sweeps: int, row_bound: float | None = None
) -> np.ndarray:
    """Rows x_i >= 0 approximately minimizing ||x_i Y - m_i|| (HALS coordinate sweeps).

    Each coordinate update x_k <- max(0, x_k - <r, y_k> / ||y_k||^2) is exact for
    that coordinate; ``sweeps`` passes over the rank coordinates, warm-started at
    ``X``; then rows are projected on ||x|| <= row_bound (exact projection on the
    orthant-ball intersection). Works row by row: row i only sees m_i.
    """
    X = np.array(X, dtype=float, copy=True)
    gram = Y @ Y.T  # the residual enters only through Y Y^T and M Y^T
    cross = M @ Y.T
    for _ in range(sweeps):
        for k in range(Y.shape[0]):
            if gram[k, k] <= 0:
                continue
            X[:, k] = np.maximum(X[:, k] - (X @ gram[:, k] - cross[:, k]) / gram[k, k], 0.0)
    if row_bound is not None:
        X = clip_rows(X, row_bound)
    return X


def relative_error(M: np.ndarray, Y: np.ndarray, sweeps: int = 200) -> float:
    """||X* Y - M||_F / ||M||_F with X* the users' non-negative least-squares rows given Y.

    The evaluation every method shares: each user fits its own row to the released
    Y (a per-user computation), so the error measures the quality of Y alone.
    """
    X = hals_rows(M, Y, np.zeros((M.shape[0], Y.shape[0])), sweeps)
    return float(np.linalg.norm(X @ Y - M) / np.linalg.norm(M))


class NmfProblem(MbcdProblem):
    """Mini-batch NMF for DP-MBCD: released Y, hidden per-user rows of X (module doc).

    Args:
        M: (n, d_c) non-negative data, one row per user.
        rank: inner dimension d.
        clip: per-example (per-row) gradient clip C of the Y-step.
        row_bound: rho, bound on the rows of X (certifies Y-curvature <= rho^2).
        hals_sweeps: HALS sweeps per refresh of a user's row.
        init_scale: Y and X start Uniform[0, init_scale] (data-independent).
    """

    has_hidden_blocks = True

    def __init__(
        self,
        M,
        rank: int,
        *,
        clip: float = 1.0,
        row_bound: float = 3.0,
        hals_sweeps: int = 3,
        init_scale: float = 1.0,
    ):
        M = finite_matrix("M", M)
        if np.any(M < 0):
            raise ValueError("NMF needs a non-negative matrix M")
        self.M = M
        self.rank = v.positive_int("rank", rank)
        self.row_bound = v.positive("row_bound", row_bound)
        self.hals_sweeps = v.positive_int("hals_sweeps", hals_sweeps)
        self.init_scale = v.positive("init_scale", init_scale)
        self.n_examples = M.shape[0]
        self.X = np.zeros((M.shape[0], self.rank))
        self.blocks = (
            BlockSpec(
                "Y", clip=clip, smoothness=self.row_bound**2, prox=Prox(constraint="nonnegative")
            ),
        )

    def init(self, rng):
        self.X = clip_rows(
            self.init_scale * rng.random((self.n_examples, self.rank)), self.row_bound
        )
        return {"Y": self.init_scale * rng.random((self.rank, self.M.shape[1]))}

    def update_hidden(self, params, batch):
        self.X[batch] = hals_rows(
            self.M[batch], params["Y"], self.X[batch], self.hals_sweeps, self.row_bound
        )

    def gradient_factors(self, name, params, batch):
        x = self.X[batch]
        return x, x @ params["Y"] - self.M[batch]


def _check_nmf(M, rank):
    M = finite_matrix("M", M)
    if np.any(M < 0):
        raise ValueError("NMF needs a non-negative matrix M")
    return M, v.positive_int("rank", rank)


def sgd_nmf(
    M,
    rank: int,
    *,
    batch_size: int,
    epochs: int,
    learning_rate: float,
    row_bound: float = 3.0,
    init_scale: float = 1.0,
    noise_multiplier: float | None = None,
    clip: float | None = None,
    random_state=None,
    progress: bool = False,
) -> np.ndarray | Release:
    """Projected SGD on (X, Y); with ``noise_multiplier`` and ``clip``, DP-SGD on Y.

    Each step draws a Poisson batch (rate q = b/n; the number of rows n is public),
    moves the sampled users' rows by one projected gradient step of step
    1/||Y Y^T|| (per-user, hidden), and moves Y by ``learning_rate`` times the
    batch gradient divided by q n. Non-private: plain gradients, returns Y.
    Private: per-row gradients clipped to C plus N(0, (z C)^2 I), a Poisson-
    subsampled Gaussian step priced by :func:`dpconvex.accounting.dpsgd_event`;
    returns a :class:`Release` of Y. X rows are the users' own state, as for DP-MBCD.
    """
    M, rank = _check_nmf(M, rank)
    n = M.shape[0]
    b = v.positive_int("batch_size", batch_size)
    epochs = v.positive_int("epochs", epochs)
    lr = v.positive("learning_rate", learning_rate)
    private = noise_multiplier is not None
    if private:
        z = v.positive("noise_multiplier", noise_multiplier)
        clip = v.positive("clip", clip)
    q = min(1.0, b / n)
    steps = max(1, math.ceil(epochs / q))
    rng = make_rng(random_state)
    X = clip_rows(init_scale * rng.random((n, rank)), row_bound)
    Y = init_scale * rng.random((rank, M.shape[1]))
    iterator = range(steps)
    if progress:
        from tqdm.auto import tqdm

        iterator = tqdm(iterator, desc="DP-SGD NMF" if private else "SGD NMF", leave=False)
    for _ in iterator:
        rows, _ = poisson_batches(rng, n, q, 1)
        xb = X[rows]
        R = xb @ Y - M[rows]
        # users' rows: one projected gradient step each (hidden, per-user)
        lx = max(float(np.linalg.norm(Y @ Y.T, 2)), 1e-12)
        X[rows] = clip_rows(np.maximum(xb - (R @ Y.T) / lx, 0.0), row_bound)
        if private:
            grad = clipped_gradient_sum(xb, R, clip)
            grad += z * clip * rng.standard_normal(grad.shape)
        else:
            grad = xb.T @ R
        Y = np.maximum(Y - lr * grad / (q * n), 0.0)
        if not np.all(np.isfinite(Y)):
            raise FloatingPointError("SGD diverged (non-finite Y); lower learning_rate")
    if not private:
        return Y
    info = {"steps": steps, "sampling_rate": q, "noise_multiplier": z}
    return Release(Y, dpsgd_event(z, q, steps), info)
