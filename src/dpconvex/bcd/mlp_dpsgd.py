"""DP-SGD for a small ReLU MLP in numpy: the baseline of Chen & Liu's network experiments.

Source of the experiments: Chen & Liu, arXiv 2407.08233, App. D.1.2.

Same architecture and squared loss as :class:`~dpconvex.bcd.network.LiftedMlpProblem`
(no biases, input rows normalized to unit norm), trained by backpropagation.
Per-example gradients of a dense layer are rank one, delta_i a_i^T, so the
per-example gradient norm over all layers is sqrt(sum_l ||delta_il||^2 ||a_il||^2)
and clipping is a per-example scalar (the "ghost clipping" identity): the clipped
batch gradient is one weighted matrix product per layer. Poisson sampling at rate
q = b / n (n public), noise N(0, (z C)^2 I) on the clipped sum, divided by q n;
priced by :func:`dpconvex.accounting.dpsgd_event` (add/remove). Heavy-ball SGD.
"""

from __future__ import annotations

import math

import numpy as np

from .. import _validation as v
from .._random import make_rng
from ..accounting import dpsgd_event
from ..data.batches import poisson_batches
from ..optim.noisy_gradient import noisy_gradient_run
from ..release import Release
from ._checks import finite_matrix, labels, normalize_rows
from .network import one_hot, relu


def mlp_forward(params: dict[str, np.ndarray], X) -> np.ndarray:
    """Outputs of the plain ReLU MLP ``W0``, ..., ``WD`` on the rows of X (normalized)."""
    x = normalize_rows(finite_matrix("X", X))
    depth = len(params) - 1
    for d in range(depth):
        x = relu(x @ params[f"W{d}"].T)
    return x @ params[f"W{depth}"].T


def mlp_predict(params: dict[str, np.ndarray], X) -> np.ndarray:
    return np.argmax(mlp_forward(params, X), axis=1)


def _backprop(Ws, xb, yb):
    """Per-layer (delta, activation) pairs of the squared loss (1/2)||z - y||^2."""
    acts = [xb]
    pre = []
    for W in Ws[:-1]:
        h = acts[-1] @ W.T
        pre.append(h)
        acts.append(relu(h))
    delta = acts[-1] @ Ws[-1].T - yb
    pairs = [None] * len(Ws)
    for d in range(len(Ws) - 1, -1, -1):
        pairs[d] = (delta, acts[d])
        if d:
            delta = (delta @ Ws[d]) * (pre[d - 1] > 0)
    return pairs


def sgd_mlp(
    X,
    y,
    *,
    hidden: tuple[int, ...] = (200, 200, 200),
    n_classes: int | None = None,
    batch_size: int,
    epochs: int,
    learning_rate: float,
    momentum: float = 0.9,
    noise_multiplier: float | None = None,
    clip: float | None = None,
    random_state=None,
    progress: bool = False,
) -> dict[str, np.ndarray] | Release:
    """Poisson-sampled (DP-)SGD on the MLP; private when ``noise_multiplier`` is given.

    Returns the weights (non-private) or a :class:`Release` of them with the
    DP-SGD event (``ceil(epochs / q)`` steps of the Poisson-subsampled Gaussian).
    """
    X = normalize_rows(finite_matrix("X", X))
    y = labels("y", y, X.shape[0])
    n_classes = int(y.max()) + 1 if n_classes is None else v.positive_int("n_classes", n_classes)
    targets = one_hot(y, n_classes)
    n = X.shape[0]
    b = v.positive_int("batch_size", batch_size)
    epochs = v.positive_int("epochs", epochs)
    lr = v.positive("learning_rate", learning_rate)
    momentum = v.nonnegative("momentum", momentum)
    private = noise_multiplier is not None
    if private:
        z = v.positive("noise_multiplier", noise_multiplier)
        clip = v.positive("clip", clip)
    q = min(1.0, b / n)
    steps = max(1, math.ceil(epochs / q))
    rng = make_rng(random_state)
    dims = (X.shape[1], *hidden, n_classes)
    Ws = [
        rng.standard_normal((dims[d + 1], dims[d])) * math.sqrt(2.0 / dims[d])
        for d in range(len(dims) - 1)
    ]
    vel = [np.zeros_like(W) for W in Ws]

    def sgd_step(Ws, rows, rng):
        pairs = _backprop(Ws, X[rows], targets[rows])
        if private:
            sq = sum(np.einsum("ij,ij->i", dl, dl) * np.einsum("ij,ij->i", a, a) for dl, a in pairs)
            norms = np.sqrt(sq)
            with np.errstate(divide="ignore", invalid="ignore"):
                factor = np.where(norms > clip, clip / norms, 1.0)
        for d, (dl, a) in enumerate(pairs):
            if private:
                grad = (dl * factor[:, None]).T @ a
                grad += z * clip * rng.standard_normal(grad.shape)
            else:
                grad = dl.T @ a
            vel[d] = momentum * vel[d] + grad / (q * n)
            Ws[d] = Ws[d] - lr * vel[d]
        if not all(np.all(np.isfinite(W)) for W in Ws):
            raise FloatingPointError("SGD diverged (non-finite weights); lower learning_rate")
        return Ws

    def poisson(rng):  # one Poisson subsample of rate q per step
        return (poisson_batches(rng, n, q, 1)[0] for _ in range(steps))

    def bar(batches):
        from tqdm.auto import tqdm

        desc = "DP-SGD MLP" if private else "SGD MLP"
        return tqdm(batches, total=steps, desc=desc, leave=False)

    run = noisy_gradient_run(
        Ws,
        poisson,
        sgd_step,
        (lambda taken: dpsgd_event(z, q, taken)) if private else None,
        rng,
        progress=bar if progress else None,
    )
    params = {f"W{d}": W for d, W in enumerate(run.last)}
    if not private:
        return params
    info = {"steps": run.steps, "sampling_rate": q, "noise_multiplier": z}
    return Release(params, run.event, info)
