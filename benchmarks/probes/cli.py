"""The ``dpconvex`` command line with extreme and careless arguments, one command at a time.

Every command of ``dpconvex --help`` gets, option by option, the values a careless or
hostile caller would pass: 1e12, 1e300, 1e-300, 0, negative, nan, inf, a 400-digit
integer, a 100,000-character string; and every path argument gets a missing file, a
directory, a named pipe (opening one blocks until someone writes), a device, a path in
a missing or unwritable directory (/proc), a name too long for the file system, and a
name holding terminal escapes. The answer must be one ``dpconvex: error:`` line (exit
status 2) within the probe's time and 1 GB of memory, or a result the probe checks:
finite where it must be, within the budget it was asked for, and printable (no control
character reaches the terminal, in a result or in an error).
"""

from __future__ import annotations

import json
import math
import os
import sqlite3
import unicodedata
from collections.abc import Callable
from pathlib import Path

from . import ClearCliError, Probe, Violation, run_cli

AREA = "cli"
MEMORY_MB = 1024
UNSAFE = {"Cc", "Cf", "Cs", "Zl", "Zp"}
LONG = "x" * 100_000
HUGE_INT = "9" * 400
ESCAPE = "\x1b[31mred\x1b[0m"
#: values that are nonsense for every number of every command
NONSENSE = ["nan", "inf", "-inf", "-1", LONG, "0x1p3", ""]
#: values that are legal numbers but extreme: refused, or a checked result
EXTREME = ["0", "1e12", "1e300", "1e-300", HUGE_INT, "1e-12"]


# --- running and checking --------------------------------------------------------------
def _printable(text: str, what: str) -> str:
    bad = {c for c in text if unicodedata.category(c) in UNSAFE and c != "\n"}
    if bad:
        raise Violation(f"{what} prints control characters {sorted(map(hex, map(ord, bad)))}")
    return text


def _run(argv: list[str], check: Callable[[str], None] | None = None) -> str:
    """``dpconvex ARGV``: a clear error passes through; a result must pass ``check``."""
    try:
        out = run_cli(argv)
    except ClearCliError as err:
        _printable(str(err), "the error line")
        raise
    _printable(out, "the output")
    if check is None:
        raise Violation(f"accepted: dpconvex {' '.join(a[:40] for a in argv)}")
    check(out)
    return out


def _finite(value, name: str) -> float:
    if not isinstance(value, int | float) or isinstance(value, bool) or not math.isfinite(value):
        raise Violation(f"{name} = {value!r} is not a finite number")
    return float(value)


def _epsilons(out: str) -> None:
    """An accounting result: every epsilon finite (or inf, a valid bound) and >= 0, and
    never below the lower bound it is printed with."""
    res = json.loads(out)
    for key, value in res.items():
        if key.startswith("epsilon") and value is not None:
            if not (isinstance(value, int | float) and value >= 0 and not math.isnan(value)):
                raise Violation(f"{key} = {value!r}")
    low = res.get("epsilon_lower_bound")
    if low is not None and math.isfinite(low) and low > res["epsilon"] * (1 + 1e-9):
        raise Violation(f"epsilon {res['epsilon']} below its lower bound {low}")


def _within(target: float, key: str = "epsilon") -> Callable[[str], None]:
    """A calibration result: the epsilon it reports is at most the target."""

    def check(out: str) -> None:
        res = json.loads(out)
        got = _finite(res[key], key)
        if got > target * (1 + 1e-9):
            raise Violation(f"{key} {got} > target {target}")
        for name, value in res.items():
            if isinstance(value, float):
                _finite(value, name)

    return check


def _vary(base: list[str], option: str, value: str) -> list[str]:
    """``base`` with ``option`` set to ``value`` (replaced if present, else appended)."""
    argv = list(base)
    if option in argv:
        argv[argv.index(option) + 1] = value
    else:
        argv += [option, value]
    return argv


def _probe(name: str, run: Callable[[Path], object], timeout: float = 60.0) -> Probe:
    return Probe(AREA, name, run, timeout=timeout, memory_mb=MEMORY_MB)


def _shown(value: str) -> str:
    return value if len(value) <= 12 else f"{value[:6]}...({len(value)} chars)"


