"""Public-data-assisted DP mirror descent (PDA-DPMD): Algorithm 1 of Ganesh's thesis, ch. 4.

Arun Ganesh, *Improved Algorithms and Upper Bounds in Differential Privacy*, PhD thesis,
UC Berkeley EECS-2022-53, §4.4, Algorithm 1 (Amid et al., arXiv 2112.00193):
theta_0 = argmin Psi (public), then for t < T:
g_t = (1/n) sum_i clip(grad l_priv(theta_t; d_i), L), and the mirror step with g_t + b_t,
b_t ~ N(0, sigma^2 I); the output is the average of theta_1..theta_T. With
Psi = ||theta||^2/2 it is DP-GD.

Privacy (Thm 74): each step is a Gaussian mechanism on the sum of clipped
gradients (sensitivity L under add/remove neighbours, 2L under replace-one;
n_priv is treated as public, as in every DP-GD implementation), so T steps
with noise z L on the sum are priced exactly as T compositions of a Gaussian
of noise multiplier z (add/remove) or z/2 (replace-one); the event is
``SelfComposedDpEvent(GaussianDpEvent(.), T)``. The thesis's sigma^2 =
8 L^2 T log(1/delta) / (eps n)^2 (line 2; replace-one) is only sufficient through
Thm 14 up to eps ~ 1 and is short of (eps, delta) at eps = 8 even with exact
accounting (at eps = 8, delta = 1e-5, replace-one, the exact epsilon is 8.0067): we
calibrate z numerically instead (:func:`pda_noise_multiplier`, the analytic Gaussian
of T steps, checked against the PLD accountant so that the epsilon it reports never
exceeds the target).
Public data and theta_0 are not charged.
"""

from __future__ import annotations

import math

import numpy as np
import scipy.sparse as sp
from dp_accounting.dp_event import DpEvent, GaussianDpEvent, SelfComposedDpEvent

from .. import _validation as v
from .._arrays import row_norms
from .._random import make_rng
from ..accounting import PrivacyAccountant, gaussian_delta, gaussian_sigma
from ..data.clipping import clipped_weights
from ..losses import GLMLoss
from ..optim.noisy_gradient import full_batches, noisy_gradient_run
from ..release import Release
from .mirror_maps import GLMMirrorMap

NEIGHBOURS = {"add_remove": 1.0, "replace_one": 2.0}


def _sensitivity_factor(neighbours: str) -> float:
    if neighbours not in NEIGHBOURS:
        raise ValueError(f"neighbours must be one of {tuple(NEIGHBOURS)}, got {neighbours!r}")
    return NEIGHBOURS[neighbours]


def pda_noise_multiplier(
    epsilon: float, delta: float, steps: int, neighbours: str = "add_remove"
) -> float:
    """Smallest z (noise std / clip L on the gradient sum) making T steps (epsilon, delta)-DP.

    T Gaussian mechanisms of sensitivity s L and noise z L compose exactly into
    one of sensitivity s sqrt(T), so z = analytic-Gaussian sigma for
    sensitivity s sqrt(T) (Redberg, Koskela & Wang, arXiv 2401.00583, eq. (B.1), safe
    side), s = 1 (add/remove) or 2.
    """
    steps = v.positive_int("steps", steps)
    s = _sensitivity_factor(neighbours)
    z = gaussian_sigma(epsilon, delta, s * math.sqrt(steps))
    # the PLD accountant can report epsilon ~1e-12 above the analytic profile's
    # (float round-off): nudge z up until the reported epsilon meets the target
    for _ in range(100):
        spent = PrivacyAccountant("pld").compose(pda_event(z, steps, neighbours)).get_epsilon(delta)
        if spent <= epsilon:
            return z
        z *= 1.0 + 1e-9
    raise RuntimeError("could not calibrate the noise multiplier safely")  # pragma: no cover


def pda_event(noise_multiplier: float, steps: int, neighbours: str = "add_remove") -> DpEvent:
    """T Gaussian steps of sensitivity s L and noise z L, as add/remove-neighbour events.

    A Gaussian of sensitivity 2L and noise zL is the unit-sensitivity Gaussian of
    noise multiplier z/2, so replace-one is expressed exactly in dp_accounting's
    add/remove convention.
    """
    z = v.positive("noise_multiplier", noise_multiplier)
    steps = v.positive_int("steps", steps)
    return SelfComposedDpEvent(GaussianDpEvent(z / _sensitivity_factor(neighbours)), steps)


