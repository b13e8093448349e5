"""scikit-learn estimators of the linear core.

Their model files are written and read by :mod:`dpconvex.models.persist`
(``dpconvex.save_model`` / ``dpconvex.load_model``), which sits a layer above: a file may
hold a whole table pipeline, so reading one needs the pipeline classes.
"""

from .linear import DPHuberRegressor, DPLinearRegression, DPLogisticRegression

__all__ = [
    "DPHuberRegressor",
    "DPLinearRegression",
    "DPLogisticRegression",
]