def _values(command: str, base: list[str], options: dict, check, timeout: float = 60.0):
    """A probe per option x value; ``options`` maps an option to the extreme values that
    may give a result (checked by ``check``); NONSENSE values must be refused."""
    out = []
    for option, extreme in options.items():
        for value in NONSENSE + EXTREME:
            accept = check if value in extreme else None
            argv = _vary(base, option, value)

            def run(tmp, argv=argv, accept=accept):
                _run(argv, accept)

            out.append(_probe(f"{command} {option} {_shown(value)}", run, timeout))
    return out


# --- accounting and calibration --------------------------------------------------------
OBJPERT = ["--sigma", "5", "--lam", "20", "--beta", "1", "--lipschitz", "1", "--delta", "1e-5"]
ACCOUNT_OBJPERT = ["account", "objpert", *OBJPERT, "--json"]
ACCOUNT_AMP = ["account", "amp", *OBJPERT, "--tau", "0.01", "--sigma-out", "0.15", "--json"]
DPSGD = ["--sampling-rate", "0.01", "--steps", "100", "--delta", "1e-5"]
ACCOUNT_DPSGD = ["account", "dpsgd", "--noise-multiplier", "1", *DPSGD, "--json"]
CALIBRATE_AMP = ["calibrate", "amp", "--epsilon", "1", "--delta", "1e-5", "--json"]
CALIBRATE_DPSGD = ["calibrate", "dpsgd", "--epsilon", "1", *DPSGD, "--json"]
COUNTING = ["counting", "--k", "100", "--epsilon", "1", "--delta", "1e-6", "--p", "2", "--json"]
BIG = ["1e12", "1e300", "1e-300", "1e-12"]


def _accounting() -> list[Probe]:
    probes = []
    probes += _values(
        "account objpert",
        ACCOUNT_OBJPERT,
        {
            "--sigma": BIG,
            "--lam": BIG,
            "--beta": [*BIG, "0"],  # smoothness 0 is the linear loss: a result
            "--lipschitz": BIG,
            "--delta": ["1e-300", "1e-12"],
            "--compositions": ["1e12", HUGE_INT],
        },
        _epsilons,
    )
    probes += _values(
        "account amp",
        ACCOUNT_AMP,
        {"--tau": BIG, "--sigma-out": BIG, "--delta": ["1e-300", "1e-12"]},
        _epsilons,
    )
    probes += _values(
        "account dpsgd",
        ACCOUNT_DPSGD,
        {
            "--noise-multiplier": BIG,
            "--sampling-rate": ["1e-300", "1e-12"],
            "--steps": ["1e12", HUGE_INT],
            "--delta": ["1e-300", "1e-12"],
            "--tuning-mu": BIG,
            "--tuning-shape": ["inf", "0", "1e12", "1e300", "1e-300", "1e-12", HUGE_INT],
        },
        _epsilons,
    )
    probes += _values(
        "calibrate amp",
        CALIBRATE_AMP,
        {
            "--epsilon": ["1e-300", "1e12", "1e300", "1e-12"],
            "--delta": ["1e-300", "1e-12"],
            "--beta": [*BIG, "0"],  # smoothness 0 is the linear loss: a result
            "--lipschitz": BIG,
            "--tau": BIG,
            "--sigma-out": BIG,
            "--noise-factor": BIG,
        },
        _within(1.0),
    )
    probes += _values(
        "calibrate dpsgd",
        CALIBRATE_DPSGD,
        {
            "--epsilon": ["1e-300", "1e12", "1e300", "1e-12"],
            "--delta": ["1e-300", "1e-12"],
            "--sampling-rate": ["1e-300", "1e-12"],
            "--steps": ["1e12", HUGE_INT],
            "--tuning-mu": BIG,
        },
        _within(1.0),
    )
    probes += _values(
        "counting",
        COUNTING,
        {
            "--k": ["1e12", HUGE_INT, "1e300"],
            "--epsilon": ["1e-300", "1e12", "1e300", "1e-12"],
            "--delta": ["1e-300", "1e-12"],
            "--p": ["1e12", "1e300"],
        },
        _within(1.0),
        timeout=120.0,
    )
    # costly corners inside the limits: they must finish (or refuse) within the time limit
    corners = [
        ["--k", "1", "--epsilon", "100"],
        ["--k", "1", "--epsilon", "100", "--p", "64"],
        ["--k", "1000", "--epsilon", "1e-4", "--p", "64"],
        ["--k", "10", "--epsilon", "100", "--p", "1.000001"],
        ["--k", "100", "--epsilon", "1", "--delta", "1e-12", "--p", "64"],
    ]
    for corner in corners:
        argv = [a for a in COUNTING if a not in ("--p", "2")]
        for option, value in zip(corner[::2], corner[1::2], strict=True):
            argv = _vary(argv, option, value)
        target = float(argv[argv.index("--epsilon") + 1])

        def run(tmp, argv=argv, target=target):
            _run(argv, _within(target))

        probes.append(_probe("counting " + " ".join(corner), run, timeout=240.0))
    # the reviewer's lines, verbatim
    reviewer = [
        ["counting", "--k", "1e12", "--epsilon", "1", "--delta", "1e-5"],
        ["account", "objpert", "--compositions", "1000000", "--sigma", "1e-3", "--lam", "20",
         "--beta", "1", "--lipschitz", "1", "--delta", "1e-5", "--json"],
        ["account", "dpsgd", "--noise-multiplier", "1", "--sampling-rate", "0.01", "--steps",
         "1000000000000", "--delta", "1e-5", "--json"],
        ["account", "dpsgd", "--noise-multiplier", "1e-300", *DPSGD, "--json"],
        ["account", "dpsgd", "--noise-multiplier", "1", "--sampling-rate", "0.01", "--steps",
         "100", "--delta", "1e-300", "--json"],
        ["audit", "dpsgd", "--runs", "1000000000000"],
    ]  # fmt: skip
    for argv in reviewer:

        def run(tmp, argv=argv):
            _run(argv, _epsilons if argv[0] == "account" else None)

        probes.append(_probe("reviewer: " + " ".join(argv[:6]), run, timeout=120.0))
    return probes


