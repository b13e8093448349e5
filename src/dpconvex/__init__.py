"""dpconvex: differentially private convex learning with tight, cited, tested accounting."""

from . import accounting
from .models import DPHuberRegressor, DPLinearRegression, DPLogisticRegression
from .tuning import PrivateRandomSearch

__version__ = "0.1.0"

__all__ = [
    "DPHuberRegressor",
    "DPLinearRegression",
    "DPLogisticRegression",
    "PrivateRandomSearch",
    "__version__",
    "accounting",
]
