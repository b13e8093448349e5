"""What every dpconvex model file shares: its format tag, its caps, strict JSON, its errors.

A model file is read as hostile (see :mod:`dpconvex.models.persist`): :func:`parse_record`
accepts strict JSON only (no NaN or Infinity, no duplicate keys, integers below 2^63,
nesting at most :data:`MAX_JSON_DEPTH`), and every failed check of a field raises
:class:`BadField`, which the reader turns into one :class:`ModelFileError` naming the file.
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import numpy as np

FORMAT = "dpconvex-model"
#: format versions this code reads (2: a table pipeline, see pipeline_files)
READABLE_VERSIONS = (1, 2)
#: deepest nesting of JSON arrays and objects in a model file (one this code writes: 8)
MAX_JSON_DEPTH = 64
#: largest absolute coefficient or intercept: with rows of norm at most 1e8 (the largest
#: row bound) the scores of d < 1e100 features stay finite in float64
MAX_COEFFICIENT = 1e100
#: relative slack allowed between ``epsilon_spent`` and the cost of the event
EPSILON_TOLERANCE = 1e-6


class BadField(ValueError):
    """One failed check of a record: ``field`` and what is wrong with it."""

    def __init__(self, field: str, problem: str):
        super().__init__(f"{field}: {problem}")


def show(value: object, limit: int = 60) -> str:
    """``value`` for a message: its repr (control characters escaped), shortened."""
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def display_path(path: str | Path) -> str:
    text = str(path)
    return text if text.isprintable() else repr(text)


def dumps_record(record: dict) -> str:
    """One top-level field per line; values compact (long coefficient lists stay small)."""
    lines = [f"  {json.dumps(k)}: {json.dumps(v, allow_nan=False)}" for k, v in record.items()]
    return "{\n" + ",\n".join(lines) + "\n}\n"


# --- reading: bounded, strict JSON ---------------------------------------------------------
_STRING = re.compile(rb'"[^"\\]*(?:\\.?[^"\\]*)*(?:"|\Z)', re.DOTALL)
_NOT_BRACKET = bytes(b for b in range(256) if b not in b"[]{}")


def _json_depth(raw: bytes) -> int:
    """Deepest nesting of arrays and objects in ``raw``, strings skipped (linear time)."""
    brackets = _STRING.sub(b"", raw).translate(None, _NOT_BRACKET)
    deepest, base = 0, 0
    for start in range(0, len(brackets), 1 << 20):
        chunk = np.frombuffer(brackets[start : start + (1 << 20)], dtype=np.uint8)
        steps = np.where((chunk == ord("[")) | (chunk == ord("{")), 1, -1)
        depth = base + np.cumsum(steps, dtype=np.int64)
        deepest, base = max(deepest, int(depth.max())), int(depth[-1])
    return deepest


def _no_constant(name: str):
    raise BadField("file", f"holds {name}, which is not a JSON number")


def _int(text: str) -> int:
    if len(text.lstrip("-")) > 19 or abs(value := int(text)) >= 2**63:
        raise BadField("file", f"holds an integer of {len(text.lstrip('-'))} digits (at most 2^63)")
    return value


def _float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise BadField("file", f"holds the number {show(text, 30)}, beyond float64")
    return value


def _object(pairs: list) -> dict:
    out = {}
    for key, value in pairs:
        if key in out:
            raise BadField("file", f"key {show(key)} appears twice in one object")
        out[key] = value
    return out


def parse_record(raw: bytes) -> dict:
    """The record in ``raw``: strict JSON, bounded depth, an object."""
    if _json_depth(raw) > MAX_JSON_DEPTH:
        raise BadField("file", f"nested more than {MAX_JSON_DEPTH} levels deep")
    try:
        record = json.loads(
            raw.decode("utf-8"),
            object_pairs_hook=_object,
            parse_constant=_no_constant,
            parse_int=_int,
            parse_float=_float,
        )
    except UnicodeDecodeError:
        raise BadField("file", "not UTF-8 text") from None
    except json.JSONDecodeError as err:
        where = f"line {err.lineno} column {err.colno}"
        raise BadField("file", f"not JSON ({err.msg} at {where})") from None
    except RecursionError:  # the depth check above makes this unreachable
        raise BadField("file", "nested too deeply") from None
    if not isinstance(record, dict):
        raise BadField("file", "not a JSON object")
    return record


def check_format(record: dict, versions: tuple) -> None:
    if record.get("format") != FORMAT:
        raise BadField("format", f"must be {FORMAT!r}, got {show(record.get('format'))}")
    version = record.get("format_version")
    if type(version) is not int or version not in versions:
        raise BadField(
            "format_version",
            f"{show(version)} is not one this dpconvex reads here ({list(versions)}); "
            "a newer dpconvex may read it",
        )


def number_field(record: dict, key: str) -> float:
    value = record.get(key)
    if type(value) not in (int, float):
        raise BadField(key, f"must be a number, got {show(value)}")
    return float(value)


def one_line(err: BaseException) -> str:
    text = " ".join(str(err).split())
    return text if len(text) <= 200 else text[:197] + "..."
