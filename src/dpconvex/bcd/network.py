"""Multi-convex ReLU network for DP-MBCD (Chen & Liu, arXiv 2407.08233, Algorithm 4 + variant).

Feed-forward ReLU network with squared loss, lifted as in eq. (4) with gamma = 1:

    F(W, x, u) = (1/2)||W_D x_D - y||^2
                 + (gamma/2) sum_{d<D} ( ||x_{d+1} - relu(u_d)||^2 + ||u_d - W_d x_d||^2 ).

Released blocks: the weights W_0 .. W_D. Hidden blocks, one copy per example and
kept across epochs (per-example state: it depends only on that example and on the
released weights): post-activations x_1 .. x_D and pre-activations u_0 .. u_{D-1};
x_0 is the input row, normalized to unit norm. For each batch, in the paper's order:

1. x-update, eq. (11) with its printed range corrected (d = 1..D-1; the exact
   minimizer for x_D, which the paper's "Prox" form ignores W_D for):
   x_d = (W_d^T W_d + I)^-1 (W_d^T u_d + relu(u_{d-1})),
   x_D = (W_D^T W_D + gamma I)^-1 (W_D^T y + gamma relu(u_{D-1}));
   then each example's x_d is clipped to norm rho (eq. 12), which certifies the
   curvature bound gamma rho^2 of the W-blocks (Lemma B.1);
2. u-update, eq. (10) (Zeng et al. 2019, Lemma 13): u = w if w <= -(sqrt 2 - 1) x,
   else (w + x)/2, with w = W_d x_d and x = x_{d+1} (the exact elementwise argmin);
3. W-update: the per-example least-squares losses (gamma/2)||W_d x_d - u_d||^2 (and
   (1/2)||W_D x_D - y||^2) take the noisy explicit step of eq. (14), or, with
   ``implicit=True``, the certified proximal-point step that corrects the paper's
   "variant" (eqs. 15-18; :func:`dpconvex.bcd.steps.implicit_least_squares_step`,
   noise added after the step). Per-example clipping to C enforces Assumption 4.4,
   which the paper's Lemma B.1 confuses with smoothness.

The hidden blocks are computed from the weights, so the blocks are coupled and only
the composition accountant applies (:func:`dpconvex.bcd.dp_mbcd` refuses the
hidden-state one).
"""

from __future__ import annotations

import math

import numpy as np
from scipy import linalg

from .. import _validation as v
from ._checks import clip_rows, finite_matrix, labels, normalize_rows
from .engine import BlockSpec, MbcdProblem

SQRT2_M1 = math.sqrt(2.0) - 1.0


def relu(values: np.ndarray) -> np.ndarray:
    return np.maximum(values, 0.0)


def u_update(w: np.ndarray, x: np.ndarray) -> np.ndarray:
    """argmin_u (1/2)(x - relu(u))^2 + (1/2)(u - w)^2 elementwise, for x >= 0 (eq. 10)."""
    return np.where(w <= -SQRT2_M1 * x, w, 0.5 * (w + x))


def one_hot(y: np.ndarray, n_classes: int) -> np.ndarray:
    out = np.zeros((y.size, n_classes))
    out[np.arange(y.size), y] = 1.0
    return out


def _solve_spd(gram: np.ndarray, rhs: np.ndarray) -> np.ndarray:
    return linalg.cho_solve(linalg.cho_factor(gram, check_finite=False), rhs, check_finite=False)


