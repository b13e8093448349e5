"""A ledger's file format: its tables, its stored events and the hash chain over its entries.

Each entry carries a SHA-256 hash chained to the previous entry and to the budget row
(the genesis); the chain's head is kept with the budget. Stored events are read back
through a small cache of pure functions of their public JSON.
"""

from __future__ import annotations

import hashlib
import json
from collections import OrderedDict
from dataclasses import dataclass

from dp_accounting.dp_event import DpEvent

from .._forksafe import ForkSafeLock
from ..accounting.event_checks import validate_event
from ..accounting.serialization import event_from_dict
from .values import MAX_EVENT_TEXT, RENYI_FILTER

#: Chain format (the genesis of a composition ledger is hashed with this number).
FORMAT = 2

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


class _Memo:
    """A small LRU of pure functions of public values (event JSON -> event, -> RDP)."""

    def __init__(self, size: int = 4096):
        self._data: OrderedDict = OrderedDict()
        self._size = size
        self._lock = ForkSafeLock()

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
