"""scikit-learn estimators, and their model files."""

from .linear import DPHuberRegressor, DPLinearRegression, DPLogisticRegression
from .persist import load_model, save_model

__all__ = [
    "DPHuberRegressor",
    "DPLinearRegression",
    "DPLogisticRegression",
    "load_model",
    "save_model",
]
