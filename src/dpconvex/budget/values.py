"""A ledger's limits, errors and entries, and the checks of the values it records and shows.

Every string read back from a ledger file may be anything (the file can be edited), so
what is printed goes through :func:`safe_text` and :func:`safe_time`.
"""

from __future__ import annotations

import math
import time
import unicodedata
from dataclasses import dataclass
from numbers import Integral, Real

import numpy as np
from dp_accounting.dp_event import DpEvent

from .. import _validation as v

#: Smallest delta a ledger accepts. Smaller targets make the accountants' tails (and
#: their memory) grow without bound, for no meaningful difference in protection.
MIN_DELTA = 1e-100

#: Longest stored event text a ledger reads (a DP-SGD search's event is a few kB).
MAX_EVENT_TEXT = 1 << 24


#: The accounting of a ledger that is a fixed-order Renyi privacy filter.
RENYI_FILTER = "renyi-filter"
ACCOUNTINGS = ("auto", "pld", "rdp", RENYI_FILTER)

#: Renyi orders a filter accepts: above 1, at most this.
MAX_FILTER_ORDER = 1e6

#: Longest label or mechanism name a spend accepts (characters).
MAX_NAME = 1000

#: Latest clock reading a spend records: 9999-12-31 23:59:59 UTC.
MAX_CLOCK = 253402300799.0

# Unicode categories refused in labels and escaped on display: controls (ANSI
# escapes, newlines), format characters (bidirectional overrides, zero-width),
# surrogates, line and paragraph separators.
_UNSAFE_CATEGORIES = frozenset({"Cc", "Cf", "Cs", "Zl", "Zp"})


class BudgetExceededError(RuntimeError):
    """The spend would take the ledger over its budget; nothing was recorded."""


class LedgerError(RuntimeError):
    """The ledger file cannot be used safely (aliased, unreadable, unwritable, full)."""


class LedgerTamperedError(LedgerError):
    """The ledger's hash chain is broken; spending waits for an acknowledgment."""


class LedgerFileWarning(UserWarning):
    """The ledger is not the file it was created as (a copy, a restore, a move)."""


@dataclass(frozen=True)
class Entry:
    """One recorded spend. ``rdp_after`` is the filter's Renyi sum (filter ledgers only)."""

    id: int
    time: float
    mechanism: str
    label: str
    event: DpEvent
    epsilon_after: float
    rdp_after: float | None = None


# --- values ---------------------------------------------------------------------------
def _budget_number(name: str, value: object) -> float:
    """A float from a real number; bools and strings are refused, float32 keeps its digits."""
    if isinstance(value, bool | np.bool_) or not isinstance(value, Real | Integral):
        raise ValueError(f"{name} must be a number, got {value!r}")
    if isinstance(value, np.floating) and np.finfo(value.dtype).bits < 64:
        value = float(str(value))  # np.float32(0.1) means 0.1, not 0.10000000149
    return v.finite(name, value)


def _check_delta(delta: object) -> float:
    delta = v.probability_open("delta", _budget_number("delta", delta))
    if delta < MIN_DELTA:
        raise ValueError(
            f"delta={delta:g} is below {MIN_DELTA:g}, the smallest delta a ledger accepts"
        )
    return delta


def _check_name(name: str, value: object) -> str:
    """A label or mechanism name: a string without control characters, at most MAX_NAME long."""
    text = str(value)
    if len(text) > MAX_NAME:
        raise ValueError(f"{name} has {len(text)} characters; a ledger keeps at most {MAX_NAME}")
    for char in text:
        if unicodedata.category(char) in _UNSAFE_CATEGORIES:
            raise ValueError(
                f"{name} contains the control character U+{ord(char):04X}; labels and mechanism "
                "names are printed by `dpconvex budget show`, so use printable text"
            )
    return text


def _clock() -> float:
    """The time to record; refuses a clock that is not a date between 1970 and 9999."""
    now = time.time()
    if not (isinstance(now, Real) and math.isfinite(now) and 0.0 <= now <= MAX_CLOCK):
        raise LedgerError(
            f"the system clock reads {now!r}, not a time between 1970 and 9999; nothing "
            "was spent. Fix the clock and try again."
        )
    return float(now)


# --- display-safe values (a ledger file may hold anything) -----------------------------
def safe_text(value: object, limit: int = 200) -> str:
    """``value`` as printable text: control characters escaped, at most ``limit`` characters.

    A ledger file can be edited by anyone who can write it, so every string read from
    it (labels, mechanism names, findings) goes through this before it is printed.
    """
    text = value if isinstance(value, str) else repr(value)
    out = []
    for char in text[: limit + 1]:
        if unicodedata.category(char) in _UNSAFE_CATEGORIES:
            code = ord(char)
            out.append(f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}")
        else:
            out.append(char)
    shown = "".join(out)
    return shown if len(text) <= limit else shown[:limit] + "..."


def safe_time(value: object) -> str:
    """A recorded time as ``YYYY-MM-DD HH:MM:SS UTC``, or ``invalid time`` when it is not one."""
    if isinstance(value, bool) or not isinstance(value, Real):
        return "invalid time"
    seconds = float(value)
    if not (math.isfinite(seconds) and 0.0 <= seconds <= MAX_CLOCK):
        return f"invalid time ({seconds:.6g})"
    return time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(seconds))


def _time_value(value: object) -> float:
    """A stored time as a float (NaN when the file holds something else)."""
    finite = _finite_or_none(value)
    return math.nan if finite is None else finite


def _finite_or_none(value: object) -> float | None:
    if isinstance(value, bool) or not isinstance(value, Real):
        return None
    value = float(value)
    return value if math.isfinite(value) else None
