"""The epsilon range dpconvex calibrates for, the Gaussian mechanism's closed-form noise,
and the mu-GDP model that guides the noise search of the Gaussian and DP-SGD calibrators.

The model search (:func:`model_search`) only proposes candidates: every noise level
it returns was checked by the accountant (:mod:`dpconvex.accounting.calibrators`).
"""

from __future__ import annotations

import math

from .. import _validation as v
from .calibration import calibrate
from .gaussian import gaussian_delta

#: Relative noise margin of closed-form calibrations, far above float64 round-off in the
#: accountants that later price the same noise, far below any effect on utility.
SAFETY_MARGIN = 1.0 + 1e-9


def gaussian_sigma(epsilon: float, delta: float, sensitivity: float = 1.0) -> float:
    """Smallest noise std making the Gaussian mechanism (epsilon, delta)-DP (analytic Gaussian).

    Uses the exact profile of Redberg, Koskela & Wang (arXiv 2401.00583), eq. (B.1)
    (Balle & Wang 2018); the
    returned sigma satisfies gaussian_delta(epsilon; sensitivity, sigma) <= delta, and
    carries a relative margin of 1e-9 so that numerical accountants (dp_accounting's
    PLD root finding, about 1e-12 off) never report more than ``epsilon`` for it.
    """
    epsilon = check_epsilon(epsilon)
    delta = v.probability_open("delta", delta)
    sensitivity = v.positive("sensitivity", sensitivity)
    return SAFETY_MARGIN * calibrate(
        lambda s: gaussian_delta(epsilon, sensitivity, s),
        delta,
        0.5 * sensitivity,
        2.0 * sensitivity,
        decreasing=True,
        floor=1e-300,
        rtol=1e-10,
    )


#: Largest epsilon the calibrators accept. Beyond it e^epsilon nears float64's
#: range (it overflows at about 709) and PLD grids lose their meaning; such budgets
#: give no meaningful protection anyway.
MAX_EPSILON = 100.0
#: PrivacyAccountant's default PLD grid step (its ``value_discretization_interval``).
DEFAULT_PLD_GRID = 1e-4
#: Smallest epsilon the calibrators accept. Below it the noise is about 1/epsilon times
#: the signal (no useful model), the Jacobian term of objective perturbation alone
#: can exceed the budget, and PLD accounting on a grid of 1e-4 * epsilon gets slow.
MIN_EPSILON = 1e-4


def check_epsilon(epsilon: float) -> float:
    """``epsilon`` as a float in [MIN_EPSILON, MAX_EPSILON]; raise naming the problem otherwise."""
    epsilon = v.positive("epsilon", epsilon)
    if epsilon > MAX_EPSILON:
        raise ValueError(
            f"epsilon={epsilon:g} is above {MAX_EPSILON:g}, the largest budget dpconvex "
            "calibrates for (exp(epsilon) is then too large for reliable accounting)"
        )
    if epsilon < MIN_EPSILON:
        raise ValueError(
            f"epsilon={epsilon:g} is below {MIN_EPSILON:g}, the smallest budget dpconvex "
            "calibrates for (the noise would swamp any signal and accounting gets slow)"
        )
    return epsilon


def pld_grid(epsilon: float) -> float:
    """PLD grid step for calibrating to and reporting ``epsilon``: 1e-4 * epsilon in [1e-5, 1e-2].

    A grid proportional to the target keeps the discretization error a fixed
    fraction of epsilon (about 1e-4 of it; discretization is pessimistic, so only
    ever an overestimate) at every scale: a fixed step would be coarser than a tiny
    epsilon itself, and needlessly fine (slow) for DP-SGD's small-noise PLDs. Below
    epsilon = 0.1 the step stays at 1e-5 (an overestimate of at most about 1e-5 in
    epsilon, 10% at the smallest budget 1e-4) so that PLDs of wide loss ranges fit
    in memory.
    """
    return min(1e-2, max(1e-5, 1e-4 * epsilon))


