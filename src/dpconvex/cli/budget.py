"""``dpconvex budget``: create, show and acknowledge a privacy budget ledger."""

from __future__ import annotations

import json
import os
from pathlib import Path

import click

from ..budget import MAX_FILTER_ORDER, safe_text
from .options import (
    EPSILON,
    MAX_LINE,
    InputFile,
    NumberRange,
    delta_option,
    json_option,
    output_file,
)


@click.group("budget")
def budget_group() -> None:
    """A privacy budget ledger: one file that every training run charges before it starts.

    Several processes can share a ledger; a run that would overspend it is refused
    before it touches the data. The ledger is an SQLite file.
    """


@budget_group.command("init")
@click.argument("path", type=click.Path(dir_okay=False))
@click.option(
    "--epsilon",
    type=EPSILON,
    required=True,
    help="Total epsilon that all runs charged to this ledger may spend together.",
)
@delta_option
@click.option(
    "--accounting",
    type=click.Choice(["auto", "pld", "rdp", "renyi-filter"]),
    default="auto",
    show_default=True,
    help="How the spends are added up. auto, pld, rdp: the privacy-loss distribution (pld, "
    "tighter) or Renyi DP (rdp) of all spends together, auto choosing pld when every spend "
    "supports it; valid when the runs and their settings are planned before the first one. "
    "renyi-filter: valid even when each run's settings are chosen from earlier results, "
    "usually admitting somewhat fewer runs.",
)
@click.option(
    "--order",
    type=NumberRange(1, MAX_FILTER_ORDER, min_open=True),
    default=None,
    help="With --accounting renyi-filter: the Renyi order the filter counts at (default: "
    "the order that admits the most Gaussian noise spends for this budget; for DP-SGD a "
    "lower order often admits more).",
)
def budget_init(path, epsilon, delta, accounting, order):
    """Create a new ledger file at PATH with a total budget (epsilon, delta)."""
    from ..budget import RENYI_FILTER, Budget

    if os.path.lexists(path):
        raise ValueError(f"{path} exists already; use `dpconvex budget show {path}`")
    if order is not None and accounting != RENYI_FILTER:
        raise ValueError(f"--order is for --accounting {RENYI_FILTER}")
    output_file(path, force=False, mkdir=False)
    ledger = Budget(path, epsilon, delta, accounting=accounting, order=order)
    shown = f"created {path}: epsilon={ledger.epsilon:g}, delta={ledger.delta:g}"
    if ledger.order is not None:
        shown += f", Renyi filter at order {ledger.order:g}"
    click.echo(safe_text(shown, MAX_LINE))


def _open_ledger(path: str):
    """The existing ledger at ``path`` (an empty file is not one: SQLite would take it
    for a new, empty database)."""
    from ..budget import Budget

    if Path(path).stat().st_size == 0:
        raise ValueError(
            f"{path} is empty, not a ledger; create one with `dpconvex budget init PATH "
            "--epsilon E --delta D`"
        )
    return Budget(path)


@budget_group.command("show")
@click.argument("path", type=InputFile())
@json_option
def budget_show(path, as_json):
    """Print what was spent from the ledger at PATH, and what is left.

    Labels and times are printed as the ledger holds them, with control characters
    escaped (for example \\x1b) and unreadable times shown as "invalid time".
    """
    from ..budget import summary_text

    summary = _open_ledger(path).summary()
    if as_json:
        click.echo(json.dumps(summary, indent=2))
    else:
        click.echo(summary_text(summary))
    if summary["tampering"]:
        click.echo(
            f"WARNING: the ledger was altered: {summary['tampering']}. Spending is refused "
            f"until you run `dpconvex budget acknowledge {safe_text(path)}`.",
            err=True,
        )


@budget_group.command("acknowledge")
@click.argument("path", type=InputFile())
def budget_acknowledge(path):
    """Accept an altered ledger at PATH as it now stands, so that spending can resume.

    Run this only after checking what `dpconvex budget show` reports: spends whose
    entries were deleted no longer count against the budget. The finding is kept in
    the ledger and listed by `show`.
    """
    finding = _open_ledger(path).acknowledge_tampering()
    shown = f"acknowledged: {finding}" if finding else f"{path} is intact; nothing to do"
    click.echo(safe_text(shown, MAX_LINE))
