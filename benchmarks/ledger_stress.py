"""Concurrency, fork and crash safety of dpconvex.Budget: the table in docs/reliability.md.

Run:  python benchmarks/ledger_stress.py [--rounds 5] [--children 16] [--attempts 6] [--quick]

Every mode starts a fresh ledger (epsilon 3, delta 1e-5; a spend is N(0, 4^2) with
sensitivity 1, so about 40 spends fit) and lets ``children`` processes try ``attempts``
spends each. A child reports each spend that returned, at once, on a pipe. Then:

* lost      = reported but not in the ledger (must be 0),
* phantom   = in the ledger but never reported (only a SIGKILL between the commit
              and the report may cause one),
* spent <= budget, and "full" = the ledger holds the largest number of spends that
  fit (no spend was refused needlessly), unless the mode refuses every spend,
* errors    = exceptions other than BudgetExceededError, hung = children killed after
              the deadline (a deadlock).

Modes: ``own`` (spawned processes, each opening the ledger), ``reused`` (forked children
use the parent's Budget object), ``parent-conn`` (the parent holds a raw SQLite
connection to the file across the fork), ``parent-thread`` (a parent thread spends
while the children are forked), ``symlink`` (children open the ledger through a
symlink), ``hard-link`` (children open it through a hard link: every spend must be
refused with LedgerError and nothing recorded), ``sigkill`` (children are SIGKILLed at
random moments while spending). ``--accounting renyi-filter`` runs the same modes on a
Renyi-filter ledger (its default order): "within" is then the filter's Renyi sum <= its
budget, and "full" counts the spends whose summed RDP fits.
"""

from __future__ import annotations

import argparse
import json
import math
import multiprocessing as mp
import os
import random
import signal
import sqlite3
import sys
import tempfile
import threading
import time
from pathlib import Path

from dpconvex import Budget, BudgetExceededError
from dpconvex.accounting import GaussianDpEvent, PrivacyAccountant
from dpconvex.budget import default_filter_order, event_rdp, renyi_filter_budget

EVENT = GaussianDpEvent(4.0)
BUDGET = (3.0, 1e-5)
DEADLINE = 300.0
ACCOUNTING = {"name": "auto"}


def _spend_loop(ledger_or_path, attempts: int, tag: str, write_fd: int) -> None:
    try:
        ledger = ledger_or_path if isinstance(ledger_or_path, Budget) else Budget(ledger_or_path)
    except Exception as err:  # noqa: BLE001 - counted, not hidden
        os.write(write_fd, f"err {type(err).__name__}\n".encode())
        return
    for i in range(attempts):
        label = f"{tag}-{i}"
        try:
            ledger.spend(EVENT, mechanism="stress", label=label)
            os.write(write_fd, f"ok {label}\n".encode())
        except BudgetExceededError:
            pass
        except Exception as err:  # noqa: BLE001 - counted, not hidden
            os.write(write_fd, f"err {type(err).__name__}\n".encode())


def _spawned(path: str, attempts: int, tag: str, report: str) -> None:
    fd = os.open(report, os.O_WRONLY | os.O_APPEND | os.O_CREAT)
    _spend_loop(path, attempts, tag, fd)


def _fork_child(target, attempts: int, tag: str) -> tuple[int, int]:
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            os.close(read)
            _spend_loop(target, attempts, tag, write)
        finally:
            os._exit(0)
    os.close(write)
    return pid, read


def _collect(children: list[tuple[int, int]], kill_after: dict | None = None) -> dict:
    reported, errors, hung = [], [], 0
    start = time.time()
    for pid, read in children:
        while True:
            done, _ = os.waitpid(pid, os.WNOHANG)
            if done:
                break
            if time.time() - start > DEADLINE:
                os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
                hung += 1
                break
            time.sleep(0.02)
        with os.fdopen(read) as pipe:
            for line in pipe:
                kind, _, rest = line.strip().partition(" ")
                (reported if kind == "ok" else errors).append(rest)
    return {"reported": reported, "errors": errors, "hung": hung}


def _limit() -> int:
    k = 0
    if ACCOUNTING["name"] == "renyi-filter":
        order = default_filter_order(*BUDGET)
        cost, room = event_rdp(EVENT, order), renyi_filter_budget(*BUDGET, order)
        while math.fsum([cost] * (k + 1)) <= room:
            k += 1
        return k
    while PrivacyAccountant().compose(EVENT, k + 1).get_epsilon(BUDGET[1]) <= BUDGET[0]:
        k += 1
    return k


def _within(ledger: Budget) -> bool:
    if ledger.order is not None:
        return ledger.rdp_spent() <= ledger.rdp_budget
    return ledger.spent() <= BUDGET[0]


