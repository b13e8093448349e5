"""Where a mechanism reads its rows: one interface for in-memory and out-of-core data.

Every mechanism (AMP, output perturbation, DP-GD, AdaSSP) is written once against a
:class:`RowSource`. A source holds raw rows, their labels and a
:class:`~.policy.RowPolicy` (the rows the mechanism sees, the policy and intercept
applied, have norm at most ``row_bound``), and answers generic questions:

* ``reduce(kernel, width, *args)`` — one pass: the sum over the source's chunks of a
  kernel of :mod:`~.kernels` (the last ``maxima`` numbers combined by max);
* ``subsample(m)`` — m of the rows as an in-memory source;
* ``objective(loss, lam, b)`` — the perturbed GLM objective
  sum_i l(theta; z_i) + (lam/2)||theta||^2 + b^T theta (value, gradient, Hessian).

:class:`InMemoryRows` wraps a numpy array or CSR matrix; the dask source
(:class:`dpconvex.scale.DaskRows`) transforms each row chunk where it lives and
reduces it there. Mechanisms accept either a source (with ``y=None``) or the arrays
``X, y`` themselves (wrapped in :class:`InMemoryRows`).
"""

from __future__ import annotations

import copy
import math
from typing import Protocol, runtime_checkable

import numpy as np
import scipy.sparse as sp

from .._arrays import row_norms
from ..losses import GLMLoss
from ..optim import PerturbedGLMObjective
from ..optim.solvers import IN_MEMORY_EXACT_MAX_D
from .checks import check_labels, check_rows
from .kernels import RowScales
from .objective import RowSourceObjective
from .policy import RowPolicy, design_bound, design_rows, row_scales


@runtime_checkable
class RowSource(Protocol):
    """Rows of norm <= ``row_bound`` with their labels, as the mechanisms read them."""

    n: int
    d: int
    row_bound: float
    policy: RowPolicy
    passes: int

    def reduce(self, fn, width: int, *args, scaled: bool = False, maxima: int = 0): ...

    def subsample(self, m: int): ...

    def objective(self, loss: GLMLoss, lam: float, b: np.ndarray | None = None): ...


