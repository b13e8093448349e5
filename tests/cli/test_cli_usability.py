"""Issue 15: help in plain words, quiet dependencies, safe files, errors naming the problem."""

import json
import logging
import re

import click
import numpy as np
import pytest

from dpconvex import DPLinearRegression, DPLogisticRegression, load_model, save_model
from dpconvex._logs import quiet_rdp_convergence, rdp_convergence_count
from dpconvex.cli import cli
from dpconvex.datasets import load_csv

from .runner import run

#: paper coordinates and time promises have no place in --help
FORBIDDEN = re.compile(
    r"seed \d{3}|\bThms?\b|Theorem|Lemma|Algorithm \d|thesis|\bApp\. |§|Prop\.|minute|"
    r"\[default: \(",
    re.IGNORECASE,
)


def _commands(group, path=()):
    for name, command in sorted(group.commands.items()):
        yield (*path, name), command
        if isinstance(command, click.Group):
            yield from _commands(command, (*path, name))


COMMANDS = list(_commands(cli))


def test_the_walk_sees_every_command():
    names = {" ".join(p) for p, _ in COMMANDS}
    assert {"fit", "predict", "account dpsgd", "calibrate amp", "plot privacy-profile"} <= names
    assert "counting" in names and "budget init" in names and "reproduce" in names


@pytest.mark.parametrize("path,command", COMMANDS, ids=[" ".join(p) for p, _ in COMMANDS])
def test_every_command_and_option_is_described_in_plain_words(path, command):
    assert (command.help or "").strip(), f"dpconvex {' '.join(path)} has no description"
    for param in command.params:
        if isinstance(param, click.Option) and param.name != "help":
            assert (param.help or "").strip(), f"{' '.join(path)} {param.opts[0]} has no help"
    ctx = click.Context(command, info_name=f"dpconvex {' '.join(path)}")
    text = command.get_help(ctx)
    found = FORBIDDEN.findall(text)
    assert not found, f"dpconvex {' '.join(path)} --help says {found}:\n{text}"


def test_defaults_print_readably(capsys):
    code, out, _ = run(["account", "dpsgd", "--help"], capsys)
    assert code == 0
    assert "[default: inf; x>=0]" in " ".join(out.split()) and "Poisson" in out
    code, out, _ = run(["calibrate", "amp", "--help"], capsys)
    assert "1.4142135623730951" not in out and "square root of 2" in " ".join(out.split())


def test_absl_convergence_warnings_do_not_reach_the_terminal(caplog, capsys):
    """This DP-SGD setting made dp_accounting log 14 "failed to converge" lines per run."""
    argv = [
        "account",
        "dpsgd",
        "--noise-multiplier",
        "0.733678",
        "--sampling-rate",
        "0.032",
        "--steps",
        "10",
        "--delta",
        "1e-5",
        "--tuning-mu",  # RDP only: faster than the PLD of plain DP-SGD
        "2",
        "--json",
    ]
    before = rdp_convergence_count()
    with caplog.at_level(logging.WARNING):
        code, out, err = run(argv, capsys)
    assert code == 0 and json.loads(out)["epsilon_rdp"] > 0
    assert rdp_convergence_count() > before  # the setting does trigger the warning
    assert not [r for r in caplog.records if "failed to converge" in r.getMessage()]
    assert "failed to converge" not in err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("note:") and "upper bound" in lines[0]


def test_only_the_convergence_warning_is_dropped(caplog):
    """The filter passes absl's other warnings (e.g. a negative RDP returning epsilon 0)."""
    from dp_accounting.rdp import rdp_privacy_accountant as rdp

    absl = logging.getLogger("absl")
    with caplog.at_level(logging.WARNING):
        assert rdp._compute_log_a_frac(0.032, 0.733678, 1.137797) == np.inf  # the trigger
        assert any("failed to converge" in r.getMessage() for r in caplog.records)
        caplog.clear()
        with quiet_rdp_convergence():
            rdp._compute_log_a_frac(0.032, 0.733678, 1.137797)
            absl.warning("Negative Renyi divergence of -1, ... Returning an epsilon of zero.")
    messages = [r.getMessage() for r in caplog.records]
    assert messages == ["Negative Renyi divergence of -1, ... Returning an epsilon of zero."]
    assert _filters(absl) == []  # the scope removes its filter


def _filters(logger):
    return [f for f in logger.filters if type(f).__name__ == "_ConvergenceFilter"]


@pytest.fixture(scope="module")
def csv_data(tmp_path_factory):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(200, 3))
    y = (X[:, 0] + 0.3 * X[:, 1] > 0).astype(int)
    path = tmp_path_factory.mktemp("data") / "data.csv"
    rows = [f"{a},{b},{c},{label}" for (a, b, c), label in zip(X, y, strict=True)]
    path.write_text("\n".join(["f1,f2,f3,label", *rows]))
    return path, X, y


def _fit_argv(path, out, *extra):
    return [
        "fit",
        "--data",
        str(path),
        "--target",
        "label",
        "--epsilon",
        "4",
        "--delta",
        "1e-5",
        "--seed",
        "0",
        "--accounting",
        "rdp",  # fast calibration
        "--out",
        str(out),
        *extra,
    ]


def test_fit_refuses_to_overwrite_a_model_before_spending(csv_data, tmp_path, capsys):
    path, _, _ = csv_data
    model = tmp_path / "model.json"
    model.write_text("precious")
    ledger = tmp_path / "ledger.db"
    assert (
        run(["budget", "init", str(ledger), "--epsilon", "10", "--delta", "1e-5"], capsys)[0] == 0
    )
    code, out, err = run(_fit_argv(path, model, "--budget", str(ledger)), capsys)
    assert code == 2 and out == ""
    assert "exists" in err and "--force" in err and len(err.strip().splitlines()) == 1
    assert model.read_text() == "precious"
    shown = json.loads(run(["budget", "show", str(ledger), "--json"], capsys)[1])
    assert shown["entries"] == []  # nothing was charged for the refused run
    code, out, _ = run(_fit_argv(path, model, "--force", "--json"), capsys)
    assert code == 0 and json.loads(model.read_text())["model"] == "DPLogisticRegression"


def test_fit_refuses_a_missing_directory_unless_mkdir(csv_data, tmp_path, capsys):
    path, _, _ = csv_data
    target = tmp_path / "new" / "model.json"
    code, _, err = run(_fit_argv(path, target), capsys)
    assert code == 2 and "does not exist" in err and not target.parent.exists()
    code, out, err = run(_fit_argv(path, target, "--mkdir", "--json"), capsys)
    assert code == 0 and target.is_file() and "created directory" in err
    res = json.loads(out)
    assert res["n_train"] == 160 and res["n_test"] == 40 and res["model_file"] == str(target)


def test_cli_model_round_trip_predicts_the_same_labels(csv_data, tmp_path, capsys):
    path, X, y = csv_data
    model_file = tmp_path / "m.json"
    assert run(_fit_argv(path, model_file), capsys)[0] == 0
    model = load_model(model_file)
    code, out, _ = run(
        ["predict", "--model", str(model_file), "--data", str(path), "--target", "label", "--json"],
        capsys,
    )
    assert code == 0
    res = json.loads(out)
    assert res["predictions"] == model.predict(X).tolist()
    assert res["n_rows"] == 200 and res["accuracy"] == pytest.approx(np.mean(model.predict(X) == y))
    assert res["accuracy"] > 0.8
    preds = tmp_path / "p.csv"
    code, out, _ = run(
        ["predict", "--model", str(model_file), "--data", str(path), "--out", str(preds)], capsys
    )
    assert code == 0 and "predictions_file" in out
    assert preds.read_text().split() == ["prediction", *map(str, model.predict(X).tolist())]
    code, _, err = run(
        ["predict", "--model", str(model_file), "--data", str(path), "--out", str(preds)], capsys
    )
    assert code == 2 and "--force" in err


def _labels(kind, X):
    if kind == "one-vs-rest":
        return np.digitize(X[:, 0], [-0.5, 0.5])
    if kind == "binary":
        return (X[:, 1] > 0).astype(int)
    return X[:, 2] / 4


