"""Accountants that price dpconvex's events together with dp_accounting's.

:class:`RdpAccountant` and :class:`PLDAccountant` extend Google's
``dp_accounting`` accountants: they recognise :class:`ObjectivePerturbationDpEvent`
and :class:`AmpDpEvent` and hand every other event (Gaussian, Poisson-subsampled
Gaussian, repeat-and-select tuning, compositions, ...) to dp_accounting. Because
dp_accounting's repeat-and-select recursion calls back into ``_maybe_compose``,
Papernot-Steinke tuning of our own mechanisms works unchanged.

:class:`PrivacyAccountant` is the front door: ``compose(event, count)``,
``get_epsilon(delta)``, ``get_delta(epsilon)``, with ``accounting`` "pld",
"rdp", or "auto" (PLD when every composed event supports it, else RDP).
"""

from __future__ import annotations

import contextlib
import contextvars
import hashlib
import inspect
import math
import os
import secrets
import threading
import types
from collections import OrderedDict
from collections.abc import Callable, Iterator

import attr
import numpy as np
from dp_accounting import dp_event, privacy_accountant
from dp_accounting.pld import pld_privacy_accountant
from dp_accounting.rdp import rdp_privacy_accountant

from .. import _validation as v
from .._logs import quiet_rdp_convergence
from . import disk_cache
from . import pld as _pld
from .conversions import CONVERSIONS, delta_from_rdp, epsilon_from_rdp
from .event_checks import validate_event
from .events import AmpDpEvent, ObjectivePerturbationDpEvent, RandomChoiceDpEvent
from .gaussian_pld import approximate_gaussian_pld, gaussian_loss_pmfs, grid_points
from .limits import check_count
from .objpert import amp_rdp, objpert_rdp
from .subsampled_rdp import (
    GENERAL_MAX_ORDER,
    poisson_subsampled_rdp_bound,
    subsampled_gaussian_rdp_int,
)

NeighboringRelation = privacy_accountant.NeighboringRelation
UnsupportedEventError = privacy_accountant.UnsupportedEventError
_CompositionError = privacy_accountant.PrivacyAccountant.CompositionErrorDetails
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

ACCOUNTINGS = ("auto", "pld", "rdp")
#: Largest PLD grid step accepted: a privacy loss resolved more coarsely says nothing useful.
MAX_GRID_STEP = 1.0

# Extension points: other modules price their own event types here, without
# editing this file. An RDP rule maps (event, orders) to the RDP curve at those
# orders; a PLD rule maps (event, grid step h) to the event's pessimistic PLRV
# (:class:`dpconvex.accounting.pld.LossPmf`, symmetric in add/remove; Poisson
# subsampling of the event then works too). Both must hold for add/remove
# neighbours and cite the theorem they implement.
RDP_RULES: dict[type, Callable[[dp_event.DpEvent, np.ndarray], np.ndarray]] = {}
PLD_RULES: dict[type, Callable[[dp_event.DpEvent, float], _pld.LossPmf]] = {}
# Optional per-instance refusals: ``check(event)`` returns None when the PLD rule
# covers the event, else the reason it does not (the PLD accountant then refuses
# the event, and "auto" accounting falls back to RDP).
PLD_CHECKS: dict[type, Callable[[dp_event.DpEvent], str | None]] = {}


def register_rdp(event_type: type, rule: Callable) -> None:
    """Let :class:`RdpAccountant` price ``event_type`` with ``rule(event, orders)``.

    Registering (or replacing) a rule forgets every answer cached in this process, and
    the rule's code enters the key of the on-disk cache (:func:`registry_digest`).
    """
    RDP_RULES[event_type] = rule
    _registry_changed()


