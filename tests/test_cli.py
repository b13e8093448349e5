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


def run(argv, capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(argv)
    out, err = capsys.readouterr()
    return exit_info.value.code, out, err


def test_account_objpert_json_matches_library_and_spec(capsys):
    code, out, _ = run([*OBJPERT, "--json"], capsys)
    assert code == 0
    res = json.loads(out)
    assert set(res) >= {"epsilon", "epsilon_rdp", "epsilon_kifer", "epsilon_lower_bound"}
    kw = {"sigma": 5, "lam": 20, "beta": 1, "lipschitz": 1}
    assert res["epsilon"] == objpert_epsilon(1e-5, **kw)
    assert res["epsilon_kifer"] == kifer_epsilon(1e-5, **kw)
    # spec §11.B.1, left panel: 0.7255 <= 0.8109 <= 0.8787
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
    assert res["epsilon"] == pytest.approx(3.1314, rel=1e-3)  # spec §11.B.3
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
    assert res["epsilon_rdp"] == pytest.approx(1.0, abs=1e-4)  # spec §11.B.4
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
    assert model["params"]["random_state"] == 0


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
