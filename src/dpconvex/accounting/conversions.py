"""Conversions from Renyi DP to (epsilon, delta)-DP.

Two conversions, both valid for every order alpha > 1 so that minimizing over
alpha (on a grid, or continuously for closed-form curves) is always safe:

* ``"improved"`` — Balle et al. 2020, Thm 21 == Canonne, Kamath & Steinke 2020,
  Prop. 12 (the conversion Redberg, Koskela & Wang, arXiv 2401.00583, use "whenever
  approximate DP is needed"):
  eps = rdp(alpha) + log((alpha - 1)/alpha) - (log delta + log alpha)/(alpha - 1),
  delta = exp((alpha - 1)(rdp(alpha) - eps + log(1 - 1/alpha))) / alpha.
* ``"standard"`` — Mironov 2017, Prop. 3: eps = rdp(alpha) + log(1/delta)/(alpha - 1).
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
from numpy.typing import ArrayLike
from scipy.optimize import minimize_scalar

from .. import _validation as v

CONVERSIONS = ("improved", "standard")

# Orders used to search a closed-form curve before the continuous refinement.
_CURVE_GRID = 1.0 + np.geomspace(1e-3, 1e5, 1500)


def _check_conversion(conversion: str) -> None:
    if conversion not in CONVERSIONS:
        raise ValueError(f"conversion must be one of {CONVERSIONS}, got {conversion!r}")


def _orders_rdp(orders: ArrayLike, rdp: ArrayLike) -> tuple[np.ndarray, np.ndarray]:
    a = np.asarray(orders, dtype=float).ravel()
    r = np.asarray(rdp, dtype=float).ravel()
    if a.shape != r.shape:
        raise ValueError(f"orders and rdp must have the same length ({a.size} != {r.size})")
    if np.isnan(a).any() or np.isnan(r).any():
        raise ValueError("orders and rdp must not contain NaN")
    return a, r


def _epsilons(a: np.ndarray, r: np.ndarray, delta: float, conversion: str) -> np.ndarray:
    """Per-order epsilon; +inf at orders <= 1 where the conversion does not apply."""
    out = np.full(a.shape, np.inf)
    ok = a > 1
    a1, r1 = a[ok], r[ok]
    if conversion == "improved":
        out[ok] = r1 + np.log1p(-1.0 / a1) - (math.log(delta) + np.log(a1)) / (a1 - 1.0)
    else:
        out[ok] = r1 + math.log(1.0 / delta) / (a1 - 1.0)
    return out


def _log_deltas(a: np.ndarray, r: np.ndarray, epsilon: float, conversion: str) -> np.ndarray:
    out = np.full(a.shape, np.inf)
    ok = a > 1
    a1, r1 = a[ok], r[ok]
    with np.errstate(invalid="ignore"):
        if conversion == "improved":
            out[ok] = (a1 - 1.0) * (r1 - epsilon + np.log1p(-1.0 / a1)) - np.log(a1)
        else:
            out[ok] = (a1 - 1.0) * (r1 - epsilon)
    return np.where(np.isnan(out), np.inf, out)


def epsilon_from_rdp(
    orders: ArrayLike, rdp: ArrayLike, delta: float, conversion: str = "improved"
) -> tuple[float, float]:
    """Smallest epsilon over the given orders, and the order attaining it.

    Returns ``(epsilon, alpha)``; epsilon is clipped at 0 and is +inf when no
    order above 1 is given. See the module docstring for the two conversions.
    """
    _check_conversion(conversion)
    delta = v.probability_open("delta", delta)
    a, r = _orders_rdp(orders, rdp)
    eps = _epsilons(a, r, delta, conversion)
    i = int(np.argmin(eps))
    return max(0.0, float(eps[i])), float(a[i])


def delta_from_rdp(
    orders: ArrayLike, rdp: ArrayLike, epsilon: float, conversion: str = "improved"
) -> tuple[float, float]:
    """Smallest delta at ``epsilon`` over the given orders, and the order attaining it."""
    _check_conversion(conversion)
    epsilon = v.nonnegative("epsilon", epsilon)
    a, r = _orders_rdp(orders, rdp)
    logd = _log_deltas(a, r, epsilon, conversion)
    i = int(np.argmin(logd))
    return float(min(1.0, math.exp(min(logd[i], 0.0)))), float(a[i])


def _refine(objective: Callable[[float], float], grid: np.ndarray, values: np.ndarray) -> float:
    """Minimize a 1-D objective of alpha around the best grid point (Brent, on log(alpha-1))."""
    i = int(np.argmin(values))
    best = float(values[i])
    if not math.isfinite(best):
        return best
    lo = grid[max(i - 1, 0)]
    hi = grid[min(i + 1, grid.size - 1)]
    if hi <= lo:
        return best
    res = minimize_scalar(
        lambda u: objective(1.0 + math.exp(u)),
        bounds=(math.log(lo - 1.0), math.log(hi - 1.0)),
        method="bounded",
        options={"xatol": 1e-10},
    )
    # Every alpha gives a valid bound, so the minimum of the two is valid too.
    return min(best, float(res.fun)) if math.isfinite(res.fun) else best


def epsilon_from_rdp_curve(
    curve: Callable[[np.ndarray], np.ndarray], delta: float, conversion: str = "improved"
) -> float:
    """Epsilon at ``delta`` from an RDP curve given as a function, minimized over continuous alpha.

    ``curve`` maps an array of orders (> 1) to RDP values. A log-spaced grid on
    (1.001, 1e5] locates the minimum, Brent's method refines it; any order gives
    a valid bound, so the result is safe whatever the refinement finds.
    """
    _check_conversion(conversion)
    delta = v.probability_open("delta", delta)
    grid = _CURVE_GRID
    values = _epsilons(grid, np.asarray(curve(grid), dtype=float), delta, conversion)

    def objective(alpha: float) -> float:
        r = np.asarray(curve(np.array([alpha])), dtype=float)
        return float(_epsilons(np.array([alpha]), r, delta, conversion)[0])

    return max(0.0, _refine(objective, grid, values))


def delta_from_rdp_curve(
    curve: Callable[[np.ndarray], np.ndarray],
    epsilon: ArrayLike,
    conversion: str = "improved",
) -> np.ndarray | float:
    """delta(epsilon) from an RDP curve given as a function, minimized over continuous alpha.

    Vectorized over ``epsilon`` (grid minimum for each epsilon, then a Brent
    refinement of the log-delta around it).
    """
    _check_conversion(conversion)
    eps = np.asarray(epsilon, dtype=float)
    if np.isnan(eps).any() or (eps < 0).any():
        raise ValueError("epsilon must be >= 0")
    grid = _CURVE_GRID
    rdp = np.asarray(curve(grid), dtype=float)
    out = np.empty(eps.shape)
    for idx, e in np.ndenumerate(eps):
        logd = _log_deltas(grid, rdp, float(e), conversion)

        def objective(alpha: float, e: float = float(e)) -> float:
            r = np.asarray(curve(np.array([alpha])), dtype=float)
            return float(_log_deltas(np.array([alpha]), r, e, conversion)[0])

        out[idx] = min(1.0, math.exp(min(_refine(objective, grid, logd), 0.0)))
    return out if out.ndim else float(out)
