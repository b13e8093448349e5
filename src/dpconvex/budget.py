"""A privacy budget that survives: a ledger of spent events in SQLite, shared by processes.

``Budget(path, epsilon, delta)`` opens (or creates) a ledger. :meth:`Budget.spend`
validates the event, prices it together with every recorded event and, if the total
would exceed the budget, refuses before the mechanism runs. The decision is taken
inside the ledger's write transaction (``BEGIN IMMEDIATE``) on the entries as they
then stand.

What a ledger guarantees depends on its ``accounting``, fixed when it is created:

* **Composition** (``"auto"``, the default, ``"pld"``, ``"rdp"``): a spend is admitted
  while the privacy-loss-distribution (or best-order Renyi DP) composition of every
  recorded event and the new one is within (epsilon, delta). This is a valid bound
  when the list of events (their types and parameters) is fixed before the first one
  runs; each mechanism may still be chosen from earlier outputs as long as its event
  is the one planned (adaptive composition: Dong, Roth & Su 2022, arXiv 1905.02383,
  Thm 3.2; Mironov 2017, arXiv 1702.07476, Prop. 1). When the events themselves are
  chosen from earlier outputs and the running total decides when to stop, the ledger
  is a "natural filter", which is not a valid privacy filter in general (Regehr et al.
  2026, arXiv 2602.15815; Tran et al. 2026, arXiv 2602.06756; the setting is Rogers,
  Roth, Ullman & Vadhan 2016, arXiv 1605.08294); nor is a Renyi order chosen after
  the fact.
* **Renyi filter** (``"renyi-filter"``): one Renyi order alpha is fixed at creation,
  and a spend is admitted only if the recorded events' RDP at alpha plus its own stays
  at most ``B = epsilon - log(1 - 1/alpha) + (log delta + log alpha)/(alpha - 1)``.
  By Feldman & Zrnic 2021 ("Individual Privacy Accounting via a Renyi Filter", arXiv
  2008.11193, Thm 3.1) the whole interaction, however adaptively its events are
  chosen and whenever it stops, is (alpha, B)-RDP, and (alpha, B)-RDP is
  (epsilon, delta)-DP (Balle et al. 2020, arXiv 1905.09982, Thm 21; Canonne, Kamath
  & Steinke 2020, arXiv 2004.00010, Prop. 12). See :func:`renyi_filter_budget` and
  :func:`default_filter_order`.

How the ledger keeps its records:

* **A spend that returned is recorded.** Rollback-journal mode (``journal_mode=
  DELETE``, ``synchronous=FULL``): locks are POSIX locks on the database file itself,
  so every process that opens the file takes the same locks. A process killed
  mid-write leaves the ledger as it was before that write (SQLite's atomic commit);
  the next open rolls the unfinished write back, even one that only reads.
* **Short lock.** A spend prices the new total from a snapshot read outside the write
  lock, then takes the lock and checks that the chain's head is unchanged (else it
  prices again); only the check and the insert run with the lock held.
* **One file, one name.** The path is resolved through symlinks, and a ledger file
  with more than one hard link is refused (its journal would be looked up under a
  different name by each alias).
* **Fork-safe.** No connection outlives a call, and ``os.register_at_fork`` makes a
  fork wait until no thread of this process is inside a ledger call.
* **No refunds.** Every event is validated (positive integer counts, finite positive
  noise, sampling rates in (0, 1], an event type the ledger can load back) before it
  is priced; labels and mechanism names with control characters are refused.
* **Tamper evidence.** Each entry carries a SHA-256 hash chained to the previous
  entry and to the budget itself (with its accounting and filter order); the chain's
  head (entry count and last hash) is kept with the budget. Editing, deleting or
  inserting an entry, or editing the budget, is found on open and makes
  :meth:`Budget.spend` refuse until the owner calls :meth:`Budget.acknowledge_tampering`
  (``dpconvex budget acknowledge``). The chain has no secret key: it catches careless
  edits and lost rows, not an adversary who can rewrite the file and recompute it.
* **Copies are not detectable in general.** A copy of the ledger, or an older copy
  restored over it, is a whole valid ledger: spends recorded in one copy do not count
  in the other, and a restored copy gives back what was spent since it was taken.
  The ledger records a random id and the file's inode at creation and warns
  (:class:`LedgerFileWarning`) when it is opened as a different file (``cp``, a
  restore by ``mv`` or ``rsync``); a rename keeps the inode and is not reported, and
  a restore that overwrites the file in place (``cp old ledger``) keeps it too.

Charges are final: a mechanism that fails after its spend keeps its charge (its
failure may itself depend on the data).
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import sqlite3
import threading
import time
import unicodedata
import urllib.parse
import uuid
import warnings
from collections import OrderedDict
from contextlib import contextmanager
from dataclasses import dataclass
from numbers import Integral, Real
from pathlib import Path

import numpy as np
from dp_accounting.dp_event import (
    ComposedDpEvent,
    DpEvent,
    RepeatAndSelectDpEvent,
    SelfComposedDpEvent,
)
from scipy.optimize import minimize_scalar

from . import _validation as v
from .accounting import (
    DEFAULT_RDP_ORDERS,
    PrivacyAccountant,
    UnsupportedEventError,
    check_epsilon,
)
from .accounting.event_checks import validate_event
from .accounting.serialization import event_from_dict, event_to_dict

#: Smallest delta a ledger accepts. Smaller targets make the accountants' tails (and
#: their memory) grow without bound, for no meaningful difference in protection.
MIN_DELTA = 1e-100

#: Longest stored event text a ledger reads (a DP-SGD search's event is a few kB).
MAX_EVENT_TEXT = 1 << 24

#: Chain format (the genesis of a composition ledger is hashed with this number).
FORMAT = 2

#: The accounting of a ledger that is a fixed-order Renyi privacy filter.
RENYI_FILTER = "renyi-filter"
ACCOUNTINGS = ("auto", "pld", "rdp", RENYI_FILTER)

#: Renyi orders a filter accepts: above 1, at most this.
MAX_FILTER_ORDER = 1e6

#: Longest label or mechanism name a spend accepts (characters).
MAX_NAME = 1000

#: Latest clock reading a spend records: 9999-12-31 23:59:59 UTC.
MAX_CLOCK = 253402300799.0

# Unicode categories refused in labels and escaped on display: controls (ANSI
# escapes, newlines), format characters (bidirectional overrides, zero-width),
# surrogates, line and paragraph separators.
_UNSAFE_CATEGORIES = frozenset({"Cc", "Cf", "Cs", "Zl", "Zp"})

# A spend prices from a snapshot outside the write lock this many times before it
# prices with the lock held (which always makes progress).
_OPTIMISTIC_TRIES = 3

_SCHEMA = """
CREATE TABLE IF NOT EXISTS budget (id INTEGER PRIMARY KEY CHECK (id = 1),
    epsilon REAL NOT NULL, delta REAL NOT NULL, accounting TEXT NOT NULL, created REAL NOT NULL,
    format INTEGER, head_count INTEGER, head_hash TEXT, rdp_order REAL, ledger_id TEXT,
    inode INTEGER, device INTEGER);
