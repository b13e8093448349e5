"""Hidden-state DP mini-batch block coordinate descent (Chen & Liu, arXiv 2407.08233).

* :func:`dp_mbcd` — Algorithm 1 for problems with released and hidden blocks,
  returning a :class:`~dpconvex.release.Release` priced by the
  composition accountant or, where it is sound, the hidden-state one (Thm 4.6).
* :class:`HiddenStateDpEvent`, :class:`MbcdCompositionDpEvent` — the two events,
  registered with :class:`dpconvex.accounting.PrivacyAccountant`.
* Case studies: :class:`NmfProblem` (Algorithm 3, corrected), :class:`LiftedMlpProblem`
  (Algorithm 4 and its variant), :class:`LeastSquaresProblem` (one strongly convex
  block: the case the hidden-state accountant covers); baselines :func:`mbcd`,
  :func:`sgd_nmf`, :func:`sgd_mlp`.
"""

from .batches import batch_count, secret_batches
from .calibration import MBCD_ORDERS, calibrate_noise_scale, epsilon, epsilons
from .data import find_mnist_5k, load_mnist_5k, madelon_like
from .engine import (
    BlockSpec,
    HiddenStateUnsoundError,
    MbcdProblem,
    dp_mbcd,
    hidden_state_conditions,
    mbcd,
    run_events,
)
from .events import (
    HiddenStateDpEvent,
    MbcdCompositionDpEvent,
    combine_compositions,
    composition_event,
)
from .hidden_state import (
    epoch_contributions,
    mix_positions,
    position_bounds,
    stationary_position_bounds,
)
from .least_squares import LeastSquaresProblem
from .mlp_dpsgd import mlp_forward, mlp_predict, sgd_mlp
from .network import LiftedMlpProblem, u_update
from .nmf import NmfProblem, hals_rows, relative_error, sgd_nmf, synthetic_nmf
from .prox import Prox
from .schedules import constant_noise, linear_decrease_noise, step_noise
from .steps import ImplicitStepError, clipped_gradient_sum, implicit_least_squares_step

__all__ = [
    "MBCD_ORDERS",
    "BlockSpec",
    "HiddenStateDpEvent",
    "HiddenStateUnsoundError",
    "ImplicitStepError",
    "LeastSquaresProblem",
    "LiftedMlpProblem",
    "MbcdCompositionDpEvent",
    "MbcdProblem",
    "NmfProblem",
    "Prox",
    "batch_count",
    "calibrate_noise_scale",
    "clipped_gradient_sum",
    "combine_compositions",
    "composition_event",
    "constant_noise",
    "dp_mbcd",
    "epoch_contributions",
    "epsilon",
    "epsilons",
    "find_mnist_5k",
    "hals_rows",
    "hidden_state_conditions",
    "implicit_least_squares_step",
    "linear_decrease_noise",
    "load_mnist_5k",
    "madelon_like",
    "mbcd",
    "mix_positions",
    "mlp_forward",
    "mlp_predict",
    "position_bounds",
    "relative_error",
    "run_events",
    "secret_batches",
    "sgd_mlp",
    "sgd_nmf",
    "stationary_position_bounds",
    "step_noise",
    "synthetic_nmf",
    "u_update",
]
