"""``dpconvex schema``: write a schema file for a raw table."""

from __future__ import annotations

import json
from pathlib import Path

import click

from .options import (
    InputFile,
    _check_output,
    force_option,
    mkdir_option,
)


@click.group("schema")
def schema_group() -> None:
    """Schema files: how each column of a raw table becomes features (for `fit --schema`)."""


@schema_group.command("template")
@click.option(
    "--data", type=InputFile(), required=True, help="The CSV file (only its header line is read)."
)
@click.option("--target", default=None, help="The target column, left out of the schema.")
@click.option(
    "--out",
    type=click.Path(dir_okay=False),
    default="schema.json",
    show_default=True,
    help="File to write the schema template to.",
)
@force_option
@mkdir_option
def schema_template(data, target, out, force, mkdir):
    """Write a schema to edit, from the CSV's header line only (no row is read).

    Every column but --target is declared numeric with both bounds to estimate
    privately within the search range [-1e6, 1e6]. Edit it before fitting: declare
    text columns categorical with their categories, give the bounds you know, narrow
    each search range to what you know of the column without looking at the data,
    and add "log": "log1p" for positive heavy-tailed columns.
    """
    from ..datasets.files import csv_header
    from ..preprocessing import schema_from_dict

    _check_output(out, force=force, mkdir=mkdir)
    header = csv_header(data)
    if target is not None and target not in header:
        raise ValueError(f"target column {target!r} is not in the header of {data}")
    columns = [
        {
            "name": name,
            "type": "numeric",
            "bounds": [None, None],
            "search_range": list(TEMPLATE_RANGE),
            "missing": "indicator",
        }
        for name in header
        if name != target
    ]
    spec = {"columns": columns}
    schema_from_dict(spec)  # the template itself must load (column limits, names)
    Path(out).write_text(json.dumps(spec, indent=2) + "\n")
    click.echo(
        f"wrote {out}: {len(columns)} columns, all numeric with bounds to estimate; edit it "
        "(categorical columns, known bounds, search ranges) before `dpconvex fit --schema`",
        err=True,
    )


#: the search range a schema template declares for every column (to be edited)
TEMPLATE_RANGE = (-1e6, 1e6)
