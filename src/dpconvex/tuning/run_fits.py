"""The runs of a private random search: their random draws, their fits and their scores.

:class:`SearchRuns` draws everything random before any run starts (the split, each run's
hyperparameters, noise stream and score noise), so that the runs give the same result on
any number of workers, and fits and scores them; a failed run scores -inf and says nothing.
"""

from __future__ import annotations

import math
import sys
import warnings

import numpy as np
from sklearn.base import clone

from ..discrete_noise import discrete_gaussian
from ..models.clipping import ClippingWarning
from ..models.session import priced_by_caller


def is_distribution(value) -> bool:
    """Whether a search space entry is a distribution (it has ``.rvs``)."""
    return hasattr(value, "rvs")


def draw_value(name: str, value, rng: np.random.Generator):
    """One draw of hyperparameter ``name``: uniform from a list, or ``value.rvs()``."""
    if isinstance(value, list | tuple):  # non-empty: checked by _check_free_values
        return value[int(rng.integers(len(value)))]
    try:
        draw = value.rvs(random_state=rng)
    except Exception as exc:  # noqa: BLE001 - the caller's distribution, named
        raise ValueError(
            f"drawing {name!r} from its distribution failed ({type(exc).__name__}: {exc})"
        ) from None
    return draw.item() if isinstance(draw, np.generic) else draw


def take_rows(X, rows: np.ndarray):
    """Rows of a matrix or, for a pipeline, of a table (a pandas DataFrame by position)."""
    return X.iloc[rows] if hasattr(X, "iloc") else X[rows]


class SearchRuns:
    """The runs of :class:`~dpconvex.tuning.PrivateRandomSearch` (a mixin)."""

    def _split(self, rng: np.random.Generator, n: int) -> tuple[np.ndarray, np.ndarray]:
        """Indices of the tuning runs' training and validation rows.

        repeat: a data-independent split of public sizes. subsample: a secret Poisson(q)
        subsample (each row independently), split row by row; no size is released.
        """
        cfg = self._cfg
        if cfg["strategy"] == "repeat":
            order = rng.permutation(n)
            return order[cfg["val_rows"] :], order[: cfg["val_rows"]]
        noisy = self.scoring == "noisy_validation"
        chosen = np.flatnonzero(rng.random(n) < cfg["q"])
        to_val = rng.random(chosen.size) < (cfg["validation_fraction"] if noisy else 0.0)
        return chosen[~to_val], chosen[to_val]

    def _draw_plans(self, rng: np.random.Generator, k: int) -> list:
        """Each run's (hyperparameters, random stream, score noise), drawn before any run.

        Everything random is drawn here, in the order a sequential search draws it, so
        that the runs can go to any number of workers and give the same result. With
        probability default_share a run keeps the estimator's own settings for the free
        hyperparameters (one data-independent mixture, so the runs stay i.i.d. as the
        selection theorems require); priced ones are always drawn from their lists.
        """
        noisy = self.scoring == "noisy_validation"
        free = set(self.param_distributions) - set(self._relevant_choices())
        own = self._tuned().get_params()
        plans = []
        for _ in range(k):
            drawn = {
                name: draw_value(name, space, rng)
                for name, space in self.param_distributions.items()
            }
            keep = rng.random() < self._cfg["default_share"]
            params = {name: own[name] if keep and name in free else drawn[name] for name in drawn}
            stream = rng.spawn(1)[0]
            noise = 0 if not noisy else int(discrete_gaussian(self._cfg["score_noise"], rng=rng))
            plans.append((params, stream, noise))
        return plans

    def _one_run(self, plan, run_epsilon, X_train, y_train, validation):
        """Fit one run and score it: (score, params, fitted estimator).

        A run that fails, whatever the reason, returns (-inf, params, None): it loses to
        every run that produced a model, and its error is neither raised nor kept, so one
        run cannot stop the search or say anything about the runs that were not selected.
        The runs' ``ClippingWarning``s are dropped (the search warns once, see ``fit``).
        BLAS runs on one thread, as in joblib's workers: the order of a product's
        additions then does not depend on n_jobs, and neither do the last bits of the fit.
        """
        from threadpoolctl import threadpool_limits

        params, stream, noise = plan
        target = self._tuned_target()
        try:
            est = clone(self._tuned()).set_params(**params)
            est = target.configure(est, run_epsilon, self.delta)
            # no ledger of its own: the search's event was charged once, before any run
            est = target.seeded(est, stream)
            est = self._shaped(est, self._cfg["tune_rows"], tuning=True)
            X_val, y_val = validation
            with (
                threadpool_limits(limits=1, user_api="blas"),
                warnings.catch_warnings(),
                priced_by_caller(),  # in any worker: the search's event prices this run
            ):
                # a run says nothing: a warning per run would count the runs, and one
                # computed on the secret subsample (clipping, thin bounds) its size
                warnings.simplefilter("ignore")
                est.fit(X_train, y_train, **self._subsample_fit_params())
                if self.scoring == "public":
                    return float(est.score(X_val, y_val)), params, est
                correct = int(np.sum(est.predict(X_val) == y_val)) if len(y_val) else 0
        except Exception:  # noqa: BLE001 - any failure is a failed run, never an abort
            return -math.inf, params, None
        # divided by the public (expected) validation size: the actual size of a secret
        # subsample's validation part is not released
        return (correct + noise) / max(self._cfg["val_rows"], 1.0), params, est

    def _final_fit(self, params, run_epsilon, stream, X, y):
        """The final model on all rows (subsample strategy), on one BLAS thread."""
        from threadpoolctl import threadpool_limits

        target = self._tuned_target()
        final = target.configure(clone(self._tuned()).set_params(**params), run_epsilon, self.delta)
        final = target.seeded(final, stream)  # the search's event was charged before any run
        with (
            threadpool_limits(limits=1, user_api="blas"),
            warnings.catch_warnings(),
            priced_by_caller(),  # the search's event prices the final run
        ):
            warnings.simplefilter("ignore", ClippingWarning)  # the search warned once
            return final.fit(X, y)

    def _run_all(self, plans, run_epsilon, X_train, y_train, validation, k, speculate=None):
        """(the runs' (score, params, estimator), the speculative final model or None)."""
        n_jobs = 1 if self.n_jobs is None else int(self.n_jobs)
        if n_jobs == 1 or k == 0 or (k == 1 and speculate is None):
            bar = self._progress(k)
            out = []
            for plan in plans:
                out.append(self._one_run(plan, run_epsilon, X_train, y_train, validation))
                bar.update(1)
            bar.close()
            return out, None
        from joblib import Parallel, delayed

        self._say(f"{k} runs on {n_jobs if n_jobs > 0 else 'all'} workers ...")
        tasks = [
            delayed(self._one_run)(plan, run_epsilon, X_train, y_train, validation)
            for plan in plans
        ]
        if speculate is not None:  # first: the longest task starts at once
            tasks.insert(0, delayed(self._final_fit)(*speculate))
        out = Parallel(n_jobs=n_jobs)(tasks)
        return (out[1:], out[0]) if speculate is not None else (out, None)

    # -- progress (stderr only; never touches rng or results) --------------------
    def _say(self, message: str) -> None:
        if self.verbose:
            print(f"PrivateRandomSearch: {message}", file=sys.stderr, flush=True)

    def _progress(self, k: int):
        from tqdm import tqdm

        return tqdm(
            total=k,
            desc=f"PrivateRandomSearch: {k} runs",
            unit="run",
            file=sys.stderr,
            disable=not self.verbose,
        )
