"""Model files (``save_model`` / ``load_model``, ``dpconvex predict``) and stored events.

Good files, written by ``save_model`` for each estimator and method, must load and
predict exactly as saved, carry no noise seed and claim no less privacy than their event
costs: a *release with guarantee*. Crafted files (every field broken in every plausible
way, JSON that Python's parser accepts but a model file must not hold, event classes
outside the allow-list, sizes and depths beyond the public caps) must be refused with one
clear error. A crafted file that loads anyway is checked against the model it was made
from: other predictions, a smaller epsilon than its event costs, or a seed is a
``Violation`` (a silently wrong release). Ledger entries are read through the same
``event_from_dict``; crafted ones are written with sqlite3 into a re-anchored chain.
"""

from __future__ import annotations

import json
import os
import sqlite3
import sys
import warnings
from pathlib import Path

import numpy as np

from . import Probe, Violation, run_cli

AREA = "model files"
_X = np.random.default_rng(0).normal(size=(200, 3))
_G = {"event": "dp_accounting.dp_event.GaussianDpEvent", "fields": {"noise_multiplier": 2.0}}
_SC = "dp_accounting.dp_event.SelfComposedDpEvent"
_DELETE = object()


# --- good files ----------------------------------------------------------------------------
def _estimator(kind: str):
    from dpconvex import DPHuberRegressor, DPLinearRegression, DPLogisticRegression

    x0 = _X[:, 0]
    return {
        "logistic-amp": (DPLogisticRegression(), (x0 > 0).astype(int)),
        "logistic-amp-seeded": (DPLogisticRegression(random_state=5), (x0 > 0).astype(int)),
        "logistic-3-strings": (
            DPLogisticRegression(classes=["x", "y", "z"], method="output"),
            np.array(["x", "y", "z"])[np.digitize(x0, [-0.5, 0.5])],
        ),
        "logistic-dpsgd": (DPLogisticRegression(method="dpsgd", epochs=2), (x0 > 0).astype(int)),
        "logistic-dpgd-rdp-3": (
            DPLogisticRegression(method="dpgd", accounting="rdp", classes=[1, 2, 3]),
            np.digitize(x0, [-0.5, 0.5]) + 1,
        ),
        "logistic-bool-labels": (DPLogisticRegression(classes=[True, False]), x0 > 0),
        "logistic-no-intercept": (DPLogisticRegression(fit_intercept=False), (x0 > 0).astype(int)),
        "linear-amp": (DPLinearRegression(row_bound=3.0), x0 / 4),
        "linear-adassp": (DPLinearRegression(method="adassp"), x0 / 4),
        "linear-output-no-intercept": (
            DPLinearRegression(method="output", fit_intercept=False),
            x0 / 4,
        ),
        "huber-dpsgd": (DPHuberRegressor(method="dpsgd", epochs=1, batch_size=50), x0 / 4),
    }[kind]


def _fitted(kind: str = "logistic-amp"):
    model, y = _estimator(kind)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return model.fit(_X, y)


def _record(model) -> dict:
    from dpconvex.models.persist import model_record

    record = json.loads(json.dumps(model_record(model)))
    record.setdefault("mechanism_params", model.mechanism_params_)  # (older writers)
    return record


def _cost(model) -> float:
    from dpconvex.accounting import PrivacyAccountant, pld_grid

    h = pld_grid(model.epsilon)
    accountant = PrivacyAccountant(model.accounting, value_discretization_interval=h)
    return accountant.compose(model.dp_event_).get_epsilon(model.delta_)


def _covered(original, loaded, path: Path | None = None) -> None:
    """A loaded model must be the saved one: same predictions, an honest epsilon, no seed."""
    if type(loaded) is not type(original):
        raise Violation(f"loaded a {type(loaded).__name__}, saved a {type(original).__name__}")
    if not np.array_equal(loaded.predict(_X), original.predict(_X)):
        raise Violation("the loaded model predicts other labels than the saved one")
    if hasattr(original, "decision_function") and not np.array_equal(
        loaded.decision_function(_X), original.decision_function(_X)
    ):
        raise Violation("the loaded model's scores differ from the saved one's")
    if not hasattr(loaded, "dp_event_"):
        raise Violation("the loaded model has no event pricing its privacy claim")
    if loaded.random_state is not None or loaded.get_params().get("budget") is not None:
        raise Violation("a loaded model carries a seed or a ledger")
    if not (loaded.epsilon_ >= _cost(loaded) * (1 - 1e-6) and loaded.epsilon_ <= loaded.epsilon):
        raise Violation(f"epsilon_ {loaded.epsilon_} is below its event's cost {_cost(loaded)}")
    if loaded.epsilon_ != original.epsilon_ or loaded.dp_event_ != original.dp_event_:
        raise Violation("the loaded privacy claim is not the saved one")
    if path is not None and json.loads(path.read_text())["params"].get("random_state") is not None:
        raise Violation("the file holds the noise seed")