# --- files -----------------------------------------------------------------------------
def _csv(tmp: Path, rows: int = 120) -> Path:
    import numpy as np

    rng = np.random.default_rng(0)
    X = rng.normal(size=(rows, 3))
    y = (X[:, 0] > 0).astype(int)
    path = tmp / "data.csv"
    lines = [f"{a},{b},{c},{label}" for (a, b, c), label in zip(X, y, strict=True)]
    path.write_text("\n".join(["f1,f2,f3,label", *lines]) + "\n")
    return path


def _fit_argv(tmp: Path, **over) -> list[str]:
    argv = ["fit", "--data", str(_csv(tmp)), "--target", "label", "--epsilon", "4", "--delta",
            "1e-5", "--seed", "0", "--accounting", "rdp", "--method", "output", "--out",
            str(tmp / "model.json"), "--json"]  # fmt: skip
    for option, value in over.items():
        argv = _vary(argv, "--" + option.replace("_", "-"), value)
    return argv


def _model(tmp: Path) -> Path:
    path = tmp / "model.json"
    try:
        run_cli(_fit_argv(tmp))
    except ClearCliError as err:
        raise Violation(f"could not make the model to predict with: {err}") from None
    return path


def _predict_argv(tmp: Path) -> list[str]:
    return ["predict", "--model", str(_model(tmp)), "--data", str(_csv(tmp))]


def _written(out: str) -> None:
    """A command that wrote its file: what it printed is checked printable by _run."""


def _fitted(out: str) -> None:
    res = json.loads(out)
    if not res["epsilon"] <= 4.0 * (1 + 1e-9):
        raise Violation(f"fit spent {res['epsilon']} > 4")
    _finite(res["accuracy"], "accuracy")


def _ledger(tmp: Path, **kw) -> Path:
    from dpconvex import Budget

    path = tmp / "ledger.db"
    Budget(path, kw.pop("epsilon", 5.0), kw.pop("delta", 1e-5), **kw)
    return path


#: path-valued arguments: name -> a function of the scratch directory giving the path
def _paths() -> dict[str, Callable[[Path], str]]:
    def fifo(tmp: Path) -> str:
        os.mkfifo(tmp / "fifo")
        return str(tmp / "fifo")

    def escape(tmp: Path) -> str:
        return str(tmp / f"a{ESCAPE}\nb.csv")

    return {
        "missing": lambda tmp: str(tmp / "missing.csv"),
        "directory": lambda tmp: str(tmp),
        "fifo": fifo,
        "/dev/zero": lambda tmp: "/dev/zero",
        "/dev/null": lambda tmp: "/dev/null",
        "/proc/self/mem": lambda tmp: "/proc/self/mem",
        "in missing dir": lambda tmp: str(tmp / "no" / "such" / "file"),
        "in /proc": lambda tmp: "/proc/dpconvex-probe/file",
        "long name": lambda tmp: str(tmp / ("n" * 300)),
        "long path": lambda tmp: str(tmp / "/".join(["d" * 200] * 30)),
        "escapes": escape,
        "empty": lambda tmp: "",
        "NUL byte": lambda tmp: str(tmp / "a\x00b"),
    }