class LiftedMlpProblem(MbcdProblem):
    """Lifted ReLU MLP for DP-MBCD (module docstring).

    Args:
        X: (n, d_in) inputs (rows are normalized to unit norm).
        y: (n,) integer class labels in [0, n_classes).
        hidden: widths of the hidden layers (the paper's Madelon model is 4 layers
            of 200; we read it as three hidden layers of 200 and an output layer).
        n_classes: number of classes (default: max label + 1).
        rho: clip of every hidden x_d (eq. 12); the paper uses rho = 1.
        clip: per-example gradient clip C of every W-block.
        gamma: penalty weight (the paper uses 1).
        implicit: use the certified proximal-point W-step (the paper's variant).
    """

    has_hidden_blocks = True

    def __init__(
        self,
        X,
        y,
        *,
        hidden: tuple[int, ...] = (200, 200, 200),
        n_classes: int | None = None,
        rho: float = 1.0,
        clip: float = 1.0,
        gamma: float = 1.0,
        implicit: bool = False,
        init_scale: float = 1.0,
    ):
        X = finite_matrix("X", X)
        y = labels("y", y, X.shape[0])
        n_classes = (
            int(y.max()) + 1 if n_classes is None else v.positive_int("n_classes", n_classes)
        )
        if y.max() >= n_classes:
            raise ValueError(f"labels must be < n_classes = {n_classes}")
        hidden = tuple(v.positive_int("hidden width", h) for h in hidden)
        self.x0 = normalize_rows(X)
        self.targets = one_hot(y, n_classes)
        self.n_examples = X.shape[0]
        self.dims = (X.shape[1], *hidden, n_classes)
        self.depth = len(hidden)  # D: weights W_0 .. W_D
        self.rho = v.positive("rho", rho)
        self.gamma = v.positive("gamma", gamma)
        self.init_scale = v.positive("init_scale", init_scale)
        bounds = [1.0] + [self.rho] * self.depth  # ||x_0|| <= 1 (normalized), ||x_d|| <= rho
        self.blocks = tuple(
            BlockSpec(
                f"W{d}",
                clip=clip,
                smoothness=(self.gamma if d < self.depth else 1.0) * bounds[d] ** 2,
                implicit=implicit,
            )
            for d in range(self.depth + 1)
        )
        self.xs: list[np.ndarray] = []
        self.us: list[np.ndarray] = []

    # -- parameters and the forward pass ------------------------------------
    def init(self, rng):
        params = {
            f"W{d}": self.init_scale
            * rng.standard_normal((self.dims[d + 1], self.dims[d]))
            * math.sqrt(2.0 / self.dims[d])
            for d in range(self.depth + 1)
        }
        # hidden state of every example: a forward pass from the data-independent init
        self.xs = [self.x0]
        self.us = []
        for d in range(self.depth):
            u = self.xs[d] @ params[f"W{d}"].T
            self.us.append(u)
            self.xs.append(clip_rows(relu(u), self.rho))
        return params

    def forward(self, params: dict[str, np.ndarray], X, *, clip: bool = True) -> np.ndarray:
        """Network outputs W_D x_D for the rows of X (normalized like the training rows)."""
        x = normalize_rows(finite_matrix("X", X))
        for d in range(self.depth):
            x = relu(x @ params[f"W{d}"].T)
            if clip:
                x = clip_rows(x, self.rho)
        return x @ params[f"W{self.depth}"].T

    def predict(self, params: dict[str, np.ndarray], X, *, clip: bool = True) -> np.ndarray:
        return np.argmax(self.forward(params, X, clip=clip), axis=1)

    # -- Algorithm 4: hidden blocks ------------------------------------------
    def update_hidden(self, params, batch):
        D, g = self.depth, self.gamma
        xs, us = self.xs, self.us
        for d in range(1, D):  # eq. (11), d = 1 .. D-1
            W = params[f"W{d}"]
            gram = W.T @ W + np.eye(W.shape[1])
            rhs = W.T @ us[d][batch].T + relu(us[d - 1][batch]).T
            xs[d][batch] = clip_rows(_solve_spd(gram, rhs).T, self.rho)
        W = params[f"W{D}"]
        gram = W.T @ W + g * np.eye(W.shape[1])
        rhs = W.T @ self.targets[batch].T + g * relu(us[D - 1][batch]).T
        xs[D][batch] = clip_rows(_solve_spd(gram, rhs).T, self.rho)
        for d in range(D):  # eq. (10)
            w = xs[d][batch] @ params[f"W{d}"].T
            us[d][batch] = u_update(w, xs[d + 1][batch])

    # -- Algorithm 4: released blocks ----------------------------------------
    def least_squares(self, name, params, batch):
        d = int(name[1:])
        if d == self.depth:
            return self.xs[d][batch], self.targets[batch], 1.0
        return self.xs[d][batch], self.us[d][batch], self.gamma

    def gradient_factors(self, name, params, batch):
        inputs, targets, gamma = self.least_squares(name, params, batch)
        return gamma * (inputs @ params[name].T - targets), inputs