class InMemoryRows:
    """A numpy array or CSR matrix ``X`` (rows of norm <= ``row_bound``, checked) and ``y``.

    The labels are checked against ``loss`` (finite; +-1 for a classification loss).
    :meth:`from_raw` builds the source from *raw* rows and a row policy instead, as the
    estimators do: dense rows are then never copied into a transformed design; every
    evaluation of the objective is one pass of the row kernels over the raw array
    (:mod:`dpconvex.data.kernels`, the kernels of the dask source), which
    reads each block of rows from memory once. A mechanism that needs random access
    to the transformed rows (DP-SGD's batches, SVRG) gets them from :meth:`design`,
    built on first use.
    """

    #: an evaluation is a pass over rows in memory: solvers weigh arithmetic, not passes
    passes_are_expensive = False

    def __init__(self, X, y, loss: GLMLoss | None, row_bound: float):
        check_rows(X, row_bound)
        X = _stored(X)
        self._init(X, y, loss, row_bound, RowPolicy.identity(row_bound))

    def _init(self, X, y, loss, row_bound: float, policy: RowPolicy) -> None:
        self.y = check_labels(loss, y) if loss is not None else np.asarray(y, dtype=np.float64)
        if self.y.ndim != 1 or self.y.shape[0] != X.shape[0]:
            raise ValueError(
                f"y must be one-dimensional with {X.shape[0]} entries, got shape {self.y.shape}"
            )
        self.raw, self.policy = X, policy
        self.n = X.shape[0]
        self.d = X.shape[1] + int(bool(policy.fit_intercept))
        self.row_bound = float(row_bound)
        self.passes = 0
        # the design, once built, is shared by the copies of with_labels
        self._built = {"design": X} if policy.is_identity else {}

    def with_labels(self, y) -> InMemoryRows:
        """The same rows with other labels (one-vs-rest problems share the rows)."""
        y = np.asarray(y, dtype=np.float64)
        if y.shape != self.y.shape:
            raise ValueError(f"y must have shape {self.y.shape}, got {y.shape}")
        if not np.all(np.isfinite(y)):
            raise ValueError("y contains NaN or infinity")
        source = copy.copy(self)
        source.y, source.passes = y, 0
        return source

    @classmethod
    def from_raw(
        cls,
        X,
        y,
        loss: GLMLoss | None = None,
        *,
        row_norm: str,
        row_bound: float,
        fit_intercept: bool,
        intercept_scaling: float = 1.0,
    ) -> InMemoryRows:
        """Raw rows under the row policy (and the intercept column): the estimators' source.

        Rows above ``row_bound`` under ``row_norm="error"`` raise here, before any
        evaluation. A CSR ``X`` gets its transformed design now (cheap to build).
        """
        policy = RowPolicy(row_norm, row_bound, fit_intercept, intercept_scaling)
        bound = design_bound(row_norm, row_bound, fit_intercept, intercept_scaling)
        X = _stored(X)
        if sp.issparse(X):  # the transformed CSR design, built now
            X = design_rows(X, row_norm, row_bound, fit_intercept, intercept_scaling)
            policy = RowPolicy.identity(bound)
        else:
            if X.ndim != 2:
                raise ValueError(f"X must be two-dimensional, got shape {X.shape}")
            # checks the policy, and refuses rows above the bound under "error" now
            row_scales(row_norms(X) if row_norm == "error" else np.zeros(0), row_norm, row_bound)
        source = cls.__new__(cls)
        source._init(X, y, loss, bound, policy)
        return source

    @property
    def X(self):
        """The mechanism's rows (the transformed design), built on first use."""
        return self.design()

    def design(self):
        """The transformed rows as one array: random access for DP-SGD's batches and SVRG."""
        if "design" not in self._built:
            p = self.policy
            self._built["design"] = design_rows(
                self.raw, p.row_norm, p.row_bound, p.fit_intercept, p.intercept_scaling
            )
        return self._built["design"]

    def reduce(self, fn, width: int, *args, scaled: bool = False, maxima: int = 0) -> np.ndarray:
        """One pass: ``fn(X, y, *args)``, the kernel of :mod:`~.kernels` on the one chunk.

        (``maxima`` is for the chunked sources: one chunk's numbers are their own maxima.)
        ``scaled``: ``fn`` takes the rows' :func:`~.kernels.chunk_scales` (``scales=``,
        a :class:`~.kernels.RowScales`): the first such pass computes them from the
        blocks it reads and keeps them (16 bytes per row, shared with the copies of
        :meth:`with_labels`), so that the other passes skip the rows' norms and the NaN
        check. On 10^6 x 100 rows a pass then took 0.073-0.078 s instead of 0.085.
        """
        self.passes += 1
        if not scaled:
            return np.asarray(fn(self.raw, self.y, *args), dtype=np.float64)
        if "scales" not in self._built:
            self._built["scales"] = RowScales(self.n)
        scales = self._built["scales"]
        return np.asarray(fn(self.raw, self.y, *args, scales=scales), dtype=np.float64)

    def subsample(self, m: int) -> InMemoryRows:
        """m evenly spaced rows as a source of the same kind (Newton's starting point)."""
        keep = np.linspace(0, self.n - 1, min(m, self.n)).astype(np.int64)
        source = type(self).__new__(type(self))
        source._init(self.raw[keep], self.y[keep], None, self.row_bound, self.policy)
        return source

    def objective(self, loss: GLMLoss, lam: float, b: np.ndarray | None = None):
        """The perturbed objective: by the row kernels on dense rows, on the design else.

        Dense rows that are mostly zeros (one-hot designs) get the CSR design; rows wider
        than the solvers' exact-Hessian limit (``IN_MEMORY_EXACT_MAX_D``) get the dense
        design: there Newton multiplies by the Hessian many times at one point, and the
        design's objective keeps that point's curvature (two sweeps per product, against
        four for the kernels, which start from the raw rows: a fit on 2,000 x 2,000 rows
        took 1.7x as long through them).
        """
        if sp.issparse(self.raw) or _mostly_zeros(self.raw) or self.d > IN_MEMORY_EXACT_MAX_D:
            return PerturbedGLMObjective(self.design(), self.y, loss, lam, b)
        return RowSourceObjective(self, loss, lam, b)


def _stored(X):
    """X as the source keeps it: CSR or a dense array, in float64."""
    if sp.issparse(X):
        return sp.csr_matrix(X, dtype=np.float64)
    return np.asarray(X, dtype=np.float64)


def _mostly_zeros(X) -> bool:
    """A dense array that PerturbedGLMObjective would store as CSR (one-hot designs).

    Judged on at most 10,000 evenly spaced rows: it only picks the faster kernels.
    """
    if not X.size:
        return False
    sample = X[:: max(1, X.shape[0] // 10_000)]
    return np.count_nonzero(sample) <= PerturbedGLMObjective.SPARSE_DENSITY * sample.size


def as_rows(X, y, loss: GLMLoss | None, row_bound: float) -> RowSource:
    """``X`` if it is already a :class:`RowSource` (then ``y`` must be None), else the arrays.

    A source's own bound must not exceed the ``row_bound`` the mechanism is priced with.
    """
    if isinstance(X, RowSource) and not isinstance(X, np.ndarray):
        if y is not None:
            raise ValueError("give the labels inside the row source, not as y")
        if not (math.isfinite(row_bound) and row_bound > 0):
            raise ValueError(f"row_bound must be a finite number > 0, got {row_bound}")
        if X.row_bound > row_bound * (1 + 1e-12):
            raise ValueError(
                f"the rows are bounded by {X.row_bound:.6g}, above the declared bound "
                f"{row_bound}; the privacy analysis does not cover them"
            )
        if loss is not None and isinstance(X, InMemoryRows):
            check_labels(loss, X.y)  # (dask sources check theirs chunk by chunk)
        return X
    return InMemoryRows(X, y, loss, row_bound)
