"""The SQLite privacy ledger: refusal before overspending, concurrency, crash safety."""

import json
import multiprocessing as mp
import os
import signal
import subprocess
import sys
import time

import pytest

from dpconvex import Budget, BudgetExceededError
from dpconvex.accounting import (
    ComposedDpEvent,
    GaussianDpEvent,
    ObjectivePerturbationDpEvent,
    PrivacyAccountant,
    dpsgd_event,
    tuned_event,
)
from dpconvex.accounting.serialization import event_from_dict, event_to_dict
from dpconvex.cli import main

EVENT = GaussianDpEvent(4.0)  # one spend: eps(1e-5) of N(0, 4^2), sensitivity 1


def test_events_round_trip_through_json():
    for event in [
        EVENT,
        ObjectivePerturbationDpEvent(5, 20, 1, 1),
        tuned_event(dpsgd_event(1.0, 0.01, 50), 10.0),
        ComposedDpEvent([EVENT, ObjectivePerturbationDpEvent(5, 20, 1, 1)]),
    ]:
        text = json.dumps(event_to_dict(event))
        assert event_from_dict(json.loads(text)) == event
    with pytest.raises(ValueError, match="refusing"):
        event_from_dict({"event": "os.system", "fields": {}})


def test_spend_refuses_before_overspending(tmp_path):
    ledger = Budget(tmp_path / "b.sqlite", 2.0, 1e-5)
    allowed = 0
    with pytest.raises(BudgetExceededError, match="nothing was recorded"):
        for _ in range(100):
            ledger.spend(EVENT, mechanism="gauss", label=str(allowed))
            allowed += 1
    assert len(ledger.entries()) == allowed > 1
    composed = PrivacyAccountant().compose(EVENT, allowed).get_epsilon(1e-5)
    assert ledger.spent() == pytest.approx(composed) and composed <= 2.0
    assert PrivacyAccountant().compose(EVENT, allowed + 1).get_epsilon(1e-5) > 2.0
    reopened = Budget(tmp_path / "b.sqlite")
    assert (reopened.epsilon, reopened.delta) == (2.0, 1e-5)
    with pytest.raises(ValueError, match="has epsilon=2.0"):
        Budget(tmp_path / "b.sqlite", 3.0, 1e-5)
    with pytest.raises(ValueError, match="give epsilon"):
        Budget(tmp_path / "new.sqlite")


def _spender(path, attempts, queue):
    ledger = Budget(path)
    ok = []
    for i in range(attempts):
        try:
            entry = ledger.spend(EVENT, mechanism="gauss", label=f"{os.getpid()}-{i}")
            ok.append(entry.label)
        except BudgetExceededError:
            pass
    queue.put(ok)


@pytest.mark.slow  # ~25 s; CI runs -m slow as its own step
def test_eight_processes_never_overspend_and_lose_nothing(tmp_path):
    path = tmp_path / "shared.sqlite"
    Budget(path, 3.0, 1e-5)
    # forkserver: children fork from a fresh server process that holds no SQLite
    # connection (SQLite forbids carrying one across fork) and has dpconvex preloaded
    ctx = mp.get_context("forkserver")
    ctx.set_forkserver_preload(["dpconvex"])
    queue = ctx.Queue()
    procs = [ctx.Process(target=_spender, args=(path, 6, queue)) for _ in range(8)]
    for p in procs:
        p.start()
    succeeded = [label for _ in procs for label in queue.get(timeout=120)]
    for p in procs:
        p.join(timeout=120)
        assert p.exitcode == 0
    ledger = Budget(path)
    recorded = [e.label for e in ledger.entries()]
    assert sorted(recorded) == sorted(succeeded)  # every returned spend is in the ledger
    assert ledger.spent() <= 3.0
    limit = max(
        k for k in range(1, 49) if PrivacyAccountant().compose(EVENT, k).get_epsilon(1e-5) <= 3.0
    )
    assert len(recorded) == limit  # the budget was used up exactly, not exceeded


