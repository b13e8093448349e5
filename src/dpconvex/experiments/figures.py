"""Figures need matplotlib, which the core install leaves out (the ``figures`` extra).

``pip install "dpconvex[figures]"`` adds it; the library, ``dpconvex --help`` and
``dpconvex demo`` work without it. Every experiment that draws gets pyplot through
:func:`pyplot`, so a missing matplotlib is one :class:`MissingFiguresExtraError`
naming the extra rather than a bare ``ModuleNotFoundError``.
"""

from __future__ import annotations

from types import ModuleType

#: the pip command that adds matplotlib
INSTALL_FIGURES = 'pip install "dpconvex[figures]"'


class MissingFiguresExtraError(ImportError, ValueError):
    """matplotlib is not installed. A ValueError too, so that the command line prints it
    as its one-line refusal like every other bad request."""


def require_matplotlib(what: str) -> None:
    """Raise :class:`MissingFiguresExtraError` naming ``what`` if matplotlib cannot be imported."""
    try:
        import matplotlib  # noqa: F401
    except ImportError as err:
        raise MissingFiguresExtraError(
            f"{what} draws figures with matplotlib, which is not installed: {INSTALL_FIGURES}"
        ) from err


def pyplot(what: str = "this experiment") -> ModuleType:
    """``matplotlib.pyplot`` on the non-interactive Agg backend (files only, no display)."""
    require_matplotlib(what)
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt
