"""scikit-learn estimators, and their model files."""

from .linear import DPHuberRegressor, DPLinearRegression, DPLogisticRegression
from .persist import ModelFileError, load_model, save_model

__all__ = [
    "DPHuberRegressor",
    "DPLinearRegression",
    "DPLogisticRegression",
    "ModelFileError",
    "load_model",
    "save_model",
]
