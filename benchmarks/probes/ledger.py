"""The budget ledger (dpconvex.Budget, ``dpconvex budget``): crafted files, careless arguments.

A release counts as covered when what the ledger admitted stays within its budget
(the composed epsilon, or the Renyi filter's sum at its order), nothing was recorded
for a refused spend, and whatever is printed holds no terminal control character and
no unreadable date. Crafted files are written with sqlite3 directly: edited rows,
control characters, absurd times, values of the wrong type, huge counts, an
unfinished write of a killed process, copies.
"""

from __future__ import annotations

import json
import math
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import unicodedata
import warnings
from pathlib import Path

from . import Probe, Violation, run_cli

AREA = "ledger"
UNSAFE = {"Cc", "Cf", "Cs", "Zl", "Zp"}


def _budget():
    from dpconvex import Budget

    return Budget


def _gauss(sigma: float = 5.0):
    from dpconvex.accounting import GaussianDpEvent

    return GaussianDpEvent(sigma)


def _payload(event) -> str:
    from dpconvex.accounting.serialization import event_to_dict

    return json.dumps(event_to_dict(event))


def _ledger(tmp: Path, spends: int = 3, **kwargs) -> Path:
    path = tmp / "l.db"
    kwargs.setdefault("epsilon", 4.0)
    kwargs.setdefault("delta", 1e-5)
    ledger = _budget()(path, **kwargs)
    for i in range(spends):
        ledger.spend(_gauss(), mechanism="gauss", label=f"run {i}")
    return path


def _sql(path: Path, *statements) -> None:
    db = sqlite3.connect(path)
    try:
        for sql, *args in statements:
            db.execute(sql, *args)
        db.commit()
    finally:
        db.close()


def _printable(text: str, what: str) -> str:
    bad = {c for c in text if unicodedata.category(c) in UNSAFE and c != "\n"}
    if bad:
        raise Violation(f"{what} prints control characters {sorted(map(hex, map(ord, bad)))}")
    return text


def _show(path: Path) -> str:
    """The ledger as printed: the library's display-safe summary, then the CLI's output."""
    from dpconvex.budget import summary_text

    from . import ClearCliError

    summary = _budget()(path).summary()
    _printable(summary_text(summary) + json.dumps(summary), "Budget.summary")
    try:
        out = run_cli(["budget", "show", str(path)])
    except ClearCliError as err:  # the library read it: the CLI must be able to print it
        raise Violation(f"`budget show` fails on a ledger the library reads: {err}") from None
    return _printable(out, "`dpconvex budget show`")


def _within(path: Path) -> None:
    ledger = _budget()(path)
    if ledger.order is not None:
        if not ledger.rdp_spent() <= ledger.rdp_budget:
            raise Violation(f"filter sum {ledger.rdp_spent()} > {ledger.rdp_budget}")
    elif not ledger.spent() <= ledger.epsilon:
        raise Violation(f"spent {ledger.spent()} > {ledger.epsilon}")


