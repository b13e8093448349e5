"""Shared parts of the ``dpconvex`` command line: argument types, options, output, errors.

The argument types (finite numbers, whole counts, files) each refuse a bad value with
one line (a click usage error, or a ValueError that ``dpconvex.cli.main`` prints; exit
status 2) before the command does any work: NaN and infinities, fractions and
out-of-range counts, paths that are missing, directories, pipes or devices, and outputs that
could not be written. The privacy-parameter limits themselves stay in the library (the
accountants, the ledger); these types only make them visible in ``--help`` and refuse
nonsense early.
"""

from __future__ import annotations

import json
import math
import os
import stat
import tempfile
from pathlib import Path

import click

from ..accounting import MAX_EPSILON, MIN_EPSILON, UnsupportedEventError
from ..accounting.limits import MAX_COUNT
from ..budget import BudgetExceededError, LedgerError, safe_text


class NumberRange(click.FloatRange):
    """``click.FloatRange`` that refuses ``nan`` (click lets it through), and ``inf`` too
    unless ``allow_inf``."""

    def __init__(self, *args, allow_inf: bool = False, **kwargs):
        super().__init__(*args, **kwargs)
        self.allow_inf = allow_inf

    def convert(self, value, param, ctx):
        number = click.FLOAT.convert(value, param, ctx)
        if math.isnan(number) or (math.isinf(number) and not self.allow_inf):
            self.fail(f"{value!r} is not a finite number.", param, ctx)
        return super().convert(number, param, ctx)


def positive(**kwargs) -> NumberRange:
    """A finite number > 0 (the library checks the finer limits)."""
    return NumberRange(0, min_open=True, **kwargs)


class Count(click.IntRange):
    """A whole number in a range; accepts ``1e6`` and ``1_000_000`` as well as ``1000000``."""

    name = "count"

    def convert(self, value, param, ctx):
        if isinstance(value, int) and not isinstance(value, bool):
            return super().convert(value, param, ctx)
        text = str(value).strip()
        try:
            number = int(text)
        except ValueError:
            try:
                real = float(text)
            except ValueError:
                self.fail(f"{value!r} is not a whole number.", param, ctx)
            if not (math.isfinite(real) and real == math.floor(real)):
                self.fail(f"{value!r} is not a whole number.", param, ctx)
            number = int(real)
        if self.max is not None and number > 10**18 > self.max:  # not echoed digit by digit
            shown = text[:20] + ("..." if len(text) > 20 else "")
            self.fail(f"{shown} is above {self.max}.", param, ctx)
        return super().convert(number, param, ctx)


def _kind(mode: int) -> str:
    if stat.S_ISDIR(mode):
        return "a directory"
    if stat.S_ISFIFO(mode):
        return "a pipe"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "a special file"


def _stat(path: Path):
    """``os.stat`` of ``path`` (None if missing); ValueError naming the problem otherwise."""
    try:
        return path.stat()
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as err:  # too long a name, a NUL byte, no permission
        reason = getattr(err, "strerror", None) or str(err)
        raise ValueError(f"cannot use the path {str(path)!r}: {reason}") from None


def input_file(value: str | os.PathLike, what: str = "file") -> Path:
    """``value`` as the path of an existing, readable regular file; else ValueError.

    Checked with ``stat`` only, so a named pipe is refused without being opened (opening
    one blocks until something writes to it), and so is a device such as /dev/zero.
    """
    path = Path(value)
    info = _stat(path)
    if info is None:
        raise ValueError(f"{what} {str(path)!r} does not exist")
    if not stat.S_ISREG(info.st_mode):
        raise ValueError(f"{what} {str(path)!r} is {_kind(info.st_mode)}, not a regular file")
    if not os.access(path, os.R_OK):
        raise ValueError(f"{what} {str(path)!r} cannot be read (permission denied)")
    return path


def _try_write_in(directory: Path, purpose: str) -> None:
    """Create and remove a scratch file in ``directory``: the one test of writability that
    also holds for root, read-only file systems and /proc."""
    try:
        with tempfile.NamedTemporaryFile(dir=directory, prefix=".dpconvex-check-"):
            pass
    except OSError as err:
        raise ValueError(f"cannot write {purpose} in {str(directory)!r}: {err.strerror}") from None


