"""Validation of DpEvents before they are priced.

dp_accounting's event classes are plain attrs records: ``GaussianDpEvent(nan)`` or
``SelfComposedDpEvent(event, -1)`` construct without complaint, and an accountant
then prices them as something no mechanism is (a negative count once took a budget
ledger from 0.794 spent to 0.0005). :func:`validate_event` walks an event tree
(:func:`dpconvex.accounting.event_fields.check_event`) and raises a ``ValueError``
naming the first nonsense field: counts must be positive
integers, noise parameters finite and positive, sampling rates in (0, 1], sample
sizes consistent. dpconvex's own events validate their fields on construction.
"""

from __future__ import annotations

import json

from dp_accounting import dp_event as de

from .event_fields import check_event
from .serialization import event_from_dict, event_to_dict


def validate_event(event: object, *, storable: bool = False) -> de.DpEvent:
    """Return ``event`` after checking every field of every node; raise ``ValueError`` if not.

    ``storable=True`` (the budget ledger) also requires that the event survives a
    round trip through :func:`~dpconvex.accounting.serialization.event_to_dict`, so
    that a recorded event can always be loaded back and priced again; an event type
    the ledger cannot rebuild is refused before anything is written.
    """
    check_event(event)
    if storable:
        try:
            text = json.dumps(event_to_dict(event))
            back = event_from_dict(json.loads(text))
        except (TypeError, ValueError, AttributeError, ImportError) as err:
            raise ValueError(
                f"{type(event).__name__} cannot be stored in a budget ledger: {err}"
            ) from None
        if back != event:
            raise ValueError(
                f"{type(event).__name__} does not load back equal to itself from the "
                "ledger's JSON; it cannot be stored"
            )
    return event
