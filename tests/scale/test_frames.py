"""Raw tables out of core: read_frame/split_frame, and dask DataFrames in the estimators."""

import os

import numpy as np
import pytest

pytestmark = pytest.mark.dask

dd = pytest.importorskip("dask.dataframe")
pd = pytest.importorskip("pandas")
pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")

from dpconvex import DPHuberRegressor, DPLinearRegression, DPLogisticRegression  # noqa: E402
from dpconvex.scale.data import read_frame, read_table, split_frame  # noqa: E402


@pytest.fixture(scope="module")
def table():
    rng = np.random.default_rng(0)
    n = 2000
    return pd.DataFrame(
        {
            "age": rng.integers(18, 90, n).astype(float),
            "job": rng.choice(["clerk", "nurse", "farmer"], n),
            "income": np.where(rng.random(n) < 0.1, np.nan, rng.lognormal(10, 1, n)),
            "label": rng.integers(0, 2, n),
        }
    )


def test_read_table_refuses_a_csv_text_column_naming_it_not_its_cells(tmp_path, table):
    """Old code: pandas' two-line message quoting a cell ('could not convert string to
    float: 'clerk''), with no column."""
    table.to_csv(tmp_path / "t.csv", index=False)
    with pytest.raises(ValueError) as error:
        read_table(tmp_path / "t.csv", "label")
    message = str(error.value)
    assert "\n" not in message and "clerk" not in message
    assert "column 'job' holds text" in message and "read_frame" in message


def test_read_table_on_a_parquet_text_column_points_to_the_schema_route(tmp_path, table):
    table.to_parquet(tmp_path / "t.parquet")
    with pytest.raises(ValueError, match=r"not numeric: \['job .*read_frame.*--schema") as error:
        read_table(tmp_path / "t.parquet", "label")
    assert "\n" not in str(error.value)


@pytest.mark.parametrize("kind", ["parquet", "csv"])
def test_read_frame_keeps_text_and_reads_every_row_once(tmp_path, table, kind):
    path = tmp_path / f"t.{kind}"
    table.to_parquet(path) if kind == "parquet" else table.to_csv(path, index=False)
    frame = read_frame(path, blocksize=10_000)
    got = frame.compute()
    assert list(got.columns) == list(table.columns)
    assert got["job"].tolist() == table["job"].tolist()
    if kind == "parquet":  # typed: numbers float64, missing as NaN
        assert got["age"].dtype == np.float64
        np.testing.assert_array_equal(got["income"].to_numpy(), table["income"].to_numpy())
    else:  # a CSV has no types: every cell as written, an empty field the empty text
        assert frame.npartitions > 3
        assert got["age"].tolist() == [f"{x:.1f}" for x in table["age"]]
        assert (got["income"] == "").sum() == table["income"].isna().sum()
    train, test = split_frame(frame, 0.25, seed=3)
    a, b = train.compute(), test.compute()
    assert len(a) + len(b) == len(table) and 0.2 < len(b) / len(table) < 0.3
    again, _ = split_frame(frame, 0.25, seed=3)
    assert again.compute()["job"].tolist() == a["job"].tolist()  # the seed fixes the split


def test_a_parquet_bool_column_reads_as_the_words_the_in_memory_reader_gives(tmp_path):
    """Old code: read_frame made a bool column 1.0 / 0.0 while the in-memory reader gives
    the encoder "true" / "false", so a schema declaring the categories ("true", "false")
    encoded the same file differently out of core (every flag fell in no category)."""
    from dpconvex.datasets.parquet import load_parquet_cells
    from dpconvex.preprocessing import TableEncoder

    flags = [True, False, None, True, True, False] * 50
    x = np.linspace(-1.0, 1.0, len(flags))
    path = tmp_path / "b.parquet"
    pq.write_table(pa.table({"x": x, "flag": pa.array(flags, type=pa.bool_())}), path)
    got = read_frame(path).compute()
    cells, _ = load_parquet_cells(path, ["x", "flag"])
    words = ["" if f is None else str(f).lower() for f in flags]
    assert cells[:, 1].tolist() == words  # the in-memory reader's cells
    assert got["flag"].dtype == "category"
    assert got["flag"].astype(object).fillna("").tolist() == words
    schema = {"columns": [{"name": "x", "type": "numeric", "bounds": [-1, 1]},
                          {"name": "flag", "type": "categorical",
                           "categories": ["true", "false"]}]}  # fmt: skip
    enc = TableEncoder(schema).fit(cells)
    out_of_core = enc.transform(read_frame(path, ["x", "flag"])).compute()
    np.testing.assert_array_equal(out_of_core, enc.transform(cells))
    assert np.abs(out_of_core[:, 1:]).sum() > 0  # the flags are encoded, not all "other"


def test_split_frame_is_the_split_read_table_makes(tmp_path):
    rng = np.random.default_rng(1)
    frame = pd.DataFrame({"a": rng.normal(size=500), "label": rng.integers(0, 2, 500)})
    frame.to_csv(tmp_path / "n.csv", index=False)
    (X, _), _ = read_table(tmp_path / "n.csv", "label", test_size=0.3, seed=5)
    train, _ = split_frame(dd.read_csv(tmp_path / "n.csv", dtype={"a": "float64"}), 0.3, 5)
    np.testing.assert_array_equal(X.compute()[:, 0], train["a"].compute().to_numpy())