CREATE TABLE IF NOT EXISTS entries (id INTEGER PRIMARY KEY AUTOINCREMENT,
    time REAL NOT NULL, mechanism TEXT NOT NULL, label TEXT NOT NULL,
    event TEXT NOT NULL, epsilon_after REAL NOT NULL, hash TEXT, rdp_after REAL);
CREATE TABLE IF NOT EXISTS acknowledgments (id INTEGER PRIMARY KEY AUTOINCREMENT,
    time REAL NOT NULL, finding TEXT NOT NULL);
"""

_ENTRY_COLUMNS = "id, time, mechanism, label, event, epsilon_after, hash, rdp_after"


class BudgetExceededError(RuntimeError):
    """The spend would take the ledger over its budget; nothing was recorded."""


class LedgerError(RuntimeError):
    """The ledger file cannot be used safely (aliased, unreadable, unwritable, full)."""


class LedgerTamperedError(LedgerError):
    """The ledger's hash chain is broken; spending waits for an acknowledgment."""


class LedgerFileWarning(UserWarning):
    """The ledger is not the file it was created as (a copy, a restore, a move)."""


@dataclass(frozen=True)
class Entry:
    """One recorded spend. ``rdp_after`` is the filter's Renyi sum (filter ledgers only)."""

    id: int
    time: float
    mechanism: str
    label: str
    event: DpEvent
    epsilon_after: float
    rdp_after: float | None = None


# --- fork safety --------------------------------------------------------------------
_CALL_LOCK = threading.Lock()


def _reset_lock_in_child() -> None:
    global _CALL_LOCK
    _CALL_LOCK = threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(
        before=lambda: _CALL_LOCK.acquire(),
        after_in_parent=lambda: _CALL_LOCK.release(),
        after_in_child=_reset_lock_in_child,
    )


# --- values ---------------------------------------------------------------------------
def _budget_number(name: str, value: object) -> float:
    """A float from a real number; bools and strings are refused, float32 keeps its digits."""
    if isinstance(value, bool | np.bool_) or not isinstance(value, Real | Integral):
        raise ValueError(f"{name} must be a number, got {value!r}")
    if isinstance(value, np.floating) and np.finfo(value.dtype).bits < 64:
        value = float(str(value))  # np.float32(0.1) means 0.1, not 0.10000000149
    return v.finite(name, value)


def _check_delta(delta: object) -> float:
    delta = v.probability_open("delta", _budget_number("delta", delta))
    if delta < MIN_DELTA:
        raise ValueError(
            f"delta={delta:g} is below {MIN_DELTA:g}, the smallest delta a ledger accepts"
        )
    return delta


def _check_name(name: str, value: object) -> str:
    """A label or mechanism name: a string without control characters, at most MAX_NAME long."""
    text = str(value)
    if len(text) > MAX_NAME:
        raise ValueError(f"{name} has {len(text)} characters; a ledger keeps at most {MAX_NAME}")
    for char in text:
        if unicodedata.category(char) in _UNSAFE_CATEGORIES:
            raise ValueError(
                f"{name} contains the control character U+{ord(char):04X}; labels and mechanism "
                "names are printed by `dpconvex budget show`, so use printable text"
            )
    return text


def _clock() -> float:
    """The time to record; refuses a clock that is not a date between 1970 and 9999."""
    now = time.time()
    if not (isinstance(now, Real) and math.isfinite(now) and 0.0 <= now <= MAX_CLOCK):
        raise LedgerError(
            f"the system clock reads {now!r}, not a time between 1970 and 9999; nothing "
            "was spent. Fix the clock and try again."
        )
    return float(now)


# --- display-safe values (a ledger file may hold anything) -----------------------------
def safe_text(value: object, limit: int = 200) -> str:
    """``value`` as printable text: control characters escaped, at most ``limit`` characters.

    A ledger file can be edited by anyone who can write it, so every string read from
    it (labels, mechanism names, findings) goes through this before it is printed.
    """
    text = value if isinstance(value, str) else repr(value)
    out = []
    for char in text[: limit + 1]:
        if unicodedata.category(char) in _UNSAFE_CATEGORIES:
            code = ord(char)
            out.append(f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}")
        else:
            out.append(char)
    shown = "".join(out)
    return shown if len(text) <= limit else shown[:limit] + "..."


def safe_time(value: object) -> str:
    """A recorded time as ``YYYY-MM-DD HH:MM:SS UTC``, or ``invalid time`` when it is not one."""
    if isinstance(value, bool) or not isinstance(value, Real):
        return "invalid time"
    seconds = float(value)
    if not (math.isfinite(seconds) and 0.0 <= seconds <= MAX_CLOCK):
        return f"invalid time ({seconds:.6g})"
    return time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(seconds))


