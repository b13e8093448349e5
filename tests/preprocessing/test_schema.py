"""The declared schema: JSON round trip, validation, hostile files."""

import json

import pytest

from dpconvex.preprocessing import (
    Categorical,
    Numeric,
    Schema,
    SchemaError,
    load_schema,
    schema_from_dict,
)
from dpconvex.preprocessing.schema import MAX_SCHEMA_BYTES

SPEC = {
    "columns": [
        {"name": "age", "type": "numeric", "bounds": [17, 90]},
        {
            "name": "income",
            "type": "numeric",
            "bounds": [0, None],
            "search_range": [0, 1e7],
            "log": "log1p",
        },
        {
            "name": "t",
            "type": "numeric",
            "bounds": [None, None],
            "search_range": [-5, 5],
            "missing": "refuse",
        },
        {"name": "sex", "type": "categorical", "categories": ["F", "M"], "other": False},
        {"name": "code", "type": "categorical", "categories": [1, 2.0, "x"]},
    ],
    "missing_values": ["?", ""],
}


def test_round_trip_and_public_sizes():
    schema = schema_from_dict(SPEC)
    again = schema_from_dict(json.loads(json.dumps(schema.to_dict())))
    assert again == schema
    assert schema.n_estimated == 3
    assert schema.columns[4].categories == ("1", "2", "x")
    assert schema.feature_names() == [
        "age",
        "age=<missing>",
        "income",
        "income=<missing>",
        "t",
        "sex=F",
        "sex=M",
        "sex=<missing>",
        "code=1",
        "code=2",
        "code=x",
        "code=<other>",
        "code=<missing>",
    ]
    assert schema.n_features == 13
    # 3 numeric + 2 groups (an indicator is 1 only when its value is the fill 0)
    assert schema.row_bound() == 5**0.5


def test_python_and_dict_forms_agree():
    schema = Schema(
        (
            Numeric("age", (17, 90)),
            Numeric("income", (0, None), search_range=(0, 1e7), log="log1p"),
            Numeric("t", search_range=(-5, 5), missing="refuse"),
            Categorical("sex", ("F", "M"), other=False),
            Categorical("code", (1, 2.0, "x")),
        ),
        missing_values=("?", ""),
    )
    assert schema == schema_from_dict(SPEC)


def _with(**change):
    col = {"name": "a", "type": "numeric", "bounds": [0, 1], **change}
    return {"columns": [col]}


@pytest.mark.parametrize(
    ("spec", "match"),
    [
        ([], "an object"),
        ({"columns": []}, "1 to"),
        ({"columns": [1]}, "must be an object"),
        ({"columns": [{"name": "a"}]}, "type must be"),
        ({"columns": [{"type": "numeric"}]}, "needs a name"),
        ({"cols": []}, "only the keys"),
        (_with(bounds=[1, 0]), "low < high"),
        (_with(bounds=[0, float("nan")]), "finite"),
        (_with(bounds=[0, 1e300]), "magnitude"),
        (_with(bounds=[0, True]), "must be a number"),
        (_with(bounds=[0, None]), "search_range"),
        (_with(search_range=[0, 1]), "only used when"),
        (_with(log="sqrt"), "log must be"),
        (_with(log="log1p", bounds=[-2, 1]), "defined"),
        (_with(log="log", bounds=[0, 1]), "defined"),
        (_with(shift=1.0), "shift applies"),
        (_with(missing="drop"), "missing must be"),
        (_with(extra=1), "unknown key"),
        (_with(name=3), "must be a string"),
        (_with(name="a\x1b[31m"), "control"),
        (_with(name="x" * 201), "at most 200"),
        ({"columns": [_with()["columns"][0]] * 2}, "declared twice"),
        ({"columns": [{"name": "c", "type": "categorical"}]}, "list of categories"),
        ({"columns": [{"name": "c", "type": "categorical", "categories": []}]}, "1 to"),
        ({"columns": [{"name": "c", "type": "categorical", "categories": ["a", " a"]}]}, "twice"),
        (
            {"columns": [{"name": "c", "type": "categorical", "categories": ["<other>"]}]},
            "reserved",
        ),
        (
            {"columns": [{"name": "c", "type": "categorical", "categories": [[1]]}]},
            "strings or numbers",
        ),
        (
            {
                "columns": [
                    {"name": "c=x", "type": "numeric", "bounds": [0, 1]},
                    {"name": "c", "type": "categorical", "categories": ["x"]},
                ]
            },
            "same name",
        ),
        ({**_with(), "missing_values": "?"}, "missing_values"),
    ],
)
def test_bad_schemas_are_one_clear_error(spec, match):
    with pytest.raises(SchemaError, match=match) as info:
        schema_from_dict(spec)
    assert "\n" not in str(info.value)


def test_schema_files(tmp_path):
    good = tmp_path / "s.json"
    good.write_text(json.dumps(SPEC))
    assert load_schema(good) == schema_from_dict(SPEC)
    cases = {
        "deep.json": "[" * 100_000 + "]" * 100_000,
        "nan.json": '{"columns": [{"name": "a", "type": "numeric", "bounds": [0, NaN]}]}',
        "bad.json": "{not json",
        "bin.json": b"\xff\xfe\x00",
        "big.json": " " * (MAX_SCHEMA_BYTES + 1),
        "list.json": "[1, 2]",
        "huge.json": '{"columns": [{"name": "a", "type": "numeric", "bounds": [0, 1'
        + "0" * 400
        + "]}]}",
        "digits.json": '{"columns": [{"name": "a", "type": "numeric", "bounds": [0, 1'
        + "0" * 5000
        + "]}]}",
    }
    for name, text in cases.items():
        path = tmp_path / name
        path.write_bytes(text if isinstance(text, bytes) else text.encode())
        with pytest.raises(SchemaError, match=name) as info:
            load_schema(path)
        assert "\n" not in str(info.value)
    with pytest.raises(SchemaError, match="not a regular file"):
        load_schema(tmp_path)
    with pytest.raises(SchemaError, match="not a regular file"):
        load_schema(tmp_path / "missing.json")
