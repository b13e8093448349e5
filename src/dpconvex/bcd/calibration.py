"""Epsilon of DP-MBCD runs and noise calibration to a target (epsilon, delta).

Everything goes through :class:`dpconvex.accounting.PrivacyAccountant` (the events
of :mod:`dpconvex.bcd.events` are registered there) and through the one safe-side
calibrator :func:`dpconvex.accounting.calibrate`: the epsilon reported for a
calibrated schedule never exceeds the target.

The hidden-state curve is nearly linear in alpha with a tiny slope when the noise
is large, so its best order can be far above the library's default grid
(alpha* ~ sqrt(log(1/delta) / slope) for the standard RDP-to-DP conversion);
:data:`MBCD_ORDERS` reaches 1e6. Every order gives a valid bound, so a wider grid is only tighter.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from dp_accounting.dp_event import DpEvent

from .. import _validation as v
from ..accounting import DEFAULT_RDP_ORDERS, PrivacyAccountant, calibrate

#: RDP orders for hidden-state accounting: the default grid plus 1 + 10^[-3, 6].
MBCD_ORDERS = np.unique(np.concatenate([DEFAULT_RDP_ORDERS, 1.0 + np.geomspace(1e-3, 1e6, 600)]))


def epsilon(
    event: DpEvent,
    delta: float,
    *,
    accounting: str = "rdp",
    conversion: str = "improved",
    orders=None,
) -> float:
    """epsilon(delta) of ``event``; RDP over :data:`MBCD_ORDERS` by default, or ``"pld"``."""
    if accounting == "pld":
        return PrivacyAccountant("pld").compose(event).get_epsilon(delta)
    orders = MBCD_ORDERS if orders is None else orders
    acc = PrivacyAccountant(accounting, orders=orders, conversion=conversion)
    return acc.compose(event).get_epsilon(delta)


def epsilons(composition: DpEvent, hidden_state: DpEvent | None, delta: float) -> dict:
    """Both accountants side by side for one run.

    ``composition_rdp`` and ``hidden_state_rdp`` use the same RDP orders and
    conversion, so they compare like for like; ``composition_pld`` is the exact
    (tightest) composition number.
    """
    out = {
        "delta": delta,
        "composition_rdp": epsilon(composition, delta),
        "composition_pld": epsilon(composition, delta, accounting="pld"),
        "hidden_state_rdp": None,
    }
    if hidden_state is not None:
        out["hidden_state_rdp"] = epsilon(hidden_state, delta)
    return out


def calibrate_noise_scale(
    make_event: Callable[[float], DpEvent],
    epsilon_target: float,
    delta: float,
    *,
    accounting: str = "rdp",
    conversion: str = "improved",
    guess: float = 1e-3,
    rtol: float = 1e-6,
) -> float:
    """Smallest scale tau with epsilon(make_event(tau)) <= epsilon_target (safe side).

    ``make_event(tau)`` builds the event of the run whose noise schedule is
    tau * shape (privacy improves as tau grows). Returns tau; the caller can
    re-price ``make_event(tau)`` to see the epsilon it meets.
    """
    epsilon_target = v.positive("epsilon", epsilon_target)
    delta = v.probability_open("delta", delta)
    guess = v.positive("guess", guess)
    return calibrate(
        lambda tau: epsilon(make_event(tau), delta, accounting=accounting, conversion=conversion),
        epsilon_target,
        guess / 2.0,
        guess * 2.0,
        decreasing=True,
        floor=1e-300,
        ceiling=1e300,
        rtol=rtol,
    )
