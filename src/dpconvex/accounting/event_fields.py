"""Field-by-field checks of a DpEvent tree (no serialization: the lowest layer of checks).

dp_accounting's event classes are plain attrs records: ``GaussianDpEvent(nan)`` or
``SelfComposedDpEvent(event, -1)`` construct without complaint, and an accountant
then prices them as something no mechanism is (a negative count once took a budget
ledger from 0.794 spent to 0.0005). :func:`check_event` walks an event tree and
raises a ``ValueError`` naming the first nonsense field: counts must be positive
integers, noise parameters finite and positive, sampling rates in (0, 1], sample
sizes consistent. dpconvex's own events validate their fields on construction.
"""

from __future__ import annotations

from dp_accounting import dp_event as de

from .. import _validation as v
from .events import RandomChoiceDpEvent
from .limits import bounded, check_count


def _count(name: str, value: object) -> int:
    return check_count(name, value)


def _noise(name: str, value: object) -> float:
    return bounded(name, value)  # also refuses bools, and scales accounting cannot handle


def check_event(event: object) -> de.DpEvent:
    """Return ``event`` after checking every field of every node; raise ``ValueError`` if not."""
    if not isinstance(event, de.DpEvent):
        raise TypeError(f"event must be a DpEvent, got {type(event).__name__}")
    _check_node(event)
    return event


def _check_node(event: de.DpEvent) -> None:  # noqa: C901 - one branch per event type
    name = type(event).__name__
    if isinstance(event, de.SelfComposedDpEvent):
        _count(f"{name}.count", event.count)
        _check_child(name, event.event)
    elif isinstance(event, de.ComposedDpEvent | RandomChoiceDpEvent):
        if not isinstance(event.events, list | tuple):
            raise ValueError(f"{name}.events must be a list of events")
        for child in event.events:
            _check_child(name, child)
    elif isinstance(event, de.PoissonSampledDpEvent):
        v.sampling_rate(f"{name}.sampling_probability", event.sampling_probability)
        _check_child(name, event.event)
    elif isinstance(event, de.SampledWithReplacementDpEvent | de.SampledWithoutReplacementDpEvent):
        n = _count(f"{name}.source_dataset_size", event.source_dataset_size)
        m = _count(f"{name}.sample_size", event.sample_size)
        if isinstance(event, de.SampledWithoutReplacementDpEvent) and m > n:
            raise ValueError(f"{name}: sample_size {m} exceeds source_dataset_size {n}")
        _check_child(name, event.event)
    elif isinstance(event, de.RepeatAndSelectDpEvent):
        _noise(f"{name}.mean", event.mean)
        shape = v._as_float(f"{name}.shape", event.shape)  # inf (Poisson) is allowed
        if not shape > -1:
            raise ValueError(f"{name}.shape must be > -1 (inf for Poisson), got {shape}")
        _check_child(name, event.event)
    elif isinstance(event, de.GaussianDpEvent | de.LaplaceDpEvent):
        _noise(f"{name}.noise_multiplier", event.noise_multiplier)
    elif isinstance(event, de.DiscreteLaplaceDpEvent):
        _noise(f"{name}.noise_parameter", event.noise_parameter)
        _count(f"{name}.sensitivity", event.sensitivity)
    elif isinstance(event, de.RandomizedResponseDpEvent):
        p = v.finite(f"{name}.noise_parameter", event.noise_parameter)
        if not 0 <= p <= 1:
            raise ValueError(f"{name}.noise_parameter must be in [0, 1], got {p}")
        _count(f"{name}.num_buckets", event.num_buckets)
    elif isinstance(event, de.ZCDpEvent):
        v.nonnegative(f"{name}.rho", event.rho)
        v.nonnegative(f"{name}.xi", event.xi)
    elif isinstance(event, de.NonPrivateDpEvent | de.UnsupportedDpEvent):
        raise ValueError(f"{name} has no privacy guarantee to price")
    # NoOpDpEvent, dpconvex's events (validated on construction) and registered
    # custom events: nothing more to check here.


def _check_child(parent: str, child: object) -> None:
    if not isinstance(child, de.DpEvent):
        raise ValueError(f"{parent} holds {type(child).__name__}, not a DpEvent")
    _check_node(child)
