"""dpconvex: differentially private convex learning with tight, cited, tested accounting."""

from . import accounting
from .budget import (
    Budget,
    BudgetExceededError,
    LedgerError,
    LedgerFileWarning,
    LedgerTamperedError,
)
from .models import (
    DPHuberRegressor,
    DPLinearRegression,
    DPLogisticRegression,
    ModelFileError,
    load_model,
    save_model,
)
from .models.clipping import ClippingWarning
from .tuning import NothingSelectedError, PrivateRandomSearch

__version__ = "0.1.0"

__all__ = [
    "Budget",
    "BudgetExceededError",
    "ClippingWarning",
    "DPHuberRegressor",
    "DPLinearRegression",
    "DPLogisticRegression",
    "LedgerError",
    "LedgerFileWarning",
    "LedgerTamperedError",
    "ModelFileError",
    "NothingSelectedError",
    "PrivateRandomSearch",
    "__version__",
    "accounting",
    "load_model",
    "save_model",
]