@pytest.mark.parametrize(
    "kind,model",
    [
        ("binary", DPLogisticRegression(epsilon=2.0, accounting="rdp", random_state=0)),
        (
            "one-vs-rest",
            DPLogisticRegression(
                epsilon=2.0, classes=[0, 1, 2], method="output", accounting="rdp", random_state=1
            ),
        ),
        (
            "regression",
            DPLinearRegression(epsilon=2.0, row_bound=5.0, accounting="rdp", random_state=0),
        ),
    ],
)
def test_load_model_rebuilds_a_predicting_estimator(kind, model, tmp_path):
    X = np.random.default_rng(1).normal(size=(150, 4))
    fitted = model.fit(X, _labels(kind, X))
    path = save_model(fitted, tmp_path / "model.json")
    with pytest.raises(ValueError, match="exists"):
        save_model(fitted, path)
    loaded = load_model(path)
    assert type(loaded) is type(fitted)
    np.testing.assert_array_equal(loaded.predict(X), fitted.predict(X))
    assert loaded.epsilon_ == fitted.epsilon_ and loaded.delta_ == fitted.delta_
    assert loaded.dp_event_ == fitted.dp_event_
    assert loaded.budget is None and loaded.get_params()["epsilon"] == 2.0


def test_load_model_names_a_file_that_is_not_a_model(tmp_path):
    bad = tmp_path / "x.json"
    bad.write_text('{"hello": 1}')
    with pytest.raises(ValueError, match="not a dpconvex model file"):
        load_model(bad)


def test_demo_json_has_every_field_the_table_shows(monkeypatch, capsys):
    import dpconvex.experiments.demo as demo

    fake = {
        "data": "UCI Adult (bundled)",
        "n_train": 8,
        "n_test": 2,
        "target_epsilon": 1.0,
        "target_delta": 1e-5,
        "results": [{"method": "m", "accuracy": 0.5, "epsilon": 0.9, "fit_seconds": 0.1}],
    }
    monkeypatch.setattr(demo, "run_demo", lambda epsilon, delta, seed: fake)
    code, out, _ = run(["demo"], capsys)
    assert code == 0 and "8 train / 2 test rows" in out and "delta=1e-05" in out
    code, out, _ = run(["demo", "--json"], capsys)
    res = json.loads(out)
    assert {"data", "n_train", "n_test", "target_epsilon", "target_delta"} <= set(res)
    assert set(res["results"][0]) >= {"method", "accuracy", "epsilon", "fit_seconds"}


# -- errors that name the problem ------------------------------------------------------


def test_string_column_of_an_object_array_is_named():
    X = np.array([[1.0, "a"], [2.0, "b"], [3.0, "a"]], dtype=object)
    with pytest.raises(ValueError, match=r"column 1 holds text \(first in row 0\)") as info:
        DPLogisticRegression().fit(X, [0, 1, 0])
    assert "TableEncoder" in str(info.value) and "'a'" not in str(info.value)


def test_string_column_of_a_data_frame_is_named_by_header():
    pd = pytest.importorskip("pandas")
    frame = pd.DataFrame({"age": [30, 40, 50], "city": ["Oslo", "Rome", "Oslo"]})
    with pytest.raises(ValueError, match="column 'city' holds text"):
        DPLogisticRegression().fit(frame, [0, 1, 0])


def test_nan_is_called_a_missing_value_with_column_and_count():
    X = np.ones((6, 3))
    X[[1, 4], 2] = np.nan
    with pytest.raises(ValueError, match=r"missing values .* column 2 \(2 rows\)"):
        DPLogisticRegression().fit(X, [0, 1] * 3)
    model = DPLogisticRegression(epsilon=2.0, accounting="rdp", random_state=0)
    model.fit(np.ones((6, 3)), [0, 1] * 3)
    with pytest.raises(ValueError, match=r"missing values .* column 2 \(2 rows\)"):
        model.predict(X)


