"""scikit-learn's common estimator checks, for both estimators at their default parameters."""

from __future__ import annotations

from sklearn.utils.estimator_checks import parametrize_with_checks

from structnets.estimators import MLPClassifier, MLPRegressor


@parametrize_with_checks([MLPClassifier(), MLPRegressor()])
def test_sklearn_compatible(estimator, check):
    check(estimator)