_CHILD = """
import sys
from dpconvex import Budget
from dpconvex.accounting import GaussianDpEvent
Budget(sys.argv[1]).spend(GaussianDpEvent(4.0), mechanism="gauss", label="killed")
"""


def test_sigkill_mid_write_leaves_a_readable_ledger(tmp_path):
    path = tmp_path / "crash.sqlite"
    ledger = Budget(path, 5.0, 1e-5)
    for i in range(3):
        ledger.spend(EVENT, mechanism="gauss", label=f"before-{i}")
    env = {**os.environ, "DPCONVEX_BUDGET_CRASH_SLEEP": "30"}
    child = subprocess.Popen([sys.executable, "-c", _CHILD, str(path)], env=env)
    time.sleep(3.0)  # the child is now inside BEGIN IMMEDIATE, holding the write lock
    os.kill(child.pid, signal.SIGKILL)
    child.wait(timeout=30)
    assert child.returncode == -signal.SIGKILL
    after = Budget(path)
    labels = [e.label for e in after.entries()]
    assert labels == ["before-0", "before-1", "before-2"]  # nothing lost, nothing half-written
    after.spend(EVENT, mechanism="gauss", label="after")  # the lock was released
    assert [e.label for e in after.entries()][-1] == "after"


def test_cli_budget_commands(tmp_path, capsys):
    path = tmp_path / "cli.sqlite"

    def run(argv):
        with pytest.raises(SystemExit) as info:
            main(argv)
        return info.value.code, capsys.readouterr()

    code, out = run(["budget", "init", str(path), "--epsilon", "1.5", "--delta", "1e-5"])
    assert code == 0 and "created" in out.out
    code, out = run(
        [
            "fit",
            "--data",
            "adult",
            "--epsilon",
            "1",
            "--delta",
            "1e-5",
            "--budget",
            str(path),
            "--json",
            "--seed",
            "0",
            "--out",
            str(tmp_path / "m.json"),
        ]
    )
    assert code == 0
    code, out = run(
        [
            "fit",
            "--data",
            "adult",
            "--epsilon",
            "1",
            "--delta",
            "1e-5",
            "--budget",
            str(path),
            "--out",
            str(tmp_path / "m2.json"),
        ]
    )
    assert code == 2 and "budget" in out.err and len(out.err.strip().splitlines()) == 1
    code, out = run(["budget", "show", str(path), "--json"])
    shown = json.loads(out.out)
    assert len(shown["entries"]) == 1 and shown["epsilon_spent"] <= 1.5
    assert shown["epsilon_left"] == pytest.approx(1.5 - shown["epsilon_spent"])


# --- issue 13: no refunds, one name, fork safety, tamper evidence, clear errors ----------
import sqlite3  # noqa: E402
import threading  # noqa: E402

import attr  # noqa: E402
import numpy as np  # noqa: E402
from dp_accounting.dp_event import (  # noqa: E402
    DpEvent,
    PoissonSampledDpEvent,
    SampledWithoutReplacementDpEvent,
    SelfComposedDpEvent,
)

from dpconvex import LedgerError, LedgerTamperedError  # noqa: E402
from dpconvex.accounting import register_rdp  # noqa: E402

_G = GaussianDpEvent(5.0)


@attr.define(frozen=True)
class _LocalDpEvent(DpEvent):
    """A registered event that lives outside dp_accounting and dpconvex: not loadable."""

    value: float = 1.0


register_rdp(_LocalDpEvent, lambda event, orders: np.asarray(orders) * 1e-3)


