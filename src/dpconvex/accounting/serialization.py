"""DpEvents to and from JSON-ready dicts: model files and budget ledgers store events so.

A stored event is ``{"event": NAME, "fields": {...}}``. NAME is looked up in
:data:`EVENT_CLASSES`, a fixed table of the event classes of dp_accounting and dpconvex
that a file may name (the names are the ``module.Class`` paths that files and ledgers
have always stored). Nothing else is ever imported or called: a name outside the table
is refused, whatever module it points to.

Files may be hostile, so reading is bounded by public caps, checked before anything is
built: events nest at most :data:`MAX_EVENT_DEPTH` levels, a stored tree holds at most
:data:`MAX_EVENT_NODES` events and :data:`MAX_EVENT_NUMBERS` numbers, integers are below
2^63. Field values must be numbers (non-finite ones only as ``{"float": "inf"}`` or
``"-inf"``, as :func:`event_to_dict` writes them), lists or events; the rebuilt event is
then checked by :func:`dpconvex.accounting.event_fields.check_event` (counts at most
2^53, noise scales in range, sampling rates in (0, 1], ...). Every refusal is one
``ValueError`` naming the field.
"""

from __future__ import annotations

import importlib
import math

import attr
from dp_accounting.dp_event import ComposedDpEvent, DpEvent

from .event_fields import check_event

#: Deepest nesting of events a stored event may have (an estimator's deepest is 4).
MAX_EVENT_DEPTH = 32
#: Most events (nodes of the tree) in one stored event.
MAX_EVENT_NODES = 10_000
#: Most numbers held in the list fields of one stored event (tables of noise levels).
MAX_EVENT_NUMBERS = 1_000_000
#: Integers in a stored event are below this in absolute value.
MAX_INTEGER = 2**63

_DP = "dp_accounting.dp_event"
_OURS = {
    "dpconvex.accounting.events": (
        "ObjectivePerturbationDpEvent",
        "AmpDpEvent",
        "RandomChoiceDpEvent",
        "DiscreteGaussianDpEvent",
        "DiscreteLaplaceScaleDpEvent",
    ),
    "dpconvex.bcd.events": ("HiddenStateDpEvent", "MbcdCompositionDpEvent"),
    "dpconvex.sco.events": (
        "NormGaussianDpEvent",
        "ConstrainedObjPertDpEvent",
        "ShuffledNormGaussianDpEvent",
    ),
    "dpconvex.sampling.posterior": ("ApproximateDpEvent",),
    "dpconvex.queries.privacy": ("GeneralizedGaussianDpEvent",),
    "dpconvex.queries.sparse_vector": ("PureDpEvent",),
    # dp_accounting's events that check_event checks field by field. Not listed:
    # NonPrivate/Unsupported (nothing to price), and the tree-aggregation, mixture and
    # truncated-subsampling events (fields unchecked, pricing cost unbounded).
    _DP: (
        "NoOpDpEvent",
        "GaussianDpEvent",
        "LaplaceDpEvent",
        "DiscreteLaplaceDpEvent",
        "RandomizedResponseDpEvent",
        "ZCDpEvent",
        "SelfComposedDpEvent",
        "ComposedDpEvent",
        "PoissonSampledDpEvent",
        "SampledWithReplacementDpEvent",
        "SampledWithoutReplacementDpEvent",
        "RepeatAndSelectDpEvent",
    ),
}
#: The event classes a file may name: name -> (module, class). Constants of this
#: module; a name read from a file is only ever a key into this table (or :data:`_STORED_AS`).
EVENT_CLASSES: dict[str, tuple[str, str]] = {
    f"{module}.{name}": (module, name) for module, names in _OURS.items() for name in names
}
#: Classes renamed since files first named them: name now -> name files hold. Files keep
#: the old name, so they read the same before and after the rename (dpconvex's discrete
#: Laplace event takes a scale, dp_accounting's ``DiscreteLaplaceDpEvent`` the inverse).
_STORED_AS = {
    "dpconvex.accounting.events.DiscreteLaplaceScaleDpEvent": (
        "dpconvex.accounting.events.DiscreteLaplaceDpEvent"
    ),
}
_READ_AS = {stored: name for name, stored in _STORED_AS.items()}


def _show(value: object, limit: int = 80) -> str:
    """``value`` for an error message: repr, one line, at most ``limit`` characters."""
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def event_class(name: object) -> type:
    """The class of :data:`EVENT_CLASSES` stored as ``name``; ``ValueError`` for any other."""
    if isinstance(name, str) and name in _READ_AS:
        name = _READ_AS[name]
    if not isinstance(name, str) or name not in EVENT_CLASSES:
        raise ValueError(
            f"refusing to load event class {_show(name)}: not one of the event classes of "
            "dp_accounting and dpconvex that files may hold"
        )
    module, attribute = EVENT_CLASSES[name]
    cls = getattr(importlib.import_module(module), attribute)  # fixed names of this module
    if not (isinstance(cls, type) and issubclass(cls, DpEvent) and attr.has(cls)):
        raise ValueError(f"{name} is not a DpEvent class")  # only if the table goes stale
    return cls


