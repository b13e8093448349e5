"""Private hyperparameter search (Papernot-Steinke repeat-and-select)."""

from .pricing import PRIVACY_FREE_PARAMS
from .runs import sample_number_of_runs, truncated_negative_binomial_gamma
from .search import NothingSelectedError, PrivateRandomSearch

__all__ = [
    "PRIVACY_FREE_PARAMS",
    "NothingSelectedError",
    "PrivateRandomSearch",
    "sample_number_of_runs",
    "truncated_negative_binomial_gamma",
]
