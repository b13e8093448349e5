"""``dpconvex counting``: calibrate the Generalized Gaussian mechanism for k counting queries.

Prints sigma, the exact expected maximum error E||x||_inf and the epsilon the PLD
accountant reports, next to the analytic Gaussian mechanism's std and expected
maximum error (Ganesh's thesis, UC Berkeley EECS-2022-53, chapter 2). ``--p``
omitted: p is chosen by the exact expected maximum error
(:func:`dpconvex.queries.choose_p`). Bad arguments are usage errors (exit status 2,
one line), refused before any computation: k is at most
:data:`dpconvex.queries.privacy.MAX_PLD_QUERIES` (the memory of exact accounting
grows with k), epsilon within the library's budgets, delta in [1e-12, 1), p in [1, 64].
"""

from __future__ import annotations

import json

import click

from ..queries.calibration import counting_summary, format_counting_summary
from ..queries.distribution import MAX_P
from ..queries.privacy import MAX_PLD_QUERIES, MIN_PLD_DELTA
from .options import EPSILON, Count, NumberRange, json_option


@click.command("counting")
@click.option(
    "--k",
    "k",
    type=Count(1, MAX_PLD_QUERIES),
    required=True,
    help="Number of counting queries answered together (each person changes each count by "
    "at most 1); 1e6 is accepted. Larger K take longer to calibrate.",
)
@click.option(
    "--epsilon",
    type=EPSILON,
    required=True,
    help="Target epsilon for all K answers together: smaller is more private and noisier.",
)
@click.option(
    "--delta",
    type=NumberRange(MIN_PLD_DELTA, 1, max_open=True),
    required=True,
    help="Target delta, in (0, 1): the small probability that the epsilon guarantee fails. "
    "Choose it well below 1 / (number of people), e.g. 1e-5.",
)
@click.option(
    "--p",
    "p",
    type=NumberRange(1, MAX_P),
    default=None,
    help="Shape of the noise: density proportional to exp(-|x / sigma|^p) (p = 2 is "
    "Gaussian noise). Default: the p with the smallest expected largest error.",
)
@json_option
def counting(k: int, epsilon: float, delta: float, p: float | None, as_json: bool) -> None:
    """Noise for K counting queries released together, and its largest expected error.

    Calibrates Generalized Gaussian noise (exponent --p) to (epsilon, delta) and
    prints its scale sigma, the expected largest error over the K answers and the
    epsilon the accountant reports, beside the same numbers for Gaussian noise.
    """
    summary = counting_summary(k, epsilon, delta, p)
    if as_json:
        click.echo(json.dumps(summary, indent=2))
    else:
        click.echo(format_counting_summary(summary))