@pytest.mark.parametrize(
    "make",
    [
        lambda: SelfComposedDpEvent(_G, -1),
        lambda: SelfComposedDpEvent(_G, 0),
        lambda: SelfComposedDpEvent(_G, 2.5),
        lambda: SelfComposedDpEvent(_G, True),
        lambda: GaussianDpEvent(float("nan")),
        lambda: GaussianDpEvent(0.0),
        lambda: GaussianDpEvent(-1.0),
        lambda: GaussianDpEvent(float("inf")),
        lambda: PoissonSampledDpEvent(0.0, _G),
        lambda: PoissonSampledDpEvent(1.5, _G),
        lambda: SampledWithoutReplacementDpEvent(5, 10, _G),
        lambda: ComposedDpEvent([_G, SelfComposedDpEvent(_G, -3)]),
        lambda: _LocalDpEvent(),
    ],
)
def test_invalid_events_are_refused_and_never_refund(tmp_path, make):
    ledger = Budget(tmp_path / "l.db", 4.0, 1e-5, accounting="rdp")
    ledger.spend(_G, mechanism="first")
    before = ledger.spent()
    with pytest.raises(ValueError):
        ledger.spend(make(), mechanism="bad")
    reopened = Budget(tmp_path / "l.db")
    assert len(reopened.entries()) == 1 and reopened.spent() == before


def test_accountant_refuses_nonsense_events_by_name():
    with pytest.raises(ValueError, match="noise_multiplier"):
        PrivacyAccountant().compose(GaussianDpEvent(float("nan")))
    with pytest.raises(ValueError, match="count"):
        PrivacyAccountant().compose(SelfComposedDpEvent(_G, 0))


@pytest.mark.parametrize(
    "epsilon, delta, match",
    [
        (1e308, 1e-5, "above 100"),
        (1.0, 1e-300, "below 1e-100"),
        (True, 1e-5, "epsilon must be a number"),
        (1.0, "1e-5", "delta must be a number"),
        (float("nan"), 1e-5, "NaN"),
        (1.0, 1.0, "delta"),
    ],
)
def test_budget_bounds_like_the_estimators(tmp_path, epsilon, delta, match):
    with pytest.raises(ValueError, match=match):
        Budget(tmp_path / "l.db", epsilon, delta)
    assert not (tmp_path / "l.db").exists()


def test_float32_budget_reopens_with_the_same_decimal(tmp_path):
    Budget(tmp_path / "l.db", np.float32(0.1), np.float32(1e-5))
    reopened = Budget(tmp_path / "l.db", 0.1, 1e-5)
    assert (reopened.epsilon, reopened.delta) == (0.1, 1e-5)


def test_tiny_delta_is_priced_not_refused(tmp_path):
    ledger = Budget(tmp_path / "l.db", 1.0, 1e-100)
    entry = ledger.spend(GaussianDpEvent(50.0), mechanism="g")
    # PLD tails end near 1e-16; "auto" then converts RDP, an upper bound all the same
    rdp = PrivacyAccountant("rdp").compose(GaussianDpEvent(50.0)).get_epsilon(1e-100)
    assert entry.epsilon_after == pytest.approx(rdp) and np.isfinite(rdp)


def test_hard_links_are_refused_and_symlinks_are_one_ledger(tmp_path):
    path = tmp_path / "l.db"
    ledger = Budget(path, 4.0, 1e-5)
    os.symlink(path, tmp_path / "alias.db")
    via_link = Budget(tmp_path / "alias.db")
    assert via_link.path == ledger.path
    via_link.spend(_G, mechanism="via symlink")
    assert [e.mechanism for e in ledger.entries()] == ["via symlink"]
    os.link(path, tmp_path / "hard.db")
    with pytest.raises(LedgerError, match="hard links"):
        ledger.spend(_G, mechanism="refused")
    with pytest.raises(LedgerError, match="hard links"):
        Budget(tmp_path / "hard.db")
    os.unlink(tmp_path / "hard.db")
    ledger.spend(_G, mechanism="after unlink")
    assert len(ledger.entries()) == 2


def test_journal_is_rollback_not_wal(tmp_path):
    path = tmp_path / "l.db"
    Budget(path, 4.0, 1e-5).spend(_G, mechanism="g")
    with sqlite3.connect(path) as db:
        assert db.execute("PRAGMA journal_mode").fetchone()[0] == "delete"
    assert not (tmp_path / "l.db-wal").exists() and not (tmp_path / "l.db-shm").exists()


