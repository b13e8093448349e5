"""Cost of one Budget.spend on a ledger of n DP-SGD entries: in total, and with the lock held.

Run:  python benchmarks/bench_ledger.py [--sizes 0 100 300] [--repeats 5]
                                        [--module OTHER_BUDGET_PY]

A ledger (epsilon 100, delta 1e-5, "auto" accounting) is filled with DP-SGD spends
(noise 2, sampling rate 0.01, 100 steps each; "mixed" cycles through three such
events with different noise), and at each size ``repeats`` further spends are
timed on copies of it, each with cold caches (as in a fresh process). "lock" is
the time between ``BEGIN IMMEDIATE`` and its ``COMMIT``/``ROLLBACK`` (measured by a
connection factory wrapped around ``sqlite3.connect``): the time other processes
wait. ``--module`` times another ``budget.py`` (e.g. ``git show
HEAD:src/dpconvex/budget.py > /tmp/old.py``) on the same ledgers, for a before/after
table. Each row is the median of the repeats.
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import importlib.util  # noqa: E402
import shutil  # noqa: E402
import sqlite3  # noqa: E402
import statistics  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
import warnings  # noqa: E402
from pathlib import Path  # noqa: E402

import dpconvex.budget as current  # noqa: E402
from dpconvex.accounting import accountants, dpsgd_event  # noqa: E402

EVENTS = {
    "same": [dpsgd_event(2.0, 0.01, 100)],
    "mixed": [dpsgd_event(2.0, 0.01, 100), dpsgd_event(3.0, 0.01, 100), dpsgd_event(4.0, 0.02, 50)],
}
LOCKED: list[float] = []


class _TimedConnection(sqlite3.Connection):
    """Records how long each write transaction held the lock."""

    _began: float | None = None

    def execute(self, sql, *args):
        if sql.startswith("BEGIN IMMEDIATE"):
            cursor = super().execute(sql, *args)
            self._began = time.perf_counter()
            return cursor
        cursor = super().execute(sql, *args)
        if sql in ("COMMIT", "ROLLBACK") and self._began is not None:
            LOCKED.append(time.perf_counter() - self._began)
            self._began = None
        return cursor


def _timed_connect(*args, **kwargs):
    return _REAL_CONNECT(*args, factory=_TimedConnection, **kwargs)


_REAL_CONNECT = sqlite3.connect


def _load(path: str | None):
    if path is None:
        return current
    spec = importlib.util.spec_from_file_location("dpconvex._bench_other_budget", path)
    module = importlib.util.module_from_spec(spec)
    module.__package__ = "dpconvex"
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def _cold_caches(module) -> None:
    """Forget every priced total and parsed event, as a fresh process would."""
    accountants._RESULTS.clear()
    accountants._COMPOSED.clear()
    holder = getattr(module, "chain", module)  # the package keeps its memos in budget.chain
    for memo in ("_EVENTS", "_RDP"):
        if hasattr(holder, memo):
            getattr(holder, memo)._data.clear()


def _time_spends(modules, ledger: Path, events: list, repeats: int) -> dict:
    """Median (total, lock) seconds of one spend per module, the modules interleaved."""
    times: dict = {name: ([], []) for name, _ in modules}
    for r in range(repeats):
        for name, module in modules:
            copy = ledger.with_name(f"copy-{r}.db")
            shutil.copyfile(ledger, copy)
            budget = module.Budget(copy)
            _cold_caches(module)
            LOCKED.clear()
            start = time.perf_counter()
            budget.spend(events[r % len(events)], mechanism="dpsgd", label=f"timed-{r}")
            times[name][0].append(time.perf_counter() - start)
            times[name][1].append(sum(LOCKED))
            copy.unlink()
    return {name: (statistics.median(t), statistics.median(k)) for name, (t, k) in times.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[0, 100, 300])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--module", default=None, help="another budget.py to time as well")
    args = parser.parse_args()
    warnings.simplefilter("ignore", current.LedgerFileWarning)  # the timed copies
    modules = [("current", current)]
    if args.module:
        modules.append((Path(args.module).name, _load(args.module)))
    sqlite3.connect = _timed_connect  # the module every budget.py connects through
    print(f"OMP_NUM_THREADS={os.environ['OMP_NUM_THREADS']}  sqlite {sqlite3.sqlite_version}")
    print("| budget.py | events | entries | s per spend | s with the lock held |")
    print("|---|---|---|---|---|")
    with tempfile.TemporaryDirectory() as tmp:
        for kind, events in EVENTS.items():
            ledger = Path(tmp) / f"{kind}.db"
            budget = current.Budget(ledger, 100.0, 1e-5)
            filled = 0
            for size in sorted(args.sizes):
                while filled < size:
                    budget.spend(events[filled % len(events)], mechanism="dpsgd", label="fill")
                    filled += 1
                timed = _time_spends(modules, ledger, events, args.repeats)
                for name, (total, lock) in timed.items():
                    print(f"| {name} | {kind} | {size} | {total:.4f} | {lock:.4f} |", flush=True)


if __name__ == "__main__":
    main()
