"""Counting queries with the Generalized Gaussian mechanism (Ganesh's thesis, chapter 2).

Arun Ganesh, *Improved Algorithms and Upper Bounds in Differential Privacy*, PhD thesis,
UC Berkeley EECS-2022-53, 2022.

Exact sampler (:func:`dpconvex.noise.generalized_gaussian`), exact PLD/RDP
accounting of GGauss(p, sigma) for l_inf-sensitivity 1 (any real p >= 1), safe
calibration of sigma, choice of p by the exact expected maximum error, the
comparison with the Gaussian mechanism, and the sparse-vector composition of
Thm 37 with explicit, numerically accounted parameters.
"""

from .calibration import (
    DEFAULT_P_CANDIDATES,
    GGCalibration,
    calibrated,
    choose_p,
    counting_summary,
    format_counting_summary,
    gg_epsilon,
    gg_sigma,
    thesis_sigma,
)
from .distribution import (
    expected_max_abs,
    gaussian_expected_max_abs,
    gg_abs_moment,
    gg_cdf,
    gg_logpdf,
    gg_sf,
)
from .mechanism import answer_counting_queries, gg_mechanism, gg_release
from .privacy import (
    GeneralizedGaussianDpEvent,
    coordinate_delta,
    coordinate_rdp,
    gg_delta,
    gg_loss_pmf,
    gg_rdp,
)
from .sparse_vector import (
    PureDpEvent,
    SparseVectorPlan,
    gg_sparse_vector,
    plan_sparse_vector,
    simulate_max_error,
    sparse_vector_event,
)

__all__ = [
    "DEFAULT_P_CANDIDATES",
    "GGCalibration",
    "GeneralizedGaussianDpEvent",
    "PureDpEvent",
    "SparseVectorPlan",
    "answer_counting_queries",
    "calibrated",
    "choose_p",
    "coordinate_delta",
    "coordinate_rdp",
    "counting_summary",
    "expected_max_abs",
    "format_counting_summary",
    "gaussian_expected_max_abs",
    "gg_abs_moment",
    "gg_cdf",
    "gg_delta",
    "gg_epsilon",
    "gg_logpdf",
    "gg_loss_pmf",
    "gg_mechanism",
    "gg_release",
    "gg_rdp",
    "gg_sf",
    "gg_sigma",
    "gg_sparse_vector",
    "plan_sparse_vector",
    "simulate_max_error",
    "sparse_vector_event",
    "thesis_sigma",
]
