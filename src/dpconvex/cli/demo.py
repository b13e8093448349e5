"""``dpconvex demo``: private and non-private models side by side on bundled data."""

from __future__ import annotations

import json

import click

from .options import (
    DELTA,
    DELTA_HELP,
    EPSILON,
    SEED,
    json_option,
)


@click.command("demo")
@click.option(
    "--epsilon",
    type=EPSILON,
    default=1.0,
    show_default=True,
    help="Privacy budget of each private model; smaller is more private and less accurate.",
)
@click.option("--delta", type=DELTA, default=1e-5, show_default=True, help=DELTA_HELP)
@click.option(
    "--seed",
    type=SEED,
    default=None,
    help="Seed of the privacy noise, to repeat a run exactly (default: fresh randomness).",
)
@json_option
def demo(epsilon, delta, seed, as_json):
    """Private logistic regression on bundled census data, next to DP-SGD and a non-private model.

    Trains on the UCI Adult data (predict income above $50k) with AMP, and with
    DP-SGD at the same budget, then prints each model's test accuracy, the privacy
    spent and the training time, beside non-private logistic regression.
    """
    from ..experiments.demo import run_demo

    result = run_demo(epsilon, delta, seed)
    if as_json:
        click.echo(json.dumps(result, indent=2))
        return
    click.echo(
        f"dpconvex demo: {result['data']}, {result['n_train']} train / "
        f"{result['n_test']} test rows, target epsilon={epsilon:g}, delta={delta:g}"
    )
    click.echo(f"{'method':<48} {'test acc':>8} {'epsilon spent':>14} {'fit s':>7}")
    for row in result["results"]:
        spent = "not private" if row["epsilon"] is None else f"{row['epsilon']:.10g}"
        click.echo(
            f"{row['method']:<48} {100 * row['accuracy']:>7.2f}% {spent:>14} "
            f"{row['fit_seconds']:>7.2f}"
        )
