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
            str(tmp_path / "m.json"),
        ]
    )
    assert code == 2 and "budget" in out.err and len(out.err.strip().splitlines()) == 1
    code, out = run(["budget", "show", str(path), "--json"])
    shown = json.loads(out.out)
    assert len(shown["entries"]) == 1 and shown["epsilon_spent"] <= 1.5
    assert shown["epsilon_left"] == pytest.approx(1.5 - shown["epsilon_spent"])
