"""What the accountants remember within a process, and the threads their computations use.

* :data:`_RESULTS`: answers (epsilon or delta) to queries with identical public inputs;
  with the optional on-disk cache (:mod:`dpconvex.accounting.disk_cache`) also written
  to disk and read back only as hints for a calibration's search (:func:`search_hints`).
* :data:`_COMPOSED`: composed privacy-loss distributions of a public ledger.
* :data:`_BASE_PLDS`: PLDs of the base events of repeat-and-select tuning.

Every key is built from public values only (:func:`_event_key`). Registering a pricing
rule (:mod:`dpconvex.accounting.registry`) empties all three; a forked child gets new
locks (a lock held by another thread at the fork would stay locked there).
"""

from __future__ import annotations

import contextlib
import contextvars
import math
from collections import OrderedDict
from collections.abc import Iterator

import attr
import numpy as np
from dp_accounting import dp_event

from .._forksafe import ForkSafeLock
from . import disk_cache, registry


class _Uncacheable(Exception):
    """An event field whose value is not a plain number, string or event."""


def _event_key(value):
    """An exact, hashable description of an event tree (type and every field), public only.

    Only plain values (numbers, strings, None), dp_accounting events (attrs classes)
    and lists of them are accepted; anything else raises :class:`_Uncacheable`, and
    the query is then computed without the cache. Forms every accountant prices
    alike share a key: a composition of one event is that event, and ``b``
    self-compositions of ``a`` self-compositions of E are ``a b`` of E.
    """
    if isinstance(value, dp_event.ComposedDpEvent) and len(value.events) == 1:
        return _event_key(value.events[0])
    if isinstance(value, dp_event.SelfComposedDpEvent):
        inner, count = value.event, value.count
        while isinstance(inner, dp_event.SelfComposedDpEvent):
            inner, count = inner.event, count * inner.count
        while isinstance(inner, dp_event.ComposedDpEvent) and len(inner.events) == 1:
            inner = inner.events[0]
        if count == 1:
            return _event_key(inner)
        if inner is not value.event:
            return _event_key(dp_event.SelfComposedDpEvent(inner, count))
    if value is None or isinstance(value, (bool, int, float, str)):
        return (type(value).__name__, value)
    if isinstance(value, np.floating | np.integer):
        return (type(value).__name__, value.item())
    if isinstance(value, list | tuple):
        return ("seq", tuple(_event_key(x) for x in value))
    if isinstance(value, dp_event.DpEvent) and attr.has(type(value)):
        cls = type(value)
        fields = tuple((f.name, _event_key(getattr(value, f.name))) for f in attr.fields(cls))
        return (f"{cls.__module__}.{cls.__qualname__}", fields)
    raise _Uncacheable(type(value).__name__)


_BLAS: list = []


def _one_blas_thread():
    """Context: BLAS on one thread, so that an answer's last bits do not depend on the
    process's thread count (a search's runs in joblib workers must calibrate exactly as
    the main process did; the matrices here are small, one thread loses nothing)."""
    if not _BLAS:
        from threadpoolctl import ThreadpoolController

        _BLAS.append(ThreadpoolController())
    return _BLAS[0].limit(limits=1, user_api="blas")


#: Whether queries may answer approximately (1), also from the on-disk cache (2), or
#: only with computed answers (0, the default): see :func:`search_hints`.
_HINTS: contextvars.ContextVar[int] = contextvars.ContextVar("accounting_hints", default=0)


@contextlib.contextmanager
def search_hints(disk: bool = True) -> Iterator[None]:
    """Within: accountant queries may answer approximately, or from the on-disk cache.

    For the *search* of a calibration only. PLD queries compose Gaussians by a plain
    FFT power (dp_accounting's algorithm: fast, accurate at moderate deltas, not
    certified), and a stored answer may be read from disk unverified; either guides
    the search to the next candidate. The calibration then checks the candidate it
    returns with queries made outside this context: certified, computed in this
    process (or taken from the in-process cache, which holds only such answers).
    Never wrap a query whose answer is reported or released. ``disk=False`` keeps
    the approximations but not the disk (a search after a failed check).
    """
    token = _HINTS.set(2 if disk else 1)
    try:
        yield
    finally:
        _HINTS.reset(token)


def stored_answers_read() -> int:
    """How many answers queries have taken from the on-disk cache in this process."""
    return _RESULTS.hints


def _plausible(key, value: float) -> bool:
    """A stored answer of the right kind: a delta in [0, 1], an epsilon >= 0."""
    if not (value >= 0):  # NaN too
        return False
    return key[0] != "delta" or value <= 1.0


