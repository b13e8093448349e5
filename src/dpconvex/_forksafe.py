"""A lock that a forked child always gets unlocked.

``os.fork`` copies a lock in whatever state it has in the parent; a fork taken while
another thread holds it leaves the child with a lock nobody will release, and the child
hangs at its first ``with lock:``. Each :class:`ForkSafeLock` is re-created in the child
(``os.register_at_fork``), so what it guards (caches computed by the same code from
public inputs, the session record) stays usable after a fork.
"""

from __future__ import annotations

import os
import threading
import weakref


class ForkSafeLock:
    """A :class:`threading.Lock` (``with``, ``acquire``, ``release``) that a forked child
    finds unlocked."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        _ALL.add(self)

    def acquire(self, blocking: bool = True, timeout: float = -1) -> bool:
        return self._lock.acquire(blocking, timeout)

    def release(self) -> None:
        self._lock.release()

    def locked(self) -> bool:
        return self._lock.locked()

    def __enter__(self) -> ForkSafeLock:
        self._lock.acquire()
        return self

    def __exit__(self, *exc) -> None:
        self._lock.release()

    def _renew(self) -> None:
        self._lock = threading.Lock()


_ALL: weakref.WeakSet[ForkSafeLock] = weakref.WeakSet()


def _renew_all_in_child() -> None:
    for lock in list(_ALL):
        lock._renew()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_renew_all_in_child)
