"""Argument checks shared by the whole package.

Every check raises ``ValueError`` whose message names the offending parameter,
so that a bad privacy parameter can never pass silently into a bound.
"""

from __future__ import annotations

import math
from numbers import Real


def _as_float(name: str, value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, Real):
        try:
            value = float(value)  # numpy scalars, strings from a CLI, ...
        except (TypeError, ValueError):
            raise ValueError(f"{name} must be a real number, got {value!r}") from None
    value = float(value)
    if math.isnan(value):
        raise ValueError(f"{name} must be a number, got NaN")
    return value


def finite(name: str, value: object) -> float:
    """Return ``value`` as a float; raise unless it is a finite real number."""
    value = _as_float(name, value)
    if not math.isfinite(value):
        raise ValueError(f"{name} must be finite, got {value}")
    return value


def positive(name: str, value: object) -> float:
    """Return ``value``; raise unless it is finite and > 0."""
    value = finite(name, value)
    if value <= 0:
        raise ValueError(f"{name} must be > 0, got {value}")
    return value


def nonnegative(name: str, value: object) -> float:
    """Return ``value``; raise unless it is finite and >= 0."""
    value = finite(name, value)
    if value < 0:
        raise ValueError(f"{name} must be >= 0, got {value}")
    return value


def probability_open(name: str, value: object) -> float:
    """Return ``value``; raise unless 0 < value < 1 (used for delta)."""
    value = finite(name, value)
    if not 0 < value < 1:
        raise ValueError(f"{name} must be in the open interval (0, 1), got {value}")
    return value


def sampling_rate(name: str, value: object) -> float:
    """Return ``value``; raise unless 0 < value <= 1."""
    value = finite(name, value)
    if not 0 < value <= 1:
        raise ValueError(f"{name} must be in (0, 1], got {value}")
    return value


def positive_int(name: str, value: object) -> int:
    """Return ``value`` as an int; raise unless it is an integer >= 1."""
    if isinstance(value, bool):
        raise ValueError(f"{name} must be a positive integer, got {value!r}")
    try:
        as_int = int(value)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a positive integer, got {value!r}") from None
    if as_int != value or as_int < 1:
        raise ValueError(f"{name} must be a positive integer, got {value!r}")
    return as_int


def regularization_exceeds_smoothness(lam: object, beta: object) -> tuple[float, float]:
    """Return ``(lam, beta)``; raise unless lam > beta >= 0.

    Every objective-perturbation bound of seed 000 (Thms 3.1, 3.2, 4.1) needs
    lambda > beta strictly: the Jacobian term -log(1 - beta/lambda) is infinite
    at lambda = beta and undefined below it.
    """
    beta = nonnegative("beta", beta)
    lam = positive("lam", lam)
    if lam <= beta:
        raise ValueError(
            f"lam must be > beta for objective perturbation (got lam={lam}, beta={beta}); "
            "the Jacobian term -log(1 - beta/lam) is undefined otherwise"
        )
    return lam, beta