@pytest.mark.parametrize(
    ("args", "match"),
    [((0.0, 0), "test_size"), ((1.5, 0), "test_size"), ((0.2, -1), "seed"), ((0.2, 1.5), "seed")],
)
def test_split_frame_refuses_nonsense(table, args, match):
    with pytest.raises(ValueError, match=match):
        split_frame(dd.from_pandas(table, npartitions=2), *args)


def _csv(tmp_path, text: bytes, name="bad.csv"):
    (tmp_path / name).write_bytes(b"a,b\n" + text)
    return read_frame(tmp_path / name)


@pytest.mark.parametrize(
    ("body", "match"),
    [
        (b"1,2\n3,4,secret\n", "does not split into the header's 2 fields"),
        (b"1,2\n3\n", "does not split into the header's 2 fields"),
        (b"1,\xffsecret\n", "not UTF-8"),
        (b"1,se\0cret\n", "NUL byte"),
    ],
)
def test_read_frame_csv_errors_name_the_file_not_the_cells(tmp_path, body, match):
    with pytest.raises(ValueError, match=match) as error:
        _csv(tmp_path, body).compute()
    message = str(error.value)
    assert message.startswith("bad.csv") and "secret" not in message and "\n" not in message


def test_read_frame_refuses_fifos_long_lines_and_other_parquet_types(tmp_path, monkeypatch):
    os.mkfifo(tmp_path / "f.csv")
    with pytest.raises(ValueError, match="not a regular file"):
        read_frame(tmp_path / "f.csv")
    import dpconvex.datasets.files as files

    monkeypatch.setattr(files, "MAX_LINE", 64)
    (tmp_path / "long.csv").write_bytes(b"a,b\n1," + b"x" * 200 + b"\n")
    with pytest.raises(ValueError, match=r"^long\.csv holds a line longer than 64 bytes$"):
        read_frame(tmp_path / "long.csv", blocksize=16).compute()
    pq.write_table(
        pa.table({"t": pa.array(np.arange(3).astype("datetime64[s]")), "a": [1, 2, 3]}),
        tmp_path / "d.parquet",
    )
    with pytest.raises(ValueError, match=r"d\.parquet: columns must hold numbers .*\['t "):
        read_frame(tmp_path / "d.parquet")
    assert read_frame(tmp_path / "d.parquet", ["a"]).compute()["a"].tolist() == [1.0, 2.0, 3.0]
    with pytest.raises(ValueError, match="blocksize"):
        read_frame(tmp_path / "d.parquet", blocksize="lots")


def test_read_frame_refuses_a_parquet_file_whose_footer_promises_too_much(tmp_path, monkeypatch):
    import dpconvex.scale.zarr_chunks as zarr_chunks

    pq.write_table(pa.table({"s": [f"{i}" * 100 for i in range(50)]}), tmp_path / "s.parquet")
    monkeypatch.setattr(zarr_chunks, "MAX_CHUNK_BYTES", 2000)
    with pytest.raises(ValueError, match=r"s\.parquet holds 50 rows .*smaller files"):
        read_frame(tmp_path / "s.parquet")


# -- estimators on dask DataFrames ---------------------------------------------------------


@pytest.fixture(scope="module")
def numeric():
    rng = np.random.default_rng(2)
    X = pd.DataFrame(rng.normal(size=(3000, 4)), columns=["a", "b", "c", "d"])
    y = pd.Series((X["a"] + 0.3 * rng.normal(size=3000) > 0).astype(int), name="y")
    return dd.from_pandas(X, npartitions=3), dd.from_pandas(y, npartitions=3)


@pytest.mark.parametrize("cls", [DPLogisticRegression, DPLinearRegression, DPHuberRegressor])
def test_estimators_take_a_dask_dataframe_as_its_dask_array(numeric, cls):
    """Old code: AttributeError ('DataFrame' object has no attribute 'chunks')."""
    X, y = numeric
    frame = cls(epsilon=1.0, random_state=0).fit(X, y)
    array = cls(epsilon=1.0, random_state=0).fit(
        X.to_dask_array(lengths=True), y.to_dask_array(lengths=True)
    )
    np.testing.assert_array_equal(frame.coef_, array.coef_)
    assert list(frame.feature_names_in_) == ["a", "b", "c", "d"]
    assert not hasattr(array, "feature_names_in_")
    Xa = X.to_dask_array(lengths=True)
    np.testing.assert_array_equal(frame.predict(X).compute(), array.predict(Xa).compute())
    assert frame.score(X, y) == pytest.approx(array.score(Xa, y.to_dask_array(lengths=True)))
    if cls is DPLogisticRegression:
        assert frame.decision_function(X).shape == (3000,)
    with pytest.raises(ValueError, match="columns of X differ from those seen in fit"):
        frame.predict(X[["b", "a", "c", "d"]])


def test_a_text_column_is_refused_by_name_not_by_its_values(numeric):
    X, y = numeric
    with pytest.raises(ValueError, match=r"^column 'job' of X is not numeric") as error:
        DPLogisticRegression(epsilon=1.0).fit(X.assign(job="secret"), y)
    assert "secret" not in str(error.value)