def clt_mu(z: float, q: float, steps: int) -> float:
    """mu of the central-limit (mu-GDP) approximation of ``steps`` subsampled Gaussians.

    Dong, Roth & Su 2022 (Gaussian DP, Cor. 5.4): T steps of the Poisson-subsampled
    Gaussian of noise z at rate q are close to mu-GDP with mu = q sqrt(T (e^(1/z^2) - 1)).
    Only a model that guides the search: every answer is checked by the accountant.
    """
    return q * math.sqrt(steps * math.expm1(min(1.0 / (z * z), 700.0)))


def clt_noise_multiplier(mu: float, q: float, steps: int) -> float:
    """The z with :func:`clt_mu` (z) = mu (0 or inf at the ends of float range)."""
    ratio = mu / q
    return 1.0 / math.sqrt(math.log1p(ratio * ratio / steps))


def gdp_mu(epsilon: float, delta: float) -> float | None:
    """mu of the Gaussian (mu-GDP) profile whose delta at ``epsilon`` is ``delta``; None if none.

    The Gaussian mechanism of sensitivity 1 and noise 1/mu (Balle & Wang 2018, Thm 8).
    """
    try:
        return 1.0 / gaussian_sigma(epsilon, delta, 1.0)
    except ValueError:  # delta outside (0, 1), or no noise level reaches it
        return None


def model_search(
    delta_at, epsilon, delta, model_mu, model_z, z0, rtol, evaluations: int
) -> float | None:
    """Smallest noise z with ``delta_at(z) <= delta`` in a few accountant calls; None: give up.

    ``model_mu(z)`` predicts the mu-GDP parameter of the mechanism at noise z (the
    central-limit approximation for DP-SGD, exact for composed Gaussians) and
    ``model_z`` inverts it. Each call of the accountant at z gives the mu that a
    Gaussian profile with the same delta(epsilon) would have, and so the ratio r(z)
    of truth to model; log r is nearly linear in log z (it moved 0.8 % where delta
    moved 4x, DP-SGD at epsilon 8), so the next z solves model_mu(z) r(z) = mu* with
    log r interpolated through the last two calls. The next call sits rtol/2 above
    that prediction, on the safe side. The search stops at a call that meets the
    budget when a call that misses it lies within rtol below, or when the prediction
    from the last two calls lies within rtol below it. Only evaluated noise levels
    that met the budget are returned, after at most ``evaluations`` calls; None hands over to
    the bracketing search.
    """
    mu_star = gdp_mu(epsilon, delta)
    if mu_star is None:
        return None
    seen: list[tuple[float, float]] = []  # (log z, log r)
    good = bad = None  # smallest z that met the budget, largest below it that missed
    z = z0
    for _ in range(evaluations):
        d = delta_at(z)
        if d <= delta:
            good = z if good is None else min(good, z)
        elif good is None or z < good:
            bad = z if bad is None else max(bad, z)
        if good is not None and bad is not None and good <= bad * (1.0 + rtol):
            return good
        mu = gdp_mu(epsilon, d)
        try:
            seen.append((math.log(z), math.log(mu / model_mu(z))))
        except (TypeError, ValueError, ZeroDivisionError, OverflowError):
            return None  # outside the model's range (mu None: delta 0 or 1)
        (u1, r1), (u2, r2) = seen[-2:] if len(seen) > 1 else (seen[-1], seen[-1])
        slope = (r2 - r1) / (u2 - u1) if u2 != u1 else 0.0
        pred = z
        for _ in range(50):  # model_mu(z) exp(log r(z)) = mu*: a contraction near the root
            log_r = r2 + slope * (math.log(pred) - u2)
            try:
                nxt = model_z(mu_star / math.exp(log_r))
            except (ValueError, ZeroDivisionError, OverflowError):
                return None
            if not (math.isfinite(nxt) and nxt > 0):
                return None
            done = abs(nxt / pred - 1.0) < 1e-3 * rtol
            pred = nxt
            if done:
                break
        if good is not None and len(seen) > 1 and pred <= good <= pred * (1.0 + rtol):
            return good
        z = pred * (1.0 + 0.5 * rtol)
        if good is not None and z >= good:  # the model puts the boundary above a good call
            z = good / (1.0 + 0.5 * rtol)
        if bad is not None and z <= bad:
            z = math.sqrt(bad * (good if good is not None else bad * (1.0 + 4.0 * rtol)))
    return None
