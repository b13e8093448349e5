"""l_p geometry of Su, Zhao & Wang: dual exponents, kappa-regularity, the p-norm mirror map.

Sources: Su, Zhao & Wang (arXiv 2303.18047), Def. 3 (kappa-regular spaces) and
Algorithms 3, 4, 7 (the mirror map Phi). The smooth norm used for the noise and the
closed-form mirror steps are derived here from those definitions; where the paper's
constants disagree with each other (kappa, the index of Phi), the choice made is
stated in :func:`lp_regularity` and :func:`mirror_map`.

Everything here is deterministic and data-free.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .. import _validation as v
from ..noise import lr_norm


def dual_exponent(p: float) -> float:
    """q with 1/p + 1/q = 1 (p = 1 gives inf, p = inf gives 1)."""
    p = float(p)
    if math.isnan(p) or p < 1:
        raise ValueError(f"p must be >= 1, got {p}")
    if p == 1:
        return math.inf
    if math.isinf(p):
        return 1.0
    return p / (p - 1.0)


def lp_norm(x: np.ndarray, p: float, axis: int = -1) -> np.ndarray:
    """The l_p norm along ``axis`` (p >= 1, inf allowed)."""
    return lr_norm(np.asarray(x, dtype=float), p, axis=axis)


@dataclass(frozen=True)
class Regularity:
    """Regularity constants of the dual space l_q^d of l_p^d, 1 < p <= 2 (Su et al., Def. 3).

    Attributes:
        p, d: the primal norm index and the dimension.
        q: the dual index p / (p - 1) >= 2 (the gradients' norm).
        r: index of the smooth norm ||.||_+ = ||.||_r, r = min(q, 2 ln d + 1)
            (Def. 3; r >= 2 always, r = 2 when p = 2 or d = 1).
        kappa_plus: r - 1, the smoothness constant of ||.||_r^2.
        c_eq: d^(2 (1/r - 1/q)) in [1, e], the constant of ||x||_q^2 <= ||x||_r^2
            <= c_eq ||x||_q^2.
        kappa: kappa_plus * c_eq, the smallest kappa that makes Def. 3's norm
            equivalence hold for this ||.||_+ (derived from Def. 3); used for
            all noise calibrations.
        kappa_paper: min(1/(p-1), 2 ln d), the value printed in Algorithms 3 and 4
            (it drops Def. 3's factor e). Kept for reference only: it
            is smaller than ``kappa`` when r < q, and noise calibrated with it would
            not be covered by Lemma 3.
        mirror_index: s = r / (r - 1) = 1 + 1/kappa_plus, the index of the mirror map
            Phi(x) = (kappa / 2) ||x||_s^2 (see :func:`mirror_map`); s = p when
            p >= 1 + 1/(2 ln d).
    """

    p: float
    d: int
    q: float
    r: float
    kappa_plus: float
    c_eq: float
    kappa: float
    kappa_paper: float
    mirror_index: float


def lp_regularity(p: float, d: int) -> Regularity:
    """Constants of Su, Zhao & Wang, Def. 3, for the dual of l_p^d, 1 < p <= 2.

    The paper states kappa three ways (min(1/(p-1), 2 ln d) in Algorithms 3-4,
    min(1/(p-1), log d) in Algorithm 7, 2e log d in Def. 3); the noise here uses
    kappa = (r - 1) d^(2(1/r - 1/q)), the smallest value for which the norm
    equivalence of Def. 3 holds with ||.||_+ = ||.||_r; it equals the paper's
    min(1/(p-1), 2 ln d) whenever p >= 1 + 1/(2 ln d) and is at most e times it
    otherwise.
    """
    p = float(p)
    if math.isnan(p) or not 1 < p <= 2:
        raise ValueError(f"p must be in (1, 2], got {p}")
    d = v.positive_int("d", d)
    q = dual_exponent(p)
    log_d = math.log(d)
    r = max(2.0, min(q, 2.0 * log_d + 1.0))
    kappa_plus = r - 1.0
    c_eq = math.exp(2.0 * (1.0 / r - 1.0 / q) * log_d)
    kappa_paper = min(1.0 / (p - 1.0), 2.0 * log_d) if d > 1 else 1.0
    return Regularity(
        p=p,
        d=d,
        q=q,
        r=r,
        kappa_plus=kappa_plus,
        c_eq=c_eq,
        kappa=kappa_plus * c_eq,
        kappa_paper=max(kappa_paper, 1.0),
        mirror_index=r / (r - 1.0),
    )


def half_sq_norm_grad(x: np.ndarray, s: float) -> np.ndarray:
    """h_s(x) = grad of (1/2)||x||_s^2: sign(x_i) |x_i|^(s-1) ||x||_s^(2-s), h_s(0) = 0.

    Evaluated after dividing by ||x||_inf (h_s is homogeneous of degree 1), so large
    or small indices s neither overflow nor underflow.
    """
    x = np.asarray(x, dtype=float)
    s = float(s)
    if s == 2.0:
        return x.copy()
    scale = np.max(np.abs(x), axis=-1, keepdims=True)
    safe = np.where(scale > 0, scale, 1.0)
    u = x / safe
    norm = lr_norm(u, s)[..., None]
    with np.errstate(invalid="ignore", divide="ignore"):
        out = np.sign(u) * np.abs(u) ** (s - 1.0) * norm ** (2.0 - s)
    return np.where(scale > 0, safe * out, 0.0)


@dataclass(frozen=True)
class PNormMirrorMap:
    """Phi(x) = (k / 2) ||x||_s^2 with 1 < s <= 2, and its convex conjugate.

    (1/2)||.||_s^2 is (s - 1)-strongly convex w.r.t. ||.||_s, so Phi is
    k (s - 1)-strongly convex w.r.t. ||.||_s. Phi* (y) = ||y||_{s*}^2 / (2k) with
    s* = s / (s - 1), and grad Phi* inverts grad Phi exactly.
    """

    s: float
    k: float = 1.0

    def __post_init__(self):
        if math.isnan(self.s) or not 1 < self.s <= 2:
            raise ValueError(f"mirror-map index s must be in (1, 2], got {self.s}")
        v.positive("k", self.k)

    @property
    def conjugate_index(self) -> float:
        return dual_exponent(self.s)

    def value(self, x: np.ndarray) -> np.ndarray:
        return 0.5 * self.k * lr_norm(np.asarray(x, dtype=float), self.s) ** 2

    def grad(self, x: np.ndarray) -> np.ndarray:
        return self.k * half_sq_norm_grad(x, self.s)

    def conjugate(self, y: np.ndarray) -> np.ndarray:
        return lr_norm(np.asarray(y, dtype=float), self.conjugate_index) ** 2 / (2.0 * self.k)

    def grad_conjugate(self, y: np.ndarray) -> np.ndarray:
        return half_sq_norm_grad(y, self.conjugate_index) / self.k

    def bregman(self, y: np.ndarray, x: np.ndarray) -> np.ndarray:
        """D_Phi(y, x) = Phi(y) - Phi(x) - <grad Phi(x), y - x>."""
        y = np.asarray(y, dtype=float)
        x = np.asarray(x, dtype=float)
        return self.value(y) - self.value(x) - np.sum(self.grad(x) * (y - x), axis=-1)


def mirror_map(regularity: Regularity) -> PNormMirrorMap:
    """Phi(x) = (kappa / 2) ||x||_s^2 with s = 1 + 1/kappa_plus: 1-strongly convex in ||.||_p.

    Su, Zhao & Wang write the index of Phi as kappa/(kappa - 1) in Algorithms 3, 4 and 7;
    that map is not strongly convex w.r.t. ||.||_p (ratio 0.029 at p = 1.8, d = 200),
    a correction of the paper's printed index. We use s = r/(r-1) = 1 + 1/kappa_plus (= p when
    p >= 1 + 1/(2 ln d)) and scale kappa = kappa_plus * c_eq: then Phi is
    kappa (s-1) = c_eq-strongly convex in ||.||_s, and since
    ||x||_p <= d^(1/r - 1/q) ||x||_s, exactly 1-strongly convex in ||.||_p.
    """
    return PNormMirrorMap(regularity.mirror_index, regularity.kappa)


def regularized_mirror_step(
    phi: PNormMirrorMap, w: np.ndarray, c: np.ndarray, beta: float, alpha: float
) -> np.ndarray:
    """argmin_w' <c, w' - w> + beta D_Phi(w', w) + alpha Phi(w')  (Su et al., Alg. 3, eq. (1)).

    Closed form: grad Phi*((beta grad Phi(w) - c) / (alpha + beta)).
    """
    return phi.grad_conjugate((beta * phi.grad(w) - c) / (alpha + beta))


def ball_mirror_step(
    phi: PNormMirrorMap, w: np.ndarray, y: np.ndarray, gamma: float, radius: float
) -> np.ndarray:
    """argmin_{||w'||_s <= radius} <y, w'> + gamma D_Phi(w', w)  (Algorithms 4 and 7).

    The ball uses the mirror map's own index s. With u = y - gamma grad Phi(w),
    the problem is min <u, w'> + gamma Phi(w'), which depends on w' only through
    its direction and rho = ||w'||_s: the unconstrained minimizer
    grad Phi*(-u / gamma), rescaled to the sphere if it lies outside.
    """
    u = np.asarray(y, dtype=float) - gamma * phi.grad(w)
    free = phi.grad_conjugate(-u / gamma)
    norm = float(lr_norm(free, phi.s))
    if norm <= radius:
        return free
    return free * (radius / norm)
