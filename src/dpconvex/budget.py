"""A privacy budget that survives: a ledger of spent events in SQLite, shared by processes.

``Budget(path, epsilon, delta)`` opens (or creates) a ledger. :meth:`Budget.spend`
validates the event, composes every recorded event with it through the accountant
and, if the total at the budget's delta would exceed its epsilon, refuses — inside
the same write transaction (``BEGIN IMMEDIATE``), before the mechanism runs.

What the ledger guarantees, and how:

* **A spend that returned is recorded.** Rollback-journal mode (``journal_mode=
  DELETE``, ``synchronous=FULL``): locks are POSIX locks on the database file itself,
  so every process that opens the file takes the same locks. WAL mode keeps its lock
  index in a ``-shm`` file named after the *path*; through a hard link two processes
  used two indexes and lost half of their reported spends. A process killed mid-spend
  leaves the ledger as it was before that spend (SQLite's atomic commit).
* **One file, one name.** The path is resolved through symlinks, and a ledger file
  with more than one hard link is refused (its journal would be looked up under a
  different name by each alias).
* **Fork-safe.** No connection outlives a call, and ``os.register_at_fork`` makes a
  fork wait until no thread of this process is inside a ledger call, so a child never
  inherits an open connection or an SQLite mutex held by another thread.
* **No refunds.** Every event is validated (positive integer counts, finite positive
  noise, sampling rates in (0, 1], an event type the ledger can load back) before it
  is priced.
* **Tamper evidence.** Each entry carries a SHA-256 hash chained to the previous
  entry and to the budget itself; the chain's head (entry count and last hash) is kept
  with the budget. Editing, deleting or inserting an entry, or editing the budget, is
  found on open and makes :meth:`Budget.spend` refuse until the owner calls
  :meth:`Budget.acknowledge_tampering` (``dpconvex budget acknowledge``), which
  records what was found. The chain has no secret key: it catches careless edits and
  lost rows, not an adversary who can rewrite the file and recompute the hashes.

Charges are final: a mechanism that fails after its spend keeps its charge (its
failure may itself depend on the data).
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import threading
import time
import urllib.parse
from contextlib import contextmanager
from dataclasses import dataclass
from numbers import Integral, Real
from pathlib import Path

import numpy as np
from dp_accounting.dp_event import ComposedDpEvent, DpEvent, SelfComposedDpEvent

from . import _validation as v
from .accounting import PrivacyAccountant, check_epsilon
from .accounting.event_checks import validate_event
from .accounting.serialization import event_from_dict, event_to_dict

#: Smallest delta a ledger accepts. Smaller targets make the accountants' tails (and
#: their memory) grow without bound, for no meaningful difference in protection.
MIN_DELTA = 1e-100

FORMAT = 2

_SCHEMA = """
CREATE TABLE IF NOT EXISTS budget (id INTEGER PRIMARY KEY CHECK (id = 1),
    epsilon REAL NOT NULL, delta REAL NOT NULL, accounting TEXT NOT NULL, created REAL NOT NULL,
    format INTEGER, head_count INTEGER, head_hash TEXT);
CREATE TABLE IF NOT EXISTS entries (id INTEGER PRIMARY KEY AUTOINCREMENT,
    time REAL NOT NULL, mechanism TEXT NOT NULL, label TEXT NOT NULL,
    event TEXT NOT NULL, epsilon_after REAL NOT NULL, hash TEXT);
CREATE TABLE IF NOT EXISTS acknowledgments (id INTEGER PRIMARY KEY AUTOINCREMENT,
    time REAL NOT NULL, finding TEXT NOT NULL);
"""


class BudgetExceededError(RuntimeError):
    """The spend would take the ledger over its budget; nothing was recorded."""


class LedgerError(RuntimeError):
    """The ledger file cannot be used safely (aliased, unreadable, unwritable, full)."""


class LedgerTamperedError(LedgerError):
    """The ledger's hash chain is broken; spending waits for an acknowledgment."""


@dataclass(frozen=True)
class Entry:
    id: int
    time: float
    mechanism: str
    label: str
    event: DpEvent
    epsilon_after: float


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


def _digest(*parts: object) -> str:
    text = json.dumps([repr(p) if isinstance(p, float) else p for p in parts])
    return hashlib.sha256(text.encode()).hexdigest()


