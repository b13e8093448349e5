"""Spend before release: charge a budget ledger with the planned event before the data is used,
and report the fit to this process's session record (:mod:`dpconvex.models.session`)."""

from __future__ import annotations

import os

from dp_accounting.dp_event import DpEvent

from .session import observe


def open_budget(budget):
    """A :class:`~dpconvex.budget.Budget` from a Budget, a path, or None (no ledger)."""
    if budget is None:
        return None
    from ..budget import Budget

    if isinstance(budget, Budget):
        return budget
    if isinstance(budget, str | os.PathLike):
        if not os.path.exists(budget):
            raise ValueError(
                f"budget ledger {os.fspath(budget)!r} does not exist; create it with "
                "Budget(path, epsilon, delta) or `dpconvex budget init`"
            )
        return Budget(budget)
    raise TypeError(f"budget must be a dpconvex.Budget or a path to a ledger, got {budget!r}")


def charge(
    budget,
    event: DpEvent,
    *,
    mechanism: str,
    label: str = "",
    rows=None,
    delta: float | None = None,
) -> None:
    """Record ``event`` in the ledger, or raise :class:`BudgetExceededError` and record nothing.

    Once the ledger accepted it, the fit is reported to the session record with the
    ``rows`` it is about to read and its ``delta`` (:func:`~dpconvex.models.session.observe`:
    a :class:`~dpconvex.models.session.RepeatedFitWarning` when earlier fits of this
    process read the same rows). Fits whose caller prices them (a search's runs, a private
    pipeline's steps) are not reported (:func:`~dpconvex.models.session.priced_by_caller`).

    Called after the inputs are validated and the plan is calibrated from public
    shapes, and before the mechanism touches the data: a refused charge releases
    nothing. A charge is final even if the fit then fails (its failure may itself
    depend on the data).
    """
    ledger = open_budget(budget)
    if ledger is not None:
        ledger.spend(event, mechanism=mechanism, label=label)
    observe(event, rows=rows, delta=delta)
