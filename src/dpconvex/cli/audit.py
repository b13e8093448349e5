"""``dpconvex audit``: empirical privacy audits of the mechanisms."""

from __future__ import annotations

import json
import time
from pathlib import Path

import click

from ..audit.core import MAX_RUNS as AUDIT_MAX_RUNS
from ..audit.core import MIN_RUNS as AUDIT_MIN_RUNS
from ..budget import safe_text
from .options import (
    SEED,
    Count,
    json_option,
    output_file,
)

AUDIT_MARKERS = ("<!-- audit-table:start -->", "<!-- audit-table:end -->")


@click.command("audit")
@click.argument("mechanism", required=False)
@click.option(
    "--all",
    "run_all",
    is_flag=True,
    help="Audit every mechanism and write the results as a table into --out.",
)
@click.option(
    "--runs",
    type=Count(AUDIT_MIN_RUNS, AUDIT_MAX_RUNS),
    default=None,
    help="Runs of the mechanism on each of the two inputs. More runs give a tighter lower "
    "bound and take longer. Default: 100000 with --all, else 10000.",
)
@click.option(
    "--seed",
    type=SEED,
    default=0,
    show_default=True,
    help="Seed of the audit, for a repeatable result.",
)
@click.option(
    "--out",
    type=click.Path(dir_okay=False),
    default="docs/reliability.md",
    show_default=True,
    help="With --all: Markdown file whose audit table is replaced (or appended).",
)
@json_option
def audit(mechanism, run_all, runs, seed, out, as_json):
    """Check a mechanism's claimed epsilon by attacking it.

    Runs MECHANISM many times on two inputs that differ in one person and measures
    how well its outputs tell them apart; this gives a statistical lower bound on
    the true epsilon (95% confidence), printed beside the epsilon dpconvex claims.
    A lower bound above the claim would reveal a bug. An unknown MECHANISM name
    lists the available ones.
    """
    from ..audit import AUDITS, run_audit

    if run_all == (mechanism is not None):
        raise ValueError(f"give one MECHANISM ({', '.join(sorted(AUDITS))}) or --all")
    if mechanism is not None and mechanism not in AUDITS:
        raise ValueError(
            f"unknown mechanism '{safe_text(mechanism, 60)}'; choose one of "
            f"{', '.join(sorted(AUDITS))}"
        )
    if run_all:
        output_file(out, force=True, mkdir=True)
    names = sorted(AUDITS) if run_all else [mechanism]
    runs = runs or (100_000 if run_all else 10_000)
    results = [run_audit(name, runs, seed=seed, progress=not as_json) for name in names]
    if as_json:
        click.echo(json.dumps([r.as_dict() for r in results], indent=2))
    else:
        click.echo(
            f"{'mechanism':<22} {'runs':>8} {'claimed eps':>12} {'audited eps >=':>15} {'ratio':>6}"
        )
        for r in results:
            click.echo(
                f"{r.mechanism:<22} {r.runs:>8} {r.claimed_epsilon:>12.4f} "
                f"{r.epsilon_lower_bound:>15.4f} {r.ratio:>6.3f}"
            )
    if run_all:
        _write_audit_table(Path(out), results, runs, seed)


def _write_audit_table(path: Path, results, runs: int, seed: int) -> None:
    lines = [
        AUDIT_MARKERS[0],
        "",
        f"`dpconvex audit --all --runs {runs} --seed {seed}` "
        f"({time.strftime('%Y-%m-%d', time.gmtime())}; delta = 1e-5; Clopper-Pearson, "
        "95% confidence):",
        "",
        "| mechanism | runs (both inputs) | claimed eps | audited lower bound | ratio |",
        "|---|---|---|---|---|",
    ]
    for r in results:
        lines.append(
            f"| {r.mechanism} | {r.runs} | {r.claimed_epsilon:.4f} | "
            f"{r.epsilon_lower_bound:.4f} | {r.ratio:.3f} |"
        )
    lines += ["", AUDIT_MARKERS[1]]
    table = "\n".join(lines)
    text = path.read_text() if path.exists() else "# Reliability\n\n"
    if AUDIT_MARKERS[0] in text and AUDIT_MARKERS[1] in text:
        head, rest = text.split(AUDIT_MARKERS[0], 1)
        tail = rest.split(AUDIT_MARKERS[1], 1)[1]
        text = head + table + tail
    else:
        text = text.rstrip() + "\n\n" + table + "\n"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
