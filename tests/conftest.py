"""Shared test setup.

``import dpconvex`` here, in pytest-xdist's controller as well as its workers: warnings
sent back from the workers name dpconvex's warning classes, and the controller importing
dpconvex from two threads at once deadlocked on the import lock. The session record of
private fits (:mod:`dpconvex.models.session`) is cleared around each test, so that fits
of one test never count as repeated fits of another.
"""

import pytest

import dpconvex
from dpconvex.models.session import reset_session


@pytest.fixture(autouse=True)
def _fresh_session():
    reset_session()
    yield
    reset_session()


assert dpconvex.__version__
