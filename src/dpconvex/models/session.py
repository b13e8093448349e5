"""What this process's private fits spent on the same rows: a session record and its warnings.

Every private fit (an estimator, a :class:`~dpconvex.PrivateRandomSearch`, a
:class:`~dpconvex.PrivatePipeline`) reports its event here when it is charged, with a
fingerprint of the rows it reads: one 8-byte hash per row, in memory only (never
written, never part of a release). A fit whose rows overlap earlier fits' rows gets a
:class:`RepeatedFitWarning` giving the composed epsilon of all those fits, because the
people in the overlap paid for each of them (sequential composition: Dwork & Roth, "The
Algorithmic Foundations of Differential Privacy", 2014, Thm 3.16; the epsilon is priced
by the Renyi-DP accountant, Mironov 2017, arXiv 1702.07476, Prop. 1 and 3, an upper
bound). :func:`session_spent` prices a session's fits with the tight accountant.

The warnings go to whoever runs the fit (the data owner). They may count fits; they
carry no data value. What the record cannot see is stated in :func:`session_spent`.
"""

from __future__ import annotations

import contextvars
import os
import sys
import warnings
from contextlib import contextmanager
from dataclasses import dataclass

import numpy as np
from dp_accounting.dp_event import ComposedDpEvent, DpEvent, NoOpDpEvent, SelfComposedDpEvent

from .._forksafe import ForkSafeLock
from .row_fingerprints import row_keys, sorted_unique_keys

#: most row hashes the session keeps (16 MiB); beyond it every fit keeps a consistent
#: hash-based sample (the same rows in every fit), halved until it fits
MAX_STORED_KEYS = 1 << 21
#: most records kept: beyond it the two oldest are merged into one (an overlap with either
#: then counts both: the warnings can only overstate)
MAX_FITS = 512


class RepeatedFitWarning(UserWarning):
    """A private fit reads rows that earlier private fits of this session also read, or
    runs inside scikit-learn's model selection: its ``epsilon_`` covers one fit only."""


class UnpricedStepWarning(UserWarning):
    """A private estimator is fitted after steps of a scikit-learn Pipeline that read the
    rows and whose cost its ``epsilon_`` does not include."""


@dataclass(frozen=True)
class SessionSpent:
    """What private fits of this process spent: ``epsilon`` at ``delta`` over ``fits`` fits."""

    epsilon: float
    delta: float
    fits: int
    dp_event: DpEvent


@dataclass
class _Fit:
    """One fit, or (after merging, see :func:`_store`) several old fits taken together."""

    events: list  # the fits' events
    delta: float  # the largest of their deltas
    keys: np.ndarray | None  # sorted unique row hashes, or None
    names: frozenset  # dask arrays' graph names (their rows are not hashed)
    rdp: np.ndarray | None = None  # Renyi DP of the events at DEFAULT_RDP_ORDERS, once asked


class _Session:
    def __init__(self) -> None:
        self.lock = ForkSafeLock()
        self.clear()

    def clear(self) -> None:
        self.fits: list[_Fit] = []
        self.level = 0  # keys kept: those below 2**(64 - level)
        self.stored = 0
        # every key of the records fits[:indexed], sorted, and which record holds it;
        # the records after them are checked one by one until the next rebuild
        self.indexed = 0
        self.index_keys = np.zeros(0, dtype=np.uint64)
        self.index_owner = np.zeros(0, dtype=np.int64)


_SESSION = _Session()
_INNER = contextvars.ContextVar("dpconvex_priced_by_caller", default=False)


@contextmanager
def priced_by_caller():
    """Fits inside this block are priced by their caller (a search, a private pipeline),
    which reports its whole event itself: they are neither recorded nor warned about."""
    token = _INNER.set(True)
    try:
        yield
    finally:
        _INNER.reset(token)


# -- the record -------------------------------------------------------------------------
def _kept(keys: np.ndarray, level: int) -> np.ndarray:
    return keys if level == 0 else keys[keys < np.uint64(1 << (64 - level))]


