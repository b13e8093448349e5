"""A fork taken while another thread holds one of the library's locks leaves the child
usable: every lock guarding a cache or the session record is a ForkSafeLock."""

import os
import threading
import time

import pytest

from dpconvex import _logs
from dpconvex.accounting import caches, disk_cache
from dpconvex.budget import chain
from dpconvex.models import session

pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")

LOCKS = {
    "results": lambda: caches._RESULTS._lock,
    "composed": lambda: caches._COMPOSED._lock,
    "disk cache": lambda: disk_cache._lock,
    "logs": lambda: _logs._lock,
    "session record": lambda: session._SESSION.lock,
    "ledger event memo": lambda: chain._EVENTS._lock,
    "ledger RDP memo": lambda: chain._RDP._lock,
}


def _child_acquires(lock_of) -> bool:
    """Fork while a thread holds ``lock_of()``; whether the child gets that lock within 5 s."""
    held, release = threading.Event(), threading.Event()

    def hold():
        with lock_of():
            held.set()
            release.wait(30)

    thread = threading.Thread(target=hold)
    thread.start()
    held.wait(10)
    try:
        pid = os.fork()
        if pid == 0:  # the child: never return into pytest
            code = 1
            try:
                code = 0 if lock_of().acquire(timeout=5) else 1
            finally:
                os._exit(code)
    finally:
        release.set()
        thread.join(30)
    deadline = time.time() + 30
    while time.time() < deadline:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            return os.waitstatus_to_exitcode(status) == 0
        time.sleep(0.02)
    os.kill(pid, 9)
    os.waitpid(pid, 0)
    return False


@pytest.mark.parametrize("name", sorted(LOCKS))
def test_a_lock_held_by_another_thread_is_free_in_a_forked_child(name):
    assert _child_acquires(LOCKS[name])