def _time_value(value: object) -> float:
    """A stored time as a float (NaN when the file holds something else)."""
    finite = _finite_or_none(value)
    return math.nan if finite is None else finite


def _finite_or_none(value: object) -> float | None:
    if isinstance(value, bool) or not isinstance(value, Real):
        return None
    value = float(value)
    return value if math.isfinite(value) else None


# --- the Renyi filter --------------------------------------------------------------------
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


class _Memo:
    """A small LRU of pure functions of public values (event JSON -> event, -> RDP)."""

    def __init__(self, size: int = 4096):
        self._data: OrderedDict = OrderedDict()
        self._size = size
        self._lock = threading.Lock()

    def get(self, key, compute):
        with self._lock:
            if key in self._data:
                self._data.move_to_end(key)
                return self._data[key]
        value = compute()
        with self._lock:
            self._data[key] = value
            while len(self._data) > self._size:
                self._data.popitem(last=False)
        return value


_EVENTS = _Memo()
_RDP = _Memo()


def _reset_memo_locks_in_child() -> None:
    """A fork taken while another thread held a memo's lock must not inherit it locked."""
    for memo in (_EVENTS, _RDP):
        memo._lock = threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_reset_memo_locks_in_child)


def _load_event(text: str) -> DpEvent:
    """An event from its stored JSON, validated; ValueError if it cannot be priced."""

    def load() -> DpEvent:
        try:
            event = event_from_dict(json.loads(text))
        except (ValueError, TypeError, KeyError, AttributeError) as err:
            raise ValueError(f"unreadable event ({type(err).__name__}: {err})") from None
        except RecursionError:
            raise ValueError("unreadable event (nested too deeply)") from None
        return validate_event(event)

    if not isinstance(text, str):
        raise ValueError("its event is not text")
    if len(text) > MAX_EVENT_TEXT:
        raise ValueError(f"its event is longer than {MAX_EVENT_TEXT} characters")
    return _EVENTS.get(text, load)


# --- hashing ------------------------------------------------------------------------------
def _digest(*parts: object) -> str:
    text = json.dumps([repr(p) if isinstance(p, float) else p for p in parts])
    return hashlib.sha256(text.encode()).hexdigest()


def _genesis(budget: tuple) -> str | None:
    """Hash anchoring the chain: the budget row (epsilon, delta, accounting, created, order)."""
    try:
        epsilon, delta, accounting, created = (float(budget[0]), float(budget[1]),
                                               str(budget[2]), float(budget[3]))  # fmt: skip
        if accounting == RENYI_FILTER:
            order = float(budget[4])
            return _digest("dpconvex-ledger", 3, epsilon, delta, accounting, created, order)
    except (TypeError, ValueError, OverflowError):
        return None
    return _digest("dpconvex-ledger", FORMAT, epsilon, delta, accounting, created)


def _entry_hash(prev: str, row: tuple, with_rdp: bool) -> str | None:
    """Hash of one entry chained to ``prev``; None for a row of the wrong types."""
    entry_id, when, mechanism, label, event, epsilon_after = row[:6]
    try:
        parts = [prev, int(entry_id), float(when), mechanism, label, event, float(epsilon_after)]
        if with_rdp:
            parts.append(float(row[7]))
        return _digest(*parts)
    except (TypeError, ValueError, OverflowError):
        return None


def _chain_finding(budget: tuple, head: tuple, rows: list) -> str | None:
    """What is wrong with the chain of ``rows`` under ``budget``, or None if it is intact."""
    prev = _genesis(budget)
    if prev is None:
        return "the budget row is malformed (a value of the wrong type)"
    with_rdp = budget[2] == RENYI_FILTER
    if not rows and head[1] != prev and head[0] == 0:
        return "the budget (epsilon, delta, accounting or order) was edited after it was created"
    previous_id = 0
    for row in rows:
        if row[6] != _entry_hash(prev, row, with_rdp):
            return _break_message(row[0], previous_id)
        prev, previous_id = row[6], row[0]
    count = len(rows)
    if head[0] != count or head[1] != prev:
        if isinstance(head[0], int) and head[0] > count:
            lost = head[0] - count
            return f"the last {lost} entr{'y was' if lost == 1 else 'ies were'} deleted"
        return "the ledger's head does not match its entries (entries deleted or replaced)"
    return None


def _break_message(entry_id: int, previous_id: int) -> str:
    if entry_id != previous_id + 1 and previous_id == 0:
        return f"the entries before #{entry_id} were deleted, or #{entry_id} was edited"
    if entry_id != previous_id + 1:
        return (
            f"entry #{entry_id} does not follow entry #{previous_id}: entries between "
            f"them were deleted, or #{entry_id} was edited"
        )
    if previous_id == 0:
        return (
            f"entry #{entry_id} does not follow the budget as recorded: the budget or "
            "that entry was edited"
        )
    return f"entry #{entry_id} differs from what was recorded (edited or inserted)"


@dataclass(frozen=True)
class _State:
    """The ledger as one read saw it: the chain's finding, its head, the entries' rows,
    and the budget row (epsilon, delta, accounting, created, order)."""

    finding: str | None
    head: tuple
    rows: list
    budget: tuple


@dataclass(frozen=True)
class _Price:
    admitted: bool
    epsilon_after: float
    rdp_after: float | None