def _rechain(path: Path) -> None:
    """Re-anchor the chain as an adversary with write access would (the chain has no key)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        _budget()(path).acknowledge_tampering()


# --- crafted files -------------------------------------------------------------------------
def _edited_row(sql: str, args: tuple = (), *, rechain: bool = False):
    def run(tmp: Path):
        path = _ledger(tmp)
        _sql(path, (sql, args))
        if rechain:
            _rechain(path)
        _show(path)

    return run


def _spend_after(sql: str, args: tuple = ()):
    def run(tmp: Path):
        path = _ledger(tmp)
        _sql(path, (sql, args))
        _budget()(path).spend(_gauss(), mechanism="gauss")  # must refuse: the chain is broken
        raise Violation("a spend on an edited ledger was accepted")

    return run


def _huge_count(count: int, inner: str = "gaussian"):
    def run(tmp: Path):
        from dp_accounting.dp_event import PoissonSampledDpEvent, SelfComposedDpEvent

        path = _ledger(tmp, spends=1, epsilon=100.0)
        base = _gauss(50.0) if inner == "gaussian" else PoissonSampledDpEvent(0.001, _gauss(2.0))
        payload = _payload(SelfComposedDpEvent(base, 2)).replace('"count": 2', f'"count": {count}')
        _sql(path, ("UPDATE entries SET event = ? WHERE id = 1", (payload,)))
        _rechain(path)
        _show(path)
        _over_means_closed(path)

    return run


def _over_means_closed(path: Path) -> None:
    """A crafted ledger may hold more than its budget: it must then refuse every spend."""
    from dpconvex import BudgetExceededError

    ledger = _budget()(path)
    if ledger.spent() <= ledger.epsilon:
        return _within(path)
    try:
        ledger.spend(_gauss(1000.0), mechanism="gauss")
    except BudgetExceededError:
        return None
    raise Violation("a spend was admitted on a ledger already over its budget")


def _deep_event(tmp: Path):
    path = _ledger(tmp)
    _sql(path, ("UPDATE entries SET event = ? WHERE id = 1", ("[" * 100000 + "]" * 100000,)))
    _rechain(path)
    _budget()(path).spent()


def _no_not_null(tmp: Path):
    """A ledger whose tables allow NULL times (a crafted schema), with a NULL time."""
    path = _ledger(tmp)
    _sql(
        path,
        ("ALTER TABLE entries RENAME TO old",),
        (
            "CREATE TABLE entries (id INTEGER PRIMARY KEY AUTOINCREMENT, time REAL, mechanism TEXT,"
            " label TEXT, event TEXT, epsilon_after REAL, hash TEXT, rdp_after REAL)",
        ),
        ("INSERT INTO entries SELECT * FROM old",),
        ("UPDATE entries SET time = NULL WHERE id = 2",),
    )
    _show(path)


def _hot_journal(tmp: Path, *, writable: bool = True):
    path = tmp / "l.db"
    _budget()(path, 50.0, 1e-5)
    payload = _payload(_gauss(1000.0))
    _sql(
        path,
        (
            "INSERT INTO entries (time, mechanism, label, event, epsilon_after) "
            "SELECT 1.7e9, 'g', printf('%.400c', 'x'), ?, 0.1 FROM "
            "(WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 6000) "
            "SELECT i FROM n)",
            (payload,),
        ),
    )
    _rechain(path)
    writer = (
        "import os, signal, sqlite3, sys\n"
        "db = sqlite3.connect(sys.argv[1], isolation_level=None)\n"
        "db.execute('BEGIN IMMEDIATE')\n"
        "db.execute(\"UPDATE entries SET label = label || 'y'\")\n"
        "os.kill(os.getpid(), signal.SIGKILL)\n"
    )
    subprocess.run([sys.executable, "-c", writer, str(path)], timeout=60)
    if not Path(f"{path}-journal").exists():
        raise Violation("the killed writer left no journal (the probe did not set up)")
    if not writable:
        import dpconvex.budget.ledger_file as module

        module.os.access = lambda *a, **k: False  # as a reader without write permission
    ledger = _budget()(path)
    if len(ledger.entries()) != 6000 or ledger.tampering is not None:
        raise Violation("the rolled-back ledger is not the one before the killed write")


def _killed_acknowledge(tmp: Path):
    path = tmp / "l.db"
    ledger = _budget()(path, 50.0, 1e-5)
    for i in range(5):
        ledger.spend(_gauss(30.0), mechanism="g", label=str(i))
    _sql(path, ("DELETE FROM entries WHERE id = 2",))
    env = {**os.environ, "DPCONVEX_BUDGET_CRASH_SLEEP": "30"}
    code = "import sys\nfrom dpconvex import Budget\nBudget(sys.argv[1]).acknowledge_tampering()"
    child = subprocess.Popen([sys.executable, "-c", code, str(path)], env=env)
    import time

    time.sleep(4.0)
    os.kill(child.pid, signal.SIGKILL)
    child.wait()
    reopened = _budget()(path)
    if reopened.tampering is None or len(reopened.entries()) != 4:
        raise Violation("a killed acknowledgment was half applied")
    _show(path)


def _copy(tmp: Path):
    path = _ledger(tmp)
    copy = tmp / "copy.db"
    shutil.copyfile(path, copy)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        ledger = _budget()(copy)
    if ledger.file_warning is None or not caught:
        raise Violation("a copy of the ledger opened without a warning")


def _restore_over(tmp: Path):
    path = _ledger(tmp)
    backup = tmp / "backup.db"
    shutil.copyfile(path, backup)
    _budget()(path).spend(_gauss(), mechanism="gauss")
    os.replace(backup, path)  # the older copy moved back: one spend refunded
    with warnings.catch_warnings(record=True):
        warnings.simplefilter("always")
        ledger = _budget()(path)
    if ledger.file_warning is None:
        raise Violation("a restored copy opened without a warning")


def _restore_in_place(tmp: Path):
    """`cp backup ledger` keeps the inode: undetectable, as documented; the ledger stays valid."""
    path = _ledger(tmp)
    backup = tmp / "backup.db"
    shutil.copyfile(path, backup)
    _budget()(path).spend(_gauss(), mechanism="gauss")
    shutil.copyfile(backup, path)
    ledger = _budget()(path)
    if ledger.tampering is not None or len(ledger.entries()) != 3:
        raise Violation("an in-place restore is not the older ledger")
    _within(path)


def _text_file(content: bytes):
    def run(tmp: Path):
        path = tmp / "l.db"
        path.write_bytes(content)
        _budget()(path)

    return run


def _wal_ledger(tmp: Path):
    path = _ledger(tmp)
    _sql(path, ("PRAGMA journal_mode=WAL",))
    _budget()(path).spend(_gauss(), mechanism="gauss")
    _within(path)


# --- arguments -----------------------------------------------------------------------------
def _create(**kwargs):
    def run(tmp: Path):
        kwargs.setdefault("epsilon", 1.0)
        kwargs.setdefault("delta", 1e-5)
        ledger = _budget()(tmp / "l.db", **kwargs)
        if ledger.order is not None and not ledger.rdp_budget > 0:
            raise Violation(f"a filter with Renyi budget {ledger.rdp_budget} was created")
        _past_budget_of(ledger)

    return run


def _past_budget_of(ledger) -> None:
    from dpconvex import BudgetExceededError

    for _ in range(50):
        try:
            ledger.spend(_gauss(1.0), mechanism="gauss")
        except BudgetExceededError:
            break
    _within(ledger.path)


def _path(name: str):
    def run(tmp: Path):
        target = name.replace("TMP", str(tmp))
        _budget()(target, 1.0, 1e-5)

    return run


def _spend(label: object = "ok", mechanism: object = "m", event=_gauss):
    def run(tmp: Path):
        path = _ledger(tmp, spends=0)
        ledger = _budget()(path)
        try:
            ledger.spend(event(), mechanism=mechanism, label=label)
        except Exception:
            if ledger.entries():
                raise Violation("a refused spend was recorded") from None
            raise
        _show(path)

    return run


def _clock(value: float):
    def run(tmp: Path):
        path = _ledger(tmp, spends=0)
        import dpconvex.budget.values as module

        module.time.time = lambda: value
        try:
            _budget()(path).spend(_gauss(), mechanism="gauss")
        finally:
            module.time.time = __import__("time").time
            if _budget()(path).entries():
                raise Violation("a spend with an absurd clock was recorded")

    return run


def _past_budget(accounting: str, sigma: float = 5.0, budget=(1.0, 1e-5), **kwargs):
    def run(tmp: Path):
        from dpconvex import BudgetExceededError

        path = tmp / "l.db"
        ledger = _budget()(path, *budget, accounting=accounting, **kwargs)
        refused = 0
        for i in range(200):
            try:  # every tenth spend is a large one, so that the budget runs out
                ledger.spend(_gauss(sigma if i % 10 else 2.0), mechanism="gauss")
            except BudgetExceededError:
                refused += 1
                if refused == 3:
                    break
        if refused == 0:
            raise Violation("the budget was never exhausted")
        _within(path)
        _show(path)

    return run


def _filter_event(make):
    def run(tmp: Path):
        from dpconvex import BudgetExceededError

        path = tmp / "l.db"
        ledger = _budget()(path, 2.0, 1e-6, accounting="renyi-filter")
        try:
            entry = ledger.spend(make(), mechanism="event")
        except BudgetExceededError:
            return _within(path)
        if not (entry.rdp_after is not None and math.isfinite(entry.rdp_after)):
            raise Violation(f"the filter recorded a Renyi sum of {entry.rdp_after}")
        _within(path)

    return run


def _tuned():
    from dpconvex.accounting import dpsgd_event, tuned_event

    return tuned_event(dpsgd_event(8.0, 0.01, 100), 3.0)


def _dpsgd():
    from dpconvex.accounting import dpsgd_event

    return dpsgd_event(8.0, 0.01, 1000)


def _cli(*argv: str):
    def run(tmp: Path):
        path = str(tmp / "l.db")
        run_cli([a.replace("PATH", path) for a in argv])

    return run


def _cli_show_after(sql: str, args: tuple = ()):
    def run(tmp: Path):
        path = _ledger(tmp)
        _sql(path, (sql, args))
        out = _show(path)
        if "Traceback" in out:
            raise Violation("traceback printed")

    return run


def probes() -> list[Probe]:
    esc = "\x1b]0;owned\x07\x1b[2J\x1b[31m"
    cases = [
        # crafted files: edited rows
        ("label with terminal escapes (edited)", _edited_row(
            "UPDATE entries SET label = ?", (esc,))),
        ("label with escapes, chain recomputed", _edited_row(
            "UPDATE entries SET label = ?", (esc,), rechain=True)),
        ("mechanism with a bidi override", _edited_row(
            "UPDATE entries SET mechanism = ?", ("\u202eevil",))),
        ("finding with escapes", _edited_row(
            "INSERT INTO acknowledgments (time, finding) VALUES (1.7e9, ?)", (esc,))),
        ("entry time 1e20", _edited_row("UPDATE entries SET time = 1e20 WHERE id = 1")),
        ("entry time 1e20, chain recomputed", _edited_row(
            "UPDATE entries SET time = 1e20 WHERE id = 1", rechain=True)),
        ("entry time -1e300", _edited_row("UPDATE entries SET time = -1e300 WHERE id = 1")),
        ("entry time 'soon' (text)", _edited_row("UPDATE entries SET time = 'soon' WHERE id = 1")),
        ("entry time NULL (crafted schema)", _no_not_null),
        ("acknowledgment time 1e300", _edited_row(
            "INSERT INTO acknowledgments (time, finding) VALUES (1e300, 'x')")),
        ("acknowledgment finding NULL-ish blob", _edited_row(
            "INSERT INTO acknowledgments (time, finding) VALUES (1.7e9, x'00ff1b')")),
        ("label as a blob", _edited_row("UPDATE entries SET label = x'1b5b324a' WHERE id = 1")),
        ("label of 10^6 characters", _edited_row(
            "UPDATE entries SET label = printf('%.1000000c', 'x') WHERE id = 1")),
        ("epsilon_after as text", _edited_row(
            "UPDATE entries SET epsilon_after = 'lots' WHERE id = 1")),
        ("epsilon_after 1e308", _edited_row("UPDATE entries SET epsilon_after = 1e308")),
        ("event of a forbidden class", _edited_row(
            "UPDATE entries SET event = ? WHERE id = 1",
            ('{"event": "os.system", "fields": {}}',))),
        ("event not JSON", _edited_row("UPDATE entries SET event = '[1,' WHERE id = 1")),
        ("event nested 10^5 deep", _deep_event),
        ("event with a negative count", _edited_row(
            "UPDATE entries SET event = ? WHERE id = 1",
            ('{"event": "dp_accounting.dp_event.SelfComposedDpEvent", "fields": {"event": '
             + _payload_lazy() + ', "count": -3}}',))),
        ("count 10^18 of a Gaussian, chain recomputed", _huge_count(10**18)),
        ("count 10^12 of a subsampled Gaussian, chain recomputed", _huge_count(10**12, "dpsgd")),
        ("count 10^400", _huge_count(10**400)),
        ("entry ids out of order", _edited_row("UPDATE entries SET id = 100 WHERE id = 1")),
        ("negative entry id", _edited_row("UPDATE entries SET id = -5 WHERE id = 2")),
        ("head_count as text", _edited_row("UPDATE budget SET head_count = 'many'")),
        ("head_hash NULL", _edited_row("UPDATE budget SET head_hash = NULL")),
        ("epsilon as text", _edited_row("UPDATE budget SET epsilon = 'lots'")),
        ("epsilon 1e308", _edited_row("UPDATE budget SET epsilon = 1e308")),
        ("delta 2", _edited_row("UPDATE budget SET delta = 2")),
        ("accounting 'evil'", _edited_row("UPDATE budget SET accounting = 'evil'")),
        ("accounting set to the filter without an order", _edited_row(
            "UPDATE budget SET accounting = 'renyi-filter'")),
        ("created as text", _edited_row("UPDATE budget SET created = 'yesterday'")),
        ("format as text", _edited_row("UPDATE budget SET format = 'two'")),
        ("inode as text", _edited_row("UPDATE budget SET inode = 'x'")),
        ("budget row deleted", _edited_row("DELETE FROM budget")),
        ("spend after an edited label", _spend_after(
            "UPDATE entries SET label = 'x' WHERE id = 2")),
        ("spend after a deleted entry", _spend_after("DELETE FROM entries WHERE id = 1")),
        ("spend after the budget was edited", _spend_after("UPDATE budget SET epsilon = 9")),
        ("hot journal of a killed writer", _hot_journal),
        ("hot journal, reader cannot write", lambda tmp: _hot_journal(tmp, writable=False)),
        ("killed acknowledgment", _killed_acknowledge),
        ("a copy of the ledger", _copy),
        ("an older copy moved back over the ledger", _restore_over),
        ("an older copy written over the ledger in place", _restore_in_place),
        ("a WAL-mode ledger", _wal_ledger),
        ("a text file", _text_file(b"epsilon=1\n" * 100)),
        ("an empty file, no budget given", _text_file(b"")),
        ("a truncated SQLite header", _text_file(b"SQLite format 3\x00" + b"\x00" * 50)),
        # arguments
        ("epsilon 0", _create(epsilon=0.0)),
        ("epsilon nan", _create(epsilon=float("nan"))),
        ("epsilon inf", _create(epsilon=float("inf"))),
        ("epsilon '1' (text)", _create(epsilon="1")),
        ("delta 0", _create(delta=0.0)),
        ("delta 1e-300", _create(delta=1e-300)),
        ("accounting 'RDP'", _create(accounting="RDP")),
        ("accounting 5", _create(accounting=5)),
        ("timeout 0", _create(timeout=0)),
        ("timeout nan", _create(timeout=float("nan"))),
        ("filter order 1", _create(accounting="renyi-filter", order=1.0)),
        ("filter order 1.0000001", _create(accounting="renyi-filter", order=1.0000001)),
        ("filter order inf", _create(accounting="renyi-filter", order=float("inf"))),
        ("filter order 1e7", _create(accounting="renyi-filter", order=1e7)),
        ("filter order '20' (text)", _create(accounting="renyi-filter", order="20")),
        ("filter order True", _create(accounting="renyi-filter", order=True)),
        ("filter order with composition accounting", _create(accounting="pld", order=20.0)),
        ("filter at epsilon 1e-4, delta 1e-100", _create(
            epsilon=1e-4, delta=1e-100, accounting="renyi-filter")),
        ("filter at epsilon 100, delta 0.5", _create(
            epsilon=100.0, delta=0.5, accounting="renyi-filter")),
        ("filter order 10^6", _create(accounting="renyi-filter", order=1e6)),
        ("path with a NUL byte", _path("TMP/a\x00b.db")),
        ("path is a directory", _path("TMP")),
        ("path in a missing directory", _path("TMP/missing/l.db")),
        ("label with ANSI escapes", _spend(label=esc)),
        ("label with a newline", _spend(label="a\nb")),
        ("label with a lone surrogate", _spend(label="\ud800")),
        ("label of 10^6 characters", _spend(label="x" * 10**6)),
        ("mechanism with a bidi override", _spend(mechanism="\u202e")),
        ("mechanism None", _spend(mechanism=None)),
        ("event not an event", _spend(event=lambda: "gauss")),
        ("event with NaN noise", _spend(event=lambda: _gauss(float("nan")))),
        ("clock 1e20", _clock(1e20)),
        ("clock nan", _clock(float("nan"))),
        ("clock -1", _clock(-1.0)),
        ("clock inf", _clock(float("inf"))),
        # past the budget
        ("composition ledger past its budget", _past_budget("auto")),
        ("rdp ledger past its budget", _past_budget("rdp")),
        ("filter past its budget", _past_budget("renyi-filter")),
        ("filter at order 2 past its budget", _past_budget(
            "renyi-filter", budget=(10.0, 1e-3), order=2.0)),
        ("filter with tiny spends (sigma 1000)", _past_budget("renyi-filter", sigma=1000.0)),
        ("filter prices a tuned (repeat-and-select) event", _filter_event(_tuned)),
        ("filter prices DP-SGD", _filter_event(_dpsgd)),
        ("filter prices a Gaussian of noise 1e-3", _filter_event(lambda: _gauss(1e-3))),
        # the CLI on crafted files
        ("`budget show` after time 1e20", _cli_show_after("UPDATE entries SET time = 1e20")),
        ("`budget show` after escapes in a label", _cli_show_after(
            "UPDATE entries SET label = ?", (esc,))),
        ("`budget init` with epsilon nan", _cli("budget", "init", "PATH", "--epsilon", "nan",
                                                "--delta", "1e-5")),
        ("`budget show` of a missing file", _cli("budget", "show", "PATH")),
        ("`budget acknowledge` of a missing file", _cli("budget", "acknowledge", "PATH")),
    ]  # fmt: skip
    return [Probe(AREA, name, run, timeout=120.0) for name, run in cases]


def _payload_lazy() -> str:
    """A Gaussian event's JSON, built without importing dpconvex at module import."""
    return (
        '{"event": "dp_accounting.dp_event.GaussianDpEvent", "fields": {"noise_multiplier": 5.0}}'
    )