def _fork_children(ledger, children, spends):
    """Fork ``children`` processes that each spend ``spends`` times through ``ledger``.

    Each child writes the labels of its successful spends to a pipe; a child that hangs
    (a deadlock inside SQLite) is killed after 60 s and counted as hung.
    """
    results, hung = [], 0
    for c in range(children):
        read, write = os.pipe()
        pid = os.fork()
        if pid == 0:  # the child: never return into pytest
            try:
                os.close(read)
                ok = []
                for i in range(spends):
                    try:
                        ok.append(ledger.spend(_G, mechanism="child", label=f"c{c}-{i}").label)
                    except BudgetExceededError:
                        pass
                os.write(write, json.dumps(ok).encode())
            finally:
                os._exit(0)
        os.close(write)
        results.append((pid, read))
    labels = []
    for pid, read in results:
        deadline = time.time() + 60
        while time.time() < deadline:
            done, _ = os.waitpid(pid, os.WNOHANG)
            if done:
                break
            time.sleep(0.05)
        else:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            hung += 1
        with os.fdopen(read) as pipe:
            text = pipe.read()
        labels += json.loads(text) if text else []
    return labels, hung


@pytest.mark.slow  # paper-scale (> 20 s here); CI runs -m slow as its own step
@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
def test_fork_with_a_reused_budget_and_a_spending_parent_thread(tmp_path):
    ledger = Budget(tmp_path / "l.db", 6.0, 1e-5)
    parent_ok, stop = [], threading.Event()

    def parent_spends():
        i = 0
        while not stop.is_set():
            try:
                parent_ok.append(ledger.spend(_G, mechanism="parent", label=f"p{i}").label)
            except BudgetExceededError:
                pass
            i += 1
            time.sleep(0.01)

    thread = threading.Thread(target=parent_spends)
    thread.start()
    try:
        labels, hung = _fork_children(ledger, children=6, spends=4)
    finally:
        stop.set()
        thread.join(timeout=120)
    assert hung == 0
    recorded = [e.label for e in Budget(tmp_path / "l.db").entries()]
    assert sorted(recorded) == sorted(labels + parent_ok)  # reported == recorded
    assert Budget(tmp_path / "l.db").spent() <= 6.0


def _tamper(path, sql):
    with closing_db(path) as db:
        db.execute(sql)
        db.commit()


class closing_db:  # noqa: N801 - a tiny context manager for raw edits
    def __init__(self, path):
        self.db = sqlite3.connect(path)

    def __enter__(self):
        return self.db

    def __exit__(self, *exc):
        self.db.close()


@pytest.mark.parametrize(
    "sql, finding",
    [
        ("UPDATE entries SET label = 'edited' WHERE id = 2", "entry #2 differs"),
        ("UPDATE entries SET event = replace(event, '5.0', '50.0') WHERE id = 1", "entry #1"),
        ("DELETE FROM entries WHERE id = 3", "last 1 entry was deleted"),
        ("DELETE FROM entries WHERE id = 2", "entry #3 does not follow entry #1"),
        ("DELETE FROM entries", "last 3 entries were deleted"),
        ("DELETE FROM entries WHERE id = 1", "entries before #2 were deleted"),
        ("UPDATE budget SET epsilon = 100", "does not follow the budget"),
        (
            "INSERT INTO entries (time, mechanism, label, event, epsilon_after) "
            "SELECT time, mechanism, label, event, epsilon_after FROM entries WHERE id = 1",
            "entry #4 differs",
        ),
    ],
)
def test_tampering_is_found_and_spending_waits_for_acknowledgment(tmp_path, sql, finding):
    path = tmp_path / "l.db"
    ledger = Budget(path, 4.0, 1e-5)
    for i in range(3):
        ledger.spend(_G, mechanism="g", label=str(i))
    assert ledger.check() is None
    _tamper(path, sql)
    reopened = Budget(path)
    assert finding in reopened.tampering
    with pytest.raises(LedgerTamperedError, match="acknowledge"):
        ledger.spend(_G, mechanism="g")
    count = len(reopened.entries())
    found = reopened.tampering
    assert reopened.acknowledge_tampering() == found
    assert reopened.check() is None and finding in reopened.acknowledgments()[-1][1]
    reopened.spend(_G, mechanism="g", label="after")
    assert len(Budget(path).entries()) == count + 1 and Budget(path).tampering is None


