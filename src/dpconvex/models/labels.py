"""The label set of a private classifier is public: declared, never read off the data.

If ``classes_`` (and so the number of one-vs-rest problems and the shape of
``coef_``) came from ``np.unique(y)``, a neighbouring data set with one extra row
of a new label would produce a model of another shape, a difference no noise
covers. So the label set is a parameter (``classes=``); without it a classifier
uses the binary convention ``BINARY_CONVENTION = (0, 1)``. Labels outside the
declared set are refused before any privacy is spent, with an error that names the
declared set and the fixes but no label read from the rows (errors reach logs and
screens that the data owner does not control; a numeric target such as a price would
otherwise be printed value by value). Classes that do not occur in the data are fine:
their problems are trained on all-negative targets, exactly as on any other data set.
"""

from __future__ import annotations

import numpy as np

#: labels a classifier assumes when ``classes`` is not given
BINARY_CONVENTION = (0, 1)


def declared_classes(classes) -> np.ndarray:
    """The sorted, duplicate-free label array for ``classes`` (None: the binary convention)."""
    if classes is None:
        return np.asarray(BINARY_CONVENTION)
    if isinstance(classes, str | bytes) or not hasattr(classes, "__len__"):
        raise ValueError(
            f"classes must be a list of at least 2 labels, e.g. [0, 1]; got {classes!r}"
        )
    arr = np.asarray(list(classes))
    if arr.ndim != 1 or arr.size < 2:
        raise ValueError(f"classes must be a list of at least 2 labels; got {list(classes)!r}")
    if arr.dtype.kind == "f" and not np.all(np.isfinite(arr)):
        raise ValueError(f"classes must not contain NaN or inf; got {arr.tolist()!r}")
    if arr.dtype.kind == "O":
        try:
            arr = np.asarray(arr.tolist())
        except (TypeError, ValueError):
            raise ValueError(f"classes must be labels of one type; got {arr.tolist()!r}") from None
    try:
        unique = np.unique(arr)
    except TypeError:
        raise ValueError(f"classes must be labels of one type; got {arr.tolist()!r}") from None
    if unique.size != arr.size:
        raise ValueError(f"classes must not repeat a label; got {arr.tolist()!r}")
    return unique


def check_labels(y, classes: np.ndarray, *, declared: bool) -> None:
    """Raise if ``y`` holds a label outside ``classes``.

    The message shows the declared (public) classes and what to change, never a value
    of ``y``. ``y`` may be a numpy array or a (lazy) dask array; only membership is
    computed.
    """
    from ..data.dask_rows import is_dask_array

    inside = _isin(y, classes)
    ok = bool(inside.all().compute()) if is_dask_array(inside) else bool(np.all(inside))
    if ok:
        return
    convention = " (the default binary labels)" if not declared else ""
    raise ValueError(
        f"some labels are not in the declared classes {[_plain(c) for c in classes]}"
        f"{convention}: declare the label set with classes=[...] (command line: --classes "
        "a,b), chosen without looking at the data since it is released with the model; "
        "or, for a numeric target, fit a regression (DPLinearRegression; command line: "
        "--task regression --y-bounds LOW,HIGH)"
    )


def _isin(y, classes: np.ndarray):
    try:
        return np.isin(y, classes) if not hasattr(y, "map_blocks") else _dask_isin(y, classes)
    except TypeError:  # labels of a type that does not compare with the classes
        return np.zeros(np.shape(y), dtype=bool)


def _dask_isin(y, classes):
    return y.map_blocks(lambda b: np.isin(b, classes), dtype=bool)


def _plain(value):
    return value.item() if isinstance(value, np.generic) else value