def _overlaps(fit: _Fit, keys: np.ndarray | None, name: str | None) -> bool:
    if name is not None:
        return name in fit.names
    if keys is None or fit.keys is None or not keys.size or not fit.keys.size:
        return False
    small, large = (keys, fit.keys) if keys.size <= fit.keys.size else (fit.keys, keys)
    where = np.minimum(np.searchsorted(large, small), large.size - 1)
    return bool(np.any(large[where] == small))


def _merged(a: _Fit, b: _Fit) -> _Fit:
    if a.keys is None or b.keys is None:
        keys = a.keys if b.keys is None else b.keys
    else:
        keys = np.union1d(a.keys, b.keys)
    rdp = None if a.rdp is None or b.rdp is None else a.rdp + b.rdp
    return _Fit(a.events + b.events, max(a.delta, b.delta), keys, a.names | b.names, rdp)


def _store(fit: _Fit) -> None:
    """Append ``fit`` (lock held), thinning every record until the keys fit the cap and
    merging the oldest records beyond :data:`MAX_FITS`."""
    s = _SESSION
    rebuild = False
    if fit.keys is not None:
        fit.keys = _kept(fit.keys, s.level)
        while s.stored + fit.keys.size > MAX_STORED_KEYS and s.level < 63:
            s.level, rebuild = s.level + 1, True
            for old in s.fits:
                if old.keys is not None:
                    old.keys = _kept(old.keys, s.level)
            fit.keys = _kept(fit.keys, s.level)
            s.stored = sum(f.keys.size for f in s.fits if f.keys is not None)
    s.fits.append(fit)
    if len(s.fits) > MAX_FITS:
        s.fits[0:2] = [_merged(s.fits[0], s.fits[1])]
        rebuild = True
    s.stored = sum(f.keys.size for f in s.fits if f.keys is not None)
    if rebuild or len(s.fits) - s.indexed > _UNINDEXED:
        _rebuild_index()


#: records checked one by one before the sorted index is rebuilt
_UNINDEXED = 8


def _rebuild_index() -> None:
    s = _SESSION
    held = [(i, f.keys) for i, f in enumerate(s.fits) if f.keys is not None and f.keys.size]
    if held:
        keys = np.concatenate([k for _, k in held])
        owner = np.repeat([i for i, _ in held], [k.size for _, k in held])
        order = np.argsort(keys, kind="stable")
        s.index_keys, s.index_owner = keys[order], owner[order]
    else:
        s.index_keys = np.zeros(0, dtype=np.uint64)
        s.index_owner = np.zeros(0, dtype=np.int64)
    s.indexed = len(s.fits)


def _overlapping(keys: np.ndarray | None, name: str | None) -> list[_Fit]:
    """The recorded fits that read a row of ``keys`` (or the dask array ``name``); lock held."""
    s = _SESSION
    if name is not None:
        return [f for f in s.fits if name in f.names]
    if keys is None or not keys.size:
        return []
    owners = np.zeros(0, dtype=np.int64)
    if s.index_keys.size:
        lo = np.searchsorted(s.index_keys, keys, side="left")
        counts = np.searchsorted(s.index_keys, keys, side="right") - lo
        lo, counts = lo[counts > 0], counts[counts > 0]
        # every index position in the ranges [lo, lo + count), without a Python loop
        starts = np.repeat(lo - np.cumsum(counts) + counts, counts)
        held = np.bincount(s.index_owner[starts + np.arange(starts.size)], minlength=s.indexed)
        owners = np.flatnonzero(held)
    recent = [f for f in s.fits[s.indexed :] if _overlaps(f, keys, None)]
    return [s.fits[i] for i in owners.tolist()] + recent