def register_pld(event_type: type, rule: Callable, check: Callable | None = None) -> None:
    """Let :class:`PLDAccountant` price ``event_type`` with ``rule(event, h) -> LossPmf``.

    ``check(event)``, if given, returns None for the instances ``rule`` covers and
    otherwise a message saying why not; those instances are refused by PLD. As for
    :func:`register_rdp`, cached answers are forgotten.
    """
    PLD_RULES[event_type] = rule
    if check is None:
        PLD_CHECKS.pop(event_type, None)
    else:
        PLD_CHECKS[event_type] = check
    _registry_changed()


#: Bumped by every registration: accountants drop what they cached under older rules.
_REGISTRY = {"version": 0, "digest": None}


def _registry_changed() -> None:
    _REGISTRY["version"] += 1
    _REGISTRY["digest"] = None
    for cache in ("_RESULTS", "_COMPOSED", "_BASE_PLDS"):
        if cache in globals():  # not yet defined while this module loads
            globals()[cache].clear()


def _code_digest(code: types.CodeType, digest) -> None:
    digest.update(code.co_code)
    digest.update(repr(code.co_names).encode())
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            _code_digest(const, digest)
        else:
            digest.update(repr(const).encode())


def _function_digest(func: object, digest) -> None:
    """Qualified name, bytecode, defaults, closure values and module source of a rule.

    A callable whose code cannot be read (a builtin, a callable object, a closure over
    non-plain values) gets a per-process token: its answers are then never shared.
    """
    name = f"{getattr(func, '__module__', '?')}.{getattr(func, '__qualname__', '?')}"
    digest.update(name.encode())
    code = getattr(func, "__code__", None)
    if code is None:
        digest.update(repr(("opaque", id(func), _PROCESS_TOKEN)).encode())
        return
    _code_digest(code, digest)
    digest.update(repr(getattr(func, "__defaults__", None)).encode())
    for cell in getattr(func, "__closure__", None) or ():
        try:
            value = cell.cell_contents
        except ValueError:  # an empty cell
            value = None
        if value is None or isinstance(value, bool | int | float | str | type):
            digest.update(repr(value).encode())
        else:
            digest.update(repr(("opaque", id(value), _PROCESS_TOKEN)).encode())
    try:
        digest.update(inspect.getsource(inspect.getmodule(func)).encode())
    except (OSError, TypeError):
        digest.update(b"no module source")


_PROCESS_TOKEN = secrets.token_hex(16)


def registry_digest() -> str:
    """Digest of every registered pricing rule (event type, rule and check functions).

    Part of every key of the on-disk cache, so that a changed rule, wherever it is
    registered from, never meets an answer computed by another.
    """
    if _REGISTRY["digest"] is None:
        digest = hashlib.sha256()
        for table in (RDP_RULES, PLD_RULES, PLD_CHECKS):
            rows = sorted(table.items(), key=lambda kv: f"{kv[0].__module__}.{kv[0].__qualname__}")
            for event_type, rule in rows:
                digest.update(f"|{event_type.__module__}.{event_type.__qualname__}|".encode())
                _function_digest(rule, digest)
            digest.update(b"#")
        _REGISTRY["digest"] = digest.hexdigest()[:24]
    return _REGISTRY["digest"]


def _pld_refusal(event: dp_event.DpEvent) -> str | None:
    check = PLD_CHECKS.get(type(event))
    return None if check is None else check(event)


def _our_rdp(event: dp_event.DpEvent, orders: np.ndarray) -> np.ndarray | None:
    if type(event) in RDP_RULES:
        return np.asarray(RDP_RULES[type(event)](event, orders), dtype=float)
    if isinstance(event, ObjectivePerturbationDpEvent):
        return np.asarray(
            objpert_rdp(
                orders, sigma=event.sigma, lam=event.lam, beta=event.beta, lipschitz=event.lipschitz
            )
        )
    if isinstance(event, AmpDpEvent):
        return np.asarray(
            amp_rdp(
                orders,
                sigma=event.sigma,
                lam=event.lam,
                beta=event.beta,
                lipschitz=event.lipschitz,
                tau=event.tau,
                sigma_out=event.sigma_out,
            )
        )
    return None