def test_infinity_is_named_with_column_and_count_and_read_once(monkeypatch):
    import scipy.sparse as sp
    import sklearn.utils.validation as skv

    from dpconvex import _validation as v

    pd = pytest.importorskip("pandas")
    X = np.ones((6, 3))
    X[[0, 3, 5], 1] = -np.inf
    with pytest.raises(ValueError, match=r"infinite values \(infinity\) in column 1 \(3 rows\)"):
        DPLogisticRegression().fit(X, [0, 1] * 3)
    frame = pd.DataFrame({"age": [30.0, np.inf, 50.0], "pay": [1.0, 2.0, 3.0]})
    with pytest.raises(ValueError, match=r"column 'age' \(1 row\)"):
        DPLogisticRegression().fit(frame, [0, 1, 0])
    # finite values whose sum overflows are not refused
    assert v.numeric_features(np.full((4, 2), 1e308)) is True
    assert v.numeric_features(np.ones((3, 2), dtype=np.int64)) is True
    assert v.numeric_features(np.ones((3, 2), dtype=np.longdouble)) is (
        np.dtype(np.longdouble).itemsize <= 8
    )
    assert v.numeric_features(sp.csr_matrix(np.ones((3, 2)))) is False
    assert v.numeric_features(np.array([["1", "2"]], dtype=object)) is False
    # a dense float array checked here is not read again by scikit-learn's finite check
    calls = []
    real = skv._assert_all_finite
    monkeypatch.setattr(
        skv, "_assert_all_finite", lambda X, **k: (calls.append(np.shape(X)), real(X, **k))
    )
    DPLogisticRegression(epsilon=2.0, random_state=0).fit(np.ones((6, 3)), [0, 1] * 3)
    assert (6, 3) not in calls and (6,) in calls  # the labels are still checked there


def test_csv_missing_values_are_not_called_non_numeric(tmp_path):
    path = tmp_path / "gaps.csv"
    path.write_text("a,b,label\n1,2,0\n,4,1\n5,NA,1\n7,,0\n")
    with pytest.raises(ValueError) as info:
        load_csv(path, "label")
    message = str(info.value)
    assert "missing values" in message and "not numeric" not in message
    assert "column 'a' (1 row, first on line 3)" in message
    assert "column 'b' (2 rows, first on line 4)" in message


def test_csv_text_column_names_the_column(tmp_path):
    path = tmp_path / "text.csv"
    path.write_text("x,color,label\n1,red,0\n2,blue,1\n")
    with pytest.raises(ValueError, match="column 'color' holds text.*as categorical in a schema"):
        load_csv(path, "label")


def test_tiny_csv_says_how_many_rows_are_needed(tmp_path, capsys):
    path = tmp_path / "tiny.csv"
    path.write_text("a,b,label\n1,2,0\n3,4,1\n")
    code, out, err = run(_fit_argv(path, tmp_path / "m.json"), capsys)
    assert code == 2 and out == "" and not (tmp_path / "m.json").exists()
    assert "has 2 rows" in err and "at least 3 rows" in err and "0 sample" not in err
    with pytest.raises(ValueError, match="at least 51 rows"):
        load_csv(path, "label").split(test_size=0.01)


# -- progress of the private random search ----------------------------------------------


def test_random_search_progress_is_optional_and_changes_nothing(capsys):
    from dpconvex import PrivateRandomSearch

    rng = np.random.default_rng(0)
    X = rng.normal(size=(300, 4))
    y = (X[:, 0] > 0).astype(int)

    def search(verbose):
        return PrivateRandomSearch(
            DPLogisticRegression(accounting="rdp"),  # fast calibration
            {"solver": ["lbfgs", "newton"], "lam": [2.0, 8.0]},
            epsilon=2.0,
            mu=2.0,
            score_noise=10.0,
            run_epsilon=0.5,
            random_state=4,
            verbose=verbose,
        ).fit(X, y)

    quiet = search(False)
    assert capsys.readouterr().err == ""
    loud = search(True)
    err = capsys.readouterr().err
    assert "PrivateRandomSearch" in err and "run" in err
    assert loud.best_params_ == quiet.best_params_ and loud.best_score_ == quiet.best_score_
    np.testing.assert_array_equal(loud.best_estimator_.coef_, quiet.best_estimator_.coef_)
    assert loud.epsilon_ == quiet.epsilon_
