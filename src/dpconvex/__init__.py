"""dpconvex: differentially private convex learning with tight, cited, tested accounting."""

from . import accounting
from .budget import Budget, BudgetExceededError, LedgerError, LedgerTamperedError
from .models import (
    DPHuberRegressor,
    DPLinearRegression,
    DPLogisticRegression,
    load_model,
    save_model,
)
from .models.clipping import ClippingWarning
from .tuning import PrivateRandomSearch

__version__ = "0.1.0"

__all__ = [
    "Budget",
    "BudgetExceededError",
    "ClippingWarning",
    "DPHuberRegressor",
    "DPLinearRegression",
    "DPLogisticRegression",
    "LedgerError",
    "LedgerTamperedError",
    "PrivateRandomSearch",
    "__version__",
    "accounting",
    "load_model",
    "save_model",
]
