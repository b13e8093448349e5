"""A ledger's SQLite file: connections, creation and upgrade, its identity, acknowledgments.

:class:`LedgerFile` is the storage half of :class:`~dpconvex.budget.Budget`: one fresh
connection per call inside a process-wide lock that a fork waits for
(``os.register_at_fork``), rollback journaling, the check of the hash chain and its
re-anchoring when the owner acknowledges a finding.
"""

from __future__ import annotations

import os
import sqlite3
import threading
import time
import urllib.parse
import uuid
from contextlib import contextmanager
from pathlib import Path

from .chain import (
    _ENTRY_COLUMNS,
    _SCHEMA,
    FORMAT,
    _chain_finding,
    _entry_hash,
    _genesis,
    _State,
)
from .renyi_filter import default_filter_order, renyi_filter_budget
from .values import MAX_NAME, RENYI_FILTER, LedgerError, _clock, _time_value, safe_text

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


class LedgerFile:
    """The SQLite file of a :class:`~dpconvex.budget.Budget` (a mixin; needs ``path`` and
    ``_timeout``)."""

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