def _our_loss_pmf(event: dp_event.DpEvent, h: float) -> _pld.LossPmf | None:
    if type(event) in PLD_RULES:
        return PLD_RULES[type(event)](event, h)
    if isinstance(event, ObjectivePerturbationDpEvent):
        return _pld.objpert_loss_pmf(event.sigma, event.lam, event.beta, event.lipschitz, h)
    if isinstance(event, AmpDpEvent):
        return _pld.amp_loss_pmf(
            event.sigma, event.lam, event.beta, event.lipschitz, event.tau, event.sigma_out, h
        )
    return None


_OURS = (ObjectivePerturbationDpEvent, AmpDpEvent)


def _ours_rdp(event) -> bool:
    return isinstance(event, _OURS) or type(event) in RDP_RULES


def _ours_pld(event) -> bool:
    return isinstance(event, _OURS) or type(event) in PLD_RULES


def _relation_error(event: dp_event.DpEvent, relation) -> _CompositionError:
    return _CompositionError(
        invalid_event=event,
        error_message=(
            f"{type(event).__name__} is analysed for add/remove neighbours only; construct "
            f"the accountant with NeighboringRelation.ADD_OR_REMOVE_ONE (found {relation})"
        ),
    )


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
        if _ours_rdp(event):
            if self.neighboring_relation is not _ADD_REMOVE:
                return _relation_error(event, self.neighboring_relation)
            if do_compose:
                self._rdp += count * _our_rdp(event, self._orders)
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
            return _relation_error(event, self.neighboring_relation)
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


def _contains_ours(event, ours: Callable = lambda e: isinstance(e, _OURS)) -> bool:
    """Whether an event of ours (objective perturbation or AMP by default) occurs in ``event``."""
    if ours(event):
        return True
    children = getattr(event, "events", None)
    if children is None:
        child = getattr(event, "event", None)
        children = [] if child is None else [child]
    return any(_contains_ours(e, ours) for e in children)


_BASE_PLDS: OrderedDict = OrderedDict()


def base_delta_from_pld(event, epsilons, h: float = 1e-4) -> np.ndarray | None:
    """delta(epsilon) of ``event`` by PLD accounting (upper bounds), None if PLD cannot price it.

    A data-independent random choice (:class:`RandomChoiceDpEvent`) gets the largest
    delta of its options: H_a is jointly convex, so a mixture with the same weights
    on both neighbours is at most the largest option's.
    """
    epsilons = np.atleast_1d(np.asarray(epsilons, dtype=float))
    if isinstance(event, RandomChoiceDpEvent):
        parts = [base_delta_from_pld(e, epsilons, h) for e in event.events]
        return None if any(p is None for p in parts) else np.max(parts, axis=0)
    try:
        key = (_event_key(event), h)
    except _Uncacheable:
        key = None
    front = None if key is None else _BASE_PLDS.get(key)
    if front is None:
        front = PrivacyAccountant("pld", value_discretization_interval=h)
        try:
            front.compose(event)
        except (UnsupportedEventError, ValueError):
            return None
        if key is not None:
            _BASE_PLDS[key] = front
            while len(_BASE_PLDS) > 32:
                _BASE_PLDS.popitem(last=False)
    if key is not None:
        _BASE_PLDS.move_to_end(key)
    order = np.argsort(epsilons)  # dp_accounting wants ascending epsilons
    try:
        plds = front._plds()
    except _pld.GridTooLargeError:
        return None  # too wide for a PLD grid: the RDP conversion alone prices it
    curves = [np.asarray(acc._pld.get_delta_for_epsilon(epsilons[order])) for acc in plds]
    out = np.empty(epsilons.size)
    out[order] = np.minimum.reduce(curves)
    return out


