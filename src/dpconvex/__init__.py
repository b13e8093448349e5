"""dpconvex: differentially private convex learning with tight, cited, tested accounting."""

from . import accounting
from .budget import (
    Budget,
    BudgetExceededError,
    LedgerError,
    LedgerFileWarning,
    LedgerTamperedError,
)
from .mechanisms.auto import ConstantModelWarning
from .models import DPHuberRegressor, DPLinearRegression, DPLogisticRegression
from .models.clipping import ClippingWarning
from .models.persist import ModelFileError, load_model, save_model
from .models.session import (
    RepeatedFitWarning,
    UnpricedStepWarning,
    reset_session,
    session_spent,
)
from .pipeline import PrivatePipeline, Public, make_private_pipeline
from .preprocessing import TableEncoder
from .table_model import make_table_model
from .tuning import NothingSelectedError, PrivateRandomSearch

__version__ = "0.1.0"

__all__ = [
    "Budget",
    "BudgetExceededError",
    "ClippingWarning",
    "ConstantModelWarning",
    "DPHuberRegressor",
    "DPLinearRegression",
    "DPLogisticRegression",
    "LedgerError",
    "LedgerFileWarning",
    "LedgerTamperedError",
    "ModelFileError",
    "NothingSelectedError",
    "PrivatePipeline",
    "PrivateRandomSearch",
    "Public",
    "RepeatedFitWarning",
    "TableEncoder",
    "UnpricedStepWarning",
    "__version__",
    "accounting",
    "load_model",
    "make_private_pipeline",
    "make_table_model",
    "reset_session",
    "save_model",
    "session_spent",
]
