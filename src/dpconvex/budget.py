"""A privacy budget that survives: a ledger of spent events in SQLite, shared by processes.

``Budget(path, epsilon, delta)`` opens (or creates) a ledger. :meth:`Budget.spend`
composes every recorded event with the new one through the accountant and, if the
total at the budget's delta would exceed its epsilon, refuses — inside the same
write transaction (``BEGIN IMMEDIATE``: one writer at a time across processes, WAL
mode), before the mechanism runs. A spend that returned has been committed; a
process killed mid-spend leaves the ledger as it was before that spend (SQLite's
atomic commit). Charges are final: a mechanism that fails after its spend keeps
its charge (its failure may itself depend on the data).
"""

from __future__ import annotations

import json
import os
import sqlite3
import time
from contextlib import closing
from dataclasses import dataclass
from pathlib import Path

from dp_accounting.dp_event import ComposedDpEvent, DpEvent, SelfComposedDpEvent

from . import _validation as v
from .accounting import PrivacyAccountant
from .accounting.serialization import event_from_dict, event_to_dict

_SCHEMA = """
CREATE TABLE IF NOT EXISTS budget (id INTEGER PRIMARY KEY CHECK (id = 1),
    epsilon REAL NOT NULL, delta REAL NOT NULL, accounting TEXT NOT NULL, created REAL NOT NULL);
CREATE TABLE IF NOT EXISTS entries (id INTEGER PRIMARY KEY AUTOINCREMENT,
    time REAL NOT NULL, mechanism TEXT NOT NULL, label TEXT NOT NULL,
    event TEXT NOT NULL, epsilon_after REAL NOT NULL);
"""


class BudgetExceededError(RuntimeError):
    """The spend would take the ledger over its budget; nothing was recorded."""


@dataclass(frozen=True)
class Entry:
    id: int
    time: float
    mechanism: str
    label: str
    event: DpEvent
    epsilon_after: float


class Budget:
    """A persistent (epsilon, delta) budget shared by every process that opens ``path``.

    Creating: pass ``epsilon`` and ``delta``. Reopening: omit them, or pass the same
    values (a different budget for an existing ledger is refused). ``accounting`` is
    how spends are composed ("auto": PLD where every event supports it, else RDP).
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
        self.path = Path(path)
        self._timeout = float(timeout)
        with closing(self._connect()) as db:
            db.executescript(_SCHEMA)
            row = db.execute("SELECT epsilon, delta, accounting FROM budget").fetchone()
            if row is None:
                if epsilon is None or delta is None:
                    raise ValueError(f"{self.path} holds no budget yet: give epsilon and delta")
                epsilon = v.positive("epsilon", epsilon)
                delta = v.probability_open("delta", delta)
                PrivacyAccountant(accounting)  # validates the name
                db.execute("BEGIN IMMEDIATE")
                if db.execute("SELECT 1 FROM budget").fetchone() is None:
                    db.execute(
                        "INSERT INTO budget VALUES (1, ?, ?, ?, ?)",
                        (epsilon, delta, accounting, time.time()),
                    )
                db.execute("COMMIT")
                row = db.execute("SELECT epsilon, delta, accounting FROM budget").fetchone()
            stored = (float(row[0]), float(row[1]), str(row[2]))
            if epsilon is not None and float(epsilon) != stored[0]:
                raise ValueError(f"{self.path} has epsilon={stored[0]}, not {epsilon}")
            if delta is not None and float(delta) != stored[1]:
                raise ValueError(f"{self.path} has delta={stored[1]}, not {delta}")
        self.epsilon, self.delta, self.accounting = stored

    def _connect(self) -> sqlite3.Connection:
        db = sqlite3.connect(self.path, timeout=self._timeout, isolation_level=None)
        db.execute("PRAGMA journal_mode=WAL")
        db.execute("PRAGMA synchronous=FULL")
        return db

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
        """Record ``event`` if the total stays within budget; else raise and record nothing."""
        if not isinstance(event, DpEvent):
            raise TypeError(f"event must be a DpEvent, got {type(event).__name__}")
        payload = json.dumps(event_to_dict(event))
        db = self._connect()
        try:
            db.execute("BEGIN IMMEDIATE")  # the write lock: spends are serialized
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
            db.execute("COMMIT")
            return Entry(int(cursor.lastrowid), now, mechanism, label, event, after)
        except BaseException:
            if db.in_transaction:
                db.execute("ROLLBACK")
            raise
        finally:
            db.close()

    def entries(self) -> list[Entry]:
        with closing(self._connect()) as db:
            rows = db.execute(
                "SELECT id, time, mechanism, label, event, epsilon_after FROM entries ORDER BY id"
            ).fetchall()
        return [
            Entry(r[0], r[1], r[2], r[3], event_from_dict(json.loads(r[4])), r[5]) for r in rows
        ]

    def spent(self) -> float:
        """Epsilon (at the budget's delta) of everything recorded, composed."""
        return self._epsilon_of([e.event for e in self.entries()])

    def remaining(self) -> float:
        return max(0.0, self.epsilon - self.spent())


def _crash_point() -> None:
    """Test hook: with DPCONVEX_BUDGET_CRASH_SLEEP set, stall inside the write transaction."""
    delay = os.environ.get("DPCONVEX_BUDGET_CRASH_SLEEP")
    if delay:
        time.sleep(float(delay))