def _path_probes(command: str, make_argv: Callable[[Path, str], list[str]], check=None):
    """A probe per hostile path; ``check`` accepts a result where one is legitimate."""
    out = []
    for label, path_of in _paths().items():

        def run(tmp, path_of=path_of):
            _run(make_argv(tmp, path_of(tmp)), check)

        out.append(_probe(f"{command}: {label}", run))
    return out


def _writable_outputs(command: str, make_argv: Callable[[Path, str], list[str]], check):
    """Output paths: unwritable ones refused before any work; the one writable name (with
    escapes) may be written, its result then passes ``check``."""
    out = []
    for label, path_of in {
        "a directory": lambda tmp: str(tmp),
        "a fifo": lambda tmp: (os.mkfifo(tmp / "fifo"), str(tmp / "fifo"))[1],
        "/dev/null": lambda tmp: "/dev/null",
        "/dev/full": lambda tmp: "/dev/full",
        "in /proc": lambda tmp: "/proc/dpconvex-probe.out",
        "in /sys": lambda tmp: "/sys/dpconvex-probe.out",
        "in a read-only dir": lambda tmp: "/proc/self/dpconvex-probe.out",
        "in a file": lambda tmp: str(_csv(tmp) / "out"),
        "long name": lambda tmp: str(tmp / ("n" * 300)),
        "escapes": lambda tmp: str(tmp / f"o{ESCAPE}.out"),
        "NUL byte": lambda tmp: str(tmp / "o\x00.out"),
    }.items():

        def run(tmp, path_of=path_of):
            _run(make_argv(tmp, path_of(tmp)), check)

        out.append(_probe(f"{command} --out {label}", run))
    return out


def _files() -> list[Probe]:
    probes = []
    probes += _path_probes("fit --data", lambda tmp, p: _fit_argv(tmp, data=p))
    probes += _writable_outputs("fit", lambda tmp, p: _fit_argv(tmp, out=p), _fitted)
    probes += _path_probes("fit --budget", lambda tmp, p: [*_fit_argv(tmp), "--budget", p])
    probes += _path_probes(
        "predict --model", lambda tmp, p: ["predict", "--model", p, "--data", str(_csv(tmp))]
    )
    probes += _path_probes(
        "predict --data", lambda tmp, p: ["predict", "--model", str(_model(tmp)), "--data", p]
    )
    probes += _writable_outputs(
        "predict",
        lambda tmp, p: [*_predict_argv(tmp), "--out", p, "--force"],
        _written,
    )
    probes += _path_probes("budget show", lambda tmp, p: ["budget", "show", p])
    probes += _path_probes("budget acknowledge", lambda tmp, p: ["budget", "acknowledge", p])
    probes += _path_probes(
        "budget init",
        lambda tmp, p: ["budget", "init", p, "--epsilon", "1", "--delta", "1e-5"],
        _written,  # a missing file in an existing directory is created
    )
    probes += _path_probes(
        "reproduce --mnist",
        lambda tmp, p: ["reproduce", "mbcd-classification", "--out", str(tmp), "--mnist", p],
    )
    probes += _writable_outputs(
        "reproduce", lambda tmp, p: ["reproduce", "fig1", "--quick", "--out", p], _written
    )
    probes += _writable_outputs(
        "plot privacy-profile",
        lambda tmp, p: ["plot", "privacy-profile", *OBJPERT[:-2], "--out", p],
        _written,
    )
    probes += _writable_outputs(
        "audit --all", lambda tmp, p: ["audit", "--all", "--runs", "20", "--out", p], _written
    )
    return probes


