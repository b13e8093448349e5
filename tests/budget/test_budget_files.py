"""The ledger file as it is found: killed writers, copies, hostile rows, clocks, labels, speed."""

import json
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
import warnings

import pytest

import dpconvex.budget as budget_module
from dpconvex import Budget, BudgetExceededError, LedgerError
from dpconvex.accounting import GaussianDpEvent, PrivacyAccountant
from dpconvex.accounting.serialization import event_to_dict
from dpconvex.budget import (
    LedgerFileWarning,
    chain,
    ledger_file,
    safe_text,
    safe_time,
    summary_text,
    values,
)

_G = GaussianDpEvent(5.0)

_ACKNOWLEDGE = """
import sys
from dpconvex import Budget
Budget(sys.argv[1]).acknowledge_tampering()
"""


def _raw(path, *statements):
    db = sqlite3.connect(path)
    try:
        for sql, *args in statements:
            db.execute(sql, *args)
        db.commit()
    finally:
        db.close()


def _large_ledger(path, rows: int) -> None:
    """A chained ledger of ``rows`` entries (about 0.5 kB each), written in one go."""
    Budget(path, 50.0, 1e-5)
    payload = json.dumps(event_to_dict(GaussianDpEvent(1000.0)))
    _raw(
        path,
        (
            "INSERT INTO entries (time, mechanism, label, event, epsilon_after) "
            "SELECT 1.7e9, 'g', printf('%.400c', 'x'), ?, 0.1 FROM "
            "(WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < ?) "
            "SELECT i FROM n)",
            (payload, rows),
        ),
    )
    Budget(path).acknowledge_tampering()  # chain the rows


def _wait_for(flag, deadline: float = 120.0) -> None:
    end = time.time() + deadline
    while not flag.exists() and time.time() < end:
        time.sleep(0.05)


@pytest.mark.slow  # 4-10 s (a child process imports dpconvex); CI runs -m slow
def test_a_killed_acknowledge_leaves_an_openable_ledger(tmp_path):
    """Reproducer: a SIGKILL inside `budget acknowledge` on a ledger larger than SQLite's
    page cache (2 MB) left a hot journal, which a read-only open cannot roll back: the
    ledger could no longer be opened at all ("attempt to write a readonly database")."""
    path = tmp_path / "l.db"
    _large_ledger(path, 6000)
    _raw(path, ("DELETE FROM entries WHERE id = 2",))  # every later hash is rewritten
    flag = tmp_path / "inside"
    env = {
        **os.environ,
        "DPCONVEX_BUDGET_CRASH_SLEEP": "120",
        "DPCONVEX_BUDGET_CRASH_FLAG": str(flag),
    }
    child = subprocess.Popen([sys.executable, "-c", _ACKNOWLEDGE, str(path)], env=env)
    journal = tmp_path / "l.db-journal"
    _wait_for(flag)  # the child has written everything and sleeps inside its transaction
    os.kill(child.pid, signal.SIGKILL)
    child.wait(timeout=30)
    assert journal.stat().st_size > 2_000_000  # the cache spilled: the file was written
    reopened = Budget(path)  # was: LedgerError "cannot open the ledger"
    assert not journal.exists()  # rolled back
    assert "entry #3 does not follow entry #1" in reopened.tampering  # as before the kill
    assert len(reopened.entries()) == 5999
    assert "entry #3" in reopened.acknowledge_tampering()
    reopened.spend(_G, mechanism="g", label="after")


_KILLED_WRITER = """
import os, signal, sqlite3, sys
db = sqlite3.connect(sys.argv[1], isolation_level=None)
db.execute("BEGIN IMMEDIATE")
db.execute("UPDATE entries SET label = label || 'y'")  # more than the page cache: it spills
os.kill(os.getpid(), signal.SIGKILL)
"""


