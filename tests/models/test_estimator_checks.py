"""scikit-learn's estimator checks.

Every check passes. Not applicable here and documented: the regressors carry the
``poor_score`` tag, because check_regressors_train asks for R^2 > 0.5 on 200 rows,
which a private fit at the default epsilon = 1 does not reach (about 0.4, see
test_linear.py for utility at realistic sizes). ``check_array_api_input`` and the
pandas-input checks skip themselves when SCIPY_ARRAY_API / pandas are absent.
"""

from sklearn.utils.estimator_checks import parametrize_with_checks

from dpconvex import DPHuberRegressor, DPLinearRegression, DPLogisticRegression


@parametrize_with_checks(
    [
        DPLogisticRegression(random_state=0),
        DPLinearRegression(random_state=0),
        DPHuberRegressor(random_state=0),
    ]
)
def test_sklearn_compatible_estimator(estimator, check):
    check(estimator)
