"""Model files of table pipelines (schema, encoder bounds, composed guarantee) and of
estimators fitted on data frames (feature names)."""

import json
import warnings

import numpy as np
import pytest

from dpconvex import (
    DPLogisticRegression,
    ModelFileError,
    PrivatePipeline,
    Public,
    load_model,
    make_table_model,
    save_model,
)

from ..table_schemas import cities_schema

SCHEMA = cities_schema()


def _table(n: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    cells = np.empty((n, 3), dtype=object)
    cells[:, 0] = rng.integers(18, 90, n).astype(str)
    cells[:, 1] = rng.choice(["Paris", "Lyon", "Nice", ""], n)
    income = np.round(rng.lognormal(10, 1, n)).astype(str).astype(object)
    income[rng.random(n) < 0.1] = "NA"
    cells[:, 2] = income
    y = (cells[:, 0].astype(float) + rng.normal(0, 10, n) > 50).astype(int)
    return cells, y


@pytest.fixture(scope="module")
def fitted():
    cells, y = _table(400)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        pipe = make_table_model(SCHEMA, n_samples=400, epsilon=1.0, delta=1e-5, random_state=0)
        pipe.fit(cells, y)
    return pipe, cells


@pytest.fixture
def saved(fitted, tmp_path):
    path = tmp_path / "pipe.json"
    save_model(fitted[0], path)
    return path


def test_pipeline_round_trip_predicts_exactly_on_raw_rows(fitted, saved):
    """save_model(pipeline) raised before: the record had no place for the encoder."""
    pipe, cells = fitted
    loaded = load_model(saved)
    assert isinstance(loaded, PrivatePipeline)
    new_cells, _ = _table(300, seed=5)  # rows never seen, with missing and unknown cells
    for X in (cells, new_cells):
        np.testing.assert_array_equal(loaded.predict(X), pipe.predict(X))
        np.testing.assert_array_equal(loaded.predict_proba(X), pipe.predict_proba(X))
    assert loaded.dp_event_ == pipe.dp_event_
    assert (loaded.epsilon_, loaded.delta_) == (pipe.epsilon_, pipe.delta_)
    assert loaded[0].bounds_ == pipe[0].bounds_
    assert loaded[0].schema_ == pipe[0].schema_
    assert loaded[0].random_state is None and loaded[-1].random_state is None


def test_pipeline_file_holds_no_seed_ledger_or_iteration_count(saved):
    text = saved.read_text()
    for word in ("random_state", "budget", "n_iter", "seed"):
        assert word not in text
    record = json.loads(text)
    assert record["format_version"] == 2 and record["model"] == "PrivatePipeline"


def _edit(path, change):
    record = json.loads(path.read_text())
    change(record)
    path.write_text(json.dumps(record))
    return path


def _set(keys, value):
    def change(record):
        target = record
        for key in keys[:-1]:
            target = target[key]
        target[keys[-1]] = value

    return change


@pytest.mark.parametrize(
    ("change", "field"),
    [
        (_set(["encoder", "bounds", "income"], [0.0, 30.0]), "search range"),
        (_set(["encoder", "bounds", "age"], [18.0, 91.0]), "declared bounds"),
        (_set(["encoder", "bounds", "income"], [9.0, 8.0]), "low <= high"),
        (_set(["encoder", "bounds", "city"], [0.0, 1.0]), "one \\[low, high\\] per numeric"),
        (_set(["encoder", "params", "epsilon"], 0.9), "encoder.dp_event_json"),
        (_set(["encoder", "epsilon_spent"], 0.01), "encoder.epsilon_spent"),
        (_set(["epsilon_spent"], 0.5), "epsilon_spent: is below what its event costs"),
        (_set(["epsilon_spent"], 1.5), "must not exceed pipeline.epsilon"),
        (_set(["estimator", "params", "row_bound"], 3.0), "row bound"),
        (_set(["schema", "columns", 0, "type"], "text"), "schema: columns\\[0\\]"),
        (_set(["schema", "columns", 0, "bounds"], [18, 1e300]), "schema"),
        (_set(["steps"], ["a", "a"]), "steps"),
        (_set(["random_state"], 3), "not a field of a pipeline"),
        (_set(["delta"], 1e-3), "delta"),
    ],
)
def test_tampered_pipeline_files_are_refused_naming_the_field(saved, change, field):
    _edit(saved, change)
    with pytest.raises(ModelFileError, match=field) as info:
        load_model(saved)
    assert str(saved) in str(info.value) and "\n" not in str(info.value)


def test_composed_event_must_be_the_steps_composition(saved):
    record = json.loads(saved.read_text())
    record["dp_event_json"]["fields"]["events"] = record["dp_event_json"]["fields"]["events"][1:]
    saved.write_text(json.dumps(record))
    with pytest.raises(ModelFileError, match="must compose the encoder's and the estimator's"):
        load_model(saved)


def test_other_pipeline_shapes_are_refused_with_one_clear_error(tmp_path):
    from sklearn.preprocessing import StandardScaler

    rng = np.random.default_rng(0)
    X, y = rng.normal(size=(200, 3)), rng.integers(0, 2, 200)
    pipe = PrivatePipeline(
        [("scale", Public(StandardScaler())), ("model", DPLogisticRegression(random_state=0))]
    ).fit(X, y)
    with pytest.raises(ModelFileError, match="only a PrivatePipeline of a TableEncoder"):
        save_model(pipe, tmp_path / "p.json")
    assert not (tmp_path / "p.json").exists()


def test_feature_names_of_a_data_frame_are_kept(tmp_path):
    """save_model dropped feature_names_in_: a loaded model no longer checked the columns."""
    pd = pytest.importorskip("pandas")
    rng = np.random.default_rng(0)
    frame = pd.DataFrame({"a": rng.normal(size=200), "b": rng.normal(size=200)})
    model = DPLogisticRegression(random_state=0).fit(frame, (frame.a > 0).astype(int))
    path = save_model(model, tmp_path / "m.json")
    loaded = load_model(path)
    assert list(loaded.feature_names_in_) == ["a", "b"]
    np.testing.assert_array_equal(loaded.predict(frame), model.predict(frame))
    with pytest.raises(ValueError, match="feature names should match"):
        loaded.predict(frame.rename(columns={"a": "z"}))
    _edit(path, _set(["feature_names_in"], ["a", "a"]))
    with pytest.raises(ModelFileError, match="feature_names_in: must not repeat"):
        load_model(path)


# --- regression whose target range is estimated (TargetBoundsRegressor) ---------------------
def _regression_table(n: int, seed: int = 0):
    cells, _ = _table(n, seed)
    rng = np.random.default_rng(seed + 1)
    y = 20_000 + 1_000 * cells[:, 0].astype(float) + rng.normal(0, 5_000, n)
    return cells, y


def _fit_regression(y_bounds):
    cells, y = _regression_table(400)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        pipe = make_table_model(
            SCHEMA, n_samples=400, epsilon=1.0, delta=1e-5, task="regression",
            y_bounds=y_bounds, y_search_range=(0, 1e7), random_state=0,
        )  # fmt: skip
        return pipe.fit(cells, y), cells


@pytest.fixture(scope="module")
def fitted_regression():
    return _fit_regression(None)


@pytest.fixture
def saved_regression(fitted_regression, tmp_path):
    return save_model(fitted_regression[0], tmp_path / "reg.json")


def test_estimated_target_bounds_round_trip_predicts_exactly(fitted_regression, saved_regression):
    """save_model refused a pipeline whose last step estimates the target's bounds."""
    from dpconvex.table_model import TargetBoundsRegressor

    pipe, cells = fitted_regression
    loaded = load_model(saved_regression)
    assert type(loaded[-1]) is TargetBoundsRegressor
    for X in (cells, _regression_table(300, seed=5)[0]):
        np.testing.assert_array_equal(loaded.predict(X), pipe.predict(X))
    assert loaded.dp_event_ == pipe.dp_event_ and loaded[-1].dp_event_ == pipe[-1].dp_event_
    assert (loaded.epsilon_, loaded.delta_) == (pipe.epsilon_, pipe.delta_)
    assert loaded[-1].y_bounds_ == pipe[-1].y_bounds_
    assert loaded[-1].get_params(deep=False)["y_search_range"] == (0.0, 1e7)
    assert loaded[-1].random_state is None and loaded[-1].model_.random_state is None
    record = json.loads(saved_regression.read_text())
    assert record["target_bounds"]["y_bounds"] == list(pipe[-1].y_bounds_)
    assert record["estimator"]["params"]["y_bounds"] == list(pipe[-1].y_bounds_)
    for word in ("random_state", "budget", "n_iter", "seed"):
        assert word not in saved_regression.read_text()


def _target_event(epsilon):
    return {"event": "dpconvex.queries.sparse_vector.PureDpEvent", "fields": {"epsilon": epsilon}}


def _drop_quantiles_from_total(record):
    events = record["dp_event_json"]["fields"]["events"]
    events[1] = events[1]["fields"]["events"][1]  # (encoder, model): quantiles left out


@pytest.mark.parametrize(
    ("change", "field"),
    [
        (_set(["target_bounds", "extra"], 1), "target_bounds: must be an object of"),
        (_set(["target_bounds", "params", "seed"], 1), "target_bounds.params: must be an"),
        (
            _set(["target_bounds", "params", "epsilon"], 0.3),
            "target_bounds.dp_event_json: is not the event its parameters plan",
        ),
        (_set(["target_bounds", "params", "epsilon"], -1.0), "target_bounds.params: "),
        (_set(["target_bounds", "params", "epsilon"], True), "params.epsilon: must be a number"),
        (_set(["target_bounds", "params", "y_bounds"], [1.0, 2.0]), "an end left as None"),
        (
            _set(["target_bounds", "params", "y_bounds"], [0.0, None]),
            "target_bounds.dp_event_json: is not the event",
        ),
        (_set(["target_bounds", "params", "y_bounds"], "open"), "pair of numbers or nulls"),
        (_set(["target_bounds", "params", "y_search_range"], [5.0, 1.0]), "lower < upper"),
        (
            _set(["target_bounds", "params", "y_search_range"], [0.0, 6e4]),
            "lies outside target_bounds.params.y_search_range",
        ),
        (_set(["target_bounds", "params", "y_search_range"], None), "y_search_range: must be"),
        (_set(["target_bounds", "params", "quantiles"], [0.9, 0.1]), "q_low < q_high"),
        (_set(["target_bounds", "params", "quantiles"], "x"), "quantiles: must be null or"),
        (_set(["target_bounds", "y_bounds"], [2e7, 3e7]), "lies outside"),
        (_set(["target_bounds", "y_bounds"], [9e4, 6e4]), "low < high"),
        (_set(["target_bounds", "y_bounds"], [5e4, 5e4]), "low < high"),
        (_set(["target_bounds", "y_bounds"], ["0", 1]), "pair \\[low, high\\] of numbers"),
        (
            _set(["target_bounds", "y_bounds"], [1.0, 2e5]),
            "estimator.params.y_bounds: must be target_bounds.y_bounds",
        ),
        (
            _set(["estimator", "params", "y_bounds"], [0.0, 1e5]),
            "estimator.params.y_bounds: must be target_bounds.y_bounds",
        ),
        (_set(["estimator", "params", "y_bounds"], None), "must be target_bounds.y_bounds"),
        (_set(["target_bounds", "epsilon_spent"], 0.01), "target_bounds.epsilon_spent"),
        (
            _set(["target_bounds", "dp_event_json"], _target_event(0.4)),
            "target_bounds.dp_event_json: is not the event",
        ),
        (_set(["target_bounds", "dp_event_json"], None), "target_bounds.dp_event_json: missing"),
        (_drop_quantiles_from_total, "must compose the encoder's and the estimator's"),
        (_set(["epsilon_spent"], 0.7), "epsilon_spent: is below what its event costs"),
    ],
)
def test_tampered_target_bounds_are_refused_naming_the_field(saved_regression, change, field):
    _edit(saved_regression, change)
    with pytest.raises(ModelFileError, match=field) as info:
        load_model(saved_regression)
    assert str(saved_regression) in str(info.value) and "\n" not in str(info.value)


@pytest.fixture(scope="module")
def fitted_half():
    return _fit_regression((0.0, None))


@pytest.fixture
def saved_half(fitted_half, tmp_path):
    return save_model(fitted_half[0], tmp_path / "half.json")


def test_a_declared_target_end_must_be_kept(fitted_half, saved_half):
    pipe, cells = fitted_half
    assert pipe[-1].y_bounds_[0] == 0.0
    path = saved_half
    np.testing.assert_array_equal(load_model(path).predict(cells), pipe.predict(cells))
    high = pipe[-1].y_bounds_[1]

    def move_low(record):
        record["target_bounds"]["y_bounds"] = [1.0, high]
        record["estimator"]["params"]["y_bounds"] = [1.0, high]

    _edit(path, move_low)
    with pytest.raises(ModelFileError, match="must keep the declared end"):
        load_model(path)


@pytest.mark.parametrize("shift", [0.0, -1.0])
def test_a_narrow_draw_widened_past_the_declared_end_is_accepted(saved_half, shift):
    """fit widens a pair narrower than the public minimum width w about its centre and
    moves it back into the search range: a draw at the declared end d near the top of
    the range gives [upper - w, upper], which moves d. Such a file loads; a pair of
    another width without d is refused."""
    from dpconvex.table_model import minimum_target_width, widened_target_bounds

    lower, upper, declared = -1e7, 1.0, 0.5
    width = minimum_target_width(lower, upper)
    low, high = widened_target_bounds(declared, declared, lower, upper)
    assert (low, high) == (upper - width, upper)
    pair = [low + shift, high]

    def widened(record):
        record["target_bounds"]["params"]["y_bounds"] = [None, declared]
        record["target_bounds"]["params"]["y_search_range"] = [lower, upper]
        record["target_bounds"]["y_bounds"] = pair
        record["estimator"]["params"]["y_bounds"] = pair

    _edit(saved_half, widened)
    if shift == 0.0:
        assert load_model(saved_half)[-1].y_bounds_ == tuple(pair)
    else:
        with pytest.raises(ModelFileError, match="must keep the declared end"):
            load_model(saved_half)


def test_target_bounds_go_with_a_regression_estimator_only(saved, saved_regression):
    section = json.loads(saved_regression.read_text())["target_bounds"]
    _edit(saved, _set(["target_bounds"], section))
    with pytest.raises(ModelFileError, match="goes with a regression estimator only"):
        load_model(saved)
