"""The command line: JSON keys and values, one-line errors, the plot."""

import json
import math

import numpy as np
import pytest

from dpconvex.accounting import (
    AmpDpEvent,
    PrivacyAccountant,
    kifer_epsilon,
    objpert_epsilon,
)
from dpconvex.cli import main

from .runner import run

OBJPERT = [
    "account",
    "objpert",
    "--sigma",
    "5",
    "--lam",
    "20",
    "--beta",
    "1",
    "--lipschitz",
    "1",
    "--delta",
    "1e-5",
]


def test_account_objpert_json_matches_library_and_spec(capsys):
    code, out, _ = run([*OBJPERT, "--json"], capsys)
    assert code == 0
    res = json.loads(out)
    assert set(res) >= {"epsilon", "epsilon_rdp", "epsilon_kifer", "epsilon_lower_bound"}
    kw = {"sigma": 5, "lam": 20, "beta": 1, "lipschitz": 1}
    assert res["epsilon"] == objpert_epsilon(1e-5, **kw)
    assert res["epsilon_kifer"] == kifer_epsilon(1e-5, **kw)
    # reference values (Redberg et al., Fig. 1, left panel): 0.7255 <= 0.8109 <= 0.8787
    assert res["epsilon_lower_bound"] == pytest.approx(0.7255, abs=1e-4)
    assert res["epsilon"] == pytest.approx(0.8109, abs=1e-4)
    assert res["epsilon_rdp"] == pytest.approx(0.8787, abs=1e-4)


def test_account_objpert_composed_uses_pld_and_has_no_kifer(capsys):
    argv = [
        "account",
        "objpert",
        "--sigma",
        "8",
        "--lam",
        "10",
        "--beta",
        "1",
        "--lipschitz",
        "1",
        "--delta",
        "1e-5",
        "--compositions",
        "10",
        "--json",
    ]
    code, out, _ = run(argv, capsys)
    res = json.loads(out)
    assert code == 0 and res["epsilon_kifer"] is None
    assert res["epsilon"] == pytest.approx(3.1314, rel=1e-3)  # Redberg et al., Fig. 4 setting
    assert res["epsilon_lower_bound"] < res["epsilon"] < res["epsilon_rdp"]


def test_table_output_is_readable(capsys):
    code, out, _ = run(OBJPERT, capsys)
    assert code == 0
    assert out.splitlines()[0].split()[0] == "epsilon"
    assert "epsilon_kifer" in out


def test_account_amp_and_dpsgd(capsys):
    argv = [
        "account",
        "amp",
        "--sigma",
        "6.8285",
        "--lam",
        "4.1161",
        "--beta",
        "0.5",
        "--lipschitz",
        str(math.sqrt(2)),
        "--tau",
        "0.01",
        "--sigma-out",
        "0.15",
        "--delta",
        "1e-5",
        "--json",
    ]
    code, out, _ = run(argv, capsys)
    res = json.loads(out)
    event = AmpDpEvent(6.8285, 4.1161, 0.5, math.sqrt(2), 0.01, 0.15)
    assert res["epsilon"] == PrivacyAccountant("pld").compose(event).get_epsilon(1e-5)
    assert res["epsilon_rdp"] == pytest.approx(1.0, abs=1e-4)  # reference: Redberg et al. Thm 4.1
    argv = [
        "account",
        "dpsgd",
        "--noise-multiplier",
        "1",
        "--sampling-rate",
        "0.05",
        "--steps",
        "100",
        "--delta",
        "1e-5",
        "--tuning-mu",
        "10",
        "--json",
    ]
    code, out, _ = run(argv, capsys)
    res = json.loads(out)
    assert code == 0 and res["accounting"] == "rdp" and res["epsilon"] == res["epsilon_rdp"]


def test_calibrate_commands_meet_their_budgets(capsys):
    code, out, _ = run(["calibrate", "amp", "--epsilon", "1", "--delta", "1e-5", "--json"], capsys)
    res = json.loads(out)
    assert code == 0 and res["epsilon"] <= 1.0
    assert res["sigma"] == pytest.approx(6.8285, abs=2e-4)
    assert res["lam"] == pytest.approx(4.1161, abs=1e-4)
    argv = [
        "calibrate",
        "dpsgd",
        "--epsilon",
        "2",
        "--delta",
        "1e-5",
        "--sampling-rate",
        "0.05",
        "--steps",
        "50",
        "--json",
    ]
    code, out, _ = run(argv, capsys)
    res = json.loads(out)
    assert code == 0 and res["epsilon"] <= 2.0