def _rdp_of(fit: _Fit) -> np.ndarray:
    """The record's Renyi DP curve (computed once; its events' sum)."""
    from ..accounting import DEFAULT_RDP_ORDERS, PrivacyAccountant

    if fit.rdp is None:
        total = np.zeros(len(DEFAULT_RDP_ORDERS))
        for event in fit.events:
            key = _hashable(event)
            curve = _RDP_CURVES.get(key) if key is not None else None
            if curve is None:  # a fit repeated with the same settings is priced once
                curve = (
                    PrivacyAccountant("rdp", orders=DEFAULT_RDP_ORDERS).compose(event).rdp()
                )
                if key is not None:
                    if len(_RDP_CURVES) >= MAX_FITS:
                        _RDP_CURVES.pop(next(iter(_RDP_CURVES)))
                    _RDP_CURVES[key] = curve
            total = total + curve  # Renyi DP adds under composition (Mironov 2017, Prop. 1)
        fit.rdp = total
    return fit.rdp


#: Renyi DP curves of the events seen this session (at most MAX_FITS, oldest dropped).
_RDP_CURVES: dict = {}


def _hashable(event: DpEvent) -> str | None:
    """A dictionary key for ``event`` (its repr: events are frozen records of numbers), or
    None if it is too large to be worth keeping."""
    text = repr(event)
    return text if len(text) <= 100_000 else None


def _rdp_epsilon(fits: list[_Fit], delta: float) -> float:
    """epsilon at delta of the fits' composition by Renyi DP: the curves add (Mironov 2017,
    Prop. 1), converted by Balle et al. 2020, Thm 21 (an upper bound)."""
    from ..accounting import DEFAULT_RDP_ORDERS, epsilon_from_rdp

    total = sum(_rdp_of(f) for f in fits)
    return float(epsilon_from_rdp(DEFAULT_RDP_ORDERS, total, delta, "improved")[0])


def _grouped(events: list[DpEvent]) -> DpEvent:
    """The events' composition, identical events as one self-composition."""
    groups: list[list] = []
    for event in events:
        for group in groups:
            if group[0] == event:
                group[1] += 1
                break
        else:
            groups.append([event, 1])
    parts = [e if k == 1 else SelfComposedDpEvent(e, k) for e, k in groups]
    return ComposedDpEvent(parts)


#: the delta a session reports at when every fit was pure (the accountants need delta > 0)
PURE_DELTA = 1e-10


def _at(deltas: list[float], delta: float | None) -> float:
    """The delta to report at: the given one, else the largest of the fits' deltas."""
    if delta is not None:
        return float(delta)
    largest = max(deltas, default=0.0)
    return largest if largest > 0 else PURE_DELTA


def _epsilon(event: DpEvent, delta: float, accounting: str) -> float:
    from ..accounting import PrivacyAccountant, pld_grid

    rough = PrivacyAccountant("rdp").compose(event).get_epsilon(delta)
    if accounting == "rdp":
        return float(rough)
    h = pld_grid(max(rough, 1e-3))
    return float(PrivacyAccountant(accounting, value_discretization_interval=h)
                 .compose(event).get_epsilon(delta))  # fmt: skip


# -- who is calling ------------------------------------------------------------------------
#: scikit-learn transformers whose fit learns only the public shape of X (the number of
#: columns): Normalizer and Binarizer scale or threshold each row by itself and learn
#: nothing; PolynomialFeatures learns the output powers from the column count alone.
#: FunctionTransformer is not here: its function may mix rows (X - X.mean(axis=0)).
STATELESS_TRANSFORMERS = ("Normalizer", "Binarizer", "PolynomialFeatures")


def _is_stateless(step) -> bool:
    cls = type(step)
    return cls.__module__.startswith("sklearn.preprocessing") and (
        cls.__name__ in STATELESS_TRANSFORMERS
    )


def step_reads_rows(step) -> bool:
    """Whether fitting ``step`` learns something from the rows that no event prices.

    False for "passthrough"/"drop"/None, steps declared public
    (:class:`dpconvex.Public`), the scikit-learn transformers in
    :data:`STATELESS_TRANSFORMERS`, and compositions (Pipeline, ColumnTransformer,
    FeatureUnion) of such steps only.
    """
    if step is None or isinstance(step, str):
        return False
    if getattr(step, "_declared_public", False) or _is_stateless(step):
        return False
    parts = _sub_steps(step)
    if parts is not None:
        return any(step_reads_rows(part) for part in parts)
    return True


