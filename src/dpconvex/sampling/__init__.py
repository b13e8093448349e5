"""Private sampling with Langevin dynamics (Ganesh's thesis, UC Berkeley EECS-2022-53, ch. 3).

Overdamped (ULA) and underdamped (exact one-step solution) samplers for
densities proportional to exp(-f), the centring and rescaling to m = 1, the
step size and horizon of Theorems 42/52 with every constant explicit, and
private GLM posterior sampling with its (epsilon, delta).
"""

from .langevin import (
    standardized,
    ula,
    ula_gaussian_variance,
    underdamped,
    underdamped_coefficients,
)
from .posterior import (
    ApproximateDpEvent,
    GLMPotential,
    exact_posterior_delta,
    plan_composition,
    plan_thesis,
    posterior_sample,
)
from .theory import (
    MOVEMENT_CONSTANT,
    chain_epsilon,
    chain_links,
    link_epsilon,
    plan_thm42,
    thm42_renyi,
    thm52_renyi,
    thm65_max_step,
)

__all__ = [
    "MOVEMENT_CONSTANT",
    "ApproximateDpEvent",
    "GLMPotential",
    "chain_epsilon",
    "chain_links",
    "exact_posterior_delta",
    "link_epsilon",
    "plan_composition",
    "plan_thesis",
    "plan_thm42",
    "posterior_sample",
    "standardized",
    "thm42_renyi",
    "thm52_renyi",
    "thm65_max_step",
    "ula",
    "ula_gaussian_variance",
    "underdamped",
    "underdamped_coefficients",
]
