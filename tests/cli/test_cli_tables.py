"""`dpconvex fit/predict` on raw tables (schema, regression), schema templates, errors
without cell contents, and the progress line."""

import io
import json
import time

import numpy as np
import pytest

from dpconvex import load_model
from dpconvex.cli import _progress
from dpconvex.preprocessing import load_schema

from ..table_schemas import cities_schema
from .runner import run

SECRET = "Zanzibar-4471"  # a cell's content that no message may show

SCHEMA = cities_schema()


@pytest.fixture(scope="module")
def table(tmp_path_factory):
    """A CSV with text, missing cells, an extra column and a numeric target."""
    rng = np.random.default_rng(0)
    n = 500
    lines = ["id,age,city,income,price,bought"]
    for i in range(n):
        age = int(rng.integers(18, 80))
        city = rng.choice(["Paris", "Lyon", "Nice", ""])
        income = "NA" if rng.random() < 0.1 else f"{rng.lognormal(10, 1):.0f}"
        price = 50_000 + 1_000 * age + 20_000 * (city == "Paris") + rng.normal(0, 5_000)
        bought = int(age + rng.normal(0, 8) > 48)
        lines.append(f"{i},{age},{city},{income},{price:.0f},{bought}")
    root = tmp_path_factory.mktemp("tables")
    data = root / "shop.csv"
    data.write_text("\n".join(lines) + "\n")
    schema = root / "schema.json"
    schema.write_text(json.dumps(SCHEMA))
    return data, schema


def _fit(table, tmp_path, capsys, *extra):
    data, schema = table
    out = tmp_path / "model.json"
    argv = ["fit", "--data", data, "--schema", schema, "--epsilon", 1, "--delta", 1e-5,
            "--seed", 0, "--out", out, "--json", *extra]  # fmt: skip
    code, stdout, err = run(argv, capsys)
    assert code == 0, err
    return json.loads(stdout), out


def test_fit_with_a_schema_reads_text_and_missing_cells_and_predict_takes_raw_rows(
    table, tmp_path, capsys
):
    """Before: a CSV with text columns could not be used, nor a raw CSV for predict."""
    summary, out = _fit(table, tmp_path, capsys, "--target", "bought")
    assert summary["epsilon"] <= 1.0 and summary["method"] in ("amp", "dpgd")
    assert summary["accuracy"] > 0.6 and summary["task"] == "classification"
    code, stdout, _ = run(
        ["predict", "--model", out, "--data", table[0], "--target", "bought", "--json"], capsys
    )
    assert code == 0
    result = json.loads(stdout)
    from dpconvex.datasets.files import load_csv_cells

    cells, y = load_csv_cells(table[0], ["age", "city", "income"], "bought")
    expected = load_model(out).predict(cells)
    assert result["predictions"] == expected.tolist()
    assert result["accuracy"] == pytest.approx(np.mean(expected == y))


def test_fit_regression_reports_r2_and_rmse(table, tmp_path, capsys):
    summary, out = _fit(
        table, tmp_path, capsys, "--target", "price", "--task", "regression",
        "--y-bounds", "0,300000", "--epsilon", 4,
    )  # fmt: skip
    assert "accuracy" not in summary and summary["r2"] > 0.3 and summary["rmse"] > 0
    code, _, err = run(
        ["predict", "--model", out, "--data", table[0], "--target", "price"], capsys
    )
    assert code == 0 and err.startswith("r2 ")


@pytest.mark.parametrize(
    ("extra", "match"),
    [
        (["--task", "regression"], "needs --y-bounds"),
        (["--y-bounds", "0,1"], "--y-bounds is for regression"),
        (["--method", "adassp"], "adassp is for regression"),
        (["--row-bound", "2"], "--row-bound is set by the schema"),
        (["--y-bounds", "5,1", "--task", "regression"], "LOW < HIGH"),
    ],
)
def test_inconsistent_options_are_one_line_before_any_work(
    table, tmp_path, capsys, extra, match
):
    data, schema = table
    argv = ["fit", "--data", data, "--schema", schema, "--target", "bought", "--epsilon", 1,
            "--delta", 1e-5, "--out", tmp_path / "m.json", *extra]  # fmt: skip
    code, _, err = run(argv, capsys)
    assert code == 2 and match in err and err.count("\n") == 1
    assert not (tmp_path / "m.json").exists()


def test_a_numeric_target_as_labels_names_the_fix_not_the_values(tmp_path, capsys):
    """It printed 'labels [25000.0, 25245.0, ...] are not in the declared classes'."""
    data = tmp_path / "d.csv"
    data.write_text("a,b,price\n" + "".join(f"{i % 7},{i % 3},{25000 + 245 * i}\n"
                                            for i in range(60)))  # fmt: skip
    argv = ["fit", "--data", data, "--target", "price", "--epsilon", 1, "--delta", 1e-5,
            "--out", tmp_path / "m.json"]  # fmt: skip
    code, _, err = run(argv, capsys)
    assert code == 2 and "--task regression" in err and "--classes" in err
    assert "25000" not in err and "25245" not in err
    code, out, err = run([*argv[:-2], "--task", "regression", "--y-bounds", "0,50000",
                          "--row-bound", "5", "--out", tmp_path / "r.json", "--json"], capsys)
    assert code == 0, err
    params = json.loads((tmp_path / "r.json").read_text())["params"]
    assert params["row_norm"] == "clip" and params["row_bound"] == 5.0
    assert "r2" in json.loads(out)


