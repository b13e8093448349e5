"""The front door: :class:`PrivacyAccountant` composes events and reports epsilon and delta.

``compose(event, count)``, ``get_epsilon(delta)``, ``get_delta(epsilon)``, with
``accounting`` "pld", "rdp", or "auto" (PLD when every composed event supports it, else
RDP). Pricing is done by :class:`dpconvex.accounting.pld_accountant.PLDAccountant` and
:class:`dpconvex.accounting.accountants.RdpAccountant`; answers to identical public
queries are remembered (:mod:`dpconvex.accounting.caches`).
"""

from __future__ import annotations

import math

import numpy as np
from dp_accounting import dp_event

from .. import _validation as v
from . import pld as _pld
from . import registry
from .accountants import RdpAccountant, UnsupportedEventError
from .caches import _RESULTS, _event_key, _Uncacheable
from .conversions import CONVERSIONS, delta_from_rdp, epsilon_from_rdp
from .event_checks import validate_event
from .limits import check_count
from .pld_accountant import PLDAccountant, composed_plds

ACCOUNTINGS = ("auto", "pld", "rdp")
#: Largest PLD grid step accepted: a privacy loss resolved more coarsely says nothing useful.
MAX_GRID_STEP = 1.0


class PrivacyAccountant:
    """Compose events; report epsilon(delta) and delta(epsilon) by PLD or RDP accounting.

    Args:
        accounting: ``"pld"`` (numerically tight privacy-loss distributions),
            ``"rdp"`` (Renyi DP, converted with ``conversion``) or ``"auto"``
            (default: PLD when it supports every composed event, otherwise RDP —
            repeat-and-select tuning is RDP-only).
        orders: RDP orders. By default :data:`DEFAULT_RDP_ORDERS`, after which
            the best order is refined on a fine grid between its neighbours
            (every order gives a valid bound, so this is safe). Explicit orders
            are used exactly as given.
        value_discretization_interval: PLD grid step.
        conversion: RDP-to-DP conversion, ``"improved"`` or ``"standard"``
            (see :mod:`dpconvex.accounting.conversions`).

    Example:
        >>> acc = PrivacyAccountant().compose(ObjectivePerturbationDpEvent(5.0, 20.0, 1.0, 1.0))
        >>> round(acc.get_epsilon(1e-5), 3)
        0.811
    """

    def __init__(
        self,
        accounting: str = "auto",
        *,
        orders=None,
        value_discretization_interval: float = 1e-4,
        conversion: str = "improved",
    ):
        if accounting not in ACCOUNTINGS:
            raise ValueError(f"accounting must be one of {ACCOUNTINGS}, got {accounting!r}")
        if conversion not in CONVERSIONS:
            raise ValueError(f"conversion must be one of {CONVERSIONS}, got {conversion!r}")
        self.accounting = accounting
        self.conversion = conversion
        self._refine = orders is None
        self._orders = RdpAccountant(orders).orders
        self._h = v.positive("value_discretization_interval", value_discretization_interval)
        if self._h > MAX_GRID_STEP:
            raise ValueError(
                f"value_discretization_interval must be at most {MAX_GRID_STEP:g} (a privacy "
                f"loss resolved only to {self._h:g} says nothing useful), got {self._h:g}"
            )
        self._events: list[dp_event.DpEvent] = []
        self._cache: dict = {}
        self._registry = registry.version()

    # -- composition ---------------------------------------------------------
    def compose(self, event: dp_event.DpEvent, count: int = 1) -> PrivacyAccountant:
        """Add ``count`` adaptive compositions of ``event``; returns ``self``."""
        validate_event(event)  # nonsense counts or noise are refused, never priced
        count = check_count("count", count)
        candidate = event if count == 1 else dp_event.SelfComposedDpEvent(event, count)
        ledger = dp_event.ComposedDpEvent([*self._events, candidate])
        self._pick_accounting(ledger)  # raises UnsupportedEventError early
        self._events.append(candidate)
        self._cache.clear()
        return self

    @property
    def ledger(self) -> dp_event.DpEvent:
        """Everything composed so far, as one dp_accounting event."""
        return dp_event.ComposedDpEvent(list(self._events))

    @property
    def accounting_used(self) -> str:
        """``"pld"`` or ``"rdp"``: what :meth:`get_epsilon` uses for the current ledger.

        With ``"auto"``, RDP also when the PLD of the ledger turned out to need more
        than :data:`dpconvex.accounting.pld.MAX_GRID_POINTS` grid points.
        """
        self._check_registry()
        if self._cache.get("pld_too_large") and self.accounting == "auto":
            return "rdp"
        return self._pick_accounting(self.ledger)

    def _pick_accounting(self, ledger: dp_event.DpEvent) -> str:
        pld_ok = PLDAccountant(value_discretization_interval=self._h).supports(ledger)
        rdp_ok = RdpAccountant(self._orders).supports(ledger)
        if self.accounting == "pld" and pld_ok:
            return "pld"
        if self.accounting == "rdp" and rdp_ok:
            return "rdp"
        if self.accounting == "auto" and (pld_ok or rdp_ok):
            return "pld" if pld_ok else "rdp"
        which = "PLD or RDP" if self.accounting == "auto" else self.accounting.upper()
        reason = ""
        if self.accounting == "pld":
            details = PLDAccountant(value_discretization_interval=self._h)._maybe_compose(
                ledger, 1, False
            )
            if details is not None and details.error_message:
                reason = f" ({details.error_message})"
        shown = str(ledger)
        shown = shown if len(shown) <= 200 else shown[:197] + "..."
        raise UnsupportedEventError(
            f"{which} accounting does not support this composition{reason}: {shown}"
        )

    def _check_registry(self) -> None:
        """Forget what this accountant computed under pricing rules registered since."""
        if self._registry != registry.version():
            self._cache.clear()
            self._registry = registry.version()

    # -- queries -------------------------------------------------------------
    def _plds(self, slack: float = _pld.UNTILTED_SLACK) -> tuple:
        """The composed PLD(s), FFT round-off allowance at most ``slack`` of any delta.

        One PLD, or two when the ledger has Poisson-subsampled events of ours: one
        with Zhu-Dong-Wang's Thm 11 add-direction pair for all of them, one with the
        mixture pair (P, (1-q)P + qQ) (:func:`dpconvex.accounting.pld.poisson_subsample`).
        Each is a valid upper bound, so the queries report the smaller of the two.
        ``slack = inf`` asks for the approximate PLD of a calibration search (Gaussians
        composed by a plain FFT power, :data:`dpconvex.accounting.pld.approximate`);
        a certified PLD answers such a request too, never the reverse.
        """
        self._check_registry()
        done = self._cache.setdefault("pld", {})
        for have, plds in done.items():
            if have <= slack:
                return plds
        done[slack] = composed_plds(self.ledger, self._h, slack)
        return done[slack]

    def rdp(self, orders=None) -> np.ndarray:
        """RDP of the composition at ``orders`` (default: this accountant's orders)."""
        self._check_registry()
        orders = self._orders if orders is None else np.asarray(orders, dtype=float)
        key = ("rdp", orders.tobytes())
        if key not in self._cache:
            self._cache[key] = RdpAccountant(orders).compose(self.ledger).rdp
        return self._cache[key]

    def _refined_orders(self, alpha: float) -> np.ndarray | None:
        if not self._refine:
            return None
        i = int(np.searchsorted(self._orders, alpha))
        lo = self._orders[max(i - 1, 0)]
        hi = self._orders[min(i + 1, self._orders.size - 1)]
        if hi <= lo or lo <= 1.0:
            return None
        fine = 1.0 + np.geomspace(lo - 1.0, hi - 1.0, 41)
        if lo >= 256:  # large integer orders: stay on integers, where
            # dp_accounting's subsampled-Gaussian RDP is exact (fractional orders there
            # are slow and may fail to converge)
            fine = np.unique(np.round(fine))
        return fine

    def _rdp_convert(self, convert, value: float) -> float:
        """Best conversion over the orders, then over a fine grid around the best order."""
        best, alpha = convert(self._orders, self.rdp(), value, self.conversion)
        fine = self._refined_orders(alpha)
        if fine is not None:
            best = min(best, convert(fine, self.rdp(fine), value, self.conversion)[0])
        return best

    def _query_key(self, kind: str, value: float):
        """Key of a query in :data:`_RESULTS`, or None when the ledger holds unknown fields."""
        try:
            ledger = _event_key(self.ledger)
        except _Uncacheable:
            return None
        return (
            kind, float(value), ledger, self.accounting, self.conversion, self._refine,
            self._orders.tobytes(), self._h, _pld.UNTILTED_SLACK, registry.registry_digest(),
        )  # fmt: skip

    def get_epsilon(self, delta: float) -> float:
        """Epsilon of the composition at ``delta`` (an upper bound)."""
        delta = v.probability_open("delta", delta)
        self._check_registry()
        return _RESULTS.lookup(
            self._query_key("epsilon", delta),
            lambda: self._epsilon(delta),
            lambda: self._epsilon(delta, approximate=True),
        )

    def _epsilon(self, delta: float, approximate: bool = False) -> float:
        if self.accounting_used == "pld":
            slack = min(_pld.UNTILTED_SLACK, 1e-4 * delta)  # round-off <= 1e-4 of delta
            slack = math.inf if approximate else slack
            try:
                epsilon = min(float(acc.get_epsilon(delta)) for acc in self._plds(slack))
            except _pld.GridTooLargeError:
                if not self._rdp_fallback():
                    raise
                return self._rdp_convert(epsilon_from_rdp, delta)
            if self.accounting == "auto" and epsilon == np.inf and self._rdp_supported():
                # delta below the PLD's truncated tails (~1e-16): both are upper bounds,
                # so the finite RDP conversion is as valid and far more useful
                return self._rdp_convert(epsilon_from_rdp, delta)
            return epsilon
        return self._rdp_convert(epsilon_from_rdp, delta)

    def _rdp_fallback(self) -> bool:
        """With "auto", price by RDP a ledger whose PLD needs too many grid points (both are
        upper bounds); False when RDP cannot price it either, or accounting is "pld"."""
        if self.accounting != "auto" or not self._rdp_supported():
            return False
        self._cache["pld_too_large"] = True
        return True

    def _rdp_supported(self) -> bool:
        return RdpAccountant(self._orders).supports(self.ledger)

    def get_delta(self, epsilon: float) -> float:
        """Delta of the composition at ``epsilon`` (an upper bound)."""
        epsilon = v.nonnegative("epsilon", epsilon)
        self._check_registry()
        return _RESULTS.lookup(
            self._query_key("delta", epsilon),
            lambda: self._delta(epsilon),
            lambda: self._delta(epsilon, approximate=True),
        )

    def _delta(self, epsilon: float, approximate: bool = False) -> float:
        if self.accounting_used == "pld":
            try:
                slack = math.inf if approximate else _pld.UNTILTED_SLACK
                delta = min(float(acc.get_delta(epsilon)) for acc in self._plds(slack))
                if approximate:
                    return delta
                if _pld.UNTILTED_SLACK > 1e-4 * delta:  # round-off allowance too large here
                    delta = min(float(acc.get_delta(epsilon)) for acc in self._plds(1e-4 * delta))
            except _pld.GridTooLargeError:
                if not self._rdp_fallback():
                    raise
                return self._rdp_convert(delta_from_rdp, epsilon)
            return delta
        return self._rdp_convert(delta_from_rdp, epsilon)
