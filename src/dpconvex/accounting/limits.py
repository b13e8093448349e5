"""Numeric ranges of the parameters the accountants price.

Privacy accounting squares noise scales, divides by them and exponentiates privacy
losses, in floating point (largest double about 1.8e308). A noise scale of 1e-300
made the accountants divide by zero, one of 1e300 overflowed; neither has any use (the
first releases the data, the second nothing). So every noise scale, sensitivity and
their ratio (the signal-to-noise ratio that sets the privacy loss) must lie in
[:data:`SMALLEST`, :data:`LARGEST`]; outside, a ``ValueError`` names the parameter.
Counts (compositions, steps) are at most :data:`MAX_COUNT`.
"""

from __future__ import annotations

from .. import _validation as v

#: Smallest noise scale, sensitivity or ratio of the two accepted.
SMALLEST = 1e-100
#: Largest noise scale, sensitivity or ratio of the two accepted.
LARGEST = 1e100
#: Largest count accepted (2^53): above it a count is no longer exact as a float, and
#: no release composes that often.
MAX_COUNT = 2**53


def check_count(name: str, value: object) -> int:
    """``value`` as an int in [1, :data:`MAX_COUNT`]; bools, fractions and strings refused."""
    count = v.positive_int(name, value)
    if count > MAX_COUNT:
        raise ValueError(
            f"{name} must be at most 2^53 (about 9.0e15), got about 2^{count.bit_length() - 1}"
        )
    return count


def bounded(name: str, value: object) -> float:
    """``value`` as a float in [SMALLEST, LARGEST]; raise a one-line ``ValueError`` otherwise."""
    if isinstance(value, bool):
        raise ValueError(f"{name} must be a positive number, got {value!r}")
    value = v.positive(name, value)
    if not SMALLEST <= value <= LARGEST:
        raise ValueError(
            f"{name} must be between {SMALLEST:g} and {LARGEST:g}, got {value:g}: privacy "
            "accounting overflows beyond that range"
        )
    return value


def bounded_ratio(name: str, value: float, advice: str) -> float:
    """A signal-to-noise ratio in [SMALLEST, LARGEST]; ``advice`` says what to change."""
    if not SMALLEST <= value <= LARGEST:  # also refuses NaN
        side = "above" if value > LARGEST else "below"
        limit = LARGEST if value > LARGEST else SMALLEST
        raise ValueError(
            f"{name} = {value:g} is {side} {limit:g}, where privacy accounting overflows; {advice}"
        )
    return value
