"""The Renyi filter of a ledger: its budget at a fixed order, its default order, event RDP."""

from __future__ import annotations

import math

import numpy as np
from dp_accounting.dp_event import DpEvent, RepeatAndSelectDpEvent
from scipy.optimize import minimize_scalar

from ..accounting import DEFAULT_RDP_ORDERS, PrivacyAccountant, check_epsilon
from .values import MAX_FILTER_ORDER, _budget_number, _check_delta


def _check_order(order: object) -> float:
    order = _budget_number("order", order)
    if not 1.0 < order <= MAX_FILTER_ORDER:
        raise ValueError(f"order must be in (1, {MAX_FILTER_ORDER:g}], got {order:g}")
    return order


def _conversion_offset(delta: float, order: float) -> float:
    """epsilon - rho of the (order, rho)-RDP to (epsilon, delta)-DP conversion.

    Balle et al. 2020 (arXiv 1905.09982), Thm 21 == Canonne, Kamath & Steinke 2020
    (arXiv 2004.00010), Prop. 12: (alpha, rho)-RDP implies (rho + log(1 - 1/alpha)
    - (log delta + log alpha)/(alpha - 1), delta)-DP. It holds for any pair of
    distributions, so for the transcript of a whole filtered interaction too.
    """
    return math.log1p(-1.0 / order) - (math.log(delta) + math.log(order)) / (order - 1.0)


def renyi_filter_budget(epsilon: float, delta: float, order: float) -> float:
    """The Renyi budget B at ``order`` of a filter that guarantees (epsilon, delta)-DP.

    Feldman & Zrnic 2021 (arXiv 2008.11193), Thm 3.1: if every mechanism is
    (alpha, rho_t)-RDP given the earlier outputs, with rho_t chosen adaptively, and
    the sum of the rho_t of the mechanisms that run is at most B on every path, the
    whole interaction is (alpha, B)-RDP. Converting with :func:`_conversion_offset`
    gives (epsilon, delta)-DP for B = epsilon - offset(delta, alpha). May be <= 0 (the
    order is then useless for this budget).
    """
    return float(epsilon) - _conversion_offset(float(delta), float(order))


def _gaussian_capacity(epsilon: float, delta: float, order: float) -> float:
    return renyi_filter_budget(epsilon, delta, order) / order


def default_filter_order(epsilon: float, delta: float) -> float:
    """The order a Renyi filter uses unless told otherwise; a function of (epsilon, delta) only.

    Reference mechanism: Gaussian noise (sensitivity 1, noise sigma_i), whose RDP at
    order alpha is alpha/(2 sigma_i^2) (Mironov 2017, Prop. 7). A filter at order
    alpha admits Gaussian spends while sum_i 1/(2 sigma_i^2) <= B(alpha)/alpha, so the
    default is the alpha that maximizes B(alpha)/alpha (the most Gaussian spends),
    found on a log grid and refined by Brent's method, rounded to 4 significant
    digits. (With Mironov's simpler conversion, B = epsilon - L/(alpha - 1) with
    L = log(1/delta), the maximizer has the closed form (L + epsilon + sqrt(L (L +
    epsilon)))/epsilon, 24.5 at epsilon = 1, delta = 1e-5; the conversion used here
    costs less and moves it to 17.8.) Raises ValueError when no order up to
    MAX_FILTER_ORDER leaves a positive budget (tiny epsilon with tiny delta).
    """
    epsilon = check_epsilon(_budget_number("epsilon", epsilon))
    delta = _check_delta(delta)
    grid = 1.0 + np.geomspace(1e-2, MAX_FILTER_ORDER - 1.0, 2000)
    values = np.array([_gaussian_capacity(epsilon, delta, a) for a in grid])
    i = int(np.argmax(values))
    lo, hi = grid[max(i - 1, 0)], grid[min(i + 1, grid.size - 1)]
    result = minimize_scalar(
        lambda u: -_gaussian_capacity(epsilon, delta, 1.0 + math.exp(u)),
        bounds=(math.log(lo - 1.0), math.log(hi - 1.0)),
        method="bounded",
    )
    best = 1.0 + math.exp(result.x) if -result.fun >= values[i] else float(grid[i])
    best = min(float(f"{best:.4g}"), MAX_FILTER_ORDER)
    if renyi_filter_budget(epsilon, delta, best) <= 0:
        raise ValueError(
            f"a Renyi filter cannot guarantee epsilon={epsilon:g} at delta={delta:g} (converting "
            "Renyi DP to that delta costs more than epsilon at every order); use a larger "
            "epsilon or delta"
        )
    return best


def _contains_selection(event: DpEvent) -> bool:
    if isinstance(event, RepeatAndSelectDpEvent):
        return True
    children = getattr(event, "events", None) or []
    inner = getattr(event, "event", None)
    return any(_contains_selection(e) for e in [*children, *([inner] if inner else [])])


def event_rdp(event: DpEvent, order: float) -> float:
    """RDP of ``event`` at ``order`` from the project's RDP accountant (add/remove neighbours).

    Repeat-and-select tuning (Papernot & Steinke 2022) bounds one order through the
    others, so events holding one are priced on the default orders plus ``order``.
    """
    order = _check_order(order)
    orders = np.array([order])
    if _contains_selection(event):
        orders = np.union1d(DEFAULT_RDP_ORDERS, orders)
    rdp = PrivacyAccountant("rdp", orders=orders).compose(event).rdp()
    value = float(rdp[int(np.searchsorted(orders, order))])
    if math.isnan(value) or value < 0:
        raise ValueError(f"the RDP accountant gave {value} for {type(event).__name__}")
    return value
