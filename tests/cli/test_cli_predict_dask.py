"""`dpconvex predict --dask`: the in-memory path's predictions file and scores, read a
partition at a time, and its refusals in one line without a cell's content."""

import json
import math

import numpy as np
import pytest

from dpconvex.cli import main, predict_dask

from ..table_schemas import cities_schema
from .runner import run

pytestmark = pytest.mark.dask

SECRET = "Zanzibar-4471"  # a cell's content that no message may show


def _rows(n=300, seed=1):
    rng = np.random.default_rng(seed)
    rows = []
    for i in range(n):
        age = int(rng.integers(18, 80))
        city = str(rng.choice(["Paris", "Lyon", "Nice", ""]))
        income = "NA" if rng.random() < 0.1 else f"{rng.lognormal(10, 1):.0f}"
        price = 50_000 + 1_000 * age + 20_000 * (city == "Paris") + rng.normal(0, 5_000)
        rows.append((i, age, city, income, round(price, 2), int(age + rng.normal(0, 8) > 48)))
    return rows


def _parquet(rows, path):
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    columns = list(zip(*rows, strict=True))
    table = pa.table({
        "id": pa.array(columns[0]), "age": pa.array(columns[1]),
        "city": pa.array([c or None for c in columns[2]], type=pa.string()),
        "income": pa.array([None if v == "NA" else float(v) for v in columns[3]]),
        "price": pa.array(columns[4]), "bought": pa.array(columns[5]),
    })  # fmt: skip
    pq.write_table(table, path)


def _main(argv):
    try:
        main([str(a) for a in argv])
    except SystemExit as stop:
        assert stop.code == 0


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    """A table as CSV, as a Parquet file and as a directory of three Parquet files; a
    classifier and a regression fitted on it with a schema, and a classifier without."""
    root = tmp_path_factory.mktemp("predict_dask")
    rows = _rows()
    header = "id,age,city,income,price,bought\n"
    (root / "t.csv").write_text(header + "".join(",".join(map(str, r)) + "\n" for r in rows))
    _parquet(rows, root / "t.parquet")
    (root / "parts").mkdir()
    for k, start in enumerate((0, 100, 200)):
        _parquet(rows[start : start + 100], root / "parts" / f"{k}.parquet")
    numeric = "age,price,bought\n" + "".join(f"{r[1]},{r[4]},{r[5]}\n" for r in rows)
    (root / "n.csv").write_text(numeric)
    (root / "schema.json").write_text(json.dumps(cities_schema()))
    common = ["--epsilon", 4, "--delta", 1e-5, "--seed", 0]
    _main(["fit", "--data", root / "t.csv", "--schema", root / "schema.json", "--target",
           "bought", "--out", root / "cls.json", *common])  # fmt: skip
    _main(["fit", "--data", root / "t.csv", "--schema", root / "schema.json", "--target",
           "price", "--task", "regression", "--y-bounds", "0,300000", "--out",
           root / "reg.json", *common])  # fmt: skip
    _main(["fit", "--data", root / "n.csv", "--target", "bought", "--row-bound", 2,
           "--out", root / "num.json", *common])  # fmt: skip
    return root


def _predict(files, capsys, model, data, target, out, *extra):
    argv = ["predict", "--model", files / model, "--data", files / data, "--out", out,
            "--force", "--json", *extra]  # fmt: skip
    code, stdout, err = run([*argv, *(["--target", target] if target else [])], capsys)
    assert code == 0, err
    return json.loads(stdout)


@pytest.mark.parametrize(
    ("model", "target", "data"),
    [
        ("cls.json", "bought", "t.csv"),
        ("cls.json", "bought", "t.parquet"),
        ("reg.json", "price", "t.csv"),
        ("reg.json", "price", "t.parquet"),
        ("num.json", "bought", "n.csv"),
        ("num.json", None, "n.csv"),
    ],
)
def test_dask_writes_the_in_memory_file_and_scores(
    files, tmp_path, capsys, monkeypatch, model, target, data
):
    memory = _predict(files, capsys, model, data, target, tmp_path / "memory.csv")
    sizes = []
    task = predict_dask._Partition.__call__

    def counted(self, part):
        sizes.append(len(part))
        return task(self, part)

    monkeypatch.setattr(predict_dask._Partition, "__call__", counted)
    monkeypatch.setattr(predict_dask, "BLOCKSIZE", 1500)  # a CSV block of about 40 lines
    dask = _predict(files, capsys, model, data, target, tmp_path / "dask.csv", "--dask")
    assert (tmp_path / "dask.csv").read_bytes() == (tmp_path / "memory.csv").read_bytes()
    assert memory["n_rows"] == dask["n_rows"] == 300
    scores = [k for k in ("accuracy", "r2", "rmse") if k in memory]
    assert scores == [k for k in ("accuracy", "r2", "rmse") if k in dask]
    assert bool(scores) == (target is not None)
    for key in scores:
        assert math.isclose(dask[key], memory[key], rel_tol=1e-12), key
    if data.endswith(".csv"):  # read a block at a time, never the whole file
        assert len(sizes) >= 3 and max(sizes) <= 120 and sum(sizes) == 300


