"""Randomized algorithms that touch data; each returns its release and the event that prices it."""

from .amp import amp
from .dpsgd import dpgd, dpsgd, steps_for_epochs
from .output_perturbation import output_perturbation, output_sensitivity
from .release import Release
from .rows import add_intercept, design_bound, transform_rows

__all__ = [
    "Release",
    "add_intercept",
    "amp",
    "design_bound",
    "dpgd",
    "dpsgd",
    "output_perturbation",
    "output_sensitivity",
    "steps_for_epochs",
    "transform_rows",
]