def test_cli_show_reports_tampering_and_acknowledge_resumes(tmp_path, capsys):
    path = tmp_path / "l.db"
    ledger = Budget(path, 4.0, 1e-5)
    ledger.spend(_G, mechanism="g")
    ledger.spend(_G, mechanism="g")
    _tamper(path, "DELETE FROM entries WHERE id = 2")

    def run(argv):
        with pytest.raises(SystemExit) as info:
            main(argv)
        return info.value.code, capsys.readouterr()

    code, out = run(["budget", "show", str(path)])
    assert code == 0 and "altered" in out.err and "acknowledge" in out.err
    code, out = run(["budget", "show", str(path), "--json"])
    assert "deleted" in json.loads(out.out)["tampering"]
    code, out = run(["budget", "acknowledge", str(path)])
    assert code == 0 and "deleted" in out.out
    code, out = run(["budget", "show", str(path)])
    assert code == 0 and "acknowledged" in out.out and "altered" not in out.err


def test_cli_names_an_unreadable_ledger_without_a_traceback(tmp_path, capsys):
    junk = tmp_path / "junk.db"
    junk.write_bytes(b"not a database " * 100)
    with pytest.raises(SystemExit) as info:
        main(["budget", "show", str(junk)])
    err = capsys.readouterr().err
    assert info.value.code == 2 and "not a readable dpconvex ledger" in err
    assert "Traceback" not in err


def test_reading_writes_nothing(tmp_path):
    path = tmp_path / "l.db"
    Budget(path, 4.0, 1e-5).spend(_G, mechanism="g")
    before = (sorted(os.listdir(tmp_path)), path.read_bytes(), path.stat().st_mtime_ns)
    reader = Budget(path)
    reader.entries(), reader.spent(), reader.check(), reader.acknowledgments()
    assert (sorted(os.listdir(tmp_path)), path.read_bytes(), path.stat().st_mtime_ns) == before


@pytest.mark.skipif(os.geteuid() == 0, reason="root ignores directory permissions")
def test_show_works_in_a_read_only_directory(tmp_path):
    path = tmp_path / "l.db"
    Budget(path, 4.0, 1e-5).spend(_G, mechanism="g")
    os.chmod(tmp_path, 0o555)
    try:
        assert len(Budget(path).entries()) == 1
        with pytest.raises(LedgerError, match="cannot write"):
            Budget(path).spend(_G, mechanism="g")
    finally:
        os.chmod(tmp_path, 0o755)


def test_a_format_1_wal_ledger_is_upgraded_with_a_note(tmp_path):
    path = tmp_path / "old.db"
    with closing_db(path) as db:
        db.execute("PRAGMA journal_mode=WAL")
        db.executescript(
            "CREATE TABLE budget (id INTEGER PRIMARY KEY CHECK (id = 1), epsilon REAL NOT NULL,"
            " delta REAL NOT NULL, accounting TEXT NOT NULL, created REAL NOT NULL);"
            "CREATE TABLE entries (id INTEGER PRIMARY KEY AUTOINCREMENT, time REAL NOT NULL,"
            " mechanism TEXT NOT NULL, label TEXT NOT NULL, event TEXT NOT NULL,"
            " epsilon_after REAL NOT NULL);"
        )
        db.execute("INSERT INTO budget VALUES (1, 4.0, 1e-5, 'auto', 0.0)")
        db.execute(
            "INSERT INTO entries (time, mechanism, label, event, epsilon_after) "
            "VALUES (0, 'g', 'old', ?, 0.5)",
            (json.dumps(event_to_dict(_G)),),
        )
        db.commit()
    ledger = Budget(path)
    assert ledger.tampering is None and "format 1" in ledger.acknowledgments()[0][1]
    ledger.spend(_G, mechanism="g", label="new")
    assert [e.label for e in ledger.entries()] == ["old", "new"]
    with closing_db(path) as db:
        assert db.execute("PRAGMA journal_mode").fetchone()[0] == "delete"