def test_any_killed_writer_is_rolled_back_by_a_read_only_open(tmp_path):
    """The same failure without dpconvex's test hook: a writer killed mid-transaction."""
    path = tmp_path / "l.db"
    _large_ledger(path, 6000)
    subprocess.run([sys.executable, "-c", _KILLED_WRITER, str(path)], timeout=60)
    assert (tmp_path / "l.db-journal").stat().st_size > 2_000_000
    ledger = Budget(path)  # was: LedgerError "cannot open the ledger"
    assert ledger.tampering is None and len(ledger.entries()) == 6000
    assert not (tmp_path / "l.db-journal").exists()


def test_a_hot_journal_that_cannot_be_rolled_back_is_named(tmp_path, monkeypatch):
    path = tmp_path / "l.db"
    Budget(path, 4.0, 1e-5).spend(_G, mechanism="g")
    monkeypatch.setattr(ledger_file.os, "access", lambda *a, **k: False)
    with pytest.raises(LedgerError, match="unfinished write"):
        budget_module.Budget._roll_back_unfinished_write(Budget(path))


def test_a_copy_or_a_restore_is_warned_about(tmp_path):
    path = tmp_path / "l.db"
    Budget(path, 4.0, 1e-5).spend(_G, mechanism="g")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert Budget(path).file_warning is None  # the original: no warning
    copy = tmp_path / "copy.db"
    shutil.copyfile(path, copy)
    with pytest.warns(LedgerFileWarning, match="copied"):
        copied = Budget(copy)
    assert "acknowledge" in copied.file_warning
    # a backup moved back over the ledger (mv, rsync) is a different file too
    os.replace(copy, path)
    with pytest.warns(LedgerFileWarning):
        restored = Budget(path)
    assert "copied, moved or restored" in restored.acknowledge_tampering()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert Budget(path).file_warning is None
    # a rename keeps the file (and its inode): not reported, as documented
    os.rename(path, tmp_path / "renamed.db")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert Budget(tmp_path / "renamed.db").file_warning is None
    assert Budget(tmp_path / "renamed.db").ledger_id is not None


@pytest.mark.parametrize(
    "label",
    ["\x1b[2J\x1b[31mred", "line\nbreak", "bell\x07", "\u202eevil", "zero\u200bwidth", "x" * 1001],
)
def test_labels_with_control_characters_are_refused(tmp_path, label):
    ledger = Budget(tmp_path / "l.db", 4.0, 1e-5)
    with pytest.raises(ValueError, match="label"):
        ledger.spend(_G, mechanism="g", label=label)
    with pytest.raises(ValueError, match="mechanism"):
        ledger.spend(_G, mechanism=label)
    assert ledger.entries() == []
    ledger.spend(_G, mechanism="g", label="plain label, accents é and ünïcode ok")


def test_a_hostile_file_is_displayed_safely(tmp_path):
    path = tmp_path / "l.db"
    ledger = Budget(path, 4.0, 1e-5)
    ledger.spend(_G, mechanism="g", label="fine")
    ledger.spend(_G, mechanism="g", label="fine")
    _raw(
        path,
        (
            "UPDATE entries SET label = ?, mechanism = ? WHERE id = 1",
            ("\x1b]0;pwned\x07", "\u202e"),
        ),
        ("UPDATE entries SET time = 1e20 WHERE id = 2",),
        ("INSERT INTO acknowledgments (time, finding) VALUES (-1e300, ?)", ("\x1b[2J",)),
    )
    reopened = Budget(path)
    summary = reopened.summary()
    text = summary_text(summary) + json.dumps(summary)
    assert "\x1b" not in text and "\u202e" not in text and "\x07" not in text
    assert summary["entries"][1]["time_utc"] == "invalid time (1e+20)"
    assert summary["acknowledged"][0]["time_utc"].startswith("invalid time")
    assert "entry #1" in summary["tampering"]