class PLDAccountant(pld_privacy_accountant.PLDAccountant):
    """dp_accounting's PLD accountant extended with objective perturbation and AMP.

    Objective perturbation enters through its dominating pair (Redberg, Koskela & Wang,
    arXiv 2401.00583, App. D.3), AMP through that pair composed with its Gaussian output
    step (their §D.3.1); both
    also under Poisson subsampling (:func:`dpconvex.accounting.pld.poisson_subsample`).
    Discretization is pessimistic, so reported epsilons are upper bounds.

    ``subsampled_add_pair`` picks the add-direction pair of our Poisson-subsampled
    events, ``"thm11"`` (Zhu, Dong & Wang 2022, Thm 11) or ``"mixture"``
    (P, (1-q)P + qQ); both are valid (:func:`dpconvex.accounting.pld.poisson_subsample`).
    After composition, ``used_subsampled_pair`` tells whether the choice mattered.
    """

    def __init__(
        self,
        neighboring_relation: NeighboringRelation = _ADD_REMOVE,
        value_discretization_interval: float = 1e-4,
        subsampled_add_pair: str = "thm11",
    ):
        super().__init__(neighboring_relation, value_discretization_interval)
        if subsampled_add_pair not in _pld.ADD_PAIRS:
            raise ValueError(
                f"subsampled_add_pair must be one of {_pld.ADD_PAIRS}, got {subsampled_add_pair!r}"
            )
        self.subsampled_add_pair = subsampled_add_pair
        self.used_subsampled_pair = False

    def supports(self, event: dp_event.DpEvent) -> bool:
        """Whether ``event`` can be composed: checked with its real counts (dp_accounting
        checks with count 0, which hides a Gaussian composed too often for the grid)."""
        return self._maybe_compose(event, 1, False) is None

    def _our_loss_pmfs(self, event) -> tuple[_pld.LossPmf, _pld.LossPmf | None]:
        """(remove, add) PLRVs of one of our events (add None: symmetric)."""
        h = self._value_discretization_interval
        if isinstance(event, dp_event.PoissonSampledDpEvent):
            q = event.sampling_probability
            self.used_subsampled_pair |= 0 < q < 1
            return _pld.poisson_subsample(
                _our_loss_pmf(event.event, h), q, self.subsampled_add_pair
            )
        return _our_loss_pmf(event, h), None

    def _compose_ours(self, remove: _pld.LossPmf, add: _pld.LossPmf | None, count: int) -> None:
        """Compose ``count`` copies of our PLRVs into the running PLD, with certified round-off.

        dp_accounting's ``self_compose`` is a plain FFT power, whose round-off
        (~count * 1e-16 in the low Fourier modes, i.e. ~1e-18 of possibly
        negative mass in every bin) is not pessimistic at large epsilon; the
        composition here goes through :func:`dpconvex.accounting.pld.compose_counts`,
        whose every bin is a proven upper bound, in one step with the running PLD.
        """
        current = self._pld
        cur_remove = _as_loss_pmf(current._pmf_remove)
        new_remove = _pld.compose_counts([(cur_remove, 1), (remove, count)])
        if add is None and current._symmetric:
            self._pld = _pld.to_pld(new_remove)
            return
        cur_add = cur_remove if current._symmetric else _as_loss_pmf(current._pmf_add)
        new_add = _pld.compose_counts([(cur_add, 1), (remove if add is None else add, count)])
        self._pld = _pld.to_pld(new_remove, new_add)

    def _maybe_compose(self, event, count, do_compose):
        inner = event.event if isinstance(event, dp_event.PoissonSampledDpEvent) else event
        if _ours_pld(inner):
            if self.neighboring_relation is not _ADD_REMOVE:
                return _relation_error(inner, self.neighboring_relation)
            refusal = _pld_refusal(inner)
            if refusal is not None:
                return _CompositionError(invalid_event=inner, error_message=refusal)
            if do_compose and not (
                isinstance(event, dp_event.PoissonSampledDpEvent)
                and event.sampling_probability == 0
            ):
                self._compose_ours(*self._our_loss_pmfs(event), count)
            return None
        if isinstance(inner, dp_event.GaussianDpEvent):
            z = inner.noise_multiplier
            if inner is event and z > 0 and count > 0:  # count Gaussians are one
                z = z / math.sqrt(count)
            refusal = _gaussian_grid_refusal(z, self._value_discretization_interval)
            if refusal is not None:
                return _CompositionError(invalid_event=inner, error_message=refusal)
            if self._compose_gaussian(event, count, do_compose):
                return None
        refusal = _grid_refusal(event, self._value_discretization_interval)
        if refusal is not None:
            return _CompositionError(invalid_event=event, error_message=refusal)
        if do_compose and count > 1 and not isinstance(event, _STRUCTURE):
            return self._compose_leaf(event, count)
        return super()._maybe_compose(event, count, do_compose)

    def _compose_leaf(self, event, count: int):
        """``count`` compositions of one of dp_accounting's events, with certified round-off.

        dp_accounting builds the event's PLD; its ``count``-fold composition (with the
        running PLD) goes through :func:`dpconvex.accounting.pld.compose_counts`, whose
        window is bounded before anything is allocated (dp_accounting's own
        ``self_compose`` tried to allocate terabytes for 10^9 Laplace mechanisms).
        """
        single = PLDAccountant(
            self.neighboring_relation, self._value_discretization_interval, self.subsampled_add_pair
        )
        error = single._maybe_compose(event, 1, True)
        if error is not None:
            return error
        self.used_subsampled_pair |= single.used_subsampled_pair
        if single._contains_non_dp_event:
            self._contains_non_dp_event = True
            return None
        pld = single._pld
        add = None if pld._symmetric else _as_loss_pmf(pld._pmf_add)
        self._compose_ours(_as_loss_pmf(pld._pmf_remove), add, count)
        return None

    def _compose_gaussian(self, event, count: int, do_compose: bool) -> bool:
        """Compose a (Poisson-subsampled) Gaussian with the numpy-built PLD; False: not handled.

        The PMF dp_accounting builds (:mod:`dpconvex.accounting.gaussian_pld`), four to
        five times faster, composed ``count`` times and with the running PLD by
        :func:`dpconvex.accounting.pld.compose_counts`, whose bins are certified upper
        bounds (dp_accounting's plain FFT power can fall below the true delta at small
        deltas). ``count`` unsubsampled Gaussians of noise z are one Gaussian of noise
        z / sqrt(count), exactly. Other neighbouring relations and zero noise go to
        dp_accounting.
        """
        sampled = isinstance(event, dp_event.PoissonSampledDpEvent)
        z = (event.event if sampled else event).noise_multiplier
        q = event.sampling_probability if sampled else 1.0
        if self.neighboring_relation is not _ADD_REMOVE or not z > 0 or not 0 < q <= 1:
            return False
        if do_compose:
            h = self._value_discretization_interval
            if _pld.approximate.get():  # a calibration's search only: fast, not certified
                if q < 1:
                    self._pld = self._pld.compose(approximate_gaussian_pld(z, h, q, count))
                else:
                    self._pld = self._pld.compose(approximate_gaussian_pld(z / math.sqrt(count), h))
            elif q < 1:
                self._compose_ours(*gaussian_loss_pmfs(z, h, q), count)
            else:  # k Gaussians of noise z are one Gaussian of noise z / sqrt(k)
                self._compose_ours(gaussian_loss_pmfs(z / math.sqrt(count), h)[0], None, 1)
        return True


