"""DpEvents to and from JSON-ready dicts (ours and dp_accounting's: both are attrs classes)."""

from __future__ import annotations

import importlib
import math

import attr
from dp_accounting.dp_event import DpEvent

_ALLOWED_MODULES = ("dp_accounting.", "dpconvex.")


def _encode(value):
    if isinstance(value, DpEvent):
        return event_to_dict(value)
    if isinstance(value, list | tuple):
        return [_encode(v) for v in value]
    if isinstance(value, float) and not math.isfinite(value):
        return {"float": repr(value)}
    return value


def _decode(value):
    if isinstance(value, dict) and "event" in value:
        return event_from_dict(value)
    if isinstance(value, dict) and set(value) == {"float"}:
        return float(value["float"])
    if isinstance(value, list):
        return [_decode(v) for v in value]
    return value


def event_to_dict(event: DpEvent) -> dict:
    """A JSON-serializable description of ``event`` (class path plus its fields)."""
    if not isinstance(event, DpEvent) or not attr.has(type(event)):
        raise TypeError(f"cannot serialize {type(event).__name__}: not an attrs DpEvent")
    cls = type(event)
    fields = {f.name: _encode(getattr(event, f.name)) for f in attr.fields(cls)}
    return {"event": f"{cls.__module__}.{cls.__qualname__}", "fields": fields}


def event_from_dict(data: dict) -> DpEvent:
    """Rebuild an event from :func:`event_to_dict` (only dp_accounting and dpconvex classes)."""
    path = data["event"]
    if not path.startswith(_ALLOWED_MODULES):
        raise ValueError(f"refusing to load event class {path!r}")
    module, _, name = path.rpartition(".")
    cls = getattr(importlib.import_module(module), name)
    if not (isinstance(cls, type) and issubclass(cls, DpEvent)):
        raise ValueError(f"{path} is not a DpEvent class")
    return cls(**{k: _decode(v) for k, v in data["fields"].items()})