def _good(kind: str):
    def run(tmp: Path):
        from dpconvex import load_model, save_model

        model = _fitted(kind)
        path = save_model(model, tmp / "m.json", extra={"feature_names": ["a", "b", "c"]})
        _covered(model, load_model(path), path)

    return run


# --- crafted files -------------------------------------------------------------------------
def _edit(record: dict, field: str, value) -> dict:
    out = json.loads(json.dumps(record))
    *parents, last = field.split(".")
    node = out
    for key in parents:
        node = node[int(key)] if isinstance(node, list) else node[key]
    if value is _DELETE:
        del node[int(last) if isinstance(node, list) else last]
    elif isinstance(node, list):
        node[int(last)] = value
    else:
        node[last] = value
    return out


def _load_checked(model, path: Path):
    from dpconvex import load_model

    loaded = load_model(path)  # a refusal is the expected outcome
    _covered(model, loaded)
    return loaded


def _crafted(field: str, value, kind: str = "logistic-amp"):
    def run(tmp: Path):
        model = _fitted(kind)
        path = tmp / "m.json"
        path.write_text(json.dumps(_edit(_record(model), field, value)))
        _load_checked(model, path)

    return run


def _text(make_text, kind: str = "logistic-amp"):
    """A file whose text is ``make_text(good text)``."""

    def run(tmp: Path):
        model = _fitted(kind)
        path = tmp / "m.json"
        path.write_bytes(make_text(json.dumps(_record(model))))
        _load_checked(model, path)

    return run


def _replace(old: str, new: str):
    return _text(lambda t: t.replace(old, new, 1).encode())


def _raw(data: bytes):
    def run(tmp: Path):
        from dpconvex import load_model

        path = tmp / "m.json"
        path.write_bytes(data)
        load_model(path)
        raise Violation("a file that is not a model loaded")

    return run


def _special_path(make):
    def run(tmp: Path):
        from dpconvex import load_model

        load_model(make(tmp))
        raise Violation("something that is not a model file loaded")

    return run


def _fifo(tmp: Path) -> Path:
    os.mkfifo(tmp / "fifo")
    return tmp / "fifo"


def _sparse(tmp: Path) -> Path:
    with open(tmp / "big.json", "wb") as fh:
        fh.truncate(200 * 2**20)
    return tmp / "big.json"


