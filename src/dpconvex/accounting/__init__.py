"""Privacy accounting: data-free, randomness-free privacy math.

Closed-form bounds of objective perturbation and AMP (Redberg, Koskela & Wang,
arXiv 2401.00583), events that
describe mechanisms, accountants that compose them with dp_accounting's events
(PLD or RDP), RDP-to-DP conversions, and safe-side calibration.
"""

import warnings

from .accountants import DEFAULT_RDP_ORDERS, RdpAccountant, UnsupportedEventError
from .calibration import CalibrationError, calibrate, smallest_epsilon
from .calibrators import (
    AMP_DEFAULTS,
    AmpCalibration,
    amp_parameters,
    dpsgd_noise_multiplier,
    gaussian_noise_multiplier,
)
from .conversions import (
    delta_from_rdp,
    delta_from_rdp_curve,
    epsilon_from_rdp,
    epsilon_from_rdp_curve,
)
from .discrete import (
    discrete_gaussian_loss_pmf,
    discrete_gaussian_rdp,
    discrete_laplace_epsilon,
    discrete_laplace_loss_pmf,
    discrete_laplace_rdp,
)
from .disk_cache import use_disk_cache
from .event_checks import validate_event
from .events import (
    AmpDpEvent,
    ComposedDpEvent,
    DiscreteGaussianDpEvent,
    DiscreteLaplaceScaleDpEvent,
    GaussianDpEvent,
    ObjectivePerturbationDpEvent,
    PoissonSampledDpEvent,
    RandomChoiceDpEvent,
    RepeatAndSelectDpEvent,
    SelfComposedDpEvent,
    dpsgd_event,
    tuned_event,
)
from .gaussian import gaussian_delta, gaussian_epsilon, gaussian_rdp
from .gaussian_calibration import (
    MAX_EPSILON,
    MIN_EPSILON,
    check_epsilon,
    gaussian_sigma,
    pld_grid,
)
from .objpert import (
    DominatingPair,
    amp_rdp,
    gaussian_lower_bound_delta,
    gaussian_lower_bound_epsilon,
    half_normal_log_mgf,
    jacobian_term,
    kifer_delta,
    kifer_epsilon,
    objpert_delta,
    objpert_epsilon,
    objpert_rdp,
)
from .pld import GridTooLargeError
from .pld_accountant import PLDAccountant
from .privacy_accountant import PrivacyAccountant
from .registry import register_pld, register_rdp


def __getattr__(name: str):
    """``DiscreteLaplaceDpEvent``: the old name of :class:`DiscreteLaplaceScaleDpEvent`."""
    if name == "DiscreteLaplaceDpEvent":
        warnings.warn(
            "dpconvex.accounting.DiscreteLaplaceDpEvent is now DiscreteLaplaceScaleDpEvent "
            "(its parameter is the scale; dp_accounting's DiscreteLaplaceDpEvent takes the "
            "inverse, noise_parameter)",
            DeprecationWarning,
            stacklevel=2,
        )
        return DiscreteLaplaceScaleDpEvent
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "AMP_DEFAULTS",
    "DEFAULT_RDP_ORDERS",
    "MAX_EPSILON",
    "MIN_EPSILON",
    "AmpCalibration",
    "AmpDpEvent",
    "CalibrationError",
    "ComposedDpEvent",
    "DiscreteGaussianDpEvent",
    "DiscreteLaplaceScaleDpEvent",
    "DominatingPair",
    "GaussianDpEvent",
    "GridTooLargeError",
    "ObjectivePerturbationDpEvent",
    "PLDAccountant",
    "PoissonSampledDpEvent",
    "PrivacyAccountant",
    "RandomChoiceDpEvent",
    "RdpAccountant",
    "RepeatAndSelectDpEvent",
    "SelfComposedDpEvent",
    "UnsupportedEventError",
    "amp_parameters",
    "amp_rdp",
    "calibrate",
    "check_epsilon",
    "delta_from_rdp",
    "delta_from_rdp_curve",
    "discrete_gaussian_loss_pmf",
    "discrete_gaussian_rdp",
    "discrete_laplace_epsilon",
    "discrete_laplace_loss_pmf",
    "discrete_laplace_rdp",
    "dpsgd_event",
    "dpsgd_noise_multiplier",
    "epsilon_from_rdp",
    "epsilon_from_rdp_curve",
    "gaussian_delta",
    "gaussian_epsilon",
    "gaussian_lower_bound_delta",
    "gaussian_lower_bound_epsilon",
    "gaussian_noise_multiplier",
    "gaussian_rdp",
    "gaussian_sigma",
    "half_normal_log_mgf",
    "jacobian_term",
    "kifer_delta",
    "kifer_epsilon",
    "objpert_delta",
    "objpert_epsilon",
    "objpert_rdp",
    "register_pld",
    "register_rdp",
    "pld_grid",
    "smallest_epsilon",
    "tuned_event",
    "use_disk_cache",
    "validate_event",
]