def _gaussian_grid_refusal(noise_multiplier: float, h: float) -> str | None:
    """Why a Gaussian of this noise multiplier cannot be put on a PLD grid of step h, or None.

    Its privacy loss at x standard deviations from the mean is 1/(2 s^2) +- x/s, so the
    grid spans about 2 (1/(2 s^2) + 10/s) / h points; a tiny s (say 1e-5 at h = 1e-4)
    would need about 1e14 of them, where dp_accounting tries to allocate the array.
    """
    s = float(noise_multiplier)
    if not s > 0:
        return None  # left to the event checks
    points = grid_points(s, h)
    cap = _pld.current_grid_cap()
    if points <= cap:
        return None
    shown = f"{points:.2g}" if math.isfinite(points) else "more than 1e300"
    return (
        f"noise multiplier {s:.3g} is too small for PLD accounting at grid step {h:g}: it "
        f"needs {shown} grid points (at most {cap:.0e}); raise the noise or "
        "the grid step, or use RDP accounting"
    )


#: Events whose structure dp_accounting's accountant walks (not priced themselves).
_STRUCTURE = (
    dp_event.ComposedDpEvent,
    dp_event.SelfComposedDpEvent,
    dp_event.NoOpDpEvent,
    dp_event.NonPrivateDpEvent,
)


