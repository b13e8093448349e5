"""TableEncoder on dask DataFrames: the in-memory mechanism and numbers, partition by partition."""

import warnings

import numpy as np
import pytest

pytestmark = [
    pytest.mark.dask,
    pytest.mark.filterwarnings("ignore::dpconvex.preprocessing.ThinBoundsWarning"),
]

dask = pytest.importorskip("dask")
dd = pytest.importorskip("dask.dataframe")
pd = pytest.importorskip("pandas")
pytest.importorskip("pyarrow")

from dpconvex import DPLogisticRegression  # noqa: E402
from dpconvex.budget import Budget  # noqa: E402
from dpconvex.pipeline import PrivatePipeline  # noqa: E402
from dpconvex.preprocessing import TableEncoder  # noqa: E402
from dpconvex.preprocessing import encoder as encoder_module  # noqa: E402
from dpconvex.preprocessing import quantile as quantile_module  # noqa: E402
from dpconvex.scale.data import frame_target, read_frame, split_frame  # noqa: E402

from ..table_schemas import age_estimated, job, pay_estimated  # noqa: E402

SECRET = "Zq9-secret"
SCHEMA = {
    "columns": [age_estimated(), pay_estimated(), job(),
                {"name": "hours", "type": "numeric", "bounds": [0, 99]}],
    "missing_values": ["", "?"],
}  # fmt: skip


@pytest.fixture(autouse=True)
def synchronous():
    with dask.config.set(scheduler="synchronous"):
        yield


def raw(n=3000, seed=0):
    rng = np.random.default_rng(seed)
    pay = rng.lognormal(9, 1.5, n)
    return pd.DataFrame(
        {
            "age": rng.normal(40, 10, n).round(1),
            "pay": np.where(rng.random(n) < 0.05, np.nan, pay),
            "job": rng.choice(["a", "b", "c", "?"], n),
            "hours": rng.integers(0, 120, n).astype(float),
            "label": rng.integers(0, 2, n),
        }
    )


@pytest.fixture(scope="module", params=["parquet", "csv", "pandas"])
def frames(request, tmp_path_factory):
    """(the dask DataFrame, the same table in memory as the in-memory route reads it)."""
    table = raw()
    if request.param == "pandas":
        return dd.from_pandas(table, npartitions=4), table
    path = tmp_path_factory.mktemp("t") / f"t.{request.param}"
    if request.param == "parquet":
        table.to_parquet(path)
    else:
        table.to_csv(path, index=False)
    frame = read_frame(path, blocksize=20_000)
    return frame, frame.compute()


def test_fit_and_transform_give_the_in_memory_numbers(frames):
    frame, memory = frames
    big = TableEncoder(SCHEMA, epsilon=0.5, random_state=7).fit(frame)
    small = TableEncoder(SCHEMA, epsilon=0.5, random_state=7).fit(memory)
    assert big.bounds_ == small.bounds_ and big.dp_event_ == small.dp_event_
    assert big.epsilon_ == small.epsilon_
    Z = big.transform(frame)
    assert Z.dtype == np.float64 and Z.shape == (len(memory), small.schema_.n_features)
    assert not any(np.isnan(c) for c in Z.chunks[0]) and len(Z.chunks[1]) == 1
    np.testing.assert_array_equal(Z.compute(), small.transform(memory))
    both = TableEncoder(SCHEMA, epsilon=0.5, random_state=7).fit_transform(frame)
    np.testing.assert_array_equal(both.compute(), Z.compute())


def test_only_the_estimated_columns_are_gathered_one_at_a_time(monkeypatch):
    seen = []
    original = encoder_module.private_quantile

    def spy(values, *args):
        seen.append(values.size)
        return original(values, *args)

    for module in (encoder_module, quantile_module):  # the ends' rule, the centred one
        monkeypatch.setattr(module, "private_quantile", spy)
    table = raw()
    TableEncoder(SCHEMA, epsilon=0.5, random_state=0).fit(dd.from_pandas(table, npartitions=3))
    # age twice (both ends), pay once (upper end, its missing values left out); never hours
    assert seen == [len(table)] * 2 + [int(table["pay"].notna().sum())]


@pytest.mark.parametrize(
    ("column", "cell", "match"),
    [
        ("age", SECRET, "column 'age' is declared numeric but holds a value that is not a number"),
        ("hours", "inf", "column 'hours' is declared numeric but holds a value"),
        ("job", None, "column 'job' has a missing value and the schema says missing='refuse'"),
    ],
)
def test_a_bad_cell_in_a_late_partition_is_refused_before_the_charge(tmp_path, column, cell, match):
    table = raw().astype({"age": object, "hours": object, "job": object})
    table.loc[len(table) - 3, column] = cell
    schema = {**SCHEMA, "columns": [dict(c) for c in SCHEMA["columns"]]}
    if column == "job":
        schema["columns"][2]["missing"] = "refuse"
    ledger = Budget(tmp_path / "b.db", 5.0, 1e-5)
    frame = dd.from_pandas(table, npartitions=4)
    with pytest.raises(ValueError, match=match) as error:
        TableEncoder(schema, epsilon=0.5, budget=ledger).fit(frame)
    assert SECRET not in str(error.value) and "\n" not in str(error.value)
    assert ledger.entries() == []  # nothing charged: the refusal came first


def test_a_missing_column_or_a_dask_array_is_refused_before_anything_is_read():
    frame = dd.from_pandas(raw().drop(columns="job"), npartitions=2)
    with pytest.raises(ValueError, match="no column 'job' declared in the schema"):
        TableEncoder(SCHEMA, epsilon=0.5).fit(frame)
    fitted = TableEncoder(SCHEMA, epsilon=0.5).fit(raw(300))
    with pytest.raises(TypeError, match="must be a dask DataFrame"):
        fitted.transform(dd.from_pandas(raw(), npartitions=2)["age"].to_dask_array())


def test_a_private_pipeline_fits_end_to_end_on_a_raw_table_out_of_core(tmp_path):
    table = raw()
    table.to_csv(tmp_path / "t.csv", index=False)
    train, test = split_frame(read_frame(tmp_path / "t.csv", blocksize=30_000), 0.25, seed=0)
    features = ["age", "pay", "job", "hours"]

    def pipeline():
        return PrivatePipeline(
            [
                ("encode", TableEncoder(SCHEMA, epsilon=0.2, random_state=1)),
                (
                    "model",
                    DPLogisticRegression(
                        epsilon=0.8, row_norm="clip", row_bound=2.0, random_state=2
                    ),
                ),
            ]
        )

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        big = pipeline().fit(train[features], frame_target(train, "label", numeric=True))
        a, b = train.compute(), test.compute()
        small = pipeline().fit(a[features], a["label"].astype(float).to_numpy())
    assert big.epsilon_ == pytest.approx(small.epsilon_)
    assert big["encode"].bounds_ == small["encode"].bounds_
    predicted = big.predict(test[features]).compute()
    np.testing.assert_array_equal(predicted, big.predict(b[features]))


def test_frame_target_reads_numbers_and_refuses_text_by_the_column_name(tmp_path):
    (tmp_path / "y.csv").write_text(f"x,y\n1,2.5\n2,{SECRET}\n")
    frame = read_frame(tmp_path / "y.csv")
    assert frame_target(frame, "x", numeric=True).compute().tolist() == [1.0, 2.0]
    with pytest.raises(ValueError, match="^the target column 'y' holds a value that") as error:
        frame_target(frame, "y", numeric=True).compute()
    assert SECRET not in str(error.value)
    assert frame_target(frame, "y").compute().tolist() == ["2.5", SECRET]
