"""The pricing rules: one table through which every event of dpconvex is priced.

An RDP rule maps (event, orders) to the event's RDP curve at those orders; a PLD rule
maps (event, grid step h) to its pessimistic privacy-loss random variable
(:class:`dpconvex.accounting.pld.LossPmf`, symmetric in add/remove; Poisson subsampling
of the event then works too). Both must hold for add/remove neighbours and cite the
theorem they implement. The accountants (:mod:`dpconvex.accounting.accountants`,
:mod:`dpconvex.accounting.pld_accountant`) look events up here and hand every other
event (Gaussian, Laplace, compositions, ...) to dp_accounting. Objective perturbation and
AMP are registered at the end of this module like any other event; other modules
register theirs on import (:mod:`dpconvex.accounting.discrete`, ``dpconvex.bcd.events``,
``dpconvex.sco.events``, ...).
"""

from __future__ import annotations

import hashlib
import inspect
import secrets
import types
from collections.abc import Callable

import numpy as np
from dp_accounting import dp_event, privacy_accountant

from . import pld as _pld
from .events import AmpDpEvent, ObjectivePerturbationDpEvent
from .objpert import amp_rdp, objpert_rdp

_CompositionError = privacy_accountant.PrivacyAccountant.CompositionErrorDetails

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
    for forget in _ON_CHANGE:
        forget()


def version() -> int:
    """How many registrations this process has seen: accountants compare it to forget answers."""
    return _REGISTRY["version"]


#: Called (without arguments) after every registration: the caches forget their answers.
_ON_CHANGE: list[Callable[[], None]] = []


def on_change(forget: Callable[[], None]) -> None:
    """Call ``forget()`` whenever a rule is registered or replaced."""
    _ON_CHANGE.append(forget)


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


def prices_rdp(event: dp_event.DpEvent) -> bool:
    """Whether a registered rule gives the RDP curve of ``event`` (its exact type)."""
    return type(event) in RDP_RULES


def prices_pld(event: dp_event.DpEvent) -> bool:
    """Whether a registered rule gives the privacy-loss distribution of ``event``."""
    return type(event) in PLD_RULES


def event_rdp(event: dp_event.DpEvent, orders: np.ndarray) -> np.ndarray:
    """RDP curve of a registered event at ``orders``."""
    return np.asarray(RDP_RULES[type(event)](event, orders), dtype=float)


def event_loss_pmf(event: dp_event.DpEvent, h: float) -> _pld.LossPmf:
    """Pessimistic privacy-loss random variable of a registered event on grid step ``h``."""
    return PLD_RULES[type(event)](event, h)


def pld_refusal(event: dp_event.DpEvent) -> str | None:
    """Why the PLD rule of ``event`` does not cover this instance, or None."""
    check = PLD_CHECKS.get(type(event))
    return None if check is None else check(event)


def relation_error(event: dp_event.DpEvent, relation) -> _CompositionError:
    """The refusal of a registered event under neighbours other than add/remove."""
    return _CompositionError(
        invalid_event=event,
        error_message=(
            f"{type(event).__name__} is analysed for add/remove neighbours only; construct "
            f"the accountant with NeighboringRelation.ADD_OR_REMOVE_ONE (found {relation})"
        ),
    )


# -- objective perturbation and AMP: Redberg, Koskela & Wang (arXiv 2401.00583) ----------


def _objpert_rdp(event: ObjectivePerturbationDpEvent, orders: np.ndarray) -> np.ndarray:
    """Objective perturbation's RDP: Redberg, Koskela & Wang, Thm 3.2."""
    return objpert_rdp(
        orders, sigma=event.sigma, lam=event.lam, beta=event.beta, lipschitz=event.lipschitz
    )


def _amp_rdp(event: AmpDpEvent, orders: np.ndarray) -> np.ndarray:
    """AMP's RDP: Redberg, Koskela & Wang, Thm 4.1."""
    return amp_rdp(
        orders,
        sigma=event.sigma,
        lam=event.lam,
        beta=event.beta,
        lipschitz=event.lipschitz,
        tau=event.tau,
        sigma_out=event.sigma_out,
    )


def _objpert_loss_pmf(event: ObjectivePerturbationDpEvent, h: float) -> _pld.LossPmf:
    """Objective perturbation's dominating pair: Redberg, Koskela & Wang, App. D.3."""
    return _pld.objpert_loss_pmf(event.sigma, event.lam, event.beta, event.lipschitz, h)


def _amp_loss_pmf(event: AmpDpEvent, h: float) -> _pld.LossPmf:
    """AMP: that pair composed with its Gaussian output step (Redberg et al., §D.3.1)."""
    return _pld.amp_loss_pmf(
        event.sigma, event.lam, event.beta, event.lipschitz, event.tau, event.sigma_out, h
    )


register_rdp(ObjectivePerturbationDpEvent, _objpert_rdp)
register_pld(ObjectivePerturbationDpEvent, _objpert_loss_pmf)
register_rdp(AmpDpEvent, _amp_rdp)
register_pld(AmpDpEvent, _amp_loss_pmf)