def _genesis(epsilon: float, delta: float, accounting: str, created: float) -> str:
    return _digest("dpconvex-ledger", FORMAT, epsilon, delta, accounting, created)


def _entry_hash(prev: str, row: tuple) -> str:
    entry_id, when, mechanism, label, event, epsilon_after = row[:6]
    return _digest(prev, int(entry_id), float(when), mechanism, label, event, float(epsilon_after))


class Budget:
    """A persistent (epsilon, delta) budget shared by every process that opens ``path``.

    Creating: pass ``epsilon`` (in [1e-4, 100]) and ``delta`` (in [1e-100, 1)).
    Reopening: omit them, or pass the same values (a different budget for an
    existing ledger is refused). ``accounting`` is how spends are composed ("auto":
    PLD where every event supports it, else RDP). Reading (:meth:`entries`,
    :meth:`spent`) opens the file read-only; only spending and acknowledging write.

    ``tampering`` is ``None`` for an intact ledger, else a description of what was
    found when the ledger was opened.
    """

    def __init__(
        self,
        path: str | Path,
        epsilon: float | None = None,
        delta: float | None = None,
        *,
        accounting: str = "auto",
        timeout: float = 60.0,
    ):
        self.path = Path(path).expanduser().resolve()
        self._timeout = v.positive("timeout", timeout)
        if epsilon is not None:
            epsilon = check_epsilon(_budget_number("epsilon", epsilon))
        if delta is not None:
            delta = _check_delta(delta)
        if self.path.is_dir():
            raise LedgerError(f"{self.path} is a directory, not a ledger file")
        stored = self._read_budget() if self.path.exists() else None
        if stored is None:
            if epsilon is None or delta is None:
                raise ValueError(f"{self.path} holds no budget yet: give epsilon and delta")
            PrivacyAccountant(accounting)  # validates the name
            stored = self._create(epsilon, delta, accounting)
        elif stored[3] != FORMAT:
            stored = self._upgrade()
        self.epsilon, self.delta, self.accounting = stored[:3]
        if epsilon is not None and epsilon != self.epsilon:
            raise ValueError(f"{self.path} has epsilon={self.epsilon}, not {epsilon}")
        if delta is not None and delta != self.delta:
            raise ValueError(f"{self.path} has delta={self.delta}, not {delta}")
        self.tampering = self.check()

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
            uri = "file:" + urllib.parse.quote(str(self.path)) + ("" if write else "?mode=ro")
            try:
                db = sqlite3.connect(uri, uri=True, timeout=self._timeout, isolation_level=None)
            except sqlite3.Error as err:
                raise LedgerError(_explain(self.path, err, write)) from None
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

    def _read_budget(self) -> tuple | None:
        with self._db(write=False) as db:
            tables = {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type='table'")}
            if "budget" not in tables:
                return None
            columns = {r[1] for r in db.execute("PRAGMA table_info(budget)")}
            fmt = "format" if "format" in columns else "1"
            row = db.execute(f"SELECT epsilon, delta, accounting, {fmt} FROM budget").fetchone()
        if row is None:
            return None
        return float(row[0]), float(row[1]), str(row[2]), int(row[3] or 1)

    def _create(self, epsilon: float, delta: float, accounting: str) -> tuple:
        with self._db(write=True) as db:
            db.executescript(_SCHEMA)
            db.execute("BEGIN IMMEDIATE")
            if db.execute("SELECT 1 FROM budget").fetchone() is None:
                created = time.time()
                db.execute(
                    "INSERT INTO budget VALUES (1, ?, ?, ?, ?, ?, 0, ?)",
                    (epsilon, delta, accounting, created, FORMAT,
                     _genesis(epsilon, delta, accounting, created)),
                )  # fmt: skip
            db.execute("COMMIT")
        stored = self._read_budget()
        assert stored is not None
        return stored

    def _upgrade(self) -> tuple:
        """Bring a format-1 ledger (no hash chain) to this format, noting it as a finding."""
        with self._db(write=True) as db:
            db.execute("BEGIN IMMEDIATE")
            columns = {r[1] for r in db.execute("PRAGMA table_info(budget)")}
            for name, kind in (("format", "INTEGER"), ("head_count", "INTEGER"),
                               ("head_hash", "TEXT")):  # fmt: skip
                if name not in columns:
                    db.execute(f"ALTER TABLE budget ADD COLUMN {name} {kind}")
            if "hash" not in {r[1] for r in db.execute("PRAGMA table_info(entries)")}:
                db.execute("ALTER TABLE entries ADD COLUMN hash TEXT")
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

    # --- the hash chain ---------------------------------------------------------
    @staticmethod
    def _find_tampering(db: sqlite3.Connection) -> str | None:
        budget = db.execute(
            "SELECT epsilon, delta, accounting, created, head_count, head_hash FROM budget"
        ).fetchone()
        rows = db.execute(
            "SELECT id, time, mechanism, label, event, epsilon_after, hash FROM entries ORDER BY id"
        ).fetchall()
        prev = _genesis(float(budget[0]), float(budget[1]), str(budget[2]), float(budget[3]))
        if not rows and budget[5] != prev and budget[4] == 0:
            return "the budget (epsilon, delta or accounting) was edited after it was created"
        previous_id = 0
        for row in rows:
            if row[6] != _entry_hash(prev, row):
                if row[0] != previous_id + 1 and previous_id == 0:
                    return f"the entries before #{row[0]} were deleted, or #{row[0]} was edited"
                if row[0] != previous_id + 1:
                    return (
                        f"entry #{row[0]} does not follow entry #{previous_id}: entries between "
                        f"them were deleted, or #{row[0]} was edited"
                    )
                if previous_id == 0:
                    return (
                        f"entry #{row[0]} does not follow the budget as recorded: the budget or "
                        "that entry was edited"
                    )
                return f"entry #{row[0]} differs from what was recorded (edited or inserted)"
            prev, previous_id = row[6], row[0]
        count = len(rows)
        if budget[4] != count or budget[5] != prev:
            if budget[4] is not None and budget[4] > count:
                lost = budget[4] - count
                return f"the last {lost} entr{'y was' if lost == 1 else 'ies were'} deleted"
            return "the ledger's head does not match its entries (entries deleted or replaced)"
        return None

    @staticmethod
    def _rechain(db: sqlite3.Connection, finding: str) -> None:
        budget = db.execute("SELECT epsilon, delta, accounting, created FROM budget").fetchone()
        prev = _genesis(float(budget[0]), float(budget[1]), str(budget[2]), float(budget[3]))
        rows = db.execute(
            "SELECT id, time, mechanism, label, event, epsilon_after FROM entries ORDER BY id"
        ).fetchall()
        for row in rows:
            prev = _entry_hash(prev, row)
            db.execute("UPDATE entries SET hash = ? WHERE id = ?", (prev, row[0]))
        db.execute("UPDATE budget SET head_count = ?, head_hash = ?", (len(rows), prev))
        db.execute(
            "INSERT INTO acknowledgments (time, finding) VALUES (?, ?)", (time.time(), finding)
        )

    def check(self) -> str | None:
        """What is wrong with the ledger's hash chain, or ``None`` if it is intact."""
        with self._db(write=False) as db:
            return self._find_tampering(db)

    def acknowledge_tampering(self) -> str | None:
        """Accept the ledger as it now stands: record the finding and re-anchor the chain.

        Returns the finding that was acknowledged (``None`` if the ledger was intact;
        then nothing is written). Entries that were deleted stay lost: their spends no
        longer count against the budget, which is why spending waits for this call.
        """
        with self._db(write=True) as db:
            db.execute("BEGIN IMMEDIATE")
            finding = self._find_tampering(db)
            if finding is not None:
                self._rechain(db, finding)
            db.execute("COMMIT")
        self.tampering = None
        return finding

    def acknowledgments(self) -> list[tuple[float, str]]:
        """(time, finding) of every acknowledged break of the chain, oldest first."""
        with self._db(write=False) as db:
            return [
                (float(t), str(f))
                for t, f in db.execute("SELECT time, finding FROM acknowledgments ORDER BY id")
            ]

    # --- pricing ------------------------------------------------------------------
    def _epsilon_of(self, events: list[DpEvent]) -> float:
        """Epsilon of all ``events`` composed; repeats of one event are self-composed.

        Composition is commutative, so grouping identical events (same serialized
        form) into ``SelfComposedDpEvent(event, count)`` prices the same mechanism;
        the accountant then composes each group by one FFT power instead of one
        convolution per spend.
        """
        if not events:
            return 0.0
        groups: dict[str, list] = {}
        for event in events:
            key = json.dumps(event_to_dict(event), sort_keys=True)
            groups.setdefault(key, [event, 0])[1] += 1
        parts = [e if count == 1 else SelfComposedDpEvent(e, count) for e, count in groups.values()]
        accountant = PrivacyAccountant(self.accounting)
        return float(accountant.compose(ComposedDpEvent(parts)).get_epsilon(self.delta))

    def spend(self, event: DpEvent, *, mechanism: str, label: str = "") -> Entry:
        """Record ``event`` if the total stays within budget; else raise and record nothing.

        Raises ``ValueError``/``TypeError`` for an invalid event,
        :class:`BudgetExceededError` when the budget would be exceeded, and
        :class:`LedgerTamperedError` when the chain is broken and not acknowledged.
        """
        event = validate_event(event, storable=True)
        payload = json.dumps(event_to_dict(event))
        mechanism, label = str(mechanism), str(label)
        with self._db(write=True) as db:
            db.execute("BEGIN IMMEDIATE")  # the write lock: spends are serialized
            finding = self._find_tampering(db)
            if finding is not None:
                db.execute("ROLLBACK")
                self.tampering = finding
                raise LedgerTamperedError(
                    f"{self.path} was altered: {finding}. Nothing was spent. Check the ledger, "
                    f"then accept it with `dpconvex budget acknowledge {self.path}`."
                )
            recorded = [
                event_from_dict(json.loads(text))
                for (text,) in db.execute("SELECT event FROM entries ORDER BY id")
            ]
            after = self._epsilon_of([*recorded, event])
            if not after <= self.epsilon:
                db.execute("ROLLBACK")
                raise BudgetExceededError(
                    f"spending {mechanism} would bring epsilon to {after:.6g} > budget "
                    f"{self.epsilon:g} (delta {self.delta:g}); nothing was recorded"
                )
            _crash_point()
            now = time.time()
            cursor = db.execute(
                "INSERT INTO entries (time, mechanism, label, event, epsilon_after) "
                "VALUES (?, ?, ?, ?, ?)",
                (now, mechanism, label, payload, after),
            )
            entry_id = int(cursor.lastrowid)
            head = db.execute("SELECT head_hash, head_count FROM budget").fetchone()
            digest = _entry_hash(head[0], (entry_id, now, mechanism, label, payload, after))
            db.execute("UPDATE entries SET hash = ? WHERE id = ?", (digest, entry_id))
            db.execute(
                "UPDATE budget SET head_count = ?, head_hash = ?", (int(head[1]) + 1, digest)
            )
            db.execute("COMMIT")
        return Entry(entry_id, now, mechanism, label, event, after)

    def entries(self) -> list[Entry]:
        with self._db(write=False) as db:
            rows = db.execute(
                "SELECT id, time, mechanism, label, event, epsilon_after FROM entries ORDER BY id"
            ).fetchall()
        try:
            return [
                Entry(r[0], r[1], r[2], r[3], event_from_dict(json.loads(r[4])), r[5]) for r in rows
            ]
        except (ValueError, TypeError, KeyError, AttributeError, ImportError) as err:
            raise LedgerError(f"{self.path} holds an entry that cannot be read: {err}") from None

    def spent(self) -> float:
        """Epsilon (at the budget's delta) of everything recorded, composed."""
        return self._epsilon_of([e.event for e in self.entries()])

    def remaining(self) -> float:
        return max(0.0, self.epsilon - self.spent())


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
    """Test hook: with DPCONVEX_BUDGET_CRASH_SLEEP set, stall inside the write transaction."""
    delay = os.environ.get("DPCONVEX_BUDGET_CRASH_SLEEP")
    if delay:
        time.sleep(float(delay))


__all__ = [
    "MIN_DELTA",
    "Budget",
    "BudgetExceededError",
    "Entry",
    "LedgerError",
    "LedgerTamperedError",
]