def test_display_helpers():
    assert safe_text("a\x1bb\u202ec") == "a\\x1bb\\u202ec"
    assert safe_text("x" * 300, limit=10) == "x" * 10 + "..."
    assert safe_text(b"\x1b") == "b'\\x1b'"
    assert safe_time(0.0) == "1970-01-01 00:00:00 UTC"
    for bad in (1e20, float("nan"), float("inf"), -1.0, "soon", None, True):
        assert safe_time(bad).startswith("invalid time")


@pytest.mark.parametrize("clock", [1e20, float("nan"), float("inf"), -5.0])
def test_an_absurd_clock_is_refused_before_anything_is_written(tmp_path, monkeypatch, clock):
    ledger = Budget(tmp_path / "l.db", 4.0, 1e-5)
    monkeypatch.setattr(values.time, "time", lambda: clock)
    with pytest.raises(LedgerError, match="system clock reads"):
        ledger.spend(_G, mechanism="g")
    monkeypatch.undo()
    assert ledger.entries() == []


@pytest.mark.parametrize(
    "statement, match",
    [
        ("UPDATE entries SET time = 'soon' WHERE id = 1", "entry #1 cannot be read"),
        ("UPDATE entries SET label = x'1b5b' WHERE id = 1", "entry #1 cannot be read"),
        (
            'UPDATE entries SET event = \'{"event": "os.system", "fields": {}}\' WHERE id = 1',
            "entry #1 cannot be read",
        ),
        ("UPDATE entries SET event = '[1, 2' WHERE id = 1", "entry #1 cannot be read"),
        # an event text past the cap is refused before it is parsed
        ("UPDATE entries SET event = ' ' || zeroblob(17000000) WHERE id = 1",
         "entry #1 cannot be read"),
    ],
)
def test_hostile_rows_give_one_clear_error(tmp_path, statement, match):
    path = tmp_path / "l.db"
    Budget(path, 4.0, 1e-5).spend(_G, mechanism="g")
    _raw(path, (statement,))
    reopened = Budget(path)
    assert reopened.tampering is not None
    with pytest.raises(LedgerError, match=match):
        reopened.entries()
    with pytest.raises(LedgerError, match=match):
        reopened.summary()
    if "event" in statement:  # an event that cannot be loaded cannot be priced either
        with pytest.raises(LedgerError, match="cannot be priced"):
            reopened.spent()


def test_a_recorded_event_with_a_negative_count_is_never_priced(tmp_path):
    path = tmp_path / "l.db"
    Budget(path, 4.0, 1e-5).spend(_G, mechanism="g")
    bad = json.dumps(event_to_dict(_G)).replace('"fields"', '"fields"')
    bad = json.dumps({"event": "dp_accounting.dp_event.SelfComposedDpEvent",
                      "fields": {"event": json.loads(bad), "count": -3}})  # fmt: skip
    _raw(path, ("UPDATE entries SET event = ? WHERE id = 1", (bad,)))
    with pytest.raises(LedgerError, match="count"):
        Budget(path).spent()


@pytest.mark.parametrize(
    "statement, match",
    [
        ("UPDATE budget SET epsilon = 'lots'", "epsilon"),
        ("UPDATE budget SET epsilon = -1", "epsilon"),
        ("UPDATE budget SET delta = 2", "delta"),
        ("UPDATE budget SET accounting = 'evil'", "accounting"),
        ("UPDATE budget SET accounting = 'renyi-filter'", "order"),
        ("UPDATE budget SET format = 3", "format 3"),  # was: silently re-chained as format 1
    ],
)
def test_a_hostile_budget_row_is_refused_on_open(tmp_path, statement, match):
    path = tmp_path / "l.db"
    Budget(path, 4.0, 1e-5)
    _raw(path, (statement,))
    with pytest.raises(LedgerError, match=match):
        Budget(path)