def run_mode(mode: str, directory: Path, children: int, attempts: int) -> dict:
    path = directory / "ledger.db"
    ledger = Budget(path, *BUDGET, accounting=ACCOUNTING["name"])
    start, kills, extra = time.perf_counter(), 0, []
    if mode == "own":
        ctx = mp.get_context("spawn")
        procs = []
        for c in range(children):
            report = str(directory / f"c{c}.txt")
            p = ctx.Process(target=_spawned, args=(str(path), attempts, f"c{c}", report))
            p.start()
            procs.append(p)
        for p in procs:
            p.join(DEADLINE)
        outcome = {"reported": [], "errors": [], "hung": 0}
        for c, p in enumerate(procs):
            if p.exitcode is None:
                p.kill()
                outcome["hung"] += 1
            report = directory / f"c{c}.txt"
            for line in report.read_text().splitlines() if report.exists() else []:
                kind, _, rest = line.partition(" ")
                outcome["reported" if kind == "ok" else "errors"].append(rest)
    elif mode in ("reused", "symlink", "hard-link"):
        target = ledger
        if mode == "symlink":
            os.symlink(path, directory / "alias.db")
            target = Budget(directory / "alias.db")
        if mode == "hard-link":
            os.link(path, directory / "hard.db")
            target = directory / "hard.db"  # opening it must already refuse
        outcome = _collect([_fork_child(target, attempts, f"c{c}") for c in range(children)])
        if mode == "hard-link":
            os.unlink(directory / "hard.db")
    elif mode == "parent-conn":
        raw = sqlite3.connect(path)
        raw.execute("SELECT count(*) FROM entries").fetchone()  # open, with the file's locks known
        outcome = _collect([_fork_child(ledger, attempts, f"c{c}") for c in range(children)])
        raw.close()
    elif mode == "parent-thread":
        stop = threading.Event()

        def parent_spends():
            i = 0
            while not stop.is_set():
                try:
                    ledger.spend(EVENT, mechanism="stress", label=f"p-{i}")
                    extra.append(f"p-{i}")
                except BudgetExceededError:
                    pass
                i += 1

        thread = threading.Thread(target=parent_spends)
        thread.start()
        forked = []
        for c in range(children):
            forked.append(_fork_child(ledger, attempts, f"c{c}"))
            time.sleep(0.005)
        outcome = _collect(forked)
        stop.set()
        thread.join()
    elif mode == "sigkill":
        rng = random.Random(0)
        forked = [_fork_child(ledger, attempts, f"c{c}") for c in range(children)]
        for pid, _ in forked:
            time.sleep(rng.uniform(0.0, 0.3))
            try:
                os.kill(pid, signal.SIGKILL)
                kills += 1
            except ProcessLookupError:
                pass
        outcome = _collect(forked)
    else:
        raise ValueError(mode)
    final = Budget(path)
    recorded = [e.label for e in final.entries()]
    reported = outcome["reported"] + extra
    spent = final.spent()
    errors = outcome["errors"]
    expected_errors = mode == "hard-link" and all(e == "LedgerError" for e in errors)
    return {
        "mode": mode,
        "seconds": time.perf_counter() - start,
        "attempts": children * attempts + len(extra),
        "reported": len(reported),
        "recorded": len(recorded),
        "lost": len(set(reported) - set(recorded)),
        "phantom": len(set(recorded) - set(reported)),
        "spent": spent,
        "within": _within(final),
        "full": len(recorded) == _limit() if mode != "hard-link" else len(recorded) == 0,
        "errors": 0 if expected_errors else len(errors),
        "refused": len(errors) if expected_errors else 0,
        "hung": outcome["hung"],
        "kills": kills,
        "intact": final.tampering is None,
    }


MODES = ("own", "reused", "parent-conn", "parent-thread", "symlink", "hard-link", "sigkill")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--children", type=int, default=16)
    parser.add_argument("--attempts", type=int, default=6)
    parser.add_argument("--modes", default=",".join(MODES))
    parser.add_argument("--quick", action="store_true", help="1 round, 4 children x 3 spends")
    parser.add_argument("--accounting", default="auto", choices=("auto", "renyi-filter"))
    args = parser.parse_args()
    ACCOUNTING["name"] = args.accounting
    if args.quick:
        args.rounds, args.children, args.attempts = 1, 4, 3
    rows = []
    for mode in args.modes.split(","):
        for _ in range(args.rounds):
            with tempfile.TemporaryDirectory() as tmp:
                rows.append(run_mode(mode, Path(tmp), args.children, args.attempts))
    print(
        f"{args.rounds} rounds per mode, {args.children} children x {args.attempts} spends, "
        f"budget epsilon {BUDGET[0]} at delta {BUDGET[1]}, {args.accounting} accounting "
        f"(fits {_limit()} spends); "
        f"python {sys.version.split()[0]}, sqlite {sqlite3.sqlite_version}"
    )
    head = ["mode", "rounds", "s/round", "attempts", "reported", "recorded", "lost",
            "phantom", "max spent", "within", "full", "errors", "refused", "hung", "kills",
            "intact"]  # fmt: skip
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head))
    for mode in dict.fromkeys(r["mode"] for r in rows):
        group = [r for r in rows if r["mode"] == mode]
        total = {k: sum(r[k] for r in group) for k in
                 ("attempts", "reported", "recorded", "lost", "phantom", "errors", "refused",
                  "hung", "kills")}  # fmt: skip
        print(
            f"| {mode} | {len(group)} | {sum(r['seconds'] for r in group) / len(group):.1f} "
            f"| {total['attempts']} | {total['reported']} | {total['recorded']} | {total['lost']} "
            f"| {total['phantom']} | {max(r['spent'] for r in group):.4f} "
            f"| {sum(r['within'] for r in group)}/{len(group)} "
            f"| {sum(r['full'] for r in group)}/{len(group)} | {total['errors']} "
            f"| {total['refused']} | {total['hung']} | {total['kills']} "
            f"| {sum(r['intact'] for r in group)}/{len(group)} |"
        )
    print(json.dumps({"violations": sum(r["lost"] + r["errors"] + r["hung"] for r in rows)
                      + sum(not r["within"] for r in rows)}))  # fmt: skip


if __name__ == "__main__":
    main()
