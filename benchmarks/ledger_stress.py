"""Concurrency and crash safety of dpconvex.Budget, repeated: numbers for docs/reliability.md.

Run:  python benchmarks/ledger_stress.py [--rounds 10] [--processes 8] [--attempts 6]

Each round: a fresh ledger (epsilon 3, delta 1e-5); P spawned processes each try A spends
of a Gaussian event (sigma 4); we check that every spend reported as successful is in the
ledger, that the ledger's composed epsilon is within budget, and that the number of
entries is the largest k whose k-fold composition fits (no spend refused needlessly).
Then a child is SIGKILLed while it holds the write lock; the ledger must still read the
same entries and accept the next spend.
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from dpconvex import Budget, BudgetExceededError
from dpconvex.accounting import GaussianDpEvent, PrivacyAccountant

EVENT = GaussianDpEvent(4.0)
_CHILD = (
    "import sys\nfrom dpconvex import Budget\nfrom dpconvex.accounting import GaussianDpEvent\n"
    "Budget(sys.argv[1]).spend(GaussianDpEvent(4.0), mechanism='gauss', label='killed')\n"
)


def _spender(path, attempts, queue):
    ledger, ok = Budget(path), []
    for i in range(attempts):
        try:
            ok.append(ledger.spend(EVENT, mechanism="gauss", label=f"{os.getpid()}-{i}").label)
        except BudgetExceededError:
            pass
    queue.put(ok)


def concurrency_round(directory: Path, processes: int, attempts: int) -> dict:
    path = directory / "ledger.sqlite"
    Budget(path, 3.0, 1e-5)
    ctx = mp.get_context("spawn")
    queue = ctx.Queue()
    procs = [ctx.Process(target=_spender, args=(path, attempts, queue)) for _ in range(processes)]
    start = time.perf_counter()
    for p in procs:
        p.start()
    succeeded = [label for _ in procs for label in queue.get(timeout=300)]
    for p in procs:
        p.join(timeout=300)
    ledger = Budget(path)
    recorded = [e.label for e in ledger.entries()]
    limit = max(
        k
        for k in range(1, processes * attempts + 1)
        if PrivacyAccountant().compose(EVENT, k).get_epsilon(1e-5) <= 3.0
    )
    return {
        "seconds": time.perf_counter() - start,
        "attempts": processes * attempts,
        "succeeded": len(succeeded),
        "recorded": len(recorded),
        "lost": len(set(succeeded) - set(recorded)),
        "phantom": len(set(recorded) - set(succeeded)),
        "spent": ledger.spent(),
        "limit": limit,
    }


def crash_round(directory: Path) -> dict:
    path = directory / "crash.sqlite"
    ledger = Budget(path, 5.0, 1e-5)
    for i in range(3):
        ledger.spend(EVENT, mechanism="gauss", label=f"before-{i}")
    env = {**os.environ, "DPCONVEX_BUDGET_CRASH_SLEEP": "30"}
    child = subprocess.Popen([sys.executable, "-c", _CHILD, str(path)], env=env)
    time.sleep(3.0)
    os.kill(child.pid, signal.SIGKILL)
    child.wait(timeout=30)
    labels = [e.label for e in Budget(path).entries()]
    Budget(path).spend(EVENT, mechanism="gauss", label="after")
    after = [e.label for e in Budget(path).entries()]
    return {"intact": labels == [f"before-{i}" for i in range(3)], "next spend": after[-1]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--processes", type=int, default=8)
    parser.add_argument("--attempts", type=int, default=6)
    args = parser.parse_args()
    rows, crashes = [], []
    for _ in range(args.rounds):
        with tempfile.TemporaryDirectory() as tmp:
            rows.append(concurrency_round(Path(tmp), args.processes, args.attempts))
            crashes.append(crash_round(Path(tmp)))
    print(f"{args.rounds} rounds, {args.processes} processes x {args.attempts} spends, budget 3")
    print("| round | s | attempts | succeeded | recorded | lost | phantom | spent eps | limit |")
    print("|---|---|---|---|---|---|---|---|---|")
    for i, r in enumerate(rows):
        print(
            f"| {i} | {r['seconds']:.1f} | {r['attempts']} | {r['succeeded']} | {r['recorded']} "
            f"| {r['lost']} | {r['phantom']} | {r['spent']:.4f} | {r['limit']} |"
        )
    ok = sum(c["intact"] and c["next spend"] == "after" for c in crashes)
    print(f"SIGKILL inside a write: ledger intact and writable in {ok}/{len(crashes)} rounds")


if __name__ == "__main__":
    main()