def _grid_refusal(event, h: float) -> str | None:
    """Why dp_accounting's PLD of ``event`` would need too many grid points, or None.

    The Laplace mechanism of parameter b has privacy losses in [-1/b, 1/b], the
    discrete Laplace of parameter a and sensitivity k in [-a k, a k]; dp_accounting
    allocates the whole range.
    """
    if isinstance(event, dp_event.LaplaceDpEvent) and event.noise_multiplier > 0:
        span, what = 2.0 / event.noise_multiplier, "the Laplace mechanism"
    elif isinstance(event, dp_event.DiscreteLaplaceDpEvent):
        span, what = 2.0 * event.noise_parameter * event.sensitivity, "the discrete Laplace"
    else:
        return None
    try:
        _pld.check_grid_points(span / h + 3, what, h)
    except _pld.GridTooLargeError as error:
        return str(error)
    return None


def _as_loss_pmf(pmf) -> _pld.LossPmf:
    """A dp_accounting PLD PMF (sparse or dense) as a :class:`~dpconvex.accounting.pld.LossPmf`.

    A sparse PMF is made dense only after its span is checked (:data:`pld.MAX_GRID_POINTS`).
    """
    losses = getattr(pmf, "_loss_probs", None)
    if losses:
        span = max(losses) - min(losses)
        _pld.check_grid_points(span + 1, "this mechanism", pmf._discretization)
    dense = pmf.to_dense_pmf()
    return _pld.LossPmf(
        dense._discretization,
        int(dense._lower_loss),
        np.asarray(dense._probs, dtype=float),
        float(dense._infinity_mass),
    )


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
        self._registry = _REGISTRY["version"]

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
        if self._registry != _REGISTRY["version"]:
            self._cache.clear()
            self._registry = _REGISTRY["version"]

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
        try:  # the same public ledger on the same grid was composed before in this process
            key = (_event_key(self.ledger), self._h, slack)
        except _Uncacheable:
            key = None
        if key is not None and (plds := _COMPOSED.get(key)) is not None:
            done[slack] = plds
            return plds
        token = _pld.slack_budget.set(min(slack, _pld.UNTILTED_SLACK))
        approximate = _pld.approximate.set(slack == math.inf)
        try:
            acc = PLDAccountant(value_discretization_interval=self._h)
            acc.compose(self.ledger)
            plds = (acc,)
            if acc.used_subsampled_pair:
                alt = PLDAccountant(
                    value_discretization_interval=self._h, subsampled_add_pair="mixture"
                )
                plds = (acc, alt.compose(self.ledger))
            done[slack] = plds
        finally:
            _pld.slack_budget.reset(token)
            _pld.approximate.reset(approximate)
        if key is not None:
            _COMPOSED.put(key, plds)
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
            self._orders.tobytes(), self._h, _pld.UNTILTED_SLACK, registry_digest(),
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


# -- results of identical queries are computed once per process --------------------------


class _Uncacheable(Exception):
    """An event field whose value is not a plain number, string or event."""