@pytest.mark.parametrize(
    ("argv", "needle"),
    [
        (
            [
                "account",
                "objpert",
                "--sigma",
                "5",
                "--lam",
                "1",
                "--beta",
                "1",
                "--lipschitz",
                "1",
                "--delta",
                "1e-5",
            ],
            "lam must be > beta",
        ),
        ([*OBJPERT[:-1], "1.5"], "delta"),
        ([*OBJPERT[:-1], "0"], "delta"),
        (
            [
                "account",
                "objpert",
                "--sigma",
                "0",
                "--lam",
                "20",
                "--beta",
                "1",
                "--lipschitz",
                "1",
                "--delta",
                "1e-5",
            ],
            "sigma",
        ),
        (["account", "magic"], "magic"),
        (["account", "objpert", "--sigma", "abc"], "sigma"),
        ([*OBJPERT, "--compositions", "0"], "compositions"),
        (["calibrate", "amp", "--epsilon", "-1", "--delta", "1e-5"], "epsilon"),
    ],
)
def test_bad_arguments_exit_nonzero_with_one_line(argv, needle, capsys):
    code, out, err = run(argv, capsys)
    assert code != 0
    assert out == ""
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert needle in lines[0]


def test_plot_privacy_profile_writes_png(tmp_path, capsys):
    target = tmp_path / "fig" / "profile.png"
    argv = [
        "plot",
        "privacy-profile",
        "--sigma",
        "5",
        "--lam",
        "20",
        "--beta",
        "1",
        "--lipschitz",
        "1",
        "--out",
        str(target),
    ]
    # a missing directory is refused (a typo in --out should not create directories)
    code, out, err = run(argv, capsys)
    assert code == 2 and out == "" and "--mkdir" in err and not target.parent.exists()
    code, _, err = run([*argv, "--mkdir"], capsys)
    assert code == 0 and f"created directory {target.parent}" in err
    assert target.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_help_exits_zero(capsys):
    code, out, _ = run(["--help"], capsys)
    assert code == 0 and "account" in out


def test_fit_adult_json(tmp_path, capsys):
    out = tmp_path / "model.json"
    argv = [
        "fit",
        "--data",
        "adult",
        "--epsilon",
        "1",
        "--delta",
        "1e-5",
        "--method",
        "amp",
        "--seed",
        "0",
        "--out",
        str(out),
        "--json",
    ]
    code, stdout, _ = run(argv, capsys)
    assert code == 0
    res = json.loads(stdout)
    # --json carries every field of the table
    assert set(res) == {
        "accuracy",
        "epsilon",
        "delta",
        "task",
        "method",
        "fit_seconds",
        "n_train",
        "n_test",
        "model_file",
    }
    assert res["n_train"] + res["n_test"] == 45_222 and res["model_file"] == str(out)
    assert res["epsilon"] <= 1.0 and res["method"] == "amp"
    assert res["accuracy"] > 0.80
    model = json.loads(out.read_text())
    assert len(model["coef"][0]) == 104 and len(model["feature_names"]) == 104
    assert model["epsilon_spent"] == res["epsilon"]
    assert "random_state" not in model["params"]  # the noise seed is never released


def test_fit_csv_file(tmp_path, capsys):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(400, 3))
    y = (X[:, 0] > 0).astype(int)
    lines = ["f1,f2,label,f3"] + [f"{a},{b},{c},{d}" for (a, b, d), c in zip(X, y, strict=True)]
    path = tmp_path / "data.csv"
    path.write_text("\n".join(lines))
    argv = [
        "fit",
        "--data",
        str(path),
        "--target",
        "label",
        "--epsilon",
        "4",
        "--delta",
        "1e-5",
        "--method",
        "dpgd",
        "--out",
        str(tmp_path / "m.json"),
        "--json",
    ]
    code, stdout, _ = run(argv, capsys)
    assert code == 0 and json.loads(stdout)["accuracy"] > 0.7
    code, _, err = run(["fit", "--data", str(path), "--epsilon", "1", "--delta", "1e-5"], capsys)
    assert code == 2 and "--target" in err


# --- issue 31: extreme arguments fail fast with one line; the ledger prints safely ----------
ESCAPE = "\x1b[31mred\x1b[0m"
DPSGD = "account dpsgd --noise-multiplier 1 --sampling-rate 0.01 --delta 1e-5"


def _one_error_line(code, out, err, needle):
    lines = [line for line in err.splitlines() if line.strip()]
    assert code == 2 and out == "", err
    assert len(lines) == 1 and lines[0].startswith("dpconvex: error:"), err
    assert "\x1b" not in err and needle in lines[0], err


