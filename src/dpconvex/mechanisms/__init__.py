"""Randomized algorithms that touch data; each returns its release and the event that prices it."""

from ..data.policy import add_intercept, design_bound, design_rows, transform_rows
from ..release import Release
from .amp import amp
from .dpsgd import (
    dpgd,
    dpgd_event,
    dpsgd,
    dpsgd_runs,
    poisson_batches,
    steps_for_epochs,
)
from .output_perturbation import output_perturbation, output_sensitivity

__all__ = [
    "Release",
    "add_intercept",
    "amp",
    "design_bound",
    "design_rows",
    "dpgd",
    "dpgd_event",
    "dpsgd",
    "dpsgd_runs",
    "output_perturbation",
    "output_sensitivity",
    "poisson_batches",
    "steps_for_epochs",
    "transform_rows",
]
