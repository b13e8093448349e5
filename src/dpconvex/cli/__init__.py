"""The ``dpconvex`` command line: privacy accounting, calibration and plots.

Results print as a readable table, or as JSON with ``--json``. Bad arguments
exit with status 2 and one line on stderr that names the problem.

One module per command group (:mod:`.account`, :mod:`.fit`, :mod:`.predict`,
:mod:`.schema`, :mod:`.budget`, :mod:`.audit`, :mod:`.demo`, :mod:`.reproduce`) over
the shared argument types, options, output and error formatting of :mod:`.options`.
"""

from __future__ import annotations

import sys
import warnings

import click

from .. import __version__
from .._logs import quiet_rdp_convergence, rdp_convergence_count, rdp_convergence_note
from . import account as _account
from . import audit as _audit
from . import budget as _budget
from . import counting as _counting
from . import demo as _demo
from . import fit as _fit
from . import predict as _predict
from . import reproduce as _reproduce
from . import schema as _schema
from .options import _message, _one_line, _refusals, _show_warning
from .progress import _progress

__all__ = ["cli", "main", "_progress"]


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="dpconvex")
def cli() -> None:
    """Differentially private convex learning with tight, tested privacy accounting.

    Start with `dpconvex demo`; train on your own CSV file with `dpconvex fit` and
    apply the model with `dpconvex predict`. Every command explains its options
    with `dpconvex COMMAND --help`.
    """


def _attach_commands() -> None:
    """Each command module's commands, including the counting queries of dpconvex.queries."""
    for command in (
        _account.account,
        _account.calibrate,
        _fit.fit,
        _schema.schema_group,
        _predict.predict,
        _budget.budget_group,
        _audit.audit,
        _demo.demo,
        _reproduce.reproduce,
        _reproduce.plot,
        _counting.counting,
    ):
        cli.add_command(command)


_attach_commands()


def main(argv: list[str] | None = None) -> None:
    """Entry point: run the CLI; turn every refusal into one line on stderr and exit 2.

    Warnings print as one ``dpconvex: warning:`` line each, with control characters
    escaped. dp_accounting's per-order RDP convergence warnings are dropped (they leave
    the reported epsilons valid upper bounds; see :mod:`dpconvex._logs`) and summed up
    in one ``note:`` line on stderr at the end.
    """
    counted = rdp_convergence_count()
    try:
        with quiet_rdp_convergence(), warnings.catch_warnings():
            warnings.showwarning = _show_warning
            rc = cli.main(args=argv, prog_name="dpconvex", standalone_mode=False)
    except click.exceptions.Abort:
        click.echo("dpconvex: aborted", err=True)
        sys.exit(1)
    except click.ClickException as exc:
        click.echo(f"dpconvex: error: {_one_line(exc.format_message())}", err=True)
        sys.exit(2)
    except Exception as exc:
        if not isinstance(exc, _refusals()):
            raise
        click.echo(f"dpconvex: error: {_one_line(_message(exc))}", err=True)
        sys.exit(2)
    note = rdp_convergence_note(since=counted)
    if note is not None:
        click.echo(note, err=True)
    sys.exit(rc if isinstance(rc, int) else 0)
