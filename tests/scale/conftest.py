"""Out-of-core tests run dask graphs in this process unless a test starts a cluster."""

import pytest


@pytest.fixture(autouse=True)
def synchronous_scheduler():
    dask = pytest.importorskip("dask")
    with dask.config.set(scheduler="synchronous"):
        yield