def thesis_noise_multiplier(epsilon: float, delta: float, steps: int) -> float:
    """Algorithm 1, line 2, as a multiplier of L on the gradient *sum*: sqrt(8 T log(1/delta))/eps.

    sigma = sqrt(8 L^2 T log(1/delta)) / (eps n) on the average is this z times L/n.
    Sufficient (replace-one, via Thm 14) only for eps <~ 1: see :func:`thesis_delta`.
    """
    epsilon = v.positive("epsilon", epsilon)
    delta = v.probability_open("delta", delta)
    steps = v.positive_int("steps", steps)
    return math.sqrt(8.0 * steps * math.log(1.0 / delta)) / epsilon


def thesis_delta(epsilon: float, delta: float, neighbours: str = "replace_one") -> float:
    """Exact delta at ``epsilon`` of T steps with the thesis's sigma (independent of T).

    The composition is mu-GDP with mu = s sqrt(T) / z = s eps / sqrt(8 log(1/delta))
    (mu = 0.2084 for eps = 1, delta = 1e-5 under replace-one).
    """
    z = thesis_noise_multiplier(epsilon, delta, 1)
    return gaussian_delta(epsilon, _sensitivity_factor(neighbours), z)


def _check_design(X, y) -> tuple[np.ndarray | sp.csr_matrix, np.ndarray]:
    if sp.issparse(X):
        X = sp.csr_matrix(X, dtype=np.float64)
        finite = np.all(np.isfinite(X.data))
    else:
        X = np.asarray(X, dtype=np.float64)
        if X.ndim != 2:
            raise ValueError(f"X must be a 2-D array, got shape {X.shape}")
        finite = np.all(np.isfinite(X))
    if not finite:
        raise ValueError("X must be finite (no NaN or inf)")
    y = np.asarray(y, dtype=np.float64)
    if y.shape != (X.shape[0],):
        raise ValueError(f"y must have shape ({X.shape[0]},), got {y.shape}")
    if not np.all(np.isfinite(y)):
        raise ValueError("y must be finite (no NaN or inf)")
    if X.shape[0] == 0:
        raise ValueError("X must have at least one row")
    return X, y


def clipped_gradient_sums(
    X, y, loss: GLMLoss, thetas: np.ndarray, clips: np.ndarray, norms: np.ndarray
) -> np.ndarray:
    """sum_i clip(f'(x_i^T theta_b; y_i) x_i, C_b) for every run b (columns of ``thetas``).

    The per-example gradient of a GLM loss is f' x_i, of norm |f'| ||x_i||; it is
    scaled by min(1, C / norm) (Algorithm 1, line 4; clip as in footnote 2 of §1.4).
    """
    u = np.asarray(X @ thetas)  # (n, B)
    weights = clipped_weights(u, y[:, None], norms[:, None], loss, clips[None, :])
    return np.asarray(X.T @ weights)


def pda_dpmd_runs(
    X,
    y,
    loss: GLMLoss,
    mirror,
    *,
    theta0: np.ndarray,
    noise_multiplier: float,
    clips,
    learning_rates,
    steps: int,
    rng: np.random.Generator,
) -> tuple[np.ndarray, np.ndarray]:
    """B independent runs of Algorithm 1 sharing data, T and z (vectorized over runs).

    Returns (average of theta_1..theta_T, last iterate), each of shape (B, k).
    Every run is one release priced by ``pda_event(z, T)``; both outputs of a run
    are post-processing of its noisy gradients.
    """
    X, y = _check_design(X, y)
    clips = np.atleast_1d(np.asarray(clips, dtype=float))
    rates = np.atleast_1d(np.asarray(learning_rates, dtype=float))
    clips, rates = np.broadcast_arrays(clips, rates)
    if np.any(~np.isfinite(clips)) or np.any(clips <= 0):
        raise ValueError("clip norms must be finite and > 0")
    if np.any(~np.isfinite(rates)) or np.any(rates <= 0):
        raise ValueError("learning rates must be finite and > 0")
    z = v.positive("noise_multiplier", noise_multiplier)
    steps = v.positive_int("steps", steps)
    n, k = X.shape
    theta0 = np.asarray(theta0, dtype=float)
    if theta0.shape != (k,) or not np.all(np.isfinite(theta0)):
        raise ValueError(f"theta0 must be a finite vector of length {k}")
    norms = row_norms(X)
    B = clips.size

    def noisy_step(theta, _, rng):
        sums = clipped_gradient_sums(X, y, loss, theta, clips, norms)
        noisy = (sums + z * clips[None, :] * rng.standard_normal((k, B))) / n
        return mirror.step(theta, noisy, rates[None, :])

    start = np.repeat(theta0[:, None], B, axis=1)
    run = noisy_gradient_run(start, full_batches(steps), noisy_step, None, rng, average=True)
    return run.mean.T, run.last.T


