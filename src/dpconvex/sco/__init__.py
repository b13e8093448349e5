"""Differentially private stochastic convex optimization in Euclidean and l_p spaces.

Su, Zhao & Wang, *Differentially Private Stochastic Convex Optimization in
(Non)-Euclidean Space Revisited* (UAI 2023, arXiv 2303.18047). Every algorithm returns a
:class:`~dpconvex.mechanisms.Release` whose ``event`` prices it through
:mod:`dpconvex.accounting` (PLD), and ``calibration="paper"`` | ``"accountant"``
chooses between the paper's noise formulas (with its inconsistent constants resolved
on the safe side, see :mod:`dpconvex.sco.privacy`) and the
tighter composition of the same lemmas by the accountant.

* Constrained Euclidean: :func:`approx_objective_perturbation` (Alg. 1),
  :func:`approx_objective_perturbation_sc` (Alg. 2), over :mod:`.sets`.
* Unconstrained l_p^d: :func:`noisy_mirror_descent` (Alg. 3, 1 < p <= 2),
  :func:`phased_dpsgd` (Alg. 6, p >= 2).
* Heavy-tailed gradients over an l_p ball: :func:`shuffled_truncated_mirror_descent`
  (Alg. 4, tiny epsilon only), :func:`batched_truncated_mirror_descent` (Alg. 7).
"""

from ..optim.accelerated import Certified, certified_minimize
from ..optim.certificate import CertificateError
from .baselines import clipped_dpsgd
from .events import (
    ConstrainedObjPertDpEvent,
    NormGaussianDpEvent,
    ShuffledNormGaussianDpEvent,
    envelope_loss_pmf,
    lemma3_delta,
    shuffle_delta_cost,
    shuffle_epsilon,
)
from .geometry import (
    PNormMirrorMap,
    Regularity,
    ball_mirror_step,
    dual_exponent,
    half_sq_norm_grad,
    lp_norm,
    lp_regularity,
    mirror_map,
    regularized_mirror_step,
)
from .glm import GLMData, LinearLoss
from .heavy_tailed import (
    ALG4_MAX_LOCAL_EPSILON,
    alg4_max_epsilon,
    batched_truncated_mirror_descent,
    shuffled_truncated_mirror_descent,
)
from .mirror_descent import mirror_descent_settings, noisy_mirror_descent, regularization_for
from .objpert import approx_objective_perturbation, approx_objective_perturbation_sc
from .phased_sgd import phased_dpsgd
from .privacy import CALIBRATIONS, advanced_composition_step, calibrate_noise, gg_sigma
from .sets import Box, ConstraintSet, L1Ball, L2Ball, Simplex, make_set

__all__ = [
    "ALG4_MAX_LOCAL_EPSILON",
    "CALIBRATIONS",
    "Box",
    "CertificateError",
    "Certified",
    "ConstrainedObjPertDpEvent",
    "ConstraintSet",
    "GLMData",
    "L1Ball",
    "L2Ball",
    "LinearLoss",
    "NormGaussianDpEvent",
    "PNormMirrorMap",
    "Regularity",
    "ShuffledNormGaussianDpEvent",
    "Simplex",
    "advanced_composition_step",
    "alg4_max_epsilon",
    "approx_objective_perturbation",
    "approx_objective_perturbation_sc",
    "ball_mirror_step",
    "batched_truncated_mirror_descent",
    "calibrate_noise",
    "certified_minimize",
    "clipped_dpsgd",
    "dual_exponent",
    "envelope_loss_pmf",
    "gg_sigma",
    "half_sq_norm_grad",
    "lemma3_delta",
    "lp_norm",
    "lp_regularity",
    "make_set",
    "mirror_descent_settings",
    "mirror_map",
    "noisy_mirror_descent",
    "phased_dpsgd",
    "regularization_for",
    "regularized_mirror_step",
    "shuffle_delta_cost",
    "shuffle_epsilon",
    "shuffled_truncated_mirror_descent",
]