@pytest.fixture
def no_blocking():
    """Fail (not hang) if a command blocks, e.g. opening a named pipe nobody writes to."""
    import signal

    def blocked(signum, frame):
        pytest.fail("the command blocked")

    previous = signal.signal(signal.SIGALRM, blocked)
    signal.alarm(20)
    yield
    signal.alarm(0)
    signal.signal(signal.SIGALRM, previous)


def test_audit_runs_beyond_the_cap_are_refused_before_allocating(capsys):
    """``--runs 1000000000000`` tried to allocate 7.3 TiB and died with a numpy traceback."""
    from dpconvex.audit import MAX_RUNS, audit_mechanism, run_audit

    code, out, err = run(["audit", "dpsgd", "--runs", "1000000000000"], capsys)
    _one_error_line(code, out, err, "--runs")
    assert str(MAX_RUNS) in err

    def never(use_z, rng):
        raise AssertionError("the mechanism ran")

    for runs in (10**12, MAX_RUNS + 1, 19, 2.5, math.inf, "100"):
        with pytest.raises(ValueError, match="runs"):
            audit_mechanism("x", never, runs, claimed_epsilon=1.0, delta=1e-5)
    with pytest.raises(ValueError, match="runs"):
        run_audit("dpsgd", 10**12)


@pytest.mark.parametrize(
    ("argv", "needle"),
    [
        (["counting", "--k", "1e12", "--epsilon", "1", "--delta", "1e-5"], "--k"),
        (["counting", "--k", "10", "--epsilon", "1", "--delta", "1e-5", "--p", "nan"], "--p"),
        (f"{DPSGD} --steps {10**20}".split(), "--steps"),
        ([*OBJPERT, "--compositions", str(10**20)], "--compositions"),
        ([*OBJPERT[:-1], "nan"], "--delta"),
        (f"{DPSGD} --steps 10 --tuning-mu 5 --tuning-shape nan".split(), "--tuning-shape"),
        (
            "calibrate dpsgd --epsilon 1e-300 --delta 1e-5 --sampling-rate 0.01 --steps 10".split(),
            "--epsilon",
        ),
        (["demo", "--epsilon", "inf"], "--epsilon"),
        (["demo", "--seed", "-1"], "--seed"),
        (["reproduce", "fig2", "--quick", "--out", ".", "--trials", "1000000000000"], "--trials"),
        (["audit", "nope" + ESCAPE], "nope"),
    ],
)
def test_extreme_numbers_are_refused_before_any_work(argv, needle, capsys):
    code, out, err = run(argv, capsys)
    _one_error_line(code, out, err, needle)


def test_count_options_accept_exponent_notation(capsys):
    argv = [*OBJPERT, "--compositions", "1e1", "--json"]
    code, out, _ = run(argv, capsys)
    assert code == 0 and json.loads(out)["compositions"] == 10


def _ledger_with_two_spends(path):
    from dpconvex import Budget
    from dpconvex.accounting import GaussianDpEvent

    ledger = Budget(path, 5.0, 1e-5)
    for i in range(2):
        ledger.spend(GaussianDpEvent(20.0), mechanism="gauss", label=f"run {i}")
    return path


def test_budget_show_escapes_labels_and_survives_absurd_times(tmp_path, capsys):
    """A ledger file may be edited: escapes print escaped, a clock of 1e20 as invalid."""
    import sqlite3

    path = _ledger_with_two_spends(tmp_path / "l.db")
    db = sqlite3.connect(path)
    db.execute("UPDATE entries SET label = ?, time = 1e20 WHERE id = 1", (ESCAPE,))
    db.execute("UPDATE entries SET mechanism = ?, time = -1e300 WHERE id = 2", ("g\u202eevil",))
    db.commit()
    db.close()
    code, out, err = run(["budget", "show", str(path)], capsys)
    assert code == 0, err
    assert "\x1b" not in out + err and "\u202e" not in out + err
    assert "\\x1b[31mred" in out and "\\u202eevil" in out
    assert out.count("invalid time") == 2
    assert "WARNING: the ledger was altered" in err
    code, out, _ = run(["budget", "show", str(path), "--json"], capsys)
    shown = json.loads(out)
    assert code == 0 and "\x1b" not in out
    assert [e["time"] for e in shown["entries"]] == [1e20, -1e300]
    assert shown["entries"][0]["label"] == ESCAPE.replace("\x1b", "\\x1b")


def test_budget_init_makes_a_renyi_filter_ledger(tmp_path, capsys):
    path = tmp_path / "f.db"
    argv = ["budget", "init", str(path), "--epsilon", "1", "--delta", "1e-5"]
    code, out, err = run([*argv, "--accounting", "renyi-filter", "--order", "10"], capsys)
    assert code == 0 and "order 10" in out, err
    shown = json.loads(run(["budget", "show", str(path), "--json"], capsys)[1])
    assert shown["accounting"] == "renyi-filter" and shown["rdp_order"] == 10.0
    code, out, err = run([*argv[:2], str(tmp_path / "g.db"), *argv[3:], "--order", "10"], capsys)
    _one_error_line(code, out, err, "renyi-filter")
    code, out, err = run([*argv, "--accounting", "renyi-filter", "--order", "1"], capsys)
    _one_error_line(code, out, err, "--order")


def test_a_copied_ledger_warns_in_one_line(tmp_path, capsys):
    import shutil

    path = _ledger_with_two_spends(tmp_path / "l.db")
    shutil.copy(path, tmp_path / "copy.db")
    code, _, err = run(["budget", "show", str(tmp_path / "copy.db")], capsys)
    warnings_shown = [line for line in err.splitlines() if "warning" in line.lower()]
    assert code == 0 and len(warnings_shown) == 1, err
    assert warnings_shown[0].startswith("dpconvex: warning:") and ".py" not in err


@pytest.fixture
def special_paths(tmp_path):
    import os

    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    return {"fifo": str(fifo), "directory": str(tmp_path), "device": "/dev/zero"}


@pytest.mark.parametrize("kind", ["fifo", "directory", "device"])
def test_inputs_that_are_not_regular_files_are_refused_without_reading(
    kind, special_paths, tmp_path, capsys, no_blocking
):
    path = special_paths[kind]
    fit = ["fit", "--data", path, *"--target y --epsilon 1 --delta 1e-5 --out".split()]
    fit.append(str(tmp_path / "m.json"))
    for argv, needle in [
        (fit, "--data"),
        (["predict", "--model", path, "--data", "adult"], "--model"),
        (["budget", "show", path], "PATH"),
        (["budget", "acknowledge", path], "PATH"),
        ([*fit[:-2], "--budget", path, "--out", str(tmp_path / "m.json")], "--budget"),
    ]:
        code, out, err = run(argv, capsys)
        _one_error_line(code, out, err, needle)


def test_an_unwritable_output_is_refused_before_training_or_charging(tmp_path, capsys):
    """Training used to run (and charge the ledger) before the write failed with a traceback."""
    from dpconvex import Budget

    ledger = _ledger_with_two_spends(tmp_path / "l.db")
    rng = np.random.default_rng(0)
    X = rng.normal(size=(100, 2))
    data = tmp_path / "d.csv"
    data.write_text("a,b,y\n" + "".join(f"{a},{b},{int(a > 0)}\n" for a, b in X))
    base = ["fit", "--data", str(data), "--budget", str(ledger), "--force"]
    base += "--target y --epsilon 1 --delta 1e-5 --accounting rdp".split()
    for out_path, needle in [
        ("/proc/dpconvex-test.json", "cannot write"),
        (str(tmp_path), "directory"),
        (str(tmp_path / ("n" * 300)), "too long"),
    ]:
        code, out, err = run([*base, "--out", out_path], capsys)
        _one_error_line(code, out, err, needle)
    assert len(Budget(ledger).entries()) == 2  # nothing was charged
    code, out, err = run(["audit", "--all", "--out", "/proc/dpconvex-audit.md"], capsys)
    _one_error_line(code, out, err, "cannot write")
    code, out, err = run(["reproduce", "fig1", "--out", str(data)], capsys)
    _one_error_line(code, out, err, "not a directory")


def test_a_missing_input_is_one_escaped_line(tmp_path, capsys):
    missing = tmp_path / f"no{ESCAPE}.csv"
    argv = ["fit", "--data", str(missing), "--out", str(tmp_path / "m.json")]
    argv += "--target y --epsilon 1 --delta 1e-5".split()
    code, out, err = run(argv, capsys)
    _one_error_line(code, out, err, "does not exist")


def test_only_refusals_are_turned_into_one_line(monkeypatch):
    """A MemoryError or an IndexError is a bug: it keeps its traceback (not exit 2)."""
    import dpconvex.cli.account as cli_module

    def broken(*args, **kwargs):
        raise IndexError("a bug")

    monkeypatch.setattr(cli_module, "objpert_epsilon", broken)
    with pytest.raises(IndexError):
        main(OBJPERT)
