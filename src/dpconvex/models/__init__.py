"""scikit-learn estimators."""

from .linear import DPHuberRegressor, DPLinearRegression, DPLogisticRegression

__all__ = ["DPHuberRegressor", "DPLinearRegression", "DPLogisticRegression"]