# --- the other commands' numbers and names -----------------------------------------------
def _others() -> list[Probe]:
    probes = []
    legal = {("--delta", "1e-300"), ("--delta", "1e-12")}  # tiny but valid
    for option in ("--epsilon", "--delta", "--test-size", "--split-seed", "--seed"):
        for value in NONSENSE + ["1e300", "1e-300", "1e12", "1e-12"]:
            if option.endswith("seed") and value in ("1e12", "1e-12"):
                continue

            def run(tmp, option=option, value=value):
                check = _fitted if (option, value) in legal else None
                _run(_fit_argv(tmp, **{option[2:].replace("-", "_"): value}), check)

            probes.append(_probe(f"fit {option} {_shown(value)}", run))
    for value in (HUGE_INT, "18446744073709551616"):  # seeds beyond 64 bits: a valid seed

        def run(tmp, value=value):
            _run(_fit_argv(tmp, seed=value, split_seed=value), _fitted)

        probes.append(_probe(f"fit --seed {_shown(value)}", run))
    for value in (",", "a,a", "1", ESCAPE + ",b", ",".join(map(str, range(100_000))), LONG):

        def run(tmp, value=value):
            _run([*_fit_argv(tmp), "--classes", value])

        probes.append(_probe(f"fit --classes {_shown(value)!r}", run))
    for value in (ESCAPE, LONG, "label\x00"):

        def run(tmp, value=value):
            _run(_fit_argv(tmp, target=value))

        probes.append(_probe(f"fit --target {_shown(value)!r}", run))
    probes.append(
        _probe(
            "fit --scheduler without --dask",
            lambda tmp: _run([*_fit_argv(tmp), "--scheduler", "x"]),
        )
    )
    for option in ("--epsilon", "--delta", "--seed"):
        for value in NONSENSE + ["1e300", "1e-300"]:
            if option == "--seed" and value in ("1e300", "1e-300"):
                continue

            def run(tmp, option=option, value=value):
                _run(["demo", option, value])

            probes.append(_probe(f"demo {option} {_shown(value)}", run))
    for option, values in {
        "--runs": NONSENSE + ["0", "19", "1e12", "1000000000000", HUGE_INT, "1e300"],
        "--seed": NONSENSE + ["1e300"],
    }.items():
        for value in values:

            def run(tmp, option=option, value=value):
                _run(["audit", "dpsgd", option, value])

            probes.append(_probe(f"audit {option} {_shown(value)}", run))
    for name in ("nope", ESCAPE, LONG, ""):

        def run(tmp, name=name):
            _run(["audit", name, "--runs", "20"])

        probes.append(_probe(f"audit MECHANISM {_shown(name)!r}", run))
    for value in NONSENSE + ["0", "1", "1e12", HUGE_INT]:

        def run(tmp, value=value):
            _run(["reproduce", "fig1", "--quick", "--out", str(tmp), "--trials", value])

        probes.append(_probe(f"reproduce --trials {_shown(value)}", run))
    for name in ("nope", ESCAPE, LONG):

        def run(tmp, name=name):
            _run(["reproduce", name, "--out", str(tmp)])

        probes.append(_probe(f"reproduce NAME {_shown(name)!r}", run))
    for option in ("--sigma", "--lam", "--beta", "--lipschitz"):
        for value in NONSENSE + ["1e300", "1e-300"]:

            def run(tmp, option=option, value=value):
                argv = ["plot", "privacy-profile", *OBJPERT[:-2], "--out", str(tmp / "p.png")]
                # tiny curvature or huge regularization are legal: the plot must then be drawn
                legal = value == "1e-300" and option == "--beta" or value == "1e300"
                _run(_vary(argv, option, value), _written if legal else None)

            probes.append(_probe(f"plot privacy-profile {option} {_shown(value)}", run))
    for argv in (["nope"], [LONG], [ESCAPE], ["account", "--sigma"], ["--json"], [""]):

        def run(tmp, argv=argv):
            _run(argv)

        probes.append(_probe(f"dpconvex {_shown(' '.join(argv))!r}", run))
    return probes


# --- the ledger, as the command line prints it ------------------------------------------
def _budget_init() -> list[Probe]:
    probes = []
    base = ["budget", "init", "PATH", "--epsilon", "1", "--delta", "1e-5"]
    for option, values in {
        "--epsilon": NONSENSE + ["0", "1e-300", "1e300", "1e12"],
        "--delta": NONSENSE + ["0", "1", "1e-300"],
        "--order": NONSENSE + ["1", "0.5", "1e300", "1e12"],
    }.items():
        for value in values:

            def run(tmp, option=option, value=value):
                argv = _vary(base, option, value)
                argv[2] = str(tmp / "l.db")
                if option == "--order":
                    argv += ["--accounting", "renyi-filter"]
                _run(argv)

            probes.append(_probe(f"budget init {option} {_shown(value)}", run))

    def order_without_filter(tmp):
        _run(["budget", "init", str(tmp / "l.db"), "--epsilon", "1", "--delta", "1e-5",
              "--order", "10"])  # fmt: skip

    def filter_ledger(tmp):
        path = tmp / "l.db"
        _run(["budget", "init", str(path), "--epsilon", "1", "--delta", "1e-5", "--accounting",
              "renyi-filter", "--order", "10"], lambda out: None)  # fmt: skip
        shown = json.loads(_run(["budget", "show", str(path), "--json"], lambda out: None))
        if shown["accounting"] != "renyi-filter" or shown["rdp_order"] != 10:
            raise Violation(f"the filter ledger was created as {shown}")

    probes.append(_probe("budget init --order without renyi-filter", order_without_filter))
    probes.append(_probe("budget init renyi-filter --order 10", filter_ledger))
    return probes


def _edited(update: str, args: tuple = ()):
    """A ledger with two spends, one row edited by ``update``; show it as table and JSON."""

    def run(tmp: Path):
        from dpconvex.accounting import GaussianDpEvent

        path = _ledger(tmp)
        from dpconvex import Budget

        ledger = Budget(path)
        for i in range(2):
            ledger.spend(GaussianDpEvent(20.0), mechanism="gauss", label=f"run {i}")
        db = sqlite3.connect(path)
        db.execute(update, args)
        db.commit()
        db.close()
        for argv in (["budget", "show", str(path)], ["budget", "show", str(path), "--json"]):
            _run(argv, lambda out: None)

    return run


def _ledgers() -> list[Probe]:
    probes = _budget_init()
    edits = {
        "label with ANSI escapes": ("UPDATE entries SET label = ? WHERE id = 1", (ESCAPE,)),
        "mechanism with a bidi override": (
            "UPDATE entries SET mechanism = ? WHERE id = 1",
            ("g\u202eevil",),
        ),
        "label with a newline and a bell": (
            "UPDATE entries SET label = ? WHERE id = 2",
            ("a\nb\a",),
        ),
        "label of 10^6 characters": ("UPDATE entries SET label = ? WHERE id = 1", (LONG * 10,)),
        "time 1e20": ("UPDATE entries SET time = 1e20 WHERE id = 1", ()),
        "time -1e300": ("UPDATE entries SET time = -1e300 WHERE id = 1", ()),
        "time 1e308": ("UPDATE entries SET time = 1e308 WHERE id = 2", ()),
        "time as text": ("UPDATE entries SET time = 'noon' WHERE id = 1", ()),
        "time as a blob": ("UPDATE entries SET time = x'00ff' WHERE id = 1", ()),
        "epsilon_after 1e300": ("UPDATE entries SET epsilon_after = 1e300 WHERE id = 1", ()),
        "a 2^62 id": ("UPDATE entries SET id = 4611686018427387904 WHERE id = 2", ()),
    }
    for label, (sql, args) in edits.items():
        probes.append(_probe(f"budget show: {label}", _edited(sql, args)))

    def spend_label(tmp: Path):
        """The library refuses escapes at spend time; the CLI never sees them raw."""
        from dpconvex import Budget
        from dpconvex.accounting import GaussianDpEvent

        path = _ledger(tmp)
        try:
            Budget(path).spend(GaussianDpEvent(20.0), mechanism="g", label=ESCAPE)
        except ValueError:
            pass
        _run(["budget", "show", str(path)], lambda out: None)

    def junk(tmp: Path):
        path = tmp / "junk.db"
        path.write_bytes(b"\x1b[2J" + os.urandom(4096))
        _run(["budget", "show", str(path)])

    def empty(tmp: Path):
        path = tmp / "empty.db"
        path.write_bytes(b"")
        _run(["budget", "show", str(path)])

    probes.append(_probe("budget show after a spend with an escape label", spend_label))
    probes.append(_probe("budget show: a junk file", junk))
    probes.append(_probe("budget show: an empty file", empty))
    return probes


def probes() -> list[Probe]:
    return _accounting() + _files() + _others() + _ledgers()