def output_file(value: str | os.PathLike, *, force: bool, mkdir: bool) -> Path:
    """Check that ``value`` can be written as a regular file, before any work is done.

    Refuses an existing file without ``force``, an existing path that is not a regular
    file (a directory, a pipe, a device), a missing directory without ``mkdir`` (with it,
    the directory is created), a name the file system refuses, and a directory that
    cannot be written. Nothing is left behind but a directory made for ``mkdir``.
    """
    path = Path(value)
    info = _stat(path)
    if info is not None:
        if not stat.S_ISREG(info.st_mode):
            raise ValueError(f"cannot write {str(path)!r}: it is {_kind(info.st_mode)}")
        if not os.access(path, os.W_OK):
            raise ValueError(f"cannot write {str(path)!r}: permission denied")
        if not force:
            raise ValueError(
                f"{str(path)!r} exists already; pass --force to overwrite it, or choose another "
                "file"
            )
    parent = path.parent
    parent_info = _stat(parent)
    if parent_info is None:
        if not mkdir:
            raise ValueError(
                f"cannot write {str(path)!r}: directory {str(parent)!r} does not exist; create "
                "it first or pass --mkdir"
            )
        _make_directory(parent)
    elif not stat.S_ISDIR(parent_info.st_mode):
        raise ValueError(f"cannot write {str(path)!r}: {str(parent)!r} is not a directory")
    _check_name(path)
    _try_write_in(parent, f"{path.name!r}")
    return path


def _check_name(path: Path) -> None:
    """Refuse a file name the file system cannot hold (too long), without creating it."""
    try:
        limit = os.pathconf(path.parent, "PC_NAME_MAX")
    except (OSError, ValueError):
        limit = 255
    if len(os.fsencode(path.name)) > limit:
        raise ValueError(f"cannot write {str(path)[:80]!r}...: the file name is too long")


def _make_directory(directory: Path) -> None:
    try:
        directory.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise ValueError(f"cannot create directory {str(directory)!r}: {err.strerror}") from None
    click.echo(f"created directory {directory}", err=True)


def output_directory(value: str | os.PathLike) -> Path:
    """``value`` as a writable directory, created if missing; ValueError otherwise."""
    path = Path(value)
    info = _stat(path)
    if info is None:
        _make_directory(path)
    elif not stat.S_ISDIR(info.st_mode):
        raise ValueError(f"--out {str(path)!r} is {_kind(info.st_mode)}, not a directory")
    _try_write_in(path, "results")
    return path


class InputFile(click.ParamType):
    """An existing, readable regular file (see :func:`input_file`), or one of ``special``
    names (such as ``adult`` for the bundled data), returned as given."""

    name = "file"

    def __init__(self, special: tuple[str, ...] = ()):
        self.special = frozenset(special)

    def convert(self, value, param, ctx):
        if value in self.special:
            return value
        try:
            return str(input_file(value))
        except ValueError as err:
            self.fail(str(err), param, ctx)


#: delta of every command: a probability strictly between 0 and 1 (the library sets the
#: smallest it accepts)
DELTA = NumberRange(0, 1, min_open=True, max_open=True)
#: a target epsilon: the library's range of budgets
EPSILON = NumberRange(MIN_EPSILON, MAX_EPSILON)
#: compositions and steps: the accountants' largest count
COUNT = Count(1, MAX_COUNT)
#: seeds: numpy takes any non-negative integer
SEED = click.IntRange(min=0)


class Bounds(click.ParamType):
    """``LOW,HIGH``: two finite numbers with LOW < HIGH (e.g. ``--y-bounds 0,500000``).

    With ``open_end``, one end may be left empty (``0,`` or ``,100``): it is returned as
    None, for the command to estimate.
    """

    name = "low,high"

    def __init__(self, *, open_end: bool = False):
        self.open_end = open_end

    def convert(self, value, param, ctx):
        if isinstance(value, tuple):
            return value
        parts = str(value).split(",")
        if len(parts) != 2:
            self.fail(f"give two numbers LOW,HIGH separated by a comma, got {value!r}.",
                      param, ctx)  # fmt: skip
        empty = [not p.strip() for p in parts]
        if self.open_end and all(empty):
            self.fail(f"{value!r} leaves both ends empty: give LOW,HIGH, LOW, or ,HIGH.",
                      param, ctx)  # fmt: skip
        try:
            low, high = (None if self.open_end and not p.strip() else float(p) for p in parts)
        except ValueError:
            self.fail(f"{value!r} is not two numbers LOW,HIGH.", param, ctx)
        given = [b for b in (low, high) if b is not None]
        if not all(math.isfinite(b) for b in given) or (len(given) == 2 and not low < high):
            self.fail(f"{value!r} needs finite numbers with LOW < HIGH.", param, ctx)
        return low, high


