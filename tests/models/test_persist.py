"""Model files: hostile files refused with one error naming the field; no seed; no imports."""

import json
import re
import runpy
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest
from dp_accounting import dp_event as de

import dpconvex
from dpconvex import DPHuberRegressor, DPLinearRegression, DPLogisticRegression
from dpconvex.accounting import (
    AmpDpEvent,
    RandomChoiceDpEvent,
    dpsgd_event,
    tuned_event,
)
from dpconvex.accounting.serialization import event_from_dict, event_to_dict
from dpconvex.models.persist import load_model, model_record, read_model_record, save_model

X = np.random.default_rng(0).normal(size=(120, 3))
_BINARY = (X[:, 0] > 0).astype(int)
_LETTERS = np.array(["a", "b", "c"])[np.digitize(X[:, 0], [-0.5, 0.5])]
_TARGET = X[:, 0] / 4
GOOD = {
    "binary": (DPLogisticRegression(epsilon=2.0, random_state=7), _BINARY),
    "letters": (DPLogisticRegression(classes=["c", "a", "b"], method="output"), _LETTERS),
    "linear": (DPLinearRegression(fit_intercept=False, accounting="rdp"), _TARGET),
    "huber": (DPHuberRegressor(method="dpsgd", epochs=1, batch_size=60), _TARGET),
}


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    """name -> (fitted model, path of its file, the file's record)."""
    out = {}
    for name, (model, y) in GOOD.items():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # rows clipped to row_bound: not the point here
            model.fit(X, y)
        path = save_model(model, tmp_path_factory.mktemp("m") / f"{name}.json")
        out[name] = (model, path, json.loads(path.read_text()))
    return out


@pytest.mark.parametrize("name", list(GOOD))
def test_a_saved_model_loads_and_predicts_exactly_as_saved(saved, name):
    model, path, _ = saved[name]
    loaded = load_model(path)
    assert type(loaded) is type(model)
    np.testing.assert_array_equal(loaded.predict(X), model.predict(X))
    if hasattr(model, "predict_proba"):
        np.testing.assert_array_equal(loaded.predict_proba(X), model.predict_proba(X))
        assert loaded.classes_.dtype == model.classes_.dtype
    assert (loaded.epsilon_, loaded.delta_) == (model.epsilon_, model.delta_)
    assert loaded.dp_event_ == model.dp_event_
    assert loaded.mechanism_params_ == model.mechanism_params_
    assert loaded.random_state is None and loaded.budget is None


# --- item 6: no noise seed, no ledger path -------------------------------------------------
def test_the_file_holds_no_seed_and_no_ledger_path(saved, tmp_path):
    model, path, record = saved["binary"]
    assert model.random_state == 7
    assert "random_state" not in record["params"] and "budget" not in record["params"]
    ledger = tmp_path / "secret-study-ledger.db"
    model.set_params(budget=str(ledger))
    assert "secret-study" not in json.dumps(model_record(model))
    model.set_params(budget=None)


def test_dpconvex_fit_with_a_seed_writes_no_seed(tmp_path, capsys):
    from dpconvex.cli import main

    data = tmp_path / "d.csv"
    rows = "".join(f"{a},{b},{c},{y}\n" for (a, b, c), y in zip(X, _BINARY, strict=True))
    data.write_text("a,b,c,y\n" + rows)
    out = tmp_path / "m.json"
    argv = ["fit", "--data", str(data), "--target", "y", "--epsilon", "1", "--delta", "1e-5"]
    with pytest.raises(SystemExit) as stop:
        main([*argv, "--seed", "987654321", "--out", str(out)])
    assert stop.value.code in (0, None), capsys.readouterr().err
    record = json.loads(out.read_text())
    assert "random_state" not in record["params"] and "987654321" not in out.read_text()
    assert load_model(out).random_state is None


def test_a_seed_in_an_older_file_is_not_loaded(saved, tmp_path):
    _, _, record = saved["binary"]
    old = dict(record, params={**record["params"], "random_state": 7, "budget": "l.db"})
    path = _write(tmp_path, old)
    loaded = load_model(path)
    assert loaded.random_state is None and loaded.budget is None


# --- item 5: no import by name, __main__ runs nothing on import ----------------------------
def _fake_cli_argv(monkeypatch, tmp_path) -> Path:
    ledger = tmp_path / "created-by-import.db"
    argv = ["dpconvex", "budget", "init", str(ledger), "--epsilon", "1"]
    monkeypatch.setattr(sys, "argv", argv)
    monkeypatch.delitem(sys.modules, "dpconvex.__main__", raising=False)
    return ledger