def test_a_directory_of_parquet_files_is_read_file_by_file(files, tmp_path, capsys):
    memory = _predict(files, capsys, "reg.json", "t.parquet", "price", tmp_path / "m.csv")
    dask = _predict(files, capsys, "reg.json", "parts", "price", tmp_path / "d.csv", "--dask")
    assert (tmp_path / "d.csv").read_bytes() == (tmp_path / "m.csv").read_bytes()
    assert math.isclose(dask["r2"], memory["r2"], rel_tol=1e-12)
    (tmp_path / "t.pq").write_bytes((files / "t.parquet").read_bytes())  # .pq is Parquet too
    pq = _predict(
        tmp_path, capsys, files / "reg.json", "t.pq", "price", tmp_path / "q.csv", "--dask"
    )
    assert (tmp_path / "q.csv").read_bytes() == (tmp_path / "m.csv").read_bytes()
    assert math.isclose(pq["r2"], memory["r2"], rel_tol=1e-12)


def _refused(capsys, argv):
    code, out, err = run(argv, capsys)
    assert code == 2 and out == "" and len(err.strip().splitlines()) == 1, err
    assert SECRET not in err and "Traceback" not in err
    return err


def test_refusals_are_one_line_name_the_column_and_leave_no_file(files, tmp_path, capsys):
    rows = _rows(60)
    header = "id,age,city,income,price,bought\n"

    def table(name, row, column, value):
        edited = [list(r) for r in rows]
        edited[row][column] = value
        path = tmp_path / name
        path.write_text(header + "".join(",".join(map(str, r)) + "\n" for r in edited))
        return path

    out, empty = tmp_path / "pred.csv", tmp_path / "f.csv"
    empty.write_text(header)
    cases = [
        ("cls.json", table("a.csv", 40, 1, SECRET), "bought", "column 'age' is declared numeric"),
        ("cls.json", table("b.csv", 40, 5, SECRET), "bought", "b.csv: the target column "
         "'bought' holds labels outside the model's classes [0, 1]"),
        ("cls.json", table("c.csv", 40, 5, 7), "bought", "outside the model's classes"),
        ("reg.json", table("d.csv", 40, 4, SECRET), "price", "d.csv: the target in column "
         "'price' holds a value that is not a finite number"),
        ("num.json", table("e.csv", 40, 4, SECRET), None, "e.csv: column 'price' holds text"),
        ("cls.json", files / "n.csv", None, "columns ['city', 'income'] not in"),
        ("cls.json", files / "t.csv", "label", "columns ['label'] not in"),
        ("cls.json", empty, None, "f.csv has no data rows"),
    ]  # fmt: skip
    for model, data, target, match in cases:
        argv = ["predict", "--model", files / model, "--data", data, "--out", out, "--dask"]
        err = _refused(capsys, [*argv, *(["--target", target] if target else [])])
        assert match in err, err
        assert not out.exists() and list(tmp_path.glob(".dpconvex-*")) == []
    err = _refused(capsys, ["predict", "--model", files / "cls.json", "--data",
                            files / "t.csv", "--dask"])  # fmt: skip
    assert "--dask writes the predictions to a file: give --out FILE" in err
    # the in-memory path refuses a label outside the classes in the same words
    err = _refused(capsys, ["predict", "--model", files / "cls.json", "--data",
                            table("b.csv", 40, 5, SECRET), "--target", "bought"])  # fmt: skip
    assert "b.csv: the target column 'bought' holds labels outside the model's classes" in err


def test_a_running_scheduler_predicts_the_same(files, tmp_path, capsys):
    distributed = pytest.importorskip("dask.distributed")
    memory = _predict(files, capsys, "cls.json", "t.csv", "bought", tmp_path / "m.csv")
    with distributed.LocalCluster(
        n_workers=1, threads_per_worker=1, processes=False, dashboard_address=None
    ) as cluster:
        dask = _predict(files, capsys, "cls.json", "t.csv", "bought", tmp_path / "d.csv",
                        "--dask", "--scheduler", cluster.scheduler_address)  # fmt: skip
    assert (tmp_path / "d.csv").read_bytes() == (tmp_path / "m.csv").read_bytes()
    assert dask["accuracy"] == memory["accuracy"]
