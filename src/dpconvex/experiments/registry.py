"""The reproductions ``dpconvex reproduce`` can run, by name, in a table fixed at import time.

Each entry is a function ``run(out_dir, *, quick, trials, mnist)`` that imports its
experiment module by a literal import (the modules draw with matplotlib, the
``figures`` extra, so they load only when run) and writes its results to ``out_dir``.
The command line offers exactly the names of :data:`REPRODUCTIONS`; nothing is
imported by a name taken from user input.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from .figures import require_matplotlib

#: ``run(out_dir, *, quick, trials, mnist)``; ``trials`` None: the experiment's own number.
Reproduction = Callable[..., object]


def _accounting_figure(name: str) -> Reproduction:
    def run(out_dir: Path, *, quick: bool, trials: int | None, mnist: Path | None) -> object:
        from . import accounting_figures

        return getattr(accounting_figures, name)(out_dir, quick=quick)

    return run


def _accuracy(name: str) -> Reproduction:
    def run(out_dir: Path, *, quick: bool, trials: int | None, mnist: Path | None) -> object:
        from . import accuracy

        return getattr(accuracy, name)(out_dir, quick=quick, trials=trials)

    return run


def _sco_rates(out_dir: Path, *, quick: bool, trials: int | None, mnist: Path | None) -> object:
    from .sco_rates import reproduce_sco_rates

    return reproduce_sco_rates(out_dir, quick=quick, trials=trials)


def _mbcd_privacy(out_dir: Path, *, quick: bool, trials: int | None, mnist: Path | None) -> object:
    from .mbcd import reproduce_mbcd_privacy

    return reproduce_mbcd_privacy(out_dir, quick=quick, trials=trials)


def _mbcd_nmf(out_dir: Path, *, quick: bool, trials: int | None, mnist: Path | None) -> object:
    from .mbcd import reproduce_mbcd_nmf

    return reproduce_mbcd_nmf(out_dir, quick=quick, trials=trials)


def _mbcd_classification(
    out_dir: Path, *, quick: bool, trials: int | None, mnist: Path | None
) -> object:
    from .mbcd import reproduce_mbcd_classification

    return reproduce_mbcd_classification(out_dir, quick=quick, trials=trials, mnist=mnist)


def _ganesh_fig4_1(out_dir: Path, *, quick: bool, trials: int | None, mnist: Path | None) -> object:
    from .ganesh import reproduce_ganesh_fig4_1

    return reproduce_ganesh_fig4_1(out_dir, quick=quick, trials=trials)


#: name -> reproduction, in the order ``dpconvex reproduce --help`` lists them; each name
#: says what is reproduced (the paper's own figure and table numbers are in ALIASES)
REPRODUCTIONS: dict[str, Reproduction] = {
    "objpert-privacy-bounds": _accounting_figure("fig1"),
    "linear-accuracy-vs-epsilon": _accuracy("fig2"),
    "objpert-rdp-curves": _accounting_figure("fig3"),
    "objpert-composition": _accounting_figure("fig4"),
    "rdp-objpert-gaussian-dpsgd": _accounting_figure("fig5"),
    "linear-accuracy-tables": _accuracy("tables"),
    "sco-rates": _sco_rates,
    "mbcd-privacy": _mbcd_privacy,
    "mbcd-nmf": _mbcd_nmf,
    "mbcd-classification": _mbcd_classification,
    "public-mirror-descent": _ganesh_fig4_1,
}

#: the earlier names (figure and table numbers of the papers), still accepted
ALIASES: dict[str, str] = {
    "fig1": "objpert-privacy-bounds",
    "fig2": "linear-accuracy-vs-epsilon",
    "fig3": "objpert-rdp-curves",
    "fig4": "objpert-composition",
    "fig5": "rdp-objpert-gaussian-dpsgd",
    "tables": "linear-accuracy-tables",
    "ganesh-fig4.1": "public-mirror-descent",
}


def run_reproduction(
    name: str, out_dir: Path, *, quick: bool, trials: int | None, mnist: Path | None = None
) -> object:
    """Run the reproduction ``name`` (of :data:`REPRODUCTIONS`, or an :data:`ALIASES` name).

    Raises :class:`~dpconvex.experiments.figures.MissingFiguresExtraError` before any work
    if matplotlib (the ``figures`` extra) is not installed.
    """
    name = ALIASES.get(name, name)
    if name not in REPRODUCTIONS:
        raise ValueError(f"unknown reproduction {name!r}: choose one of {', '.join(REPRODUCTIONS)}")
    require_matplotlib(f"dpconvex reproduce {name}")
    return REPRODUCTIONS[name](out_dir, quick=quick, trials=trials, mnist=mnist)