def test_a_model_file_cannot_run_the_cli_in_the_host(saved, monkeypatch, tmp_path):
    _, _, record = saved["binary"]
    ledger = _fake_cli_argv(monkeypatch, tmp_path)
    event = {"event": "dpconvex.__main__.main", "fields": {}}
    path = _write(tmp_path, dict(record, dp_event_json=event))
    with pytest.raises(ValueError, match="dp_event_json: refusing to load event class"):
        load_model(path)
    assert not ledger.exists() and "dpconvex.__main__" not in sys.modules


@pytest.mark.parametrize("name", ["dpconvex.__main__.main", "os.system", "dpconvex.cli.main",
                                  "dp_accounting.dp_event.NonPrivateDpEvent", 3])  # fmt: skip
def test_event_names_outside_the_allow_list_are_refused(monkeypatch, tmp_path, name):
    ledger = _fake_cli_argv(monkeypatch, tmp_path)
    with pytest.raises(ValueError, match="refusing to load event class"):
        event_from_dict({"event": name, "fields": {}})
    assert not ledger.exists()


def test_importing_dpconvex_main_runs_nothing_but_python_m_still_does(monkeypatch, tmp_path):
    ledger = _fake_cli_argv(monkeypatch, tmp_path)
    __import__("dpconvex.__main__")
    assert not ledger.exists()
    monkeypatch.setattr(sys, "argv", ["dpconvex", "--help"])
    monkeypatch.delitem(sys.modules, "dpconvex.__main__")
    with pytest.raises(SystemExit) as stop:
        runpy.run_module("dpconvex", run_name="__main__", alter_sys=False)
    assert stop.value.code == 0


def test_the_allow_list_is_every_event_class_of_dpconvex_and_no_other():
    """Read off the sources (importing them all would be slow): ``class X(...DpEvent)``."""
    from dpconvex.accounting.serialization import EVENT_CLASSES, event_class

    root = Path(dpconvex.__file__).parent
    pattern = re.compile(r"^class (\w+)\([\w.]*DpEvent\)", re.MULTILINE)
    defined = set()
    for file in root.rglob("*.py"):
        module = ".".join(("dpconvex", *file.relative_to(root).with_suffix("").parts))
        defined |= {f"{module}.{name}" for name in pattern.findall(file.read_text())}
    assert len(defined) == 13
    assert defined == {name for name in EVENT_CLASSES if name.startswith("dpconvex.")}
    for name in EVENT_CLASSES:
        if name.startswith("dp_accounting."):
            assert event_class(name) is getattr(de, name.rsplit(".", 1)[1])


def test_stored_events_round_trip_and_unlisted_classes_are_not_written():
    from dpconvex.accounting.events import DiscreteGaussianDpEvent
    from dpconvex.queries.sparse_vector import PureDpEvent

    events = [
        tuned_event(dpsgd_event(1.0, 0.01, 50), 3.0),  # a Poisson shape = inf field
        RandomChoiceDpEvent([AmpDpEvent(5, 20, 1, 1, 1e-3, 0.1), PureDpEvent(0.5)]),
        de.ComposedDpEvent([DiscreteGaussianDpEvent(3.0, 1.0, 2), de.ZCDpEvent(0.1)]),
    ]
    for event in events:
        assert event_from_dict(json.loads(json.dumps(event_to_dict(event)))) == event
    with pytest.raises(TypeError, match="cannot serialize"):
        event_to_dict(de.SingleEpochTreeAggregationDpEvent(1.0, 3))


_G = {"event": "dp_accounting.dp_event.GaussianDpEvent", "fields": {"noise_multiplier": 2.0}}


def _nest(levels: int) -> dict:
    event = _G
    for _ in range(levels):
        event = {"event": "dp_accounting.dp_event.SelfComposedDpEvent",
                 "fields": {"event": event, "count": 2}}  # fmt: skip
    return event


@pytest.mark.parametrize(
    "stored, match",
    [
        (_nest(40), "nested more than 32"),
        (
            {
                "event": "dp_accounting.dp_event.ComposedDpEvent",
                "fields": {"events": [_G] * 10_001},
            },
            "more than 10000 events",
        ),
        ({**_nest(1), "fields": {"event": _G, "count": 10**18}}, "at most 2\\^53"),
        ({**_nest(1), "fields": {"event": _G, "count": 10**30}}, "above 2\\^63"),
        ({**_G, "fields": {"noise_multiplier": {"float": "nan"}}}, "noise_multiplier must be"),
        ({**_G, "fields": {"noise_multiplier": "2"}}, "must be a number"),
        ({**_G, "fields": {"noise_multiplier": True}}, "must be a number"),
        ({**_G, "fields": {"noise_multiplier": 2.0, "x": 1}}, "has no field 'x'"),
        ({**_G, "fields": {}}, "misses its field 'noise_multiplier'"),
        ({**_G, "extra": 1}, "exactly the keys"),
        (
            {
                "event": "dpconvex.accounting.events.RandomChoiceDpEvent",
                "fields": {"events": [{**_G, "fields": {"noise_multiplier": 0.0}}]},
            },
            "noise_multiplier must be",
        ),
        ({**_nest(1), "fields": {"event": [1] * 2, "count": 2}}, "SelfComposedDpEvent"),
        (
            {
                "event": "dpconvex.accounting.events.ObjectivePerturbationDpEvent",
                "fields": {"sigma": 1.0, "lam": 0.5, "beta": 1.0, "lipschitz": 1.0},
            },
            "lam",
        ),
    ],
)
def test_stored_events_are_bounded_and_checked(stored, match):
    with pytest.raises(ValueError, match=match):
        event_from_dict(stored)


# --- item 7: every field checked, one error naming it --------------------------------------
def _write(tmp_path: Path, record: dict | str, name: str = "m.json") -> Path:
    path = tmp_path / name
    path.write_text(record if isinstance(record, str) else json.dumps(record))
    return path


def _edit(record: dict, path: str, value) -> dict:
    """A deep copy of ``record`` with ``path`` ("a.b.0") set to ``value`` (None: deleted)."""
    out = json.loads(json.dumps(record))
    *parents, last = path.split(".")
    node = out
    for key in parents:
        node = node[int(key)] if isinstance(node, list) else node[key]
    if value is _DELETE:
        del node[last]
    elif isinstance(node, list):
        node[int(last)] = value
    else:
        node[last] = value
    return out


_DELETE = object()
_AMP = "dpconvex.accounting.events.AmpDpEvent"
EDITS = [  # (file, field path, new value, words of the error)
    ("binary", "format_version", 3, "format_version: 3 is not one"),
    ("binary", "format_version", 2, "model: must be 'PrivatePipeline' in a format_version 2"),
    ("binary", "format_version", True, "format_version"),
    ("binary", "format", "pickle", "format: must be"),
    ("binary", "model", "Pipeline", "model: must name one of"),
    ("binary", "params.epsilon", True, "params.epsilon: must not be true"),
    ("binary", "params.epsilon", 1000.0, "'epsilon' parameter"),
    ("binary", "params.row_norm", "none", "'row_norm' parameter"),
    ("binary", "params.max_iter", 2**60, "params.max_iter: is an integer above 2\\^53"),
    ("binary", "params.warm_start", True, "'warm_start' is not a parameter"),
    ("binary", "params.row_bound", _DELETE, "params: misses 'row_bound'"),
    ("binary", "params.random_state", "0", "params.random_state: must be null"),
    ("binary", "coef.0.1", "1.5", "coef\\[0\\]: must hold numbers only"),
    ("binary", "coef.0.1", 1e300, "coef\\[0\\]: holds a value beyond"),
    ("letters", "coef.1", [1.0, 2.0], "coef\\[1\\]: has 2 entries, expected 3"),
    ("binary", "coef", [[1.0, 2.0, 3.0]] * 2, "coef: must be a list of 1 rows for 2 classes"),
    ("binary", "intercept", [0.0, 0.0], "intercept: has 2 entries"),
    ("binary", "classes", [1, 0], "classes: must be the declared labels"),
    ("binary", "classes", [0, 1, 2], "classes: must be the declared labels"),
    ("binary", "classes", [0, "1"], "classes: labels must all be of one type"),
    ("binary", "classes", _DELETE, "classes: missing"),
    ("letters", "classes", ["c", "b", "a"], "classes: must be the declared labels"),
    ("letters", "params.classes", ["a", "b", "d"], "classes: must be the declared labels"),
    ("letters", "coef", [[1.0, 2.0, 3.0]], "coef: must be a list of 3 rows"),
    ("letters", "classes", ["a", "b", "\x1b[2J"], "classes: a label holds a control"),
    ("linear", "classes", [0, 1], "classes: a DPLinearRegression has no classes"),
    ("linear", "intercept", 0.5, "intercept: must be 0 when params.fit_intercept is false"),
    ("linear", "intercept", [0.0], "intercept: must be a number"),
    ("linear", "coef", [[1.0, 2.0, 3.0]], "coef: must hold numbers only"),
    ("binary", "epsilon_spent", -1.0, "epsilon_spent: must be in \\(0, params.epsilon"),
    ("binary", "epsilon_spent", 3.0, "epsilon_spent: must be in"),
    ("binary", "epsilon_spent", 0.5, "epsilon_spent: is below what its event costs"),
    ("binary", "epsilon_spent", "1.0", "epsilon_spent: must be a number"),
    ("binary", "delta", 1e-3, "delta: must equal params.delta"),
    ("binary", "dp_event_json", _DELETE, "dp_event_json: missing"),
    ("binary", "dp_event_json", _G, "dp_event_json: is not the event of method 'amp'"),
    ("binary", "dp_event_json.fields.sigma", -1.0, "dp_event_json: AmpDpEvent: sigma"),
    ("letters", "dp_event_json.fields.count", 2, "dp_event_json: must compose 3 events"),
    ("binary", "feature_names", ["x", "y"], "feature_names: must be a list of 3"),
    ("binary", "feature_names", ["x", "x", "y"], "feature_names: must not repeat"),
    ("binary", "mechanism_params.sigma", {"a": 1}, "mechanism_params: 'sigma' must name"),
]