def _sub_steps(step) -> list | None:
    from sklearn.compose import ColumnTransformer
    from sklearn.pipeline import FeatureUnion, Pipeline

    if isinstance(step, Pipeline):
        return [s for _, s in step.steps]
    if isinstance(step, ColumnTransformer):
        return [t for _, t, _ in step.transformers] + [step.remainder]
    if isinstance(step, FeatureUnion):
        return [t for _, t in step.transformer_list]
    return None


def _earlier_steps(pipeline, fitted_object) -> list:
    """Names of the steps before the one ``fitted_object`` is (or is inside) that read rows."""
    steps = list(pipeline.steps)
    index = len(steps) - 1
    for i, (_, step) in enumerate(steps):
        if step is fitted_object:
            index = i
    return [name for name, step in steps[:index] if step_reads_rows(step)]


_SELECTION_FILES = (os.sep + "model_selection" + os.sep,)


def _callers(max_depth: int = 200) -> tuple[str | None, list[str]]:
    """(scikit-learn model-selection caller, unpriced earlier Pipeline steps) on the stack."""
    from sklearn.base import BaseEstimator
    from sklearn.pipeline import Pipeline

    frame = sys._getframe(2)
    below = None  # the estimator whose method the frame above called
    selection, unpriced = None, []
    for _ in range(max_depth):
        if frame is None:
            break
        owner = frame.f_locals.get("self")
        filename = frame.f_code.co_filename
        if "sklearn" in filename and any(part in filename for part in _SELECTION_FILES):
            named = isinstance(owner, BaseEstimator)
            selection = type(owner).__name__ if named else frame.f_code.co_name
        if isinstance(owner, Pipeline) and not getattr(owner, "_composes_steps", False):
            unpriced += [n for n in _earlier_steps(owner, below) if n not in unpriced]
        if isinstance(owner, BaseEstimator):
            below = owner
        frame = frame.f_back
    return selection, unpriced


_PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_LIBRARIES = ("sklearn", "joblib", "threadpoolctl", "contextlib.py")


def _user_stacklevel(max_depth: int = 200) -> int:
    """The ``stacklevel`` for a warning issued in :func:`observe` that points at the first
    caller outside dpconvex, scikit-learn and joblib (the user's line)."""
    frame, level = sys._getframe(1), 1
    while frame is not None and level < max_depth:
        name = frame.f_code.co_filename
        if not (name.startswith(_PACKAGE) or any(lib in name for lib in _LIBRARIES)):
            return level
        frame, level = frame.f_back, level + 1
    return 1


# -- the entry point ------------------------------------------------------------------------
def _dask_name(rows) -> str | None:
    """The graph name of a dask collection (array, DataFrame or Series), else None.

    ``_name`` rather than ``name``: a dask DataFrame's ``name`` is a column's name
    when it has a column called "name", and a Series' is its label.
    """
    if not hasattr(rows, "dask"):
        return None
    name = getattr(rows, "_name", None)
    return name if isinstance(name, str) else None


def observe(event: DpEvent, *, rows=None, delta: float | None = None) -> None:
    """Record one private fit's event and the rows it reads; warn the data owner.

    Called when the fit is charged, before it reads the data. Inside
    :func:`priced_by_caller` it does nothing. The cost of a fit is one pass over
    its rows (a multiply, a shift and a sum per value).
    """
    if _INNER.get():
        return
    delta = 0.0 if delta is None else float(delta)
    name = _dask_name(rows)
    keys = row_keys(rows)
    keys = None if keys is None else sorted_unique_keys(keys)
    selection, unpriced = _callers()
    fit = _Fit(events=[event], delta=delta, keys=keys, names=frozenset({name} - {None}))
    with _SESSION.lock:
        earlier = _overlapping(fit.keys, name)
        _store(fit)
    level = _user_stacklevel()
    if unpriced:
        warnings.warn(_unpriced_message(unpriced), UnpricedStepWarning, stacklevel=level)
    if earlier:
        count = sum(len(f.events) for f in earlier)
        at = _at([delta] + [f.delta for f in earlier], None)
        try:
            spent = f"epsilon <= {_rdp_epsilon([*earlier, fit], at):.4g} at delta={at:g}"
        except Exception:  # noqa: BLE001 - the count is still worth saying
            spent = "more than one fit's epsilon"
        warnings.warn(
            _repeated_message(count, spent, selection), RepeatedFitWarning, stacklevel=level
        )
    elif selection is not None:
        warnings.warn(_selection_message(selection), RepeatedFitWarning, stacklevel=level)


