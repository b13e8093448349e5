"""`dpconvex fit/predict` on Parquet files in memory (without --dask): the same model as
from the same table in CSV, and clear refusals of damaged or unsupported files."""

import json
import re
import sys

import numpy as np
import pytest

from dpconvex.datasets.parquet import load_parquet_cells

from ..table_schemas import cities_schema
from .runner import run

SECRET = "Zanzibar-4471"  # a cell's content that no message may show

SCHEMA = cities_schema()


def _columns(n=400, seed=0):
    rng = np.random.default_rng(seed)
    age = rng.integers(18, 80, n)
    city = rng.choice(["Paris", "Lyon", "Nice", None], n)
    income = np.where(rng.random(n) < 0.1, np.nan, np.round(rng.lognormal(10, 1, n)))
    bought = (age + rng.normal(0, 8, n) > 48).astype(int)
    return {"id": np.arange(n), "age": age, "city": city, "income": income, "bought": bought}


def _csv_cell(v):
    if v is None or (isinstance(v, float) and np.isnan(v)):
        return ""
    return repr(float(v)) if isinstance(v, float) else str(v)


@pytest.fixture
def files(tmp_path):
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    cols = _columns()
    names = list(cols)
    lines = [",".join(names)]
    for i in range(len(cols["id"])):
        lines.append(",".join(_csv_cell(cols[k][i].item() if hasattr(cols[k][i], "item")
                                        else cols[k][i]) for k in names))
    (tmp_path / "t.csv").write_text("\n".join(lines) + "\n")
    table = pa.table({
        "id": pa.array(cols["id"]), "age": pa.array(cols["age"]),
        "city": pa.array(list(cols["city"]), type=pa.string()),
        "income": pa.array([None if np.isnan(v) else float(v) for v in cols["income"]]),
        "bought": pa.array(cols["bought"]),
    })  # fmt: skip
    pq.write_table(table, tmp_path / "t.parquet")
    (tmp_path / "schema.json").write_text(json.dumps(SCHEMA))
    return tmp_path


def _fit(tmp_path, capsys, data, *extra):
    out = tmp_path / f"model_{data}.json"
    argv = ["fit", "--data", tmp_path / data, "--target", "bought", "--classes", "0,1",
            "--epsilon", 1, "--delta", 1e-5, "--seed", 0, "--out", out, "--json",
            *extra]  # fmt: skip
    code, stdout, err = run(argv, capsys)
    assert code == 0, err
    return json.loads(stdout), out


@pytest.mark.dask  # pyarrow comes with the dask extra
def test_parquet_and_csv_of_one_table_give_the_same_model_file(files, capsys):
    """Before: a Parquet file needed --dask (a 34-line traceback without it)."""
    for extra in (("--schema", files / "schema.json"), ()):
        if not extra:  # numeric columns only: drop the text column from both files
            _numeric_copies(files)
        name = "t" if extra else "n"
        csv_summary, csv_model = _fit(files, capsys, f"{name}.csv", *extra)
        pq_summary, pq_model = _fit(files, capsys, f"{name}.parquet", *extra)
        assert csv_model.read_bytes() != b""
        assert json.loads(csv_model.read_text()) == json.loads(pq_model.read_text())
        assert csv_summary["accuracy"] == pq_summary["accuracy"]
        preds = []
        for data in (f"{name}.csv", f"{name}.parquet"):
            code, out, err = run(["predict", "--model", csv_model, "--data", files / data,
                                  "--target", "bought", "--json"], capsys)  # fmt: skip
            assert code == 0, err
            preds.append(json.loads(out)["predictions"])
        assert preds[0] == preds[1]


def _numeric_copies(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    cols = _columns()
    keep = ["age", "bought"]
    lines = ["age,bought"] + [f"{a},{b}" for a, b in zip(cols["age"], cols["bought"], strict=True)]
    (tmp_path / "n.csv").write_text("\n".join(lines) + "\n")
    pq.write_table(pa.table({k: pa.array(cols[k]) for k in keep}), tmp_path / "n.parquet")


@pytest.mark.dask
def test_damaged_and_unsupported_parquet_files_are_refused_without_cells(tmp_path, capsys):
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    (tmp_path / "schema.json").write_text(json.dumps(SCHEMA))
    broken = tmp_path / "broken.parquet"
    broken.write_bytes(b"PAR1" + SECRET.encode() * 10)
    nested = tmp_path / "nested.parquet"
    pq.write_table(pa.table({"age": [[1, 2]] * 3, "city": ["Paris"] * 3,
                             "income": [1.0] * 3, "bought": [0, 1, 0]}), nested)  # fmt: skip
    no_label = tmp_path / "nolabel.parquet"
    rows = {"age": [30, 40, 50], "city": [SECRET, "Lyon", None],
            "income": [1.0, None, 2.0], "bought": [0, None, 1]}  # fmt: skip
    pq.write_table(pa.table(rows), no_label)
    cases = {
        broken: "is not a readable Parquet file",
        nested: "column 'age' holds list",
        no_label: r"missing values in the target column 'bought' \(first in row 2\)",
    }
    for path, match in cases.items():
        code, out, err = run(["fit", "--data", path, "--target", "bought", "--classes", "0,1",
                              "--schema", tmp_path / "schema.json", "--epsilon", 1,
                              "--delta", 1e-5, "--out", tmp_path / "m.json"], capsys)  # fmt: skip
        assert code == 2 and out == ""
        assert len(err.strip().splitlines()) == 1 and SECRET not in err
        assert re.search(match, err), err
    with pytest.raises(ValueError, match="no column 'height'"):
        load_parquet_cells(no_label, ["height"], "bought")


def test_parquet_without_pyarrow_names_the_extra(tmp_path, capsys, monkeypatch):
    monkeypatch.setitem(sys.modules, "pyarrow.parquet", None)  # as if not installed
    (tmp_path / "t.parquet").write_bytes(b"PAR1")
    code, out, err = run(["fit", "--data", tmp_path / "t.parquet", "--target", "y",
                          "--classes", "0,1", "--epsilon", 1, "--delta", 1e-5,
                          "--out", tmp_path / "m.json"], capsys)  # fmt: skip
    assert code == 2
    assert "pip install 'dpconvex[dask]'" in err and len(err.strip().splitlines()) == 1


@pytest.mark.dask
def test_memory_is_bounded_from_the_footer_before_anything_is_decoded(tmp_path, monkeypatch):
    """A small file can declare a huge table: refused by the footer's row count and
    decompressed size; a long text repeated through a dictionary is held once."""
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    from dpconvex.datasets import parquet

    path = tmp_path / "repeated.parquet"
    long_text = "x" * 100_000
    pq.write_table(pa.table({"note": [long_text] * 2000, "y": [0, 1] * 1000}), path)
    assert path.stat().st_size < 100_000  # 200 MB of text once decoded row by row
    cells, y = load_parquet_cells(path, ["note"], "y")
    assert cells.shape == (2000, 1) and cells[0, 0] is cells[1999, 0]
    monkeypatch.setattr(parquet, "MAX_DECODED_BYTES", 50_000)
    with pytest.raises(ValueError, match="decompressed, more than the 50000 read into memory"):
        load_parquet_cells(path, ["note"], "y")
    monkeypatch.setattr(parquet, "MAX_CELLS", 3000)
    with pytest.raises(ValueError, match="4000 cells to read, more than the 3000"):
        load_parquet_cells(path, ["note"], "y")
