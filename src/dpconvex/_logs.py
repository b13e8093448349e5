"""Keep dependency log noise off the user's terminal without hiding what matters.

dp_accounting's RDP accountant logs, through absl, one warning per RDP order at
which its series for the Poisson-subsampled Gaussian does not converge::

    _compute_log_a_frac failed to converge after 1000 iterations with q=..., sigma=...,
    alpha=... Excluding this order from the epsilon computation.

(``dp_accounting/rdp/rdp_privacy_accountant.py``, ``_compute_log_a_frac``.) On
that path the function returns ``inf`` for the order's RDP, and the conversion to
(epsilon, delta) takes a minimum over orders, so an order with RDP ``inf`` simply
drops out: the reported epsilon is still a valid upper bound, at worst a little
looser than it would be with that order. It does not affect correctness, and a
single accounting call can log it dozens of times (``dpconvex reproduce fig2
--quick`` printed about 170 such lines over its progress bar).

:func:`quiet_rdp_convergence` therefore drops *only* these records, counting
them; every other absl record goes through untouched, in particular
dp_accounting's "Negative Renyi divergence ... Returning an epsilon of zero"
warning, which signals numerical trouble that could matter. The count is
available from :func:`rdp_convergence_count`; the command line prints it as one
``note:`` line at the end of a run.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager

from ._forksafe import ForkSafeLock

_MESSAGE_PREFIX = "_compute_log_a_frac failed to converge"

_lock = ForkSafeLock()  # a forked child finds it unlocked


class _ConvergenceFilter(logging.Filter):
    """Drop and count dp_accounting's per-order convergence warnings; pass the rest."""

    def __init__(self) -> None:
        super().__init__()
        self.count = 0
        self.depth = 0

    def filter(self, record: logging.LogRecord) -> bool:
        if isinstance(record.msg, str) and record.msg.startswith(_MESSAGE_PREFIX):
            self.count += 1
            return False
        return True


_FILTER = _ConvergenceFilter()


@contextmanager
def quiet_rdp_convergence() -> Iterator[None]:
    """Within the block, drop (and count) absl's ``_compute_log_a_frac`` warnings.

    Re-entrant and thread-safe: the filter sits on the ``absl`` logger while at
    least one block is open, and is removed when the last one closes.
    """
    logger = logging.getLogger("absl")
    with _lock:
        if _FILTER.depth == 0:
            logger.addFilter(_FILTER)
        _FILTER.depth += 1
    try:
        yield
    finally:
        with _lock:
            _FILTER.depth -= 1
            if _FILTER.depth == 0:
                logger.removeFilter(_FILTER)


def rdp_convergence_count() -> int:
    """How many convergence warnings were dropped in this process so far."""
    return _FILTER.count


def rdp_convergence_note(since: int = 0) -> str | None:
    """One line summarizing the warnings dropped since the count was ``since``, or None."""
    n = _FILTER.count - since
    if n <= 0:
        return None
    return (
        f"note: dp_accounting's RDP series did not converge at some orders ({n} times); "
        "those orders were left out of the epsilon computation, so every epsilon reported "
        "is still an upper bound"
    )
