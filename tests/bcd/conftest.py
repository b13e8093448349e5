"""One BLAS thread for the DP-MBCD tests: small matrices, and the machine is shared."""

import pytest
from threadpoolctl import threadpool_limits


@pytest.fixture(autouse=True)
def _single_blas_thread():
    with threadpool_limits(1):
        yield
