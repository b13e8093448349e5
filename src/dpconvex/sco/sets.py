"""Constraint sets of the Euclidean setting with their projections and Gaussian widths.

Su, Zhao & Wang (arXiv 2303.18047), §4, measure Algorithms 1-2 by the Gaussian
width G_C = E sup_{w in C} <xi, w>, xi ~ N(0, I_d), and the diameter ||C||_2
(a diameter, not a radius: ||C||_2 = 2 for the unit balls). Projections are
Euclidean (l1 ball and simplex by sort-and-threshold, Duchi et al. 2008). Widths
are exact: closed forms, or one-dimensional quadrature of the law of a maximum of
d Gaussians.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod

import numpy as np
from scipy import integrate, special
from scipy.special import log_ndtr

from .. import _validation as v


def _as_point(x, d: int) -> np.ndarray:
    x = np.asarray(x, dtype=float)
    if x.shape[-1:] != (d,):
        raise ValueError(f"expected points of dimension {d}, got shape {x.shape}")
    if not np.all(np.isfinite(x)):
        raise ValueError("point contains NaN or infinity")
    return x


def _expected_max_abs_gaussian(d: int) -> float:
    """E max_i |xi_i| = int_0^inf 1 - (2 Phi(t) - 1)^d dt, by quadrature."""

    def tail(t):
        # 1 - (1 - 2 Phi(-t))^d, computed as -expm1(d log1p(-2 Phi(-t)))
        return -math.expm1(d * math.log1p(-2.0 * special.ndtr(-t)))

    value, _ = integrate.quad(tail, 0.0, math.inf, limit=200, epsabs=1e-11, epsrel=1e-11)
    return value


def _expected_max_gaussian(d: int) -> float:
    """E max_i xi_i = int_0^inf (1 - Phi(t)^d) dt - int_{-inf}^0 Phi(t)^d dt, by quadrature."""

    def upper(t):
        return -math.expm1(d * log_ndtr(t))

    def lower(t):
        return math.exp(d * log_ndtr(t))

    a, _ = integrate.quad(upper, 0.0, math.inf, limit=200, epsabs=1e-11, epsrel=1e-11)
    b, _ = integrate.quad(lower, -math.inf, 0.0, limit=200, epsabs=1e-11, epsrel=1e-11)
    return a - b


class ConstraintSet(ABC):
    """A closed convex bounded set C in R^d with its Euclidean projection."""

    d: int
    #: C = -C (the Minkowski norm, C_min and the support-function identities need it)
    symmetric: bool = True

    @abstractmethod
    def project(self, x: np.ndarray) -> np.ndarray:
        """Euclidean projection onto C (rows of a 2-D array are projected separately)."""

    @abstractmethod
    def support(self, v: np.ndarray) -> np.ndarray:
        """sup_{w in C} <v, w>."""

    @property
    @abstractmethod
    def diameter(self) -> float:
        """||C||_2 = max_{w, w' in C} ||w - w'||_2 (Su et al., §2)."""

    @property
    @abstractmethod
    def l2_radius(self) -> float:
        """max_{w in C} ||w||_2 (bounds the gradient of a GLM loss on C)."""

    @abstractmethod
    def gaussian_width(self) -> float:
        """G_C = E sup_{w in C} <xi, w>, xi ~ N(0, I_d) (Su et al., §4, exact)."""

    def inner_radius(self) -> float:
        """C_min = min{||v||_2 : v on the boundary of C} (Su et al., Lemma 10; symmetric)."""
        raise NotImplementedError

    def contains(self, x: np.ndarray, tol: float = 1e-9) -> bool:
        x = np.asarray(x, dtype=float)
        return bool(np.linalg.norm(self.project(x) - x) <= tol * max(1.0, self.l2_radius))


class L2Ball(ConstraintSet):
    """{w : ||w||_2 <= radius}."""

    def __init__(self, d: int, radius: float = 1.0):
        self.d = v.positive_int("d", d)
        self.radius = v.positive("radius", radius)

    def project(self, x):
        x = _as_point(x, self.d)
        norm = np.linalg.norm(x, axis=-1, keepdims=True)
        return x * np.minimum(1.0, self.radius / np.maximum(norm, 1e-300))

    def support(self, v_):
        return self.radius * np.linalg.norm(_as_point(v_, self.d), axis=-1)

    @property
    def diameter(self):
        return 2.0 * self.radius

    @property
    def l2_radius(self):
        return self.radius

    def gaussian_width(self):
        """radius * E||xi||_2 = radius * sqrt(2) Gamma((d+1)/2) / Gamma(d/2)."""
        log_ratio = special.gammaln((self.d + 1) / 2) - special.gammaln(self.d / 2)
        return self.radius * math.sqrt(2.0) * math.exp(log_ratio)

    def inner_radius(self):
        return self.radius

    def __repr__(self):
        return f"L2Ball(d={self.d}, radius={self.radius})"


def _project_simplex_rows(x: np.ndarray, z: float) -> np.ndarray:
    """Projection of each row onto {w >= 0, sum w = z} (Duchi et al. 2008, Fig. 1)."""
    u = -np.sort(-x, axis=-1)
    css = np.cumsum(u, axis=-1) - z
    k = np.arange(1, x.shape[-1] + 1)
    cond = u - css / k > 0
    rho = x.shape[-1] - 1 - np.argmax(cond[..., ::-1], axis=-1)
    theta = np.take_along_axis(css, rho[..., None], axis=-1) / (rho[..., None] + 1.0)
    return np.maximum(x - theta, 0.0)


class L1Ball(ConstraintSet):
    """{w : ||w||_1 <= radius}."""

    def __init__(self, d: int, radius: float = 1.0):
        self.d = v.positive_int("d", d)
        self.radius = v.positive("radius", radius)

    def project(self, x):
        x = _as_point(x, self.d)
        x2 = np.atleast_2d(x)
        inside = np.sum(np.abs(x2), axis=-1) <= self.radius
        out = np.sign(x2) * _project_simplex_rows(np.abs(x2), self.radius)
        out = np.where(inside[:, None], x2, out)
        return out.reshape(x.shape)

    def support(self, v_):
        return self.radius * np.max(np.abs(_as_point(v_, self.d)), axis=-1)

    @property
    def diameter(self):
        return 2.0 * self.radius

    @property
    def l2_radius(self):
        return self.radius

    def gaussian_width(self):
        """radius * E||xi||_inf, by quadrature (<= radius * sqrt(2 ln 2d))."""
        return self.radius * _expected_max_abs_gaussian(self.d)

    def inner_radius(self):
        return self.radius / math.sqrt(self.d)

    def __repr__(self):
        return f"L1Ball(d={self.d}, radius={self.radius})"


class Simplex(ConstraintSet):
    """{w >= 0 : sum w = scale} (not symmetric)."""

    symmetric = False

    def __init__(self, d: int, scale: float = 1.0):
        self.d = v.positive_int("d", d)
        self.scale = v.positive("scale", scale)

    def project(self, x):
        x = _as_point(x, self.d)
        return _project_simplex_rows(np.atleast_2d(x), self.scale).reshape(x.shape)

    def support(self, v_):
        return self.scale * np.max(_as_point(v_, self.d), axis=-1)

    @property
    def diameter(self):
        return math.sqrt(2.0) * self.scale if self.d > 1 else 0.0

    @property
    def l2_radius(self):
        return self.scale

    def gaussian_width(self):
        """scale * E max_i xi_i, by quadrature (<= scale * sqrt(2 ln d))."""
        return self.scale * _expected_max_gaussian(self.d)

    def __repr__(self):
        return f"Simplex(d={self.d}, scale={self.scale})"


class Box(ConstraintSet):
    """{w : lower <= w <= upper} coordinatewise."""

    def __init__(self, d: int, lower=-1.0, upper=1.0):
        self.d = v.positive_int("d", d)
        lo = np.broadcast_to(np.asarray(lower, dtype=float), (self.d,)).copy()
        hi = np.broadcast_to(np.asarray(upper, dtype=float), (self.d,)).copy()
        if not (np.all(np.isfinite(lo)) and np.all(np.isfinite(hi)) and np.all(lo < hi)):
            raise ValueError("box bounds must be finite with lower < upper")
        self.lower, self.upper = lo, hi
        self.symmetric = bool(np.array_equal(lo, -hi))

    def project(self, x):
        return np.clip(_as_point(x, self.d), self.lower, self.upper)

    def support(self, v_):
        v_ = _as_point(v_, self.d)
        return np.sum(np.maximum(v_ * self.upper, v_ * self.lower), axis=-1)

    @property
    def diameter(self):
        return float(np.linalg.norm(self.upper - self.lower))

    @property
    def l2_radius(self):
        return float(np.linalg.norm(np.maximum(np.abs(self.lower), np.abs(self.upper))))

    def gaussian_width(self):
        """sum_i (upper_i - lower_i) E[xi^+] = sum_i (upper_i - lower_i) / sqrt(2 pi)."""
        return float(np.sum(self.upper - self.lower) / math.sqrt(2.0 * math.pi))

    def inner_radius(self):
        if not self.symmetric:
            raise NotImplementedError("C_min is defined here for symmetric boxes only")
        return float(np.min(self.upper))

    def __repr__(self):
        return f"Box(d={self.d})"


SETS = {"l2": L2Ball, "l1": L1Ball, "simplex": Simplex, "box": Box}


def make_set(name: str, d: int, size: float = 1.0) -> ConstraintSet:
    """``"l2"`` / ``"l1"`` ball of radius ``size``, ``"simplex"`` of total ``size``, or
    ``"box"`` [-size, size]^d."""
    if name not in SETS:
        raise ValueError(f"unknown constraint set {name!r}; choose one of {sorted(SETS)}")
    if name == "box":
        return Box(d, -size, size)
    return SETS[name](d, size)
