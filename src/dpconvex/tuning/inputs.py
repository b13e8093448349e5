"""The checks of a private random search's inputs, all made before its budget is charged."""

from __future__ import annotations

import numbers

import numpy as np
from sklearn.base import clone

from .. import _validation as v
from ..models.labels import check_labels, declared_classes
from .pricing import PRIVACY_FREE_PARAMS
from .run_fits import is_distribution
from .targets import check_model_step, is_classifier_target, is_pipeline, model_of


class SearchInputs:
    """The input checks of :class:`~dpconvex.tuning.PrivateRandomSearch` (a mixin)."""

    def _checked_inputs(self, X, y, X_public, y_public):
        """(X, y, declared classes or None), refused before anything is spent."""
        v.positive("epsilon", self.epsilon)
        v.probability_open("delta", self.delta)
        if self.scoring not in ("noisy_validation", "public"):
            raise ValueError(
                f"scoring must be 'noisy_validation' or 'public', got {self.scoring!r}"
            )
        if not hasattr(self.estimator, "privacy_event"):
            raise TypeError("estimator must be a dpconvex estimator (it needs privacy_event)")
        check_model_step(self.estimator)
        classifier = is_classifier_target(self.estimator)
        if self.scoring == "noisy_validation" and not classifier:
            raise ValueError(
                'scoring="noisy_validation" needs a classifier; for regressors '
                'pass public validation data with scoring="public"'
            )
        if self.scoring == "public" and (X_public is None or y_public is None):
            raise ValueError('scoring="public" needs X_public and y_public')
        if self.n_jobs is not None and (
            isinstance(self.n_jobs, bool)
            or not isinstance(self.n_jobs, numbers.Integral)
            or self.n_jobs == 0
        ):
            raise ValueError(f"n_jobs must be a non-zero integer (or -1 for all cores), got "
                             f"{self.n_jobs!r}")  # fmt: skip
        if not (is_pipeline(self.estimator) and hasattr(X, "iloc")):  # a pipeline takes tables
            X = np.asarray(X) if not hasattr(X, "tocsr") else X.tocsr()
        y = np.asarray(y)
        if X.ndim != 2 or y.ndim != 1 or X.shape[0] != y.shape[0]:
            raise ValueError(
                f"X must be 2-D and y 1-D with one label per row; got X {X.shape}, y {y.shape}"
            )
        classes = None
        if classifier:  # the label set is the estimator's declared one, never y's
            declared = model_of(self.estimator).get_params().get("classes")
            classes = declared_classes(declared)
            check_labels(y, classes, declared=declared is not None)
        return X, y, classes

    def _check_free_values(self) -> None:
        """Every listed value of a free setting is one the estimator accepts.

        Checked before the charge, so that no run can be refused for a listed setting
        after it. (A value a distribution draws is only known after the charge: a run that
        fails on it scores as a failed run; see :meth:`_one_run`.)
        """
        for name, space in self.param_distributions.items():
            if is_distribution(space):
                continue
            if not isinstance(space, list | tuple) or not space:
                raise ValueError(
                    f"each search space entry must be a non-empty list or a distribution "
                    f"with .rvs(); {name!r} is {space!r}"
                )
            if self._tuned_target().free_name(name, PRIVACY_FREE_PARAMS):
                for value in space:
                    probe = clone(self.estimator).set_params(**{name: value})
                    model_of(probe)._validate_params()