def test_a_ledger_of_the_previous_version_opens_and_gains_an_identity(tmp_path):
    """A format-2 ledger written before this version (no filter, identity or RDP columns)."""
    path = tmp_path / "old.db"
    created = 1.7e9
    genesis = chain._digest("dpconvex-ledger", 2, 4.0, 1e-5, "auto", created)
    _raw(
        path,
        (
            "CREATE TABLE budget (id INTEGER PRIMARY KEY CHECK (id = 1), epsilon REAL NOT NULL,"
            " delta REAL NOT NULL, accounting TEXT NOT NULL, created REAL NOT NULL,"
            " format INTEGER, head_count INTEGER, head_hash TEXT)",
        ),
        (
            "CREATE TABLE entries (id INTEGER PRIMARY KEY AUTOINCREMENT, time REAL NOT NULL,"
            " mechanism TEXT NOT NULL, label TEXT NOT NULL, event TEXT NOT NULL,"
            " epsilon_after REAL NOT NULL, hash TEXT)",
        ),
        (
            "CREATE TABLE acknowledgments (id INTEGER PRIMARY KEY AUTOINCREMENT,"
            " time REAL NOT NULL, finding TEXT NOT NULL)",
        ),
        ("INSERT INTO budget VALUES (1, 4.0, 1e-5, 'auto', ?, 2, 0, ?)", (created, genesis)),
    )
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        old = Budget(path)
    assert old.tampering is None and old.ledger_id is None and old.accounting == "auto"
    old.spend(_G, mechanism="g")
    reopened = Budget(path)
    assert reopened.tampering is None and reopened.ledger_id is not None
    assert len(reopened.entries()) == 1


def test_a_stale_snapshot_is_priced_again_and_never_overspends(tmp_path, monkeypatch):
    """Another process spends between this spend's snapshot and its lock: the spend must
    see the new head, price again and refuse (only one of the two fits)."""
    path = tmp_path / "l.db"
    fits = 1
    while PrivacyAccountant().compose(_G, fits + 1).get_epsilon(1e-5) <= 2:
        fits += 1
    ledger = Budget(path, 2.0, 1e-5)
    for _ in range(fits - 1):
        ledger.spend(_G, mechanism="g")
    other = Budget(path)
    real_snapshot = budget_module.Budget._snapshot
    calls = []

    def snapshot_then_race(self):
        state = real_snapshot(self)
        calls.append(self)
        if len(calls) == 1:
            other.spend(_G, mechanism="g", label="raced")  # the last spend that fits
        return state

    monkeypatch.setattr(budget_module.Budget, "_snapshot", snapshot_then_race)
    with pytest.raises(BudgetExceededError):
        ledger.spend(_G, mechanism="g", label="late")
    assert calls == [ledger, other, ledger]  # this spend priced twice: its snapshot was stale
    assert [e.label for e in ledger.entries()][-1] == "raced" and len(ledger.entries()) == fits


def test_pricing_runs_outside_the_lock(tmp_path, monkeypatch):
    """The accountant's work (0.17 s per spend on a few hundred DP-SGD entries) no longer
    runs inside the write transaction: other processes wait only for the insert."""
    ledger = Budget(tmp_path / "l.db", 4.0, 1e-5)
    ledger.spend(_G, mechanism="g")
    real_price = budget_module.Budget._price
    held = []

    def price(self, rows, payload):
        held.append(ledger_file._CALL_LOCK.locked())
        return real_price(self, rows, payload)

    monkeypatch.setattr(budget_module.Budget, "_price", price)
    ledger.spend(_G, mechanism="g")
    assert held == [False]


def test_a_budget_changed_since_opening_is_not_spent_against(tmp_path):
    """A Budget object priced against the epsilon it read when opened, even after the file's
    budget was edited and acknowledged elsewhere."""
    path = tmp_path / "l.db"
    long_lived = Budget(path, 4.0, 1e-5)
    _raw(path, ("UPDATE budget SET epsilon = 0.5",))
    Budget(path).acknowledge_tampering()
    with pytest.raises(LedgerError, match="changed"):
        long_lived.spend(_G, mechanism="g")
    assert Budget(path).entries() == []