#: Longest error or warning line printed (longer ones, e.g. echoing a huge argument, are cut).
MAX_LINE = 500


def _emit(result: dict, as_json: bool) -> None:
    if as_json:
        click.echo(json.dumps(result, indent=2))
        return
    width = max(len(k) for k in result)
    for key, value in result.items():
        if value is None:
            shown = "null"
        elif isinstance(value, float):
            shown = f"{value:.8g}"
        else:
            shown = str(value)
        click.echo(f"{key:<{width}}  {shown}")


json_option = click.option(
    "--json",
    "as_json",
    is_flag=True,
    help="Print the result as JSON (for scripts) instead of a table.",
)
DELTA_HELP = (
    "Target delta, in (0, 1): the small probability that the epsilon guarantee fails. "
    "Choose it well below 1 / (number of rows), e.g. 1e-5."
)
delta_option = click.option("--delta", type=DELTA, required=True, help=DELTA_HELP)


def _check_output(path: str | Path, *, force: bool, mkdir: bool) -> Path:
    """Refuse an output that cannot be written (see :func:`output_file`).

    Run before any work (and before a budget is charged), so that a run whose result
    cannot be written costs nothing.
    """
    return output_file(path, force=force, mkdir=mkdir)


force_option = click.option(
    "--force", is_flag=True, help="Overwrite the output file if it exists (default: refuse)."
)
mkdir_option = click.option(
    "--mkdir",
    is_flag=True,
    help="Create the output file's directory if it does not exist (default: refuse).",
)


def _objpert_options(func):
    for opt in reversed(
        [
            click.option(
                "--sigma",
                type=positive(),
                required=True,
                help="Standard deviation of the Gaussian noise added to the training objective. "
                "More noise: smaller epsilon, less accurate model.",
            ),
            click.option(
                "--lam",
                type=positive(),
                required=True,
                help="Strength of the L2 regularization; must be larger than --beta. Larger "
                "values cost less privacy but pull the model further towards zero.",
            ),
            click.option(
                "--beta",
                type=NumberRange(min=0),
                required=True,
                help="Smoothness of the per-example loss: a bound on its curvature (0.25 R^2 "
                "for the logistic loss on rows of norm at most R).",
            ),
            click.option(
                "--lipschitz",
                type=positive(),
                required=True,
                help="Bound on every example's gradient norm (R for the logistic loss on rows "
                "of norm at most R, or the gradient clipping threshold).",
            ),
        ]
    ):
        func = opt(func)
    return func


EPSILON_TARGET_HELP = (
    "Target epsilon (> 0): the privacy budget. Smaller is more private and noisier; "
    "0.1 to 10 is the usual range."
)


def _refusals() -> tuple[type[BaseException], ...]:
    """The exception classes by which dpconvex refuses (printed as one line by :func:`main`).

    ValueError covers CalibrationError, GridTooLargeError, HiddenStateUnsoundError,
    ModelFileError and scikit-learn's InvalidParameterError; OSError is a file the user
    named that cannot be read or written. Anything else (MemoryError, IndexError, ...)
    is a bug and keeps its traceback.
    """
    from ..bcd.steps import ImplicitStepError
    from ..optim.solvers import CertificateError
    from ..tuning.search import NothingSelectedError

    return (
        ValueError,
        OSError,
        UnsupportedEventError,
        BudgetExceededError,
        LedgerError,
        CertificateError,
        ImplicitStepError,
        NothingSelectedError,
    )


def _one_line(text: str) -> str:
    """``text`` on one printable line (control characters escaped, whitespace collapsed)."""
    return safe_text(" ".join(str(text).split()), MAX_LINE)


def _message(exc: BaseException) -> str:
    if isinstance(exc, OSError) and exc.strerror and exc.filename is not None:
        return f"{exc.strerror}: {exc.filename}"
    return str(exc) or type(exc).__name__


def _show_warning(message, category, filename, lineno, file=None, line=None) -> None:
    """Print a Python warning as one ``dpconvex: warning:`` line (no source location)."""
    click.echo(f"dpconvex: warning: {_one_line(str(message))}", err=True)