def _event_key(value):
    """An exact, hashable description of an event tree (type and every field), public only.

    Only plain values (numbers, strings, None), dp_accounting events (attrs classes)
    and lists of them are accepted; anything else raises :class:`_Uncacheable`, and
    the query is then computed without the cache. Forms every accountant prices
    alike share a key: a composition of one event is that event, and ``b``
    self-compositions of ``a`` self-compositions of E are ``a b`` of E.
    """
    if isinstance(value, dp_event.ComposedDpEvent) and len(value.events) == 1:
        return _event_key(value.events[0])
    if isinstance(value, dp_event.SelfComposedDpEvent):
        inner, count = value.event, value.count
        while isinstance(inner, dp_event.SelfComposedDpEvent):
            inner, count = inner.event, count * inner.count
        while isinstance(inner, dp_event.ComposedDpEvent) and len(inner.events) == 1:
            inner = inner.events[0]
        if count == 1:
            return _event_key(inner)
        if inner is not value.event:
            return _event_key(dp_event.SelfComposedDpEvent(inner, count))
    if value is None or isinstance(value, (bool, int, float, str)):
        return (type(value).__name__, value)
    if isinstance(value, np.floating | np.integer):
        return (type(value).__name__, value.item())
    if isinstance(value, list | tuple):
        return ("seq", tuple(_event_key(x) for x in value))
    if isinstance(value, dp_event.DpEvent) and attr.has(type(value)):
        cls = type(value)
        fields = tuple((f.name, _event_key(getattr(value, f.name))) for f in attr.fields(cls))
        return (f"{cls.__module__}.{cls.__qualname__}", fields)
    raise _Uncacheable(type(value).__name__)


_BLAS: list = []


def _one_blas_thread():
    """Context: BLAS on one thread, so that an answer's last bits do not depend on the
    process's thread count (a search's runs in joblib workers must calibrate exactly as
    the main process did; the matrices here are small, one thread loses nothing)."""
    if not _BLAS:
        from threadpoolctl import ThreadpoolController

        _BLAS.append(ThreadpoolController())
    return _BLAS[0].limit(limits=1, user_api="blas")


#: Whether queries may answer approximately (1), also from the on-disk cache (2), or
#: only with computed answers (0, the default): see :func:`search_hints`.
_HINTS: contextvars.ContextVar[int] = contextvars.ContextVar("accounting_hints", default=0)


@contextlib.contextmanager
def search_hints(disk: bool = True) -> Iterator[None]:
    """Within: accountant queries may answer approximately, or from the on-disk cache.

    For the *search* of a calibration only. PLD queries compose Gaussians by a plain
    FFT power (dp_accounting's algorithm: fast, accurate at moderate deltas, not
    certified), and a stored answer may be read from disk unverified; either guides
    the search to the next candidate. The calibration then checks the candidate it
    returns with queries made outside this context: certified, computed in this
    process (or taken from the in-process cache, which holds only such answers).
    Never wrap a query whose answer is reported or released. ``disk=False`` keeps
    the approximations but not the disk (a search after a failed check).
    """
    token = _HINTS.set(2 if disk else 1)
    try:
        yield
    finally:
        _HINTS.reset(token)


def stored_answers_read() -> int:
    """How many answers queries have taken from the on-disk cache in this process."""
    return _RESULTS.hints


def _plausible(key, value: float) -> bool:
    """A stored answer of the right kind: a delta in [0, 1], an epsilon >= 0."""
    if not (value >= 0):  # NaN too
        return False
    return key[0] != "delta" or value <= 1.0


