"""``dpconvex counting``: calibrate the Generalized Gaussian mechanism for k counting queries.

Prints sigma, the exact expected maximum error E||x||_inf and the epsilon the PLD
accountant reports, next to the analytic Gaussian mechanism's std and expected
maximum error (seed 004, 004_693441340f96c35c.txt, chapter 2; spec
ganesh-thesis §2.4-2.6). ``--p`` omitted: p is chosen by the exact expected
maximum error (:func:`dpconvex.queries.choose_p`). Bad input raises
``ValueError`` naming the parameter (``dpconvex.cli.main`` turns it into one
line on stderr and exit status 2).
"""

from __future__ import annotations

import json
import math

import click

from .calibration import counting_summary, format_counting_summary


def _as_count(k: float) -> int:
    """k as an int; accepts 1e6 but not 10.5 (``--k`` is parsed as a float)."""
    if not math.isfinite(k) or k != int(k) or k < 1:
        raise ValueError(f"k must be a positive integer, got {k:g}")
    return int(k)


@click.command("counting")
@click.option(
    "--k",
    "k",
    type=float,
    required=True,
    help="Number of counting queries answered together (each person changes each count by "
    "at most 1); 1e6 is accepted.",
)
@click.option(
    "--epsilon",
    type=float,
    required=True,
    help="Target epsilon (> 0) for all K answers together: smaller is more private and noisier.",
)
@click.option(
    "--delta",
    type=float,
    required=True,
    help="Target delta, in (0, 1): the small probability that the epsilon guarantee fails. "
    "Choose it well below 1 / (number of people), e.g. 1e-5.",
)
@click.option(
    "--p",
    "p",
    type=float,
    default=None,
    help="Shape of the noise, >= 1: density proportional to exp(-|x / sigma|^p) (p = 2 is "
    "Gaussian noise). Default: the p with the smallest expected largest error.",
)
@click.option(
    "--json",
    "as_json",
    is_flag=True,
    help="Print the result as JSON (for scripts) instead of a table.",
)
def counting(k: float, epsilon: float, delta: float, p: float | None, as_json: bool) -> None:
    """Noise for K counting queries released together, and its largest expected error.

    Calibrates Generalized Gaussian noise (exponent --p) to (epsilon, delta) and
    prints its scale sigma, the expected largest error over the K answers and the
    epsilon the accountant reports, beside the same numbers for Gaussian noise.
    """
    summary = counting_summary(_as_count(k), epsilon, delta, p)
    if as_json:
        click.echo(json.dumps(summary, indent=2))
    else:
        click.echo(format_counting_summary(summary))