class Budget:
    """A persistent (epsilon, delta) budget shared by every process that opens ``path``.

    Creating: pass ``epsilon`` (in [1e-4, 100]) and ``delta`` (in [1e-100, 1)), and
    optionally ``accounting``: ``"auto"`` (default: PLD where every event supports it,
    else RDP), ``"pld"``, ``"rdp"`` — composition, valid for a list of events fixed in
    advance — or ``"renyi-filter"``, a proven privacy filter at Renyi order ``order``
    (default :func:`default_filter_order`), valid however adaptively the events are
    chosen. Reopening: omit them, or pass the values the ledger has (a different
    budget, accounting or order is refused).

    Reading (:meth:`entries`, :meth:`spent`, :meth:`summary`) opens the file read-only;
    only spending and acknowledging write. ``tampering`` is ``None`` for an intact
    ledger, else what was found when it was opened; ``file_warning`` is ``None`` unless
    the file is not the one the ledger was created as (then a
    :class:`LedgerFileWarning` was issued too).
    """

    def __init__(
        self,
        path: str | Path,
        epsilon: float | None = None,
        delta: float | None = None,
        *,
        accounting: str | None = None,
        order: float | None = None,
        timeout: float = 60.0,
    ):
        self.path = Path(path).expanduser().resolve()
        self._timeout = v.positive("timeout", timeout)
        epsilon = None if epsilon is None else check_epsilon(_budget_number("epsilon", epsilon))
        delta = None if delta is None else _check_delta(delta)
        if accounting is not None and accounting not in ACCOUNTINGS:
            raise ValueError(f"accounting must be one of {ACCOUNTINGS}, got {accounting!r}")
        order = None if order is None else _check_order(order)
        if order is not None and accounting not in (None, RENYI_FILTER):
            raise ValueError(f"order is for accounting={RENYI_FILTER!r}, not {accounting!r}")
        if self.path.is_dir():
            raise LedgerError(f"{self.path} is a directory, not a ledger file")
        stored = self._read_budget() if self.path.exists() else None
        if stored is None:
            if epsilon is None or delta is None:
                raise ValueError(f"{self.path} holds no budget yet: give epsilon and delta")
            accounting = accounting or ("renyi-filter" if order is not None else "auto")
            stored = self._create(epsilon, delta, accounting, order)
        elif stored["format"] != FORMAT:
            stored = self._upgrade()
        self._adopt(stored)
        for name, given in (("epsilon", epsilon), ("delta", delta), ("accounting", accounting),
                            ("order", order)):  # fmt: skip
            if given is not None and given != getattr(self, name):
                raise ValueError(f"{self.path} has {name}={getattr(self, name)!r}, not {given!r}")
        self.tampering = self.check()
        self.file_warning = self._file_identity_change(stored)
        if self.file_warning:
            warnings.warn(self.file_warning, LedgerFileWarning, stacklevel=2)

    def _adopt(self, stored: dict) -> None:
        """Take the stored budget, after checking it is one this code can price."""
        try:
            self.epsilon = v.positive("epsilon", _budget_number("epsilon", stored["epsilon"]))
            self.delta = _check_delta(stored["delta"])
            if stored["accounting"] not in ACCOUNTINGS:
                raise ValueError(f"accounting {safe_text(stored['accounting'], 40)} is unknown")
            self.accounting = stored["accounting"]
            self.order = None
            if self.accounting == RENYI_FILTER:
                self.order = _check_order(stored["rdp_order"])
                if renyi_filter_budget(self.epsilon, self.delta, self.order) <= 0:
                    raise ValueError(f"order {self.order:g} leaves no Renyi budget")
        except ValueError as err:
            raise LedgerError(f"{self.path} holds a budget that cannot be used: {err}") from None
        self.ledger_id = stored.get("ledger_id")

    @property
    def rdp_budget(self) -> float | None:
        """The filter's Renyi budget B at :attr:`order` (None for a composition ledger)."""
        if self.order is None:
            return None
        return renyi_filter_budget(self.epsilon, self.delta, self.order)

    # --- connections ------------------------------------------------------------
    @contextmanager
    def _db(self, *, write: bool):
        """A fresh connection for one call, inside the process-wide fork guard."""
        with _CALL_LOCK:
            if self.path.exists() and os.stat(self.path).st_nlink > 1:
                raise LedgerError(
                    f"{self.path} has {os.stat(self.path).st_nlink} hard links; a ledger must "
                    "have one name (SQLite finds its journal by name). Remove the extra links."
                )
            db = self._connect(write)
            try:
                if write:
                    mode = db.execute("PRAGMA journal_mode=DELETE").fetchone()[0]
                    if str(mode).lower() != "delete":
                        raise LedgerError(
                            f"{self.path} is in {mode} mode and open elsewhere; close the other "
                            "users of the ledger once so that it can switch to rollback journaling"
                        )
                    db.execute("PRAGMA synchronous=FULL")
                yield db
            except sqlite3.Error as err:
                if db.in_transaction:
                    db.execute("ROLLBACK")
                raise LedgerError(_explain(self.path, err, write)) from None
            except BaseException:
                if db.in_transaction:
                    db.execute("ROLLBACK")
                raise
            finally:
                db.close()

    def _open(self, write: bool) -> sqlite3.Connection:
        uri = "file:" + urllib.parse.quote(str(self.path)) + ("" if write else "?mode=ro")
        try:
            return sqlite3.connect(uri, uri=True, timeout=self._timeout, isolation_level=None)
        except sqlite3.Error as err:
            raise LedgerError(_explain(self.path, err, write)) from None

    def _connect(self, write: bool) -> sqlite3.Connection:
        """A connection; a read-only one first rolls back a write a killed process left."""
        db = self._open(write)
        if write:
            return db
        try:
            db.execute("SELECT count(*) FROM sqlite_master").fetchone()
            return db
        except sqlite3.Error as err:
            db.close()
            if getattr(err, "sqlite_errorname", "") != "SQLITE_READONLY_ROLLBACK":
                raise LedgerError(_explain(self.path, err, write)) from None
        self._roll_back_unfinished_write()
        return self._open(False)

    def _roll_back_unfinished_write(self) -> None:
        """Let SQLite roll back the hot journal of a killed writer (it needs write access)."""
        journal = Path(f"{self.path}-journal")
        if not (os.access(self.path, os.W_OK) and os.access(self.path.parent, os.W_OK)):
            raise LedgerError(
                f"{self.path} holds an unfinished write of a process that was killed "
                f"({journal.name}); it must be rolled back by someone who can write the file "
                f"and its directory: run `dpconvex budget show {self.path}` as the ledger's owner"
            )
        db = self._open(True)
        try:
            db.execute("SELECT count(*) FROM sqlite_master").fetchone()  # rolls back
        except sqlite3.Error as err:
            raise LedgerError(_explain(self.path, err, True)) from None
        finally:
            db.close()

    def _read_budget(self) -> dict | None:
        with self._db(write=False) as db:
            tables = {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type='table'")}
            if "budget" not in tables:
                return None
            columns = [r[1] for r in db.execute("PRAGMA table_info(budget)")]
            wanted = ["epsilon", "delta", "accounting", "format", "rdp_order", "ledger_id",
                      "inode", "device"]  # fmt: skip
            select = ", ".join(c if c in columns else "NULL" for c in wanted)
            row = db.execute(f"SELECT {select} FROM budget").fetchone()
        if row is None:
            return None
        stored = dict(zip(wanted, row, strict=True))
        if "format" not in columns:
            stored["format"] = 1  # the first ledgers: no hash chain, upgraded on open
        elif stored["format"] != FORMAT:
            raise LedgerError(
                f"{self.path} says it is a ledger of format {safe_text(stored['format'], 20)}, "
                f"which this version of dpconvex does not read (it reads format {FORMAT})"
            )
        return stored

    def _create(self, epsilon: float, delta: float, accounting: str, order: float | None) -> dict:
        if accounting == RENYI_FILTER:
            order = default_filter_order(epsilon, delta) if order is None else order
            if renyi_filter_budget(epsilon, delta, order) <= 0:
                raise ValueError(
                    f"order {order:.10g} leaves no Renyi budget at epsilon={epsilon:g}, "
                    f"delta={delta:g}; use a larger order, e.g. the default "
                    f"{default_filter_order(epsilon, delta):g}"
                )
        with self._db(write=True) as db:
            db.executescript(_SCHEMA)
            db.execute("BEGIN IMMEDIATE")
            if db.execute("SELECT 1 FROM budget").fetchone() is None:
                created = _clock()
                info = os.stat(self.path)
                genesis = _genesis((epsilon, delta, accounting, created, order))
                db.execute(
                    "INSERT INTO budget (id, epsilon, delta, accounting, created, format, "
                    "head_count, head_hash, rdp_order, ledger_id, inode, device) "
                    "VALUES (1, ?, ?, ?, ?, ?, 0, ?, ?, ?, ?, ?)",
                    (epsilon, delta, accounting, created, FORMAT, genesis, order,
                     uuid.uuid4().hex, info.st_ino, info.st_dev),
                )  # fmt: skip
            db.execute("COMMIT")
        stored = self._read_budget()
        assert stored is not None
        return stored

    def _upgrade(self) -> dict:
        """Bring a format-1 ledger (no hash chain) to this format, noting it as a finding."""
        with self._db(write=True) as db:
            db.execute("BEGIN IMMEDIATE")
            self._add_columns(db)
            db.execute(
                "CREATE TABLE IF NOT EXISTS acknowledgments (id INTEGER PRIMARY KEY "
                "AUTOINCREMENT, time REAL NOT NULL, finding TEXT NOT NULL)"
            )
            db.execute("UPDATE budget SET format = ?", (FORMAT,))
            self._rechain(db, "upgraded from a ledger without a hash chain (format 1); "
                              "entries recorded before this were not checked")  # fmt: skip
            db.execute("COMMIT")
        stored = self._read_budget()
        assert stored is not None
        return stored

    @staticmethod
    def _add_columns(db: sqlite3.Connection) -> None:
        """Columns of this version that an older ledger lacks (all nullable)."""
        have = {
            table: {r[1] for r in db.execute(f"PRAGMA table_info({table})")}
            for table in ("budget", "entries")
        }
        for table, name, kind in (
            ("budget", "format", "INTEGER"), ("budget", "head_count", "INTEGER"),
            ("budget", "head_hash", "TEXT"), ("budget", "rdp_order", "REAL"),
            ("budget", "ledger_id", "TEXT"), ("budget", "inode", "INTEGER"),
            ("budget", "device", "INTEGER"), ("entries", "hash", "TEXT"),
            ("entries", "rdp_after", "REAL"),
        ):  # fmt: skip
            if name not in have[table]:
                db.execute(f"ALTER TABLE {table} ADD COLUMN {name} {kind}")

    # --- the file's identity --------------------------------------------------------
    def _file_identity_change(self, stored: dict) -> str | None:
        inode, device = stored.get("inode"), stored.get("device")
        if not (isinstance(inode, int) and isinstance(device, int)):
            return None  # created before identities were recorded
        info = os.stat(self.path)
        if (info.st_ino, info.st_dev) == (inode, device):
            return None
        return (
            f"{self.path} is not the file this ledger was created as (it was copied, moved to "
            "another disk or restored from a copy): spends recorded in any other copy do not "
            "count here. If this is the only copy, accept it with `dpconvex budget acknowledge`."
        )

    # --- the hash chain ---------------------------------------------------------
    @staticmethod
    def _state(db: sqlite3.Connection) -> _State:
        columns = {r[1] for r in db.execute("PRAGMA table_info(budget)")}
        order = "rdp_order" if "rdp_order" in columns else "NULL"
        budget = db.execute(
            f"SELECT epsilon, delta, accounting, created, {order}, head_count, head_hash "
            "FROM budget"
        ).fetchone()
        if budget is None:
            raise LedgerError("the ledger has no budget row")
        entry_columns = {r[1] for r in db.execute("PRAGMA table_info(entries)")}
        select = _ENTRY_COLUMNS if "rdp_after" in entry_columns else _ENTRY_COLUMNS[:-11] + ", NULL"
        rows = db.execute(f"SELECT {select} FROM entries ORDER BY id").fetchall()
        head = (budget[5], budget[6])
        return _State(_chain_finding(budget[:5], head, rows), head, rows, tuple(budget[:5]))

    def _rechain(self, db: sqlite3.Connection, finding: str) -> None:
        state = self._state(db)
        budget = db.execute(
            "SELECT epsilon, delta, accounting, created, rdp_order FROM budget"
        ).fetchone()
        prev = _genesis(budget)
        if prev is None:
            raise LedgerError(f"{self.path} has a malformed budget row; it cannot be re-anchored")
        for row in state.rows:
            digest = _entry_hash(prev, row, budget[2] == RENYI_FILTER)
            if digest is None:
                raise LedgerError(
                    f"{self.path}: entry #{row[0]} holds values of the wrong type; delete it "
                    "or restore the ledger before acknowledging"
                )
            prev = digest
            db.execute("UPDATE entries SET hash = ? WHERE id = ?", (prev, row[0]))
        db.execute("UPDATE budget SET head_count = ?, head_hash = ?", (len(state.rows), prev))
        db.execute("INSERT INTO acknowledgments (time, finding) VALUES (?, ?)", (_clock(), finding))
        _crash_point()

    def check(self) -> str | None:
        """What is wrong with the ledger's hash chain, or ``None`` if it is intact."""
        with self._db(write=False) as db:
            return self._state(db).finding

    def acknowledge_tampering(self) -> str | None:
        """Accept the ledger as it now stands: record the finding and re-anchor the chain.

        Also accepts a ledger file that is not the one it was created as (a copy or a
        restore; see :class:`LedgerFileWarning`) and records that. Returns what was
        acknowledged (``None`` if the ledger was intact and in place; then nothing is
        written). Entries that were deleted stay lost: their spends no longer count
        against the budget, which is why spending waits for this call.
        """
        with self._db(write=True) as db:
            db.execute("BEGIN IMMEDIATE")
            self._add_columns(db)
            finding = self._state(db).finding
            if finding is not None:
                self._rechain(db, finding)
            moved = self._file_identity_change(self._read_identity(db))
            if moved is not None:
                info = os.stat(self.path)
                db.execute("UPDATE budget SET inode = ?, device = ?", (info.st_ino, info.st_dev))
                note = "the ledger file was copied, moved or restored (a new file identity)"
                db.execute(
                    "INSERT INTO acknowledgments (time, finding) VALUES (?, ?)", (_clock(), note)
                )
                finding = note if finding is None else f"{finding}; {note}"
            db.execute("COMMIT")
        self.tampering = self.file_warning = None
        return finding

    @staticmethod
    def _read_identity(db: sqlite3.Connection) -> dict:
        row = db.execute("SELECT inode, device FROM budget").fetchone()
        return {"inode": row[0], "device": row[1]}

    def _record_identity(self, db: sqlite3.Connection) -> None:
        """Give a ledger created before file identities were kept one, at its next write."""
        row = db.execute("SELECT ledger_id, inode FROM budget").fetchone()
        if row[0] is None or row[1] is None:
            info = os.stat(self.path)
            db.execute(
                "UPDATE budget SET ledger_id = coalesce(ledger_id, ?), inode = ?, device = ?",
                (uuid.uuid4().hex, info.st_ino, info.st_dev),
            )

    def acknowledgments(self) -> list[tuple[float, str]]:
        """(time, finding) of every acknowledgment, oldest first; findings safe to print.

        The time is NaN when the file holds something other than a number there.
        """
        with self._db(write=False) as db:
            rows = db.execute("SELECT time, finding FROM acknowledgments ORDER BY id").fetchall()
        return [(_time_value(t), safe_text(f, MAX_NAME)) for t, f in rows]

    # --- pricing ------------------------------------------------------------------
    def _epsilon_of(self, texts: list[str]) -> float:
        """Epsilon of all stored events composed; repeats of one event are self-composed.

        Composition is commutative, so grouping identical events (same stored JSON)
        into ``SelfComposedDpEvent(event, count)`` prices the same mechanism; the
        accountant then composes each group by one FFT power instead of one
        convolution per spend.
        """
        if not texts:
            return 0.0
        groups: dict[str, int] = {}
        for text in texts:
            groups[text] = groups.get(text, 0) + 1
        parts = []
        for text, count in groups.items():
            event = _load_event(text)
            parts.append(event if count == 1 else SelfComposedDpEvent(event, count))
        accountant = PrivacyAccountant(self.accounting)
        return float(accountant.compose(ComposedDpEvent(parts)).get_epsilon(self.delta))

    def _rdp_of(self, text: str) -> float:
        return _RDP.get((text, self.order), lambda: event_rdp(_load_event(text), self.order))

    def _rdp_sum(self, texts: list[str]) -> float:
        return math.fsum(self._rdp_of(t) for t in texts)

    def _filter_epsilon(self, rdp_sum: float) -> float:
        """Epsilon of the recorded events at the filter's order (0 if nothing is recorded)."""
        if rdp_sum <= 0:
            return 0.0
        return min(self.epsilon, rdp_sum + _conversion_offset(self.delta, self.order))

    def _price(self, rows: list, payload: str) -> _Price:
        """Whether the event ``payload`` fits after the recorded ``rows``, and the new totals."""
        texts = [row[4] for row in rows]
        try:
            if self.accounting != RENYI_FILTER:
                after = self._epsilon_of([*texts, payload])
                return _Price(after <= self.epsilon, after, None)
            rdp_after = self._rdp_sum(texts) + self._rdp_of(payload)
        except (ValueError, UnsupportedEventError) as err:
            raise LedgerError(f"{self.path} holds an entry that cannot be priced: {err}") from None
        admitted = rdp_after <= self.rdp_budget
        return _Price(admitted, self._filter_epsilon(rdp_after), rdp_after)

    def _snapshot(self) -> _State:
        with self._db(write=False) as db:
            db.execute("BEGIN")
            state = self._state(db)
            db.execute("COMMIT")
        return state

    def spend(self, event: DpEvent, *, mechanism: str, label: str = "") -> Entry:
        """Record ``event`` if the total stays within budget; else raise and record nothing.

        Raises ``ValueError``/``TypeError`` for an invalid event, label or mechanism name,
        :class:`BudgetExceededError` when the budget would be exceeded, and
        :class:`LedgerTamperedError` when the chain is broken and not acknowledged.
        """
        event = validate_event(event, storable=True)
        payload = json.dumps(event_to_dict(event))
        mechanism, label = _check_name("mechanism", mechanism), _check_name("label", label)
        if self.accounting == RENYI_FILTER:
            self._rdp_of(payload)  # an event RDP cannot price is refused before any lock
        _clock()
        for attempt in range(_OPTIMISTIC_TRIES + 1):
            locked = attempt == _OPTIMISTIC_TRIES
            snapshot = price = None
            if not locked:
                snapshot = self._snapshot()
                self._refuse_if_tampered(snapshot.finding)
                price = self._price(snapshot.rows, payload)
            entry = self._commit(event, payload, mechanism, label, snapshot, price)
            if entry is not None:
                return entry
        raise AssertionError("unreachable: the last attempt prices with the lock held")

    def _refuse_if_tampered(self, finding: str | None) -> None:
        if finding is not None:
            self.tampering = finding
            raise LedgerTamperedError(
                f"{self.path} was altered: {safe_text(finding)}. Nothing was spent. Check the "
                f"ledger, then accept it with `dpconvex budget acknowledge {self.path}`."
            )

    def _commit(self, event, payload, mechanism, label, snapshot, price) -> Entry | None:
        """Inside the write lock: check, then insert or refuse. None: the snapshot was stale."""
        with self._db(write=True) as db:
            db.execute("BEGIN IMMEDIATE")  # the write lock: spends are serialized
            state = self._state(db)
            if state.finding is not None:
                db.execute("ROLLBACK")
                self._refuse_if_tampered(state.finding)
            if not self._same_budget(state.budget):
                db.execute("ROLLBACK")
                raise LedgerError(
                    f"the budget of {self.path} was changed (and acknowledged) since it was "
                    "opened here; nothing was spent. Open the ledger again."
                )
            if snapshot is not None and (state.head, state.rows) != (snapshot.head, snapshot.rows):
                db.execute("ROLLBACK")
                return None  # another process spent meanwhile: price again
            if price is None:
                price = self._price(state.rows, payload)
            if not price.admitted:
                db.execute("ROLLBACK")
                raise BudgetExceededError(self._exceeded_message(mechanism, price))
            _crash_point()
            now = _clock()
            self._add_columns(db)
            self._record_identity(db)
            cursor = db.execute(
                "INSERT INTO entries (time, mechanism, label, event, epsilon_after, rdp_after) "
                "VALUES (?, ?, ?, ?, ?, ?)",
                (now, mechanism, label, payload, price.epsilon_after, price.rdp_after),
            )
            entry_id = int(cursor.lastrowid)
            row = (entry_id, now, mechanism, label, payload, price.epsilon_after, None,
                   price.rdp_after)  # fmt: skip
            digest = _entry_hash(state.head[1], row, self.accounting == RENYI_FILTER)
            db.execute("UPDATE entries SET hash = ? WHERE id = ?", (digest, entry_id))
            db.execute(
                "UPDATE budget SET head_count = ?, head_hash = ?", (len(state.rows) + 1, digest)
            )
            db.execute("COMMIT")
        return Entry(entry_id, now, mechanism, label, event, price.epsilon_after, price.rdp_after)

    def _same_budget(self, budget: tuple) -> bool:
        """Whether the file's budget row still says what this object prices against."""
        epsilon, delta, accounting, _, order = budget
        return (epsilon, delta, accounting) == (self.epsilon, self.delta, self.accounting) and (
            self.order is None or order == self.order
        )

    def _exceeded_message(self, mechanism: str, price: _Price) -> str:
        if price.rdp_after is None:
            return (
                f"spending {mechanism} would bring epsilon to {price.epsilon_after:.6g} > budget "
                f"{self.epsilon:g} (delta {self.delta:g}); nothing was recorded"
            )
        return (
            f"spending {mechanism} would bring the Renyi divergence at order {self.order:g} to "
            f"{price.rdp_after:.6g} > {self.rdp_budget:.6g}, the filter's budget for "
            f"epsilon={self.epsilon:g}, delta={self.delta:g}; nothing was recorded"
        )

    # --- reading -------------------------------------------------------------------
    def _rows(self) -> list:
        with self._db(write=False) as db:
            return self._state(db).rows

    def entries(self) -> list[Entry]:
        """Every recorded spend, oldest first; LedgerError if one cannot be read."""
        return [self._entry(row) for row in self._rows()]

    def _entry(self, row: tuple) -> Entry:
        entry_id, when, mechanism, label, text, epsilon_after, _, rdp_after = row
        try:
            event = _load_event(text)
            if not all(isinstance(x, str) for x in (mechanism, label)):
                raise ValueError("its mechanism or label is not text")
            if any(_finite_or_none(x) is None for x in (when, epsilon_after)):
                raise ValueError("its time or epsilon is not a finite number")
        except ValueError as err:
            raise LedgerError(f"{self.path}: entry #{entry_id} cannot be read: {err}") from None
        # spends refuse control characters; a label that has them came from an edited or
        # older file, and is given escaped, so that printing an entry is always safe
        mechanism, label = safe_text(mechanism, MAX_NAME), safe_text(label, MAX_NAME)
        return Entry(entry_id, float(when), mechanism, label, event, float(epsilon_after),
                     _finite_or_none(rdp_after))  # fmt: skip

    def rdp_spent(self) -> float:
        """The filter's Renyi sum at :attr:`order` of everything recorded (filter ledgers)."""
        if self.order is None:
            raise ValueError(f"{self.path} is a composition ledger, not a Renyi filter")
        try:
            return self._rdp_sum([row[4] for row in self._rows()])
        except (ValueError, UnsupportedEventError) as err:
            raise LedgerError(f"{self.path} holds an entry that cannot be priced: {err}") from None

    def spent(self) -> float:
        """Epsilon (at the budget's delta) of everything recorded, composed.

        For a Renyi filter: the conversion of :meth:`rdp_spent` at the filter's order
        (it reaches the budget's epsilon exactly when the Renyi sum reaches
        :attr:`rdp_budget`). Either way this number is valid for the recorded events
        as a list fixed in advance; what a filter guarantees under adaptive choice is
        the budget itself, (epsilon, delta), for the whole interaction.
        """
        if self.order is not None:
            return self._filter_epsilon(self.rdp_spent())
        try:
            return self._epsilon_of([row[4] for row in self._rows()])
        except (ValueError, UnsupportedEventError) as err:
            raise LedgerError(f"{self.path} holds an entry that cannot be priced: {err}") from None

    def remaining(self) -> float:
        return max(0.0, self.epsilon - self.spent())

    def guarantee(self) -> str:
        """One sentence: what the ledger's refusals guarantee."""
        if self.order is None:
            return (
                f"({self.epsilon:g}, {self.delta:g})-DP for spends whose events were fixed "
                "before the first one ran; not proven when events are chosen from earlier "
                "results (use a renyi-filter ledger for that)"
            )
        return (
            f"({self.epsilon:g}, {self.delta:g})-DP for everything spent through this ledger, "
            "however each spend was chosen from earlier results (Renyi filter at order "
            f"{self.order:g})"
        )

    def summary(self) -> dict:
        """What ``dpconvex budget show`` prints, JSON-ready and safe to print on a terminal.

        Strings read from the file are escaped (:func:`safe_text`), times are given
        both as numbers (None when not finite) and as text (:func:`safe_time`).
        """
        entries = self.entries()
        spent = self.spent()
        out = {
            "ledger_id": safe_text(self.ledger_id) if self.ledger_id is not None else None,
            "accounting": self.accounting,
            "guarantee": self.guarantee(),
            "tampering": None if self.tampering is None else safe_text(self.tampering, 400),
            "file_warning": None
            if self.file_warning is None
            else safe_text(self.file_warning, 600),
            "acknowledged": [
                {"time": _finite_or_none(t), "time_utc": safe_time(t), "finding": safe_text(f, 400)}
                for t, f in self.acknowledgments()
            ],
            "epsilon_budget": self.epsilon,
            "delta": self.delta,
            "epsilon_spent": spent,
            "epsilon_left": max(0.0, self.epsilon - spent),
        }
        if self.order is not None:
            rdp = self.rdp_spent()
            out.update(rdp_order=self.order, rdp_budget=self.rdp_budget, rdp_spent=rdp,
                       rdp_left=max(0.0, self.rdp_budget - rdp))  # fmt: skip
        out["entries"] = [_entry_summary(e) for e in entries]
        return out


def _entry_summary(entry: Entry) -> dict:
    return {
        "id": entry.id,
        "time": _finite_or_none(entry.time),
        "time_utc": safe_time(entry.time),
        "mechanism": safe_text(entry.mechanism),
        "label": safe_text(entry.label),
        "epsilon_after": _finite_or_none(entry.epsilon_after),
        "rdp_after": _finite_or_none(entry.rdp_after),
        "event": event_to_dict(entry.event),
    }


def summary_text(summary: dict) -> str:
    """The lines ``dpconvex budget show`` prints for :meth:`Budget.summary` (already safe)."""
    lines = [
        f"budget epsilon={summary['epsilon_budget']:g} at delta={summary['delta']:g} "
        f"({summary['accounting']} accounting)",
        f"guarantee: {summary['guarantee']}",
        f"spent  epsilon={summary['epsilon_spent']:.8g}   left {summary['epsilon_left']:.8g}",
    ]
    if "rdp_order" in summary:
        lines.append(
            f"Renyi filter at order {summary['rdp_order']:g}: spent {summary['rdp_spent']:.8g} "
            f"of {summary['rdp_budget']:.8g}, left {summary['rdp_left']:.8g}"
        )
    for e in summary["entries"]:
        total = "?" if e["epsilon_after"] is None else f"{e['epsilon_after']:.6g}"
        lines.append(f"  #{e['id']} {e['time_utc']}  {e['mechanism']}  {e['label']}  "
                     f"(total after: {total})")  # fmt: skip
    for ack in summary["acknowledged"]:
        lines.append(f"  acknowledged {ack['time_utc']}: {ack['finding']}")
    return "\n".join(lines)


def _explain(path: Path, err: sqlite3.Error, write: bool) -> str:
    text = str(err)
    if "readonly" in text or "read-only" in text or "unable to open" in text:
        what = "write to" if write else "open"
        return f"cannot {what} the ledger {path}: {text} (check the file and its directory)"
    if "full" in text:
        return f"cannot write the ledger {path}: the disk is full; nothing was recorded"
    if "not a database" in text or "malformed" in text:
        return f"{path} is not a readable dpconvex ledger ({text})"
    if "locked" in text:
        return f"the ledger {path} stayed locked by another process ({text}); try again"
    return f"ledger {path}: {text}"


def _crash_point() -> None:
    """Test hook: with DPCONVEX_BUDGET_CRASH_SLEEP set, stall inside a write transaction
    (a spend, before its insert; an acknowledgment, after its writes), first creating the
    file DPCONVEX_BUDGET_CRASH_FLAG names, if set, so that a test knows it is there."""
    delay = os.environ.get("DPCONVEX_BUDGET_CRASH_SLEEP")
    if delay:
        flag = os.environ.get("DPCONVEX_BUDGET_CRASH_FLAG")
        if flag:
            Path(flag).touch()
        time.sleep(float(delay))


__all__ = [
    "ACCOUNTINGS",
    "MIN_DELTA",
    "RENYI_FILTER",
    "Budget",
    "BudgetExceededError",
    "Entry",
    "LedgerError",
    "LedgerFileWarning",
    "LedgerTamperedError",
    "default_filter_order",
    "event_rdp",
    "renyi_filter_budget",
    "safe_text",
    "safe_time",
    "summary_text",
]