class _ResultCache:
    """Process-wide LRU of (query, public parameters) -> epsilon or delta.

    Every input of a query is public (the event's parameters, the accounting and its
    settings, the delta or epsilon asked for), so a repeated query (a calibration that
    prices the same candidate twice, an estimator reporting the epsilon its calibration
    already computed, a second fit with the same settings) returns the first answer
    instead of composing again. The value is the one the accountant computed in this
    process; nothing about privacy changes. With the optional on-disk cache on
    (:mod:`dpconvex.accounting.disk_cache`) answers are also written to disk, and read
    back only as hints inside :func:`search_hints`: a value from disk is never kept
    here, never reported, and an entry that disagrees with a recomputation turns the
    disk cache off for the process.
    """

    def __init__(self, size: int = 4096):
        self._size = size
        self._data: OrderedDict = OrderedDict()
        self._approximate: OrderedDict = OrderedDict()  # answers for searches only
        self._lock = threading.Lock()
        self.hits = 0
        self.hints = 0

    def lookup(self, key, compute, approximate=None):
        """The answer to the query ``key``: ``compute()`` unless known.

        Inside :func:`search_hints`, a query that can be approximated is answered by
        ``approximate()`` (or its stored value, kept apart from computed answers, or
        read from the disk cache): a search then sees the same consistent answers
        whatever was computed before. Outside, only answers computed in this process
        are returned.
        """
        hinted = _HINTS.get()
        if hinted and approximate is not None:
            return self._approximation(key, approximate, hinted > 1)
        if key is None:
            return compute()
        with self._lock:
            if key in self._data:
                self._data.move_to_end(key)
                self.hits += 1
                return self._data[key]
        if hinted > 1 and (hint := self._stored(key, key)) is not None:
            return hint
        with _one_blas_thread():
            value = compute()
        self._record(key, value)
        with self._lock:
            self._data[key] = value
            if len(self._data) > self._size:
                self._data.popitem(last=False)
        return value

    def _stored(self, key, stored) -> float | None:
        """A plausible answer to ``key`` read from the disk cache under ``stored``, or None."""
        hint = disk_cache.get(stored)  # None unless the optional on-disk cache is on
        if hint is None or not _plausible(key, hint):
            return None
        self.hints += 1
        return hint

    def _approximation(self, key, approximate, disk: bool) -> float:
        if key is None:
            with _one_blas_thread():
                return approximate()
        with self._lock:
            if key in self._approximate:
                self._approximate.move_to_end(key)
                return self._approximate[key]
        stored = ("approximate", key)
        if disk and (hint := self._stored(key, stored)) is not None:
            return hint
        with _one_blas_thread():
            value = approximate()
        with self._lock:
            self._approximate[key] = value
            if len(self._approximate) > self._size:
                self._approximate.popitem(last=False)
        self._record(stored, value)
        return value

    @staticmethod
    def _record(key, value: float) -> None:
        """Write ``value`` to disk; an entry there that disagrees means the cache cannot be
        trusted even as a hint (forged with the user's key, or stale), so it is dropped."""
        stored = disk_cache.get(key)
        if stored is not None and not math.isclose(stored, value, rel_tol=1e-9, abs_tol=1e-300):
            disk_cache.distrust("an entry disagreed with the answer recomputed here")
            return
        if stored is None:
            disk_cache.put(key, value)

    def clear(self) -> None:
        with self._lock:
            self._data.clear()
            self._approximate.clear()


_RESULTS = _ResultCache()


class _ComposedCache:
    """Process-wide LRU of composed PLDs, keyed by (public ledger, grid step, round-off slack).

    A calibration composes the noise it returns; the fit's epsilon report then asks
    the same ledger for epsilon instead of delta, and reads the PLD already composed.
    A few entries only: a composed PLD can hold 10^5 - 10^6 grid points.
    """

    def __init__(self, size: int = 8):
        self._size = size
        self._data: OrderedDict = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key):
        with self._lock:
            if key in self._data:
                self._data.move_to_end(key)
                return self._data[key]
        return None

    def put(self, key, plds) -> None:
        with self._lock:
            self._data[key] = plds
            while len(self._data) > self._size:
                self._data.popitem(last=False)

    def clear(self) -> None:
        with self._lock:
            self._data.clear()


_COMPOSED = _ComposedCache()


def _new_locks_in_child() -> None:
    """A fork taken while another thread held a cache's lock must not inherit it locked.

    The entries stay: they were computed by this same code from public inputs.
    """
    for cache in (_RESULTS, _COMPOSED):
        cache._lock = threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_new_locks_in_child)
