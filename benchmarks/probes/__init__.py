"""Hostile and careless inputs against dpconvex: the probes behind ``probe_report.py``.

A probe is one crafted case (a model file, a cache entry, a reader input, a CLI line, a
search setting). ``run(tmp)`` gets a fresh scratch directory and either

* returns normally: a *release with guarantee*. The probe must have checked, before
  returning, that what came back is covered (finite, consistent, within budget, the
  memory it used bounded by the public shape); a failed check raises ``Violation``;
* raises a *clear error*: an exception of a class in ``CLEAR`` whose message is one line
  of at most ``MAX_MESSAGE`` characters. :func:`run_cli` turns a command that exits with
  status 2 and one ``dpconvex: error:`` line into :class:`ClearCliError`;
* anything else is *other*: another exception class, a multi-line message, a traceback
  from the CLI, a time-out, a crash, a peak memory above ``memory_mb``, or ``Violation``.

Each probe runs in a forked child of the report process (``probe_report.py``), with a
time limit and its peak resident memory read back from the kernel (``wait4``).
"""

from __future__ import annotations

import contextlib
import io
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

#: longest message that still counts as a clear one-line error
MAX_MESSAGE = 600
#: exception classes that count as a clear refusal (by name, so the harness imports nothing)
CLEAR = frozenset(
    {
        "ValueError",
        "TypeError",
        "CalibrationError",
        "CertificateError",
        "InvalidParameterError",
        "BudgetExceededError",
        "LedgerError",
        "LedgerTamperedError",
        "UnsupportedEventError",
        "ModelFileError",
        "DataFileError",
        "ClearCliError",
        "FileNotFoundError",
        "UsageError",
    }
)


class Violation(AssertionError):
    """A release that its guarantee does not cover (or a check the probe made failed)."""


class ClearCliError(Exception):
    """The CLI refused with exit status 2 and one ``dpconvex: error:`` line."""


@dataclass(frozen=True)
class Probe:
    area: str
    name: str
    run: Callable[[Path], object]
    timeout: float = 120.0
    memory_mb: int = 2048


def run_cli(argv: list[str]) -> str:
    """Run ``dpconvex ARGV`` in this process; stdout on success, else raise.

    Exit status 2 with exactly one non-empty stderr line starting ``dpconvex: error:``
    raises :class:`ClearCliError`; any other failure raises ``RuntimeError`` (other).
    """
    from dpconvex.cli import main

    out, err = io.StringIO(), io.StringIO()
    code = 0
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            main(list(argv))
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else 1
    lines = [line for line in err.getvalue().splitlines() if line.strip()]
    if code == 0:
        return out.getvalue()
    errors = [line for line in lines if line.startswith("dpconvex: error:")]
    if code == 2 and len(errors) == 1 and "Traceback" not in err.getvalue():
        raise ClearCliError(errors[0])
    raise RuntimeError(f"exit {code}; stderr: {err.getvalue()[-400:]!r}")


def modules() -> list[str]:
    """The probe modules of this package: each defines ``probes() -> list[Probe]``."""
    here = Path(__file__).parent
    return sorted(p.stem for p in here.glob("*.py") if not p.stem.startswith("_"))