_ROUTES = (
    "tune with dpconvex.PrivateRandomSearch (it prices the whole search), preprocess "
    "in a dpconvex.PrivatePipeline, and cap the total with a dpconvex.Budget ledger; "
    "dpconvex.session_spent() sums this session's fits"
)


def _repeated_message(earlier: int, spent: str, selection: str | None) -> str:
    where = f" (inside scikit-learn's {selection})" if selection else ""
    return (
        f"this private fit{where} reads rows that {earlier} earlier private fit(s) of this "
        f"session also read; together the {earlier + 1} fits spend {spent} on those rows, "
        f"more than one fit's epsilon_ says: {_ROUTES}"
    )


def _selection_message(selection: str) -> str:
    return (
        f"this private fit runs inside scikit-learn's {selection}, which fits the estimator "
        "once per candidate and fold, and each fit spends its epsilon again (fits in worker "
        f"processes, n_jobs != 1, are not recorded in this session): {_ROUTES}"
    )


def _unpriced_message(names: list[str]) -> str:
    return (
        f"the scikit-learn Pipeline step(s) {names} read the rows before this private "
        "estimator, and its epsilon_ does not include them: build the pipeline with "
        "dpconvex.PrivatePipeline, which composes every step's privacy event (use "
        "dpconvex.preprocessing for private scaling), or wrap a step that learns nothing "
        "from these rows in dpconvex.Public(step)"
    )


# -- queries ---------------------------------------------------------------------------------
def session_spent(X=None, *, delta: float | None = None, accounting: str = "auto") -> SessionSpent:
    """The composition of this process's recorded private fits (all, or those reading
    rows of ``X``), priced at ``delta`` (default: the largest delta of those fits, or
    :data:`PURE_DELTA` when all were pure). ``accounting="auto"`` prices by privacy-loss
    distributions when every event has one, else by Renyi DP (a search's
    repeat-and-select event), both upper bounds.

    What the record cannot see: fits in other processes (joblib workers with
    ``n_jobs != 1``, other sessions), fits on a copy of the data whose every row changed
    (rescaled columns, a column added), and, for dask arrays, anything but a refit on
    the same array (their rows are not hashed). Rows that are equal feature vectors of
    different people count as the same rows. Above :data:`MAX_STORED_KEYS` rows in all,
    overlaps are found on a consistent hash sample of the rows.
    """
    if accounting not in ("auto", "pld", "rdp"):
        raise ValueError(f"accounting must be 'auto', 'pld' or 'rdp', got {accounting!r}")
    name = _dask_name(X)
    keys = None
    if X is not None and name is None:
        keys = row_keys(X)
        if keys is None:
            raise TypeError("session_spent: X must be a 2-D array, sparse matrix or DataFrame")
        keys = sorted_unique_keys(keys)
    with _SESSION.lock:
        if X is None:
            fits = list(_SESSION.fits)
        else:
            keys = None if keys is None else _kept(keys, _SESSION.level)
            fits = _overlapping(keys, name)
    at = _at([f.delta for f in fits], delta)
    events = [e for f in fits for e in f.events]
    if not events:
        return SessionSpent(0.0, at, 0, NoOpDpEvent())
    event = _grouped(events)
    return SessionSpent(_epsilon(event, at, accounting), at, len(events), event)


def reset_session() -> None:
    """Forget every recorded fit (for a new data set; nothing already spent is refunded)."""
    with _SESSION.lock:
        _SESSION.clear()