@pytest.mark.parametrize(
    ("text", "match"),
    [
        (f"a,label\n1,0\n{SECRET},1\n", "column 'a' holds text \\(first on line 3"),
        (f"a,label\n1,0\n2,{SECRET * 6}\n", "label in column 'label' on line 3 is longer"),
        ("a,label\n1,0\n2,inf\n", "label in column 'label' on line 3 is not finite"),
        ("a,label\n1,0\n1e999,1\n", "column 'a' holds an infinite value \\(first on line 3"),
        ("a,label\n1,0\n١٢,1\n", "digits other than 0-9 in column 'a' \\(first on line 3"),
    ],
)
def test_csv_errors_name_line_and_column_never_the_cell(tmp_path, capsys, text, match):
    data = tmp_path / "d.csv"
    data.write_text(text)
    argv = ["fit", "--data", data, "--target", "label", "--epsilon", 1, "--delta", 1e-5,
            "--out", tmp_path / "m.json"]  # fmt: skip
    code, _, err = run(argv, capsys)
    assert code == 2
    assert pytest.importorskip("re").search(match, err), err
    for shown in (SECRET, "inf'", "١٢", "1e999"):
        assert shown not in err


def test_regression_targets_must_be_numbers_named_by_line(tmp_path, capsys, table):
    data = tmp_path / "d.csv"
    data.write_text(f"age,city,income,price\n30,Paris,10,5\n40,Lyon,20,{SECRET}\n")
    argv = ["fit", "--data", data, "--schema", table[1], "--target", "price", "--task",
            "regression", "--y-bounds", "0,10", "--epsilon", 1, "--delta", 1e-5,
            "--out", tmp_path / "m.json"]  # fmt: skip
    code, _, err = run(argv, capsys)
    assert code == 2 and "line 3" in err and SECRET not in err


def test_schema_template_reads_the_header_only(tmp_path, capsys):
    """The rows are not UTF-8: the template never reads them."""
    data = tmp_path / "raw.csv"
    data.write_bytes(b"age,city,y\n\xff\xfe,\x00,1\n")
    out = tmp_path / "schema.json"
    code, _, err = run(
        ["schema", "template", "--data", data, "--target", "y", "--out", out], capsys
    )
    assert code == 0, err
    schema = load_schema(out)
    assert [c.name for c in schema.columns] == ["age", "city"]
    assert schema.n_estimated == 4
    code, _, err = run(["schema", "template", "--data", data, "--out", out], capsys)
    assert code == 2 and "--force" in err


def test_default_method_is_auto(table, tmp_path, capsys):
    summary, out = _fit(table, tmp_path, capsys, "--target", "bought")
    record = json.loads(out.read_text())
    assert record["estimator"]["params"]["method"] == "auto"
    assert record["estimator"]["method_run"] == summary["method"]


class _Terminal(io.StringIO):
    def isatty(self):
        return True


def test_progress_line_appears_only_after_the_delay_and_only_on_a_terminal():
    stream = _Terminal()
    with _progress("fitting (amp)", enabled=True, stream=stream, delay=0.05):
        time.sleep(0.3)
    assert "fitting (amp): 0 s elapsed" in stream.getvalue()
    for stream, enabled in ((_Terminal(), False), (io.StringIO(), True)):  # --json; a pipe
        with _progress("fitting", enabled=enabled, stream=stream, delay=0.0):
            time.sleep(0.1)
        assert stream.getvalue() == ""
    quick = _Terminal()
    with _progress("fitting", enabled=True, stream=quick, delay=5.0) as clock:
        pass
    assert quick.getvalue() == "" and clock.seconds < 5.0


def test_refused_cells_and_labels_charge_no_ledger(table, tmp_path, capsys):
    """The pipeline charges before its steps read the rows: the CLI checks them first."""
    from dpconvex import Budget

    ledger = tmp_path / "ledger.json"
    assert run(["budget", "init", ledger, "--epsilon", 5, "--delta", 1e-4], capsys)[0] == 0
    data = tmp_path / "d.csv"
    rows = "".join(f"{20 + i % 50},Paris,{SECRET if i == 7 else i},{i % 2}\n" for i in range(50))
    data.write_text("age,city,income,bought\n" + rows)
    base = ["fit", "--data", data, "--schema", table[1], "--target", "bought", "--epsilon", 1,
            "--delta", 1e-5, "--budget", ledger, "--out", tmp_path / "m.json"]  # fmt: skip
    code, _, err = run(base, capsys)
    assert code == 2 and "column 'income' is declared numeric" in err and SECRET not in err
    code, _, err = run([*base, "--classes", "yes,no"], capsys)
    assert code == 2 and "not in the declared classes" in err
    assert Budget(ledger).entries() == []


