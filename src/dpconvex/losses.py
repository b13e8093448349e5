"""GLM losses f(u; y) with u = x^T theta, and their gradient-clipped versions.

Objective perturbation and AMP are private only for losses of this form
(Redberg, Koskela & Wang, arXiv 2401.00583, App. E, "the GLM bug"): the gradient of
one example is f'(x^T theta; y) x, a fixed direction times a bounded scalar. Every loss here
exposes f, f' and f'' (vectorized over examples), its curvature bound
``curvature`` = sup f'' and its derivative bound ``derivative_bound`` = sup |f'|.
For rows of norm <= R the smoothness of l(theta; z) is beta = curvature * R^2 and
its gradient norm is <= derivative_bound * R.

:class:`ClippedLoss` is the clipped-gradient loss of Song et al. 2020 (Redberg et al.,
Thm F.2/F.3): the derivative of f is clipped at +-kappa with
kappa = C / ||x|| per example, and f continues linearly beyond the breakpoints
with the continuity offsets f(u_L), f(u_H) that the paper omits, so objective
values stay consistent for line searches. It is convex, has the same curvature
bound, and per-example gradient norm <= C.
"""

from __future__ import annotations

import math

import numpy as np
from scipy.special import expit, log_expit, logit


class GLMLoss:
    """A convex scalar loss f(u; y) of the margin/prediction u = x^T theta."""

    name: str = "glm"
    #: sup over u, y of f''(u; y)
    curvature: float = math.inf
    #: sup over u, y of |f'(u; y)|
    derivative_bound: float = math.inf
    #: whether labels are classes in {-1, +1}
    binary: bool = False

    def value(self, u: np.ndarray, y: np.ndarray) -> np.ndarray:
        raise NotImplementedError

    def derivative(self, u: np.ndarray, y: np.ndarray) -> np.ndarray:
        raise NotImplementedError

    def second_derivative(self, u: np.ndarray, y: np.ndarray) -> np.ndarray:
        raise NotImplementedError

    def breakpoints(self, kappa: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(u_L, u_H): where f'(u; y) crosses -kappa and +kappa (-inf/+inf if never).

        f' is non-decreasing (f is convex), so f'(u) < -kappa exactly for u < u_L
        and f'(u) > kappa exactly for u > u_H.
        """
        raise NotImplementedError

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"


class LogisticLoss(GLMLoss):
    """f(u; y) = log(1 + exp(-y u)) with y in {-1, +1}; f'' <= 1/4, |f'| < 1."""

    name = "logistic"
    curvature = 0.25
    derivative_bound = 1.0
    binary = True

    def value(self, u, y):
        return -log_expit(y * u)

    def derivative(self, u, y):
        return -y * expit(-y * u)

    def second_derivative(self, u, y):
        p = expit(u)
        return p * (1.0 - p)

    def breakpoints(self, kappa, y):
        # margin m = y u; |f'| = sigmoid(-m) > kappa  <=>  m < logit(1 - kappa)
        kappa = np.asarray(kappa, dtype=float)
        with np.errstate(divide="ignore"):
            m0 = np.where(kappa < 1.0, logit(1.0 - np.minimum(kappa, 1.0)), -np.inf)
        # y = +1: f' < 0, clipped below u_L = m0; y = -1: f' > 0, clipped above u_H = -m0
        u_low = np.where(y > 0, m0, -np.inf)
        u_high = np.where(y > 0, np.inf, -m0)
        return u_low, u_high


class SquaredLoss(GLMLoss):
    """f(u; y) = (u - y)^2 / 2; f'' = 1, f' unbounded (clip it: clipped squared loss = Huber)."""

    name = "squared"
    curvature = 1.0
    derivative_bound = math.inf

    def value(self, u, y):
        return 0.5 * (u - y) ** 2

    def derivative(self, u, y):
        return u - y

    def second_derivative(self, u, y):
        return np.ones_like(u, dtype=float)

    def breakpoints(self, kappa, y):
        return y - kappa, y + kappa


class HuberLoss(GLMLoss):
    """Huber loss of the residual r = u - y, threshold h: r^2/2 if |r| <= h, else h|r| - h^2/2."""

    name = "huber"
    curvature = 1.0

    def __init__(self, threshold: float = 1.0):
        if not (isinstance(threshold, int | float) and math.isfinite(threshold) and threshold > 0):
            raise ValueError(f"huber threshold must be a finite number > 0, got {threshold!r}")
        self.threshold = float(threshold)
        self.derivative_bound = self.threshold

    def value(self, u, y):
        r = np.abs(u - y)
        h = self.threshold
        return np.where(r <= h, 0.5 * r**2, h * r - 0.5 * h**2)

    def derivative(self, u, y):
        return np.clip(u - y, -self.threshold, self.threshold)

    def second_derivative(self, u, y):
        return (np.abs(u - y) <= self.threshold).astype(float)

    def breakpoints(self, kappa, y):
        k = np.minimum(kappa, self.threshold)
        low = np.where(kappa < self.threshold, y - k, -np.inf)
        high = np.where(kappa < self.threshold, y + k, np.inf)
        return low, high

    def __repr__(self) -> str:
        return f"HuberLoss(threshold={self.threshold})"


class SmoothedHingeLoss(GLMLoss):
    """Smoothed hinge of the margin m = y u (Rennie & Srebro 2005), y in {-1, +1}.

    f = 0 for m >= 1, (1 - m)^2 / 2 for 0 < m < 1, 1/2 - m for m <= 0; f'' <= 1, |f'| <= 1.
    """

    name = "smoothed_hinge"
    curvature = 1.0
    derivative_bound = 1.0
    binary = True

    def value(self, u, y):
        m = y * u
        return np.where(m >= 1, 0.0, np.where(m > 0, 0.5 * (1 - m) ** 2, 0.5 - m))

    def derivative(self, u, y):
        m = y * u
        return -y * np.clip(1.0 - m, 0.0, 1.0)

    def second_derivative(self, u, y):
        m = y * u
        return ((m > 0) & (m < 1)).astype(float)

    def breakpoints(self, kappa, y):
        # |f'| = clip(1 - m, 0, 1) > kappa  <=>  m < 1 - kappa (for kappa < 1)
        kappa = np.asarray(kappa, dtype=float)
        m0 = np.where(kappa < 1.0, 1.0 - kappa, -np.inf)
        return np.where(y > 0, m0, -np.inf), np.where(y > 0, np.inf, -m0)


class ClippedLoss(GLMLoss):
    """Gradient-clipped GLM loss at threshold C (Song et al. 2020; Redberg et al. Thm F.2, F.3).

    Per example, kappa = C / ||x||; f_C = f between the breakpoints (u_L, u_H) of
    ``base.breakpoints(kappa)`` and continues linearly with slope -kappa / +kappa
    outside, with offsets f(u_L), f(u_H) (which the printed Thm F.2 omits). The methods
    take the per-example ``kappa`` as an extra argument.
    """

    def __init__(self, base: GLMLoss, clip: float):
        if not isinstance(base, GLMLoss):
            raise TypeError(f"base must be a GLMLoss, got {type(base).__name__}")
        if not (math.isfinite(clip) and clip > 0):
            raise ValueError(f"clip must be a finite number > 0, got {clip!r}")
        self.base = base
        self.clip = float(clip)
        self.name = f"clipped_{base.name}"
        self.curvature = base.curvature
        self.binary = base.binary

    def kappa(self, row_norms: np.ndarray) -> np.ndarray:
        with np.errstate(divide="ignore"):
            return np.where(row_norms > 0, self.clip / row_norms, np.inf)

    def value(self, u, y, kappa):
        low, high = self.base.breakpoints(kappa, y)
        lo_ok, hi_ok = np.isfinite(low), np.isfinite(high)
        f_low = np.where(lo_ok, self.base.value(np.where(lo_ok, low, 0.0), y), 0.0)
        f_high = np.where(hi_ok, self.base.value(np.where(hi_ok, high, 0.0), y), 0.0)
        inside = self.base.value(np.clip(u, low, high), y)
        with np.errstate(invalid="ignore"):
            below = f_low - kappa * (u - low)
            above = f_high + kappa * (u - high)
        return np.where(u < low, below, np.where(u > high, above, inside))

    def derivative(self, u, y, kappa):
        return np.clip(self.base.derivative(u, y), -kappa, kappa)

    def second_derivative(self, u, y, kappa):
        low, high = self.base.breakpoints(kappa, y)
        inside = (u >= low) & (u <= high)
        return np.where(inside, self.base.second_derivative(u, y), 0.0)

    def __repr__(self) -> str:
        return f"ClippedLoss({self.base!r}, clip={self.clip})"


LOSSES = {
    "logistic": LogisticLoss,
    "squared": SquaredLoss,
    "huber": HuberLoss,
    "smoothed_hinge": SmoothedHingeLoss,
}


def require_glm(loss: object) -> GLMLoss:
    """Return ``loss`` if it is a GLM loss; raise otherwise (Redberg et al., App. E).

    Objective perturbation and AMP are analysed only for losses of the form
    f(x^T theta; y) with scalar f; for any other loss the known bounds grow
    with the dimension (Thm E.1) and earlier proofs were wrong, so we refuse.
    """
    if isinstance(loss, str):
        if loss not in LOSSES:
            raise ValueError(f"unknown loss {loss!r}; choose one of {sorted(LOSSES)}")
        return LOSSES[loss]()
    if not isinstance(loss, GLMLoss):
        raise TypeError(
            "objective perturbation needs a GLM loss f(x^T theta; y), e.g. 'logistic'; "
            f"got {type(loss).__name__}"
        )
    return loss
