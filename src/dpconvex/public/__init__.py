"""Public-data-assisted DP mirror descent (Ganesh's thesis, UC Berkeley EECS-2022-53, ch. 4).

Algorithm 1 (PDA-DPMD): the public loss is the mirror map, private clipped
gradients get Gaussian noise, the iterates are averaged; T Gaussian steps are
priced exactly and the noise is calibrated numerically. The linear-regression
specialization is preconditioned DP-GD; general convex GLM losses use an
L-BFGS mirror step.
"""

from .mirror_maps import (
    EuclideanMirrorMap,
    GLMMirrorMap,
    QuadraticMirrorMap,
    linear_regression_mirror_map,
)
from .pda_dpmd import (
    pda_dpmd,
    pda_dpmd_runs,
    pda_event,
    pda_noise_multiplier,
    thesis_delta,
    thesis_noise_multiplier,
)

__all__ = [
    "EuclideanMirrorMap",
    "GLMMirrorMap",
    "QuadraticMirrorMap",
    "linear_regression_mirror_map",
    "pda_dpmd",
    "pda_dpmd_runs",
    "pda_event",
    "pda_noise_multiplier",
    "thesis_delta",
    "thesis_noise_multiplier",
]