def _stored_name(cls: type) -> str | None:
    """The name ``cls`` is stored under, or None if files may not hold it."""
    name = f"{cls.__module__}.{cls.__qualname__}"
    if name in EVENT_CLASSES and event_class(name) is cls:
        return _STORED_AS.get(name, name)
    return None


def _encode(value):
    if isinstance(value, DpEvent):
        return event_to_dict(value)
    if isinstance(value, list | tuple):
        return [_encode(v) for v in value]
    if isinstance(value, float) and not math.isfinite(value):
        return {"float": repr(value)}
    return value


def event_to_dict(event: DpEvent) -> dict:
    """A JSON-serializable description of ``event`` (its stored name plus its fields).

    Raises ``TypeError`` for an event whose class (or a nested one) is not in
    :data:`EVENT_CLASSES`: it could not be read back.
    """
    cls = type(event)
    if not isinstance(event, DpEvent) or not attr.has(cls):
        raise TypeError(f"cannot serialize {cls.__name__}: not an attrs DpEvent")
    name = _stored_name(cls)
    if name is None:
        raise TypeError(
            f"cannot serialize {cls.__name__}: files hold only the event classes of "
            "dp_accounting and dpconvex listed in dpconvex.accounting.serialization"
        )
    fields = {f.name: _encode(getattr(event, f.name)) for f in attr.fields(cls)}
    return {"event": name, "fields": fields}


class _Reader:
    """Rebuilds one stored event, counting events and numbers against the public caps."""

    def __init__(self):
        self.nodes = 0
        self.numbers = 0

    def event(self, data: object, depth: int, where: str) -> DpEvent:
        if depth > MAX_EVENT_DEPTH:
            raise ValueError(f"event nested more than {MAX_EVENT_DEPTH} levels deep at {where}")
        self.nodes += 1
        if self.nodes > MAX_EVENT_NODES:
            raise ValueError(f"event holds more than {MAX_EVENT_NODES} events")
        if not isinstance(data, dict) or set(data) != {"event", "fields"}:
            raise ValueError(f"{where} must be an object with exactly the keys event and fields")
        cls = event_class(data["event"])
        fields = data["fields"]
        if not isinstance(fields, dict):
            raise ValueError(f"{where}.fields must be an object")
        here = f"{cls.__name__}"
        known = {f.name: f for f in attr.fields(cls)}
        unknown = sorted(set(fields) - set(known), key=str)
        if unknown:
            raise ValueError(f"{here} has no field {_show(unknown[0])}")
        missing = [n for n, f in known.items() if n not in fields and f.default is attr.NOTHING]
        if missing:
            raise ValueError(f"{here} misses its field {missing[0]!r}")
        values = {k: self.value(v, depth + 1, f"{here}.{k}") for k, v in fields.items()}
        if cls is not ComposedDpEvent:  # check_event walks only ComposedDpEvent's lists
            _validate_listed(values)
        try:
            return cls(**values)
        except (ValueError, TypeError, ArithmeticError, IndexError, AttributeError) as err:
            raise ValueError(f"{here}: {_one_line(err)}") from None

    def value(self, value: object, depth: int, where: str):
        if isinstance(value, dict) and "event" in value:
            return self.event(value, depth, where)
        if isinstance(value, dict):
            return _nonfinite(value, where)
        if isinstance(value, list):
            if depth > MAX_EVENT_DEPTH:
                raise ValueError(f"{where} nested more than {MAX_EVENT_DEPTH} levels deep")
            self.numbers += len(value)
            if self.numbers > MAX_EVENT_NUMBERS:
                raise ValueError(f"event holds more than {MAX_EVENT_NUMBERS} list entries")
            return [self.value(v, depth + 1, where) for v in value]
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise ValueError(f"{where} must be a number, a list or an event, got {_show(value)}")
        if isinstance(value, int) and abs(value) >= MAX_INTEGER:
            raise ValueError(f"{where} is an integer of {value.bit_length()} bits, above 2^63")
        if isinstance(value, float) and not math.isfinite(value):
            raise ValueError(f"{where} must be finite, got {value}")
        return value


def _validate_listed(values: dict) -> None:
    """Check the events held in list fields (RandomChoiceDpEvent's), which check_event skips."""
    for value in values.values():
        for item in value if isinstance(value, list) else ():
            if isinstance(item, DpEvent):
                check_event(item)


def _nonfinite(value: dict, where: str) -> float:
    if set(value) == {"float"} and value["float"] in ("inf", "-inf"):
        return float(value["float"])
    raise ValueError(f'{where} must be a number, a list, an event or {{"float": "inf"}}')


def _one_line(err: BaseException) -> str:
    text = " ".join(str(err).split()) or type(err).__name__
    return text if len(text) <= 300 else text[:297] + "..."


def event_from_dict(data: dict) -> DpEvent:
    """Rebuild and validate an event stored by :func:`event_to_dict`.

    Only the classes of :data:`EVENT_CLASSES`; sizes within the caps of this module;
    every field checked (see the module docstring). Raises one ``ValueError`` otherwise.
    """
    event = _Reader().event(data, 1, "event")
    try:
        return check_event(event)
    except TypeError as err:
        raise ValueError(str(err)) from None