def pda_dpmd(
    X,
    y,
    loss: GLMLoss,
    mirror,
    *,
    clip: float,
    steps: int,
    learning_rate: float,
    epsilon: float | None = None,
    delta: float | None = None,
    noise_multiplier: float | None = None,
    neighbours: str = "add_remove",
    theta0: np.ndarray | None = None,
    average: bool = True,
    random_state=None,
) -> Release:
    """Algorithm 1 (PDA-DPMD) on private (X, y) with a public mirror map; release + event.

    Give either (``epsilon``, ``delta``) — z is then calibrated by
    :func:`pda_noise_multiplier` — or ``noise_multiplier`` z directly. ``mirror`` is
    one of :mod:`dpconvex.public.mirror_maps` (built from public data only);
    ``theta0`` defaults to its minimizer (line 2). ``clip`` is L; the gradient
    sum gets N(0, (z L)^2 I) before division by n. Returns the averaged iterate
    (line 6), or the last with ``average=False``.
    """
    if not isinstance(loss, GLMLoss):
        raise TypeError(f"loss must be a GLMLoss, got {type(loss).__name__}")
    clip = v.positive("clip", clip)
    steps = v.positive_int("steps", steps)
    learning_rate = v.positive("learning_rate", learning_rate)
    if noise_multiplier is None:
        if epsilon is None or delta is None:
            raise ValueError("give epsilon and delta, or noise_multiplier")
        z = pda_noise_multiplier(epsilon, delta, steps, neighbours)
    else:
        if epsilon is not None or delta is not None:
            raise ValueError("give either (epsilon, delta) or noise_multiplier, not both")
        z = v.positive("noise_multiplier", noise_multiplier)
    theta0 = mirror.minimizer() if theta0 is None else np.asarray(theta0, dtype=float)
    rng = make_rng(random_state)
    if not isinstance(mirror, GLMMirrorMap):  # linear steps: the vectorized loop
        avg, last = pda_dpmd_runs(
            X,
            y,
            loss,
            mirror,
            theta0=theta0,
            noise_multiplier=z,
            clips=clip,
            learning_rates=learning_rate,
            steps=steps,
            rng=rng,
        )
        avg, last = avg[0], last[0]
    else:  # general mirror maps step one run at a time
        avg, last = _single_run(X, y, loss, mirror, theta0, z, clip, learning_rate, steps, rng)
    event = pda_event(z, steps, neighbours)
    info = {"noise_multiplier": z, "steps": steps, "neighbours": neighbours, "n_iter": steps}
    return Release(avg if average else last, event, info)


def _single_run(X, y, loss, mirror, theta0, z, clip, rate, steps, rng):
    X, y = _check_design(X, y)
    n, k = X.shape
    norms = row_norms(X)
    clips = np.array([clip])

    def noisy_step(theta, _, rng):
        sums = clipped_gradient_sums(X, y, loss, theta[:, None], clips, norms)[:, 0]
        return mirror.step(theta, (sums + z * clip * rng.standard_normal(k)) / n, rate)

    start = theta0.copy()
    run = noisy_gradient_run(start, full_batches(steps), noisy_step, None, rng, average=True)
    return run.mean, run.last