def _big_coef(tmp: Path) -> Path:
    """A file just above the size cap made of valid numbers (read through its size)."""
    from dpconvex.models import persist

    path = tmp / "m.json"
    cap = getattr(persist, "MAX_FILE_BYTES", 128 * 2**20)
    with open(path, "w") as fh:
        fh.write('{"coef": [')
        fh.write("0.1," * (cap // 4))
        fh.write("0.1]}")
    return path


def _nested_events(levels: int) -> dict:
    event = _G
    for _ in range(levels):
        event = {"event": _SC, "fields": {"event": event, "count": 2}}
    return event


def _fake_argv(tmp: Path) -> Path:
    """The reviewer's host: argv that would make the CLI create a ledger if it ran."""
    ledger = tmp / "created-by-loading.db"
    sys.argv = ["dpconvex", "budget", "init", str(ledger), "--epsilon", "1", "--delta", "1e-5"]
    sys.modules.pop("dpconvex.__main__", None)
    return ledger


def _runs_nothing(run_it):
    def run(tmp: Path):
        ledger = _fake_argv(tmp)
        try:
            run_it(tmp)
        finally:
            if ledger.exists():
                raise Violation("loading a file ran the CLI in the host (it created a ledger)")

    return run


def _main_event(field="dp_event_json", name="dpconvex.__main__.main", kind="logistic-amp"):
    return _runs_nothing(_crafted(field, {"event": name, "fields": {}}, kind))


def _import_main(tmp: Path):
    import importlib

    importlib.import_module("dpconvex.__main__")


def _cli_predict(field: str, value, make_text=lambda text: text):
    def run(tmp: Path):
        model = _fitted()
        path = tmp / "m.json"
        record = _edit(_record(model), field, value)
        record["feature_names"] = record.get("feature_names", ["a", "b", "c"])
        path.write_text(make_text(json.dumps(record)))
        data = tmp / "d.csv"
        data.write_text("a,b,c\n" + "".join(f"{a},{b},{c}\n" for a, b, c in _X))
        out = run_cli(["predict", "--model", str(path), "--data", str(data), "--json"])
        predictions = json.loads(out)["predictions"]
        if predictions != model.predict(_X).tolist():
            raise Violation("dpconvex predict gave other labels than the saved model")

    return run


def _cli_round_trip(tmp: Path):
    data = tmp / "d.csv"
    labels = (_X[:, 0] > 0).astype(int)
    rows = "".join(f"{a},{b},{c},{y}\n" for (a, b, c), y in zip(_X, labels, strict=True))
    data.write_text("a,b,c,y\n" + rows)
    out = tmp / "m.json"
    run_cli(["fit", "--data", str(data), "--target", "y", "--epsilon", "1", "--delta", "1e-5",
             "--seed", "3", "--out", str(out)])  # fmt: skip
    if json.loads(out.read_text())["params"].get("random_state") is not None:
        raise Violation("dpconvex fit --seed wrote the noise seed into the model file")
    got = json.loads(run_cli(["predict", "--model", str(out), "--data", str(data), "--json"]))
    from dpconvex import load_model

    if got["predictions"] != load_model(out).predict(_X).tolist():
        raise Violation("dpconvex predict disagrees with load_model")


# --- ledger entries ------------------------------------------------------------------------
def _ledger_entry(stored, *, fake_argv: bool = False):
    """A ledger whose first entry's event is ``stored``, chain re-anchored as an attacker would."""

    def run(tmp: Path):
        from dpconvex import Budget
        from dpconvex.accounting import GaussianDpEvent

        path = tmp / "l.db"
        ledger = Budget(path, 4.0, 1e-5)
        for i in range(2):
            ledger.spend(GaussianDpEvent(5.0), mechanism="g", label=str(i))
        text = stored if isinstance(stored, str) else json.dumps(stored)
        db = sqlite3.connect(path)
        db.execute("UPDATE entries SET event = ? WHERE id = 1", (text,))
        db.commit()
        db.close()
        created = _fake_argv(tmp) if fake_argv else None
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                Budget(path).acknowledge_tampering()
            except Exception:  # noqa: BLE001 - the read below is the probe
                pass
            try:
                reopened = Budget(path)
                spent = reopened.spent()
            finally:
                if created is not None and created.exists():
                    raise Violation("reading a ledger entry ran the CLI in the host")
        if not spent <= reopened.epsilon:
            raise Violation(f"the ledger reports {spent} spent of {reopened.epsilon}")

    return run


# --- the list ------------------------------------------------------------------------------
_GOOD = ["logistic-amp", "logistic-amp-seeded", "logistic-3-strings", "logistic-dpsgd",
         "logistic-dpgd-rdp-3", "logistic-bool-labels", "logistic-no-intercept", "linear-amp",
         "linear-adassp", "linear-output-no-intercept", "huber-dpsgd"]  # fmt: skip

_EDITS = [  # (name, field, value[, kind])
    # header
    ("format missing", "format", _DELETE),
    ("format 'pickle'", "format", "pickle"),
    ("format_version 2", "format_version", 2),
    ("format_version 0", "format_version", 0),
    ("format_version true", "format_version", True),
    ("format_version '1'", "format_version", "1"),
    ("format_version 1.0", "format_version", 1.0),
    ("format_version missing", "format_version", _DELETE),
    ("model unknown", "model", "Pipeline"),
    ("model a list", "model", ["DPLogisticRegression"]),
    ("model regressor on a classifier file", "model", "DPLinearRegression"),
    # params
    ("params a list", "params", [1, 2]),
    ("params unknown key", "params.warm_start", True),
    ("params epsilon missing", "params.epsilon", _DELETE),
    ("params row_norm missing", "params.row_norm", _DELETE),
    ("params epsilon a string", "params.epsilon", "1.0"),
    ("params epsilon true", "params.epsilon", True),
    ("params epsilon negative", "params.epsilon", -1.0),
    ("params epsilon 1e6", "params.epsilon", 1e6),
    ("params delta 0", "params.delta", 0.0),
    ("params delta 1", "params.delta", 1.0),
    ("params method unknown", "params.method", "exact"),
    ("params method adassp on a classifier", "params.method", "adassp"),
    ("params accounting unknown", "params.accounting", "none"),
    ("params row_norm unknown", "params.row_norm", "none"),
    ("params row_bound negative", "params.row_bound", -1.0),
    ("params row_bound 1e300", "params.row_bound", 1e300),
    ("params fit_intercept 1", "params.fit_intercept", 1),
    ("params fit_intercept 'yes'", "params.fit_intercept", "yes"),
    ("params max_iter 2^62", "params.max_iter", 2**62),
    ("params max_iter 1.5", "params.max_iter", 1.5),
    ("params random_state a string", "params.random_state", "seed"),
    ("params budget a number", "params.budget", 5),
    ("params classes a string", "params.classes", "01"),
    ("params classes nested", "params.classes", [[0], [1]]),
    ("params intercept_scaling 0", "params.intercept_scaling", 0.0),
    # classes
    ("classes unsorted", "classes", [1, 0]),
    ("classes unsorted strings", "classes", ["z", "y", "x"], "logistic-3-strings"),
    ("classes repeated", "classes", [0, 0]),
    ("classes one more", "classes", [0, 1, 2]),
    ("classes missing", "classes", _DELETE),
    ("classes mixed types", "classes", [0, "1"]),
    ("classes with null", "classes", [0, None]),
    ("classes nested", "classes", [[0], [1]]),
    ("classes one label", "classes", [0]),
    ("classes as bools", "classes", [False, True]),
    (
        "classes with a terminal escape",
        "classes",
        ["x", "y", "\x1b]0;pwned\x07"],
        "logistic-3-strings",
    ),
    ("classes not the declared ones", "params.classes", ["x", "y", "w"], "logistic-3-strings"),
    ("classes on a regressor", "classes", [0, 1], "linear-amp"),
    # coefficients
    ("coef strings", "coef.0.0", "1.5"),
    ("coef a bool", "coef.0.0", True),
    ("coef null", "coef.0.0", None),
    ("coef 1e300", "coef.0.0", 1e300),
    ("coef empty row", "coef.0", []),
    ("coef 2 rows for 2 classes", "coef", [[1.0, 2.0, 3.0]] * 2),
    ("coef 1 row for 3 classes", "coef", [[1.0, 2.0, 3.0]], "logistic-3-strings"),
    ("coef ragged rows", "coef.1", [1.0, 2.0], "logistic-3-strings"),
    ("coef 1-D on a classifier", "coef", [1.0, 2.0, 3.0]),
    ("coef 2-D on a regressor", "coef", [[1.0, 2.0, 3.0]], "linear-amp"),
    ("coef a dict", "coef", {"0": 1.0}),
    ("intercept a list on a regressor", "intercept", [0.1], "linear-amp"),
    ("intercept too long", "intercept", [0.1, 0.2]),
    ("intercept nonzero without fit_intercept", "intercept", [0.5], "logistic-no-intercept"),
    ("intercept a string", "intercept", "0.1", "linear-amp"),
    # privacy
    ("epsilon_spent negative", "epsilon_spent", -1.0),
    ("epsilon_spent 0", "epsilon_spent", 0.0),
    ("epsilon_spent above epsilon", "epsilon_spent", 5.0),
    ("epsilon_spent below the event's cost", "epsilon_spent", 0.5),
    ("epsilon_spent a string", "epsilon_spent", "1.0"),
    ("epsilon_spent true", "epsilon_spent", True),
    ("epsilon_spent missing", "epsilon_spent", _DELETE),
    ("delta not params.delta", "delta", 1e-3),
    ("delta missing", "delta", _DELETE),
    ("event missing", "dp_event_json", _DELETE),
    ("event null", "dp_event_json", None),
    ("event os.system", "dp_event_json", {"event": "os.system", "fields": {"command": "id"}}),
    (
        "event dpconvex.budget.Budget",
        "dp_event_json",
        {"event": "dpconvex.budget.Budget", "fields": {"path": "x.db"}},
    ),
    (
        "event NonPrivateDpEvent",
        "dp_event_json",
        {"event": "dp_accounting.dp_event.NonPrivateDpEvent", "fields": {}},
    ),
    ("event of another method", "dp_event_json", _G),
    (
        "event NoOp for amp",
        "dp_event_json",
        {"event": "dp_accounting.dp_event.NoOpDpEvent", "fields": {}},
    ),
    ("event composed twice for 3 classes", "dp_event_json.fields.count", 2, "logistic-3-strings"),
    ("event count 10^18", "dp_event_json.fields.count", 10**18, "logistic-dpgd-rdp-3"),
    ("event count 10^30", "dp_event_json.fields.count", 10**30, "logistic-dpgd-rdp-3"),
    ("event dpsgd steps 10^9", "dp_event_json.fields.count", 10**9, "logistic-dpsgd"),
    ("event sigma negative", "dp_event_json.fields.sigma", -1.0),
    ("event sigma NaN", "dp_event_json.fields.sigma", {"float": "nan"}),
    ("event sigma a string", "dp_event_json.fields.sigma", "6.8"),
    ("event unknown field", "dp_event_json.fields.shell", 1),
    ("event field missing", "dp_event_json.fields.tau", _DELETE),
    ("event nested 40 deep", "dp_event_json", _nested_events(40)),
    (
        "event of 10^5 events",
        "dp_event_json",
        {"event": "dp_accounting.dp_event.ComposedDpEvent", "fields": {"events": [_G] * 10**5}},
    ),
    ("event dp_event repr a list", "dp_event", [1]),
    # extras
    ("feature_names too few", "feature_names", ["a"]),
    ("feature_names repeated", "feature_names", ["a", "a", "b"]),
    ("feature_names numbers", "feature_names", [1, 2, 3]),
    ("feature_names terminal escape", "feature_names", ["a", "b", "\x1b[2J"]),
    ("mechanism_params nested", "mechanism_params", {"sigma": {"x": 1}}),
    ("mechanism_params a string", "mechanism_params.sigma", "big"),
    ("mechanism_params a list", "mechanism_params", [1.0]),
    ("data a number", "data", 5),
    ("dask 'yes'", "dask", "yes"),
]
_BENIGN = [  # edits that leave a loadable model of the same predictions and claim
    ("an older file's seed is ignored", "params.random_state", 7),
    ("an older file's ledger path is ignored", "params.budget", "/home/x/study.db"),
    ("an optional parameter missing", "params.solver", _DELETE),
    ("an unknown extra field", "note", "trained on Tuesday"),
    ("mechanism_params absent", "mechanism_params", _DELETE),
]
_TEXTS = [
    ("NaN token in coef", lambda t: t.replace('"coef": [[', '"coef": [[NaN, ', 1)),
    ("Infinity token in epsilon_spent",
     lambda t: t.replace('"epsilon_spent": ', '"epsilon_spent": Infinity, "x": ', 1)),
    ("-Infinity token in intercept", lambda t: t.replace('"intercept": [', '"intercept": [-Infinity, ', 1)),  # noqa: E501
    ("1e999 in coef", lambda t: t.replace('"coef": [[', '"coef": [[1e999, ', 1)),
    ("duplicate coef key", lambda t: t.replace('"coef":', '"coef": [[0.0, 0.0, 0.0]], "coef":', 1)),
    ("duplicate key inside params", lambda t: t.replace('"params": {', '"params": {"epsilon": 9.0, ', 1)),  # noqa: E501
    ("5000-digit integer", lambda t: t.replace('"format_version": 1', '"format_version": 1' + "0" * 4999, 1)),  # noqa: E501
    ("UTF-8 byte order mark", lambda t: "\ufeff" + t),
    ("truncated file", lambda t: t[: len(t) // 2]),
    ("deep JSON nesting in an extra field", lambda t: t[:-1] + ', "x": ' + "[" * 100_000 + "]" * 100_000 + "}"),  # noqa: E501
    ("brackets inside a string are not nesting", lambda t: t[:-1] + ', "x": "' + "[" * 100_000 + '"}'),  # noqa: E501
]  # fmt: skip


def probes() -> list[Probe]:
    out = [Probe(AREA, f"good file: {kind}", _good(kind)) for kind in _GOOD]
    out += [Probe(AREA, "good file: dpconvex fit --seed, then predict", _cli_round_trip)]
    for name, field, value, *kind in _EDITS:
        out.append(Probe(AREA, f"crafted: {name}", _crafted(field, value, *kind)))
    for name, field, value in _BENIGN:
        out.append(Probe(AREA, f"benign: {name}", _crafted(field, value)))
    for name, make in _TEXTS:
        out.append(Probe(AREA, f"JSON: {name}", _text(lambda t, make=make: make(t).encode())))
    out += [
        Probe(AREA, "JSON: not UTF-8", _raw(b'{"format": "\xff\xfe"}')),
        Probe(AREA, "JSON: empty file", _raw(b"")),
        Probe(AREA, "JSON: an array", _raw(b"[1, 2, 3]")),
        Probe(AREA, "path: a directory", _special_path(lambda tmp: tmp)),
        Probe(AREA, "path: missing", _special_path(lambda tmp: tmp / "none.json")),
        Probe(AREA, "path: a named pipe", _special_path(_fifo), timeout=30),
        Probe(AREA, "path: /dev/zero", _special_path(lambda tmp: Path("/dev/zero")), timeout=30),
        Probe(AREA, "size: a 200 MB sparse file", _special_path(_sparse), timeout=30),
        Probe(AREA, "size: numbers just above the cap", _special_path(_big_coef), memory_mb=1024),
        # review item 5: a file naming dpconvex.__main__ with the host's argv set
        Probe(AREA, "import: event dpconvex.__main__.main (fake argv)", _main_event()),
        Probe(AREA, "import: event dpconvex.cli.main (fake argv)",
              _main_event(name="dpconvex.cli.main")),  # fmt: skip
        Probe(AREA, "import: nested event naming dpconvex.__main__ (fake argv)",
              _main_event("dp_event_json.fields.event", "dpconvex.__main__.X",
                          "logistic-3-strings")),  # fmt: skip
        Probe(AREA, "import: importing dpconvex.__main__ (fake argv)", _runs_nothing(_import_main)),
        Probe(AREA, "CLI predict: NaN coefficient",
              _cli_predict("note", "", lambda t: t.replace('"coef": [[', '"coef": [[NaN, ', 1))),
        Probe(AREA, "CLI predict: unsorted classes", _cli_predict("classes", [1, 0])),
        Probe(AREA, "CLI predict: event dpconvex.__main__.main (fake argv)",
              _runs_nothing(_cli_predict("dp_event_json",
                                         {"event": "dpconvex.__main__.main", "fields": {}}))),
        Probe(AREA, "CLI predict: feature names with a terminal escape",
              _cli_predict("feature_names", ["a", "b", "c\x1b[2J"])),
        Probe(AREA, "CLI predict: a good file", _cli_predict("note", "fine")),
    ]  # fmt: skip
    ledger = [
        ("os.system", {"event": "os.system", "fields": {}}, False),
        ("dpconvex.__main__.main (fake argv)", {"event": "dpconvex.__main__.main", "fields": {}},
         True),
        ("count 10^18", {"event": _SC, "fields": {"event": _G, "count": 10**18}}, False),
        ("count 10^30", {"event": _SC, "fields": {"event": _G, "count": 10**30}}, False),
        ("nested 40 deep", _nested_events(40), False),
        ("10^5 composed events", {"event": "dp_accounting.dp_event.ComposedDpEvent",
                                  "fields": {"events": [_G] * 10**5}}, False),
        ("NaN noise", {**_G, "fields": {"noise_multiplier": {"float": "nan"}}}, False),
        ("unknown field", {**_G, "fields": {"noise_multiplier": 2.0, "x": 1}}, False),
        ("a string field", {**_G, "fields": {"noise_multiplier": "2"}}, False),
        (
            "a zero-noise Gaussian inside a random choice",
            {
                "event": "dpconvex.accounting.events.RandomChoiceDpEvent",
                "fields": {"events": [{**_G, "fields": {"noise_multiplier": 0.0}}]},
            },
            False,
        ),
        ("a good event", _G, False),
    ]  # fmt: skip
    for name, stored, argv in ledger:
        out.append(Probe(AREA, f"ledger entry: {name}", _ledger_entry(stored, fake_argv=argv)))
    return out
