"""Ways of fitting a private linear model, one plan per module; the estimators dispatch here.

Adding a method: write a :class:`Plan` subclass in its own module and register it in
``PLANS``.
"""

from .adassp import AdasspPlan
from .amp import AmpPlan
from .auto import AutoPlan, ConstantModelWarning, choose_method
from .base import Plan, PlanInputs
from .gradient import DEFAULT_LEARNING_RATE, DpgdPlan, DpsgdPlan
from .output import OutputPlan

PLANS: dict[str, type[Plan]] = {
    p.name: p for p in (AmpPlan, OutputPlan, DpsgdPlan, DpgdPlan, AdasspPlan, AutoPlan)
}

__all__ = [
    "DEFAULT_LEARNING_RATE",
    "PLANS",
    "ConstantModelWarning",
    "Plan",
    "PlanInputs",
    "choose_method",
]
