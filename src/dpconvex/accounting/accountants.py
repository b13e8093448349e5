"""dp_accounting's RDP accountant, extended with every event of the pricing registry.

:class:`RdpAccountant` prices the events registered in
:mod:`dpconvex.accounting.registry` (objective perturbation and AMP among them) and
hands every other event (Gaussian, Poisson-subsampled Gaussian, compositions, ...) to
dp_accounting. Because dp_accounting's repeat-and-select recursion calls back into
``_maybe_compose``, Papernot-Steinke tuning of our own mechanisms works unchanged; its
Poisson form takes the base's privacy profile from PLD accounting where that is tighter
(:func:`dpconvex.accounting.pld_accountant.base_delta_from_pld`). The PLD accountant is
:class:`dpconvex.accounting.pld_accountant.PLDAccountant`; the front door users call,
:class:`dpconvex.accounting.privacy_accountant.PrivacyAccountant`.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
from dp_accounting import dp_event, privacy_accountant
from dp_accounting.rdp import rdp_privacy_accountant

from .._logs import quiet_rdp_convergence
from . import registry
from .events import AmpDpEvent, ObjectivePerturbationDpEvent, RandomChoiceDpEvent
from .pld_accountant import base_delta_from_pld
from .subsampled_rdp import (
    GENERAL_MAX_ORDER,
    poisson_subsampled_rdp_bound,
    subsampled_gaussian_rdp_int,
)

NeighboringRelation = privacy_accountant.NeighboringRelation
UnsupportedEventError = privacy_accountant.UnsupportedEventError
_ADD_REMOVE = NeighboringRelation.ADD_OR_REMOVE_ONE

#: Default RDP orders: fractional orders where the optimum of small-noise
#: mechanisms lies, integers above (dp_accounting's subsampled-Gaussian RDP is
#: exact and fast at integer orders), and a few large orders for large noise.
DEFAULT_RDP_ORDERS = np.array(
    sorted(
        set(np.round(1.0 + np.geomspace(0.01, 10.0, 80), 10).tolist())
        | set(range(11, 257))
        | {320, 400, 512, 640, 800, 1024, 1536, 2048, 4096}
    ),
    dtype=float,
)

#: Bases of repeat-and-select whose privacy profile is also read from their PLD (the
#: closed-form profiles of Redberg, Koskela & Wang, arXiv 2401.00583): see
#: :meth:`RdpAccountant._compose_poisson_tuning`.
_PROFILED = (ObjectivePerturbationDpEvent, AmpDpEvent)


class RdpAccountant(rdp_privacy_accountant.RdpAccountant):
    """dp_accounting's RDP accountant, extended with objective perturbation and AMP.

    Objective perturbation is priced by Redberg, Koskela & Wang (arXiv 2401.00583), Thm 3.2,
    AMP by their Thm 4.1.
    """

    def __init__(self, orders=None, neighboring_relation: NeighboringRelation = _ADD_REMOVE):
        orders = DEFAULT_RDP_ORDERS if orders is None else np.asarray(orders, dtype=float)
        if orders.ndim != 1 or orders.size == 0 or np.isnan(orders).any() or (orders < 1).any():
            raise ValueError("RDP orders must be a non-empty list of numbers >= 1")
        super().__init__(list(orders), neighboring_relation)

    def _maybe_compose(self, event, count, do_compose):
        if registry.prices_rdp(event):
            if self.neighboring_relation is not _ADD_REMOVE:
                return registry.relation_error(event, self.neighboring_relation)
            if do_compose:
                self._rdp += count * registry.event_rdp(event, self._orders)
            return None
        if isinstance(event, RandomChoiceDpEvent):
            inner = [RdpAccountant(self._orders, self.neighboring_relation) for _ in event.events]
            for acc, e in zip(inner, event.events, strict=True):
                error = acc._maybe_compose(e, 1, False)
                if error is not None:
                    return error
            if do_compose:
                curves = [acc.compose(e).rdp for acc, e in zip(inner, event.events, strict=True)]
                self._rdp += count * np.max(curves, axis=0)
            return None
        if isinstance(event, dp_event.RepeatAndSelectDpEvent) and event.shape == math.inf:
            return self._compose_poisson_tuning(event, count, do_compose)
        if self._compose_subsampled_gaussian(event, count, do_compose):
            return None
        if isinstance(event, dp_event.PoissonSampledDpEvent) and not isinstance(
            event.event, dp_event.GaussianDpEvent
        ):
            return self._compose_subsampled_general(event, count, do_compose)
        # dp_accounting logs (via absl) one warning per RDP order whose series does not
        # converge and leaves that order out (its RDP is inf): epsilon stays an upper
        # bound. Drop and count those lines; every other warning passes (see _logs).
        with quiet_rdp_convergence():
            return super()._maybe_compose(event, count, do_compose)

    def _compose_subsampled_gaussian(self, event, count: int, do_compose: bool) -> bool:
        """The Poisson-subsampled Gaussian's RDP with integer orders vectorized; False: not ours.

        Integer orders by :func:`~dpconvex.accounting.subsampled_rdp.subsampled_gaussian_rdp_int`
        (the sum dp_accounting evaluates term by term), other orders by dp_accounting.
        """
        if not (
            isinstance(event, dp_event.PoissonSampledDpEvent)
            and type(event.event) is dp_event.GaussianDpEvent
            and self.neighboring_relation is _ADD_REMOVE
            and 0 < event.sampling_probability < 1
            and event.event.noise_multiplier > 0
        ):
            return False
        if do_compose:
            q, z = event.sampling_probability, event.event.noise_multiplier
            orders = np.asarray(self._orders, dtype=float)
            integer = np.isfinite(orders) & (orders >= 2) & (orders == np.round(orders))
            rdp = np.empty(orders.size)
            rdp[integer] = subsampled_gaussian_rdp_int(q, z, orders[integer])
            if not integer.all():
                rest = rdp_privacy_accountant.RdpAccountant(
                    list(orders[~integer]), self.neighboring_relation
                )
                with quiet_rdp_convergence():
                    rest.compose(event)
                rdp[~integer] = rest._rdp
            self._rdp = self._rdp + count * rdp
        return True

    def _compose_subsampled_general(self, event, count: int, do_compose: bool):
        """Any event run on a Poisson subsample: Zhu & Wang 2019, Thm 6 (general bound).

        Used for a whole private search run on a secret Poisson subsample of the rows
        (Koskela & Kulkarni 2023, "Practical differentially private hyperparameter tuning
        with subsampling", NeurIPS): the inner event's RDP is computed at the integer
        orders 2..256 and amplified by
        :func:`~dpconvex.accounting.subsampled_rdp.poisson_subsampled_rdp_bound`; an order
        a between integers gets the bound at ceil(a) (RDP does not decrease with the
        order). Orders above 256 keep the inner event's own RDP (subsampling never
        hurts; the sum would cost O(a^2) there): nearly private runs convert at such
        orders, so +inf there would put a floor under epsilon. dp_accounting amplifies
        only the Gaussian.
        """
        if self.neighboring_relation is not _ADD_REMOVE:
            return registry.relation_error(event, self.neighboring_relation)
        q = event.sampling_probability
        top = GENERAL_MAX_ORDER
        orders = np.asarray(self._orders, dtype=float)
        high = orders[orders > top]
        grid = np.concatenate((np.arange(2.0, top + 1.0), high))
        inner = RdpAccountant(grid, self.neighboring_relation)
        error = inner._maybe_compose(event.event, 1, do_compose)
        if error is not None or not do_compose:
            return error
        if q == 0:
            return None
        bound = poisson_subsampled_rdp_bound(q, inner._rdp[: top - 1])
        index = np.clip(np.ceil(orders) - 2, 0, top - 2).astype(int)
        rdp = bound[index]
        rdp[orders > top] = inner._rdp[top - 1 :]  # not amplified there: M's own RDP
        self._rdp = self._rdp + count * rdp
        return None

    def _compose_poisson_tuning(self, event, count, do_compose):
        """Papernot-Steinke Thm 6 with the base delta from the exact privacy profile.

        Papernot & Steinke 2022 ("Hyperparameter tuning with Renyi differential
        privacy", arXiv 2110.03620, Thm 6): if the base algorithm Q is
        (lambda, eps)-RDP *and* (eps_hat, delta_hat)-DP, with
        e^eps_hat <= 1 + 1/(lambda - 1), then repeat-and-select with K ~ Poisson(mu)
        is (lambda, eps + mu delta_hat + log(mu)/(lambda - 1))-RDP. The theorem takes
        the (eps_hat, delta_hat)-DP guarantee from any valid source; dp_accounting
        converts Q's RDP curve, which wastes a few percent. For bases containing
        objective perturbation / AMP we also compute delta_hat(eps_hat) from the
        base's PLD (an upper bound on its privacy profile, pessimistic
        discretization) and use the smaller of the two (both valid), at
        eps_hat = log(1 + 1/(lambda - 1)) as dp_accounting does. Thm 2 (truncated
        negative binomial) is an RDP-only statement and stays with dp_accounting.
        Only for our events: dp_accounting's own bases (e.g. honest DP-SGD) keep its
        pricing, which reproduces the DP-SGD baselines of Redberg et al. §5 — the
        same formula as dp_accounting's, with the conversion at every eps_hat computed
        at once (:func:`rdp_deltas`) instead of one order at a time.
        """
        if math.isnan(event.mean) or event.mean < 1:
            raise ValueError(f"Mean of number of repetitions must be >=1. Got {event.mean}.")
        inner = RdpAccountant(self._orders, self.neighboring_relation)
        error = inner._maybe_compose(event.event, 1, do_compose)
        if error is not None or not do_compose:
            return error
        orders, rdp = np.asarray(self._orders, dtype=float), inner._rdp
        out = np.full(orders.size, np.inf)
        ok = orders > 1
        eps_hat = np.log1p(1.0 / (orders[ok] - 1.0))
        from_rdp = rdp_deltas(orders, rdp, eps_hat)
        exact = base_delta_from_pld(event.event, eps_hat) if _contains_ours(event.event) else None
        delta_hat = from_rdp if exact is None else np.minimum(from_rdp, exact)
        out[ok] = rdp[ok] + event.mean * delta_hat + math.log(event.mean) / (orders[ok] - 1.0)
        self._rdp = self._rdp + count * out
        return None


def rdp_deltas(orders: np.ndarray, rdp: np.ndarray, epsilons: np.ndarray) -> np.ndarray:
    """delta(epsilon) from an RDP curve at every epsilon at once, as dp_accounting converts.

    Per order the better of the KL bound sqrt(1 - e^-r) and, for orders above 1.01, the
    conversion of Canonne, Kamath & Steinke 2020 (arXiv 2004.00010, Prop. 12 in v4):
    log delta = (a - 1)(r - eps + log(1 - 1/a)) - log a; the best order wins. This is
    ``dp_accounting.rdp.compute_delta`` evaluated for a vector of epsilons.
    """
    a = np.asarray(orders, dtype=float)
    r = np.asarray(rdp, dtype=float)
    eps = np.atleast_1d(np.asarray(epsilons, dtype=float))
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        kl = np.where(r > 0, 0.5 * np.log1p(-np.exp(-r)), -np.inf)
        big = a > 1.01
        conv = (a[big] - 1) * (r[big] - eps[:, None] + np.log1p(-1 / a[big])) - np.log(a[big])
    log_delta = np.broadcast_to(kl, (eps.size, a.size)).copy()
    log_delta[:, big] = np.minimum(log_delta[:, big], np.nan_to_num(conv, nan=np.inf))
    return np.minimum(np.exp(log_delta.min(axis=1)), 1.0)


def _contains_ours(event, ours: Callable = lambda e: isinstance(e, _PROFILED)) -> bool:
    """Whether an event of ours (objective perturbation or AMP by default) occurs in ``event``."""
    if ours(event):
        return True
    children = getattr(event, "events", None)
    if children is None:
        child = getattr(event, "event", None)
        children = [] if child is None else [child]
    return any(_contains_ours(e, ours) for e in children)