class _ResultCache:
    """Process-wide LRU of (query, public parameters) -> epsilon or delta.

    Every input of a query is public (the event's parameters, the accounting and its
    settings, the delta or epsilon asked for), so a repeated query (a calibration that
    prices the same candidate twice, an estimator reporting the epsilon its calibration
    already computed, a second fit with the same settings) returns the first answer
    instead of composing again. The value is the one the accountant computed in this
    process; nothing about privacy changes. With the optional on-disk cache on
    (:mod:`dpconvex.accounting.disk_cache`) answers are also written to disk, and read
    back only as hints inside :func:`search_hints`: a value from disk is never kept
    here, never reported, and an entry that disagrees with a recomputation turns the
    disk cache off for the process.
    """

    def __init__(self, size: int = 4096):
        self._size = size
        self._data: OrderedDict = OrderedDict()
        self._approximate: OrderedDict = OrderedDict()  # answers for searches only
        self._lock = ForkSafeLock()  # a forked child finds it unlocked
        self.hits = 0
        self.hints = 0

    def lookup(self, key, compute, approximate=None):
        """The answer to the query ``key``: ``compute()`` unless known.

        Inside :func:`search_hints`, a query that can be approximated is answered by
        ``approximate()`` (or its stored value, kept apart from computed answers, or
        read from the disk cache): a search then sees the same consistent answers
        whatever was computed before. Outside, only answers computed in this process
        are returned.
        """
        hinted = _HINTS.get()
        if hinted and approximate is not None:
            return self._approximation(key, approximate, hinted > 1)
        if key is None:
            return compute()
        with self._lock:
            if key in self._data:
                self._data.move_to_end(key)
                self.hits += 1
                return self._data[key]
        if hinted > 1 and (hint := self._stored(key, key)) is not None:
            return hint
        with _one_blas_thread():
            value = compute()
        self._record(key, value)
        with self._lock:
            self._data[key] = value
            if len(self._data) > self._size:
                self._data.popitem(last=False)
        return value

    def _stored(self, key, stored) -> float | None:
        """A plausible answer to ``key`` read from the disk cache under ``stored``, or None."""
        hint = disk_cache.get(stored)  # None unless the optional on-disk cache is on
        if hint is None or not _plausible(key, hint):
            return None
        self.hints += 1
        return hint

    def _approximation(self, key, approximate, disk: bool) -> float:
        if key is None:
            with _one_blas_thread():
                return approximate()
        with self._lock:
            if key in self._approximate:
                self._approximate.move_to_end(key)
                return self._approximate[key]
        stored = ("approximate", key)
        if disk and (hint := self._stored(key, stored)) is not None:
            return hint
        with _one_blas_thread():
            value = approximate()
        with self._lock:
            self._approximate[key] = value
            if len(self._approximate) > self._size:
                self._approximate.popitem(last=False)
        self._record(stored, value)
        return value

    @staticmethod
    def _record(key, value: float) -> None:
        """Write ``value`` to disk; an entry there that disagrees means the cache cannot be
        trusted even as a hint (forged with the user's key, or stale), so it is dropped."""
        stored = disk_cache.get(key)
        if stored is not None and not math.isclose(stored, value, rel_tol=1e-9, abs_tol=1e-300):
            disk_cache.distrust("an entry disagreed with the answer recomputed here")
            return
        if stored is None:
            disk_cache.put(key, value)

    def clear(self) -> None:
        with self._lock:
            self._data.clear()
            self._approximate.clear()


_RESULTS = _ResultCache()


class _ComposedCache:
    """Process-wide LRU of composed PLDs, keyed by (public ledger, grid step, round-off slack).

    A calibration composes the noise it returns; the fit's epsilon report then asks
    the same ledger for epsilon instead of delta, and reads the PLD already composed.
    A few entries only: a composed PLD can hold 10^5 - 10^6 grid points.
    """

    def __init__(self, size: int = 8):
        self._size = size
        self._data: OrderedDict = OrderedDict()
        self._lock = ForkSafeLock()  # a forked child finds it unlocked

    def get(self, key):
        with self._lock:
            if key in self._data:
                self._data.move_to_end(key)
                return self._data[key]
        return None

    def put(self, key, plds) -> None:
        with self._lock:
            self._data[key] = plds
            while len(self._data) > self._size:
                self._data.popitem(last=False)

    def clear(self) -> None:
        with self._lock:
            self._data.clear()


_COMPOSED = _ComposedCache()

#: PLDs of the bases of repeat-and-select tuning, by (public event, grid step).
_BASE_PLDS: OrderedDict = OrderedDict()


def _forget_all() -> None:
    for cache in (_RESULTS, _COMPOSED, _BASE_PLDS):
        cache.clear()


registry.on_change(_forget_all)
