"""One generic calibrator: bracket, then Brent/bisection, return the side that meets the budget.

Every noise calibration and every profile inversion in dpconvex goes through
:func:`calibrate`. It never returns a parameter it has not evaluated, and the
value it returns satisfies ``func(x) <= target`` whether or not ``func`` is
exactly monotone (a discretized PLD, for instance, is only monotone up to
rounding). Monotonicity only decides how close to the true boundary we land.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
from scipy import optimize

from .. import _validation as v


class CalibrationError(ValueError):
    """No parameter in the searchable range meets the privacy target."""


def calibrate(
    func: Callable[[float], float],
    target: float,
    lo: float,
    hi: float,
    *,
    decreasing: bool,
    floor: float | None = None,
    ceiling: float | None = None,
    scale: str = "log",
    rtol: float = 1e-9,
    atol: float = 0.0,
    max_evaluations: int = 400,
) -> float:
    """Return the parameter at the boundary of ``{x : func(x) <= target}``, on the safe side.

    Args:
        func: privacy cost of a parameter (an epsilon, or a delta), monotone in x.
        target: the budget; the returned ``x`` satisfies ``func(x) <= target``.
        lo, hi: initial bracket guess (``lo < hi``); it is expanded as needed.
        decreasing: ``True`` when ``func`` falls as ``x`` grows (epsilon as a
            function of the noise): the smallest admissible ``x`` is returned.
            ``False`` when it grows with ``x`` (epsilon as a function of the
            number of steps): the largest admissible ``x`` is returned.
        floor, ceiling: hard limits of the parameter domain.
        scale: ``"log"`` (positive parameters; geometric expansion and
            midpoints) or ``"linear"``.
        rtol, atol: stop when the bracket is narrower than ``atol + rtol*|x|``
            (relative width in log scale).
        max_evaluations: give up (raise) after this many calls to ``func``.

    Raises:
        CalibrationError: if no parameter within the limits meets the target.
    """
    target = v.finite("target", target)
    if not lo < hi:
        raise ValueError(f"calibration bracket needs lo < hi, got lo={lo}, hi={hi}")
    if scale not in ("log", "linear"):
        raise ValueError(f"scale must be 'log' or 'linear', got {scale!r}")
    if scale == "log" and lo <= 0:
        raise ValueError("a log-scale calibration needs a positive bracket")
    floor = -math.inf if floor is None else floor
    ceiling = math.inf if ceiling is None else ceiling
    if not floor <= ceiling:
        raise ValueError(f"calibration limits need floor <= ceiling, got {floor} > {ceiling}")
    evaluated: dict[float, float] = {}

    def cost(x: float) -> float:
        if x not in evaluated:
            if len(evaluated) >= max_evaluations:
                raise CalibrationError(
                    f"calibration did not converge within {max_evaluations} evaluations"
                )
            value = func(x)
            if value is None or math.isnan(value):
                raise CalibrationError(f"privacy function returned {value} at {x}")
            evaluated[x] = float(value)
        return evaluated[x]

    def ok(x: float) -> bool:
        return cost(x) <= target

    width = hi - lo

    def outward(x: float, up: bool) -> float:
        nonlocal width
        width *= 2
        if scale == "log":
            x = x * 2 if up else x / 2
        else:
            x = x + width if up else x - width
        return min(max(x, floor), ceiling)

    # good: a point known to meet the target; bad: a point known to miss it.
    good_is_high = decreasing
    good, bad = (hi, lo) if good_is_high else (lo, hi)
    good, bad = min(max(good, floor), ceiling), min(max(bad, floor), ceiling)
    while not ok(good):
        limit = ceiling if good_is_high else floor
        if good == limit:
            raise CalibrationError(
                f"no parameter up to the limit {limit} meets the target {target}"
            )
        bad, good = good, outward(good, up=good_is_high)
    while ok(bad):
        good = bad
        limit = floor if good_is_high else ceiling
        if bad == limit or not math.isfinite(bad):
            return good
        bad = outward(bad, up=not good_is_high)
        if bad == good:  # the expansion cannot move (a limit reached): good is the boundary
            return good
        if scale == "log" and (bad == 0 or bad > 1e300):
            return good
    # Brent's method on the sign change (superlinear for smooth privacy
    # functions, bisection-safe otherwise). It only proposes points; the answer
    # is the recorded point that met the target and lies nearest the boundary.
    use_log = scale == "log" and good > 0 and bad > 0
    to_x = math.exp if use_log else (lambda u: u)
    to_u = math.log if use_log else (lambda x: x)
    u_good, u_bad = to_u(good), to_u(bad)
    xtol = rtol if use_log else atol + rtol * max(abs(good), abs(bad))
    # Privacy costs (deltas above all) vary over orders of magnitude: Brent's method on
    # log(cost) - log(target), which has the same sign, is nearly linear near the root
    # and needs fewer evaluations than on cost - target.
    if target > 0:

        def gap(u: float) -> float:
            return math.log(max(cost(to_x(u)), 1e-300)) - math.log(target)
    else:

        def gap(u: float) -> float:
            return cost(to_x(u)) - target

    try:
        optimize.brentq(
            gap,
            min(u_good, u_bad),
            max(u_good, u_bad),
            xtol=max(xtol, 1e-300),
            rtol=max(rtol, 4 * np.finfo(float).eps),
            maxiter=max_evaluations,
        )
    except (RuntimeError, ValueError):
        pass  # keep whatever the evaluations established
    # Brent may stop on a point just past the boundary: first step from the nearest
    # point that misses toward the safe side by half the tolerance, then bisect, until an
    # admissible point lies within the tolerance of a point that misses.
    nudge = True
    for _ in range(64):
        admissible = [x for x, value in evaluated.items() if value <= target]
        good = min(admissible) if good_is_high else max(admissible)
        beyond = [x for x, value in evaluated.items() if value > target]
        beyond = [x for x in beyond if (x < good if good_is_high else x > good)]
        if not beyond:
            break
        bad = max(beyond) if good_is_high else min(beyond)
        u_good, u_bad = to_u(good), to_u(bad)
        width = abs(u_good - u_bad)
        if width <= xtol * 1.01:
            break
        u_next = u_bad + math.copysign(xtol / 2, u_good - u_bad) if nudge else u_bad
        if not nudge or width <= xtol:
            u_next = (u_good + u_bad) / 2
        nudge = False
        x_next = to_x(u_next)
        if x_next in evaluated or not min(good, bad) < x_next < max(good, bad):
            break
        cost(x_next)
    admissible = [x for x, value in evaluated.items() if value <= target]
    return min(admissible) if good_is_high else max(admissible)


def smallest_epsilon(delta_of_epsilon: Callable[[float], float], delta: float) -> float:
    """Smallest epsilon >= 0 with ``delta_of_epsilon(epsilon) <= delta``.

    Inverts a privacy profile (non-increasing in epsilon) on the safe side:
    the epsilon returned is never below the true one by more than the bisection
    tolerance, and ``delta_of_epsilon`` has been checked to hold there.
    """
    delta = v.probability_open("delta", delta)
    return calibrate(
        delta_of_epsilon,
        delta,
        0.0,
        1.0,
        decreasing=True,
        floor=0.0,
        scale="linear",
        rtol=1e-10,
        atol=1e-12,
    )
