"""The methods of the linear core, one module each: its plan and its release.

A method's module holds its :class:`Plan` subclass (public quantities to calibrated
parameters and the event, before any row is read) and its release (the randomized
algorithm on a row source, returning the release and the event that prices it):
:mod:`~.amp`, :mod:`~.output_perturbation`, :mod:`~.dpsgd`, :mod:`~.dpgd`,
:mod:`~.adassp`; :mod:`~.auto` picks one from public quantities only. The estimators
dispatch through ``PLANS``.

Adding a method: write its module (a :class:`Plan` subclass and its release) and register
the plan in ``PLANS``.
"""

from ..data.batches import poisson_batches
from ..data.policy import add_intercept, design_bound, design_rows, transform_rows
from ..release import Release
from .adassp import AdasspPlan
from .amp import AmpPlan, amp
from .auto import AutoPlan, choose_method
from .dpgd import DpgdPlan, dpgd, dpgd_event
from .dpsgd import DpsgdPlan, dpsgd, steps_for_epochs
from .gradient_runs import DEFAULT_LEARNING_RATE, dpsgd_runs
from .output_perturbation import OutputPlan, output_perturbation, output_sensitivity
from .plan import Plan, PlanInputs

PLANS: dict[str, type[Plan]] = {
    p.name: p for p in (AmpPlan, OutputPlan, DpsgdPlan, DpgdPlan, AdasspPlan, AutoPlan)
}

__all__ = [
    "DEFAULT_LEARNING_RATE",
    "PLANS",
    "Plan",
    "PlanInputs",
    "Release",
    "add_intercept",
    "amp",
    "choose_method",
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