@pytest.mark.dask
def test_dask_with_a_schema_fits_the_same_pipeline_shape(table, tmp_path, capsys):
    pytest.importorskip("dask.distributed")
    data, schema = table
    out = tmp_path / "m.json"
    argv = ["fit", "--dask", "--data", data, "--schema", schema, "--target", "bought",
            "--epsilon", 1, "--delta", 1e-5, "--seed", 0, "--out", out, "--json"]  # fmt: skip
    code, stdout, err = run(argv, capsys)
    assert code == 0, err
    summary = json.loads(stdout)
    assert summary["epsilon"] <= 1.0 and 0 <= summary["accuracy"] <= 1
    code, stdout, _ = run(["predict", "--model", out, "--data", data, "--json"], capsys)
    assert code == 0 and len(json.loads(stdout)["predictions"]) == 500


def test_regression_with_a_search_range_estimates_the_target_bounds_and_saves(
    table, tmp_path, capsys
):
    """Before: --task regression needed --y-bounds, and the pipeline could not be saved."""
    summary, out = _fit(
        table, tmp_path, capsys, "--target", "price", "--task", "regression",
        "--y-search-range", "0,1e7", "--epsilon", 4,
    )  # fmt: skip
    assert set(summary) >= {"r2", "rmse", "epsilon", "method"} and summary["epsilon"] <= 4.0
    assert not any("bound" in key for key in summary)  # released in the file, not printed
    record = json.loads(out.read_text())
    low, high = record["target_bounds"]["y_bounds"]
    assert 0 <= low < high <= 1e7
    assert record["target_bounds"]["params"]["y_bounds"] == [None, None]
    code, stdout, err = run(
        ["predict", "--model", out, "--data", table[0], "--target", "price", "--json"], capsys
    )
    assert code == 0, err
    from dpconvex.datasets.files import load_csv_cells

    cells, _ = load_csv_cells(table[0], ["age", "city", "income"], "price", numeric_target=True)
    assert json.loads(stdout)["predictions"] == load_model(out).predict(cells).tolist()
    assert np.isfinite(json.loads(stdout)["r2"])


def test_one_declared_target_end_with_a_search_range(table, tmp_path, capsys):
    _, out = _fit(
        table, tmp_path, capsys, "--target", "price", "--task", "regression",
        "--y-bounds", "0,", "--y-search-range", "0,1e7",
    )  # fmt: skip
    record = json.loads(out.read_text())
    assert record["target_bounds"]["params"]["y_bounds"] == [0.0, None]
    assert record["target_bounds"]["y_bounds"][0] == 0.0


@pytest.mark.parametrize(
    ("extra", "match"),
    [
        (["--y-bounds", "0,", "--task", "regression"], "empty end needs --y-search-range"),
        (["--y-bounds", "0,1", "--y-search-range", "0,9", "--task", "regression"],
         "not both"),
        (["--y-search-range", "0,9"], "--y-search-range is for regression"),
        (["--y-bounds", "20,", "--y-search-range", "0,9", "--task", "regression"],
         "must lie inside --y-search-range"),
        (["--y-bounds", ",", "--y-search-range", "0,9", "--task", "regression"],
         "both ends empty"),
        (["--y-search-range", "0,", "--task", "regression"], "not two numbers"),
        (["--y-search-range", "9,0", "--task", "regression"], "LOW < HIGH"),
    ],
)  # fmt: skip
def test_target_range_options_are_checked_before_any_work(table, tmp_path, capsys, extra, match):
    data, schema = table
    argv = ["fit", "--data", data, "--schema", schema, "--target", "price", "--epsilon", 1,
            "--delta", 1e-5, "--out", tmp_path / "m.json", *extra]  # fmt: skip
    code, _, err = run(argv, capsys)
    assert code == 2 and match in err and err.count("\n") == 1, err
    assert not (tmp_path / "m.json").exists()


@pytest.mark.parametrize("extra", [[], ["--dask"]])
def test_a_search_range_without_schema_or_with_dask_says_what_to_do(
    table, tmp_path, capsys, extra
):
    data, schema = table
    argv = ["fit", "--data", data, "--target", "price", "--task", "regression", "--epsilon",
            1, "--delta", 1e-5, "--y-search-range", "0,1e7", "--out", tmp_path / "m.json"]
    argv += ["--schema", schema, *extra] if extra else []  # fmt: skip
    code, _, err = run(argv, capsys)
    assert code == 2 and "--y-bounds LOW,HIGH" in err and err.count("\n") == 1, err
    assert ("--dask" if extra else "--schema") in err