@pytest.mark.parametrize("name, field, value, match", EDITS, ids=[e[1] for e in EDITS])
def test_a_broken_field_is_refused_by_name(saved, tmp_path, name, field, value, match):
    path = _write(tmp_path, _edit(saved[name][2], field, value))
    for read in (load_model, read_model_record):
        with pytest.raises(ValueError, match=match) as err:
            read(path)
        assert str(path) in str(err.value) and "\n" not in str(err.value)


@pytest.mark.parametrize(
    "text, match",
    [
        ('{"coef": NaN}', "file: holds NaN"),
        ('{"coef": -Infinity}', "file: holds -Infinity"),
        ('{"coef": 1e999}', "file: holds the number '1e999'"),
        ('{"coef": 1, "coef": 2}', "file: key 'coef' appears twice"),
        ('{"a": ' + "9" * 5000 + "}", "file: holds an integer of 5000 digits"),
        ("[" * 100_000 + "]" * 100_000, "file: nested more than 64 levels"),
        ('{"a": "' + "[" * 1000 + '"}', "format: must be"),  # brackets in strings do not nest
        ("[1, 2]", "file: not a JSON object"),
        ('{"a": 1', "file: not JSON"),
    ],
)
def test_json_that_python_would_accept_is_refused(tmp_path, text, match):
    with pytest.raises(ValueError, match=match):
        load_model(_write(tmp_path, text))


def test_files_are_read_within_a_size_cap(tmp_path, monkeypatch):
    import dpconvex.models.persist as persist

    monkeypatch.setattr(persist, "MAX_FILE_BYTES", 100)
    with pytest.raises(ValueError, match="larger than 100 bytes"):
        load_model(_write(tmp_path, " " * 101))
    (tmp_path / "bin").write_bytes(b'{"a": "\xff"}')
    monkeypatch.setattr(persist, "MAX_FILE_BYTES", 2**20)
    with pytest.raises(ValueError, match="not UTF-8"):
        load_model(tmp_path / "bin")
    with pytest.raises(ValueError, match="not a regular file"):
        load_model(tmp_path)
    with pytest.raises(ValueError, match="no such model file"):
        load_model(tmp_path / "none.json")


def test_save_refuses_what_load_would_refuse(saved, tmp_path):
    model = saved["binary"][0]
    with pytest.raises(ValueError, match="feature_names: must be a list of 3"):
        save_model(model, tmp_path / "a.json", extra={"feature_names": ["x"]})
    with pytest.raises(ValueError, match="would replace the model's own fields"):
        save_model(model, tmp_path / "b.json", extra={"coef": [[0.0, 0.0, 0.0]]})
    assert not list(tmp_path.iterdir())


def test_an_old_file_with_the_reviewers_silently_wrong_classes_no_longer_loads(saved, tmp_path):
    """Unsorted classes used to load and swap every prediction; now they are refused."""
    model, _, record = saved["binary"]
    path = _write(tmp_path, _edit(record, "classes", [1, 0]))
    with pytest.raises(ValueError, match="classes"):
        predictions = load_model(path).predict(X)
        assert np.array_equal(predictions, model.predict(X))  # (old code: all swapped)
