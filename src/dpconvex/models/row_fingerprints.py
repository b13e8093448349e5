"""Row fingerprints: one 64-bit hash per row, to find rows a session has already used.

The hash of a row sums one term per value (its bits times a fixed odd multiplier of its
column, high bits folded down) and mixes the sum with splitmix64's finalizer (Steele,
Lea & Flood, "Fast splittable pseudorandom number generators", OOPSLA 2014), so a dense
array, a CSR matrix and a numeric data frame holding the same rows get the same keys.
Not a cryptographic hash; kept in memory only (see :mod:`dpconvex.models.session`).
"""

from __future__ import annotations

import hashlib

import numpy as np

#: values hashed per block (two 512 KiB buffers: the passes stay in cache)
_BLOCK_ELEMENTS = 1 << 16


def _mix(z: np.ndarray) -> np.ndarray:
    """splitmix64's finalizer (Steele, Lea & Flood 2014), in place on uint64; mix(0) = 0."""
    z ^= z >> np.uint64(30)
    z *= np.uint64(0xBF58476D1CE4E5B9)
    z ^= z >> np.uint64(27)
    z *= np.uint64(0x94D049BB133111EB)
    z ^= z >> np.uint64(31)
    return z


def _column_multipliers(d: int) -> np.ndarray:
    """Fixed odd 64-bit multipliers, one per column (the same in every process)."""
    a = np.arange(1, d + 1, dtype=np.uint64) * np.uint64(0x9E3779B97F4A7C15)
    return _mix(a) | np.uint64(1)


def _element_terms(bits: np.ndarray, multipliers: np.ndarray, out=None, tmp=None) -> np.ndarray:
    """Each value's term of its row's hash: its bits times its column's multiplier, then
    the high bits folded down (so that sign flips in two columns do not cancel)."""
    v = np.multiply(bits, multipliers, out=out)
    v ^= np.right_shift(v, np.uint64(29), out=tmp)
    return v


def _dense_keys(X: np.ndarray) -> np.ndarray:
    """Row hashes of a dense matrix, in cache-sized blocks (about 25 ms for 36,000 x 105)."""
    X = np.ascontiguousarray(X, dtype=np.float64)
    n, d = X.shape
    a = _column_multipliers(d)
    out = np.empty(n, dtype=np.uint64)
    step = max(1, _BLOCK_ELEMENTS // max(d, 1))
    buffers = np.empty((2, min(step, n), d), dtype=np.uint64)
    for start in range(0, n, step):
        bits = X[start : start + step].view(np.uint64)
        m = bits.shape[0]
        terms = _element_terms(bits, a, buffers[0, :m], buffers[1, :m])
        terms.sum(axis=1, dtype=np.uint64, out=out[start : start + m])
    return _mix(out)


def _sparse_keys(X) -> np.ndarray:
    """The dense hash computed from the stored values (zeros add nothing to a row's sum)."""
    X = X.tocsr()
    a = _column_multipliers(X.shape[1])
    data = np.ascontiguousarray(X.data, dtype=np.float64).view(np.uint64)
    terms = _element_terms(data, a[X.indices])
    sums = np.concatenate([np.zeros(1, np.uint64), np.cumsum(terms, dtype=np.uint64)])
    return _mix(sums[X.indptr[1:]] - sums[X.indptr[:-1]])


def _table_keys(X) -> np.ndarray:
    """Rows of a table with text columns, hashed by pandas (numeric tables as arrays);
    without pandas (not a dependency), each row's cells by BLAKE2b, one row at a time."""
    try:
        import pandas as pd
    except ImportError:
        rows = np.asarray(X, dtype=object)
        if rows.ndim != 2:
            raise ValueError("a table has two dimensions") from None
        digests = [
            hashlib.blake2b(repr(tuple(row)).encode(), digest_size=8).digest() for row in rows
        ]
        return np.frombuffer(b"".join(digests), dtype=np.uint64).copy()
    frame = X if isinstance(X, pd.DataFrame) else pd.DataFrame(np.asarray(X, dtype=object))
    if all(pd.api.types.is_numeric_dtype(t) for t in frame.dtypes):
        return _dense_keys(frame.to_numpy(dtype=np.float64))
    keys = pd.util.hash_pandas_object(frame, index=False).to_numpy(dtype=np.uint64)
    return _mix(keys.copy())


def row_keys(X) -> np.ndarray | None:
    """One 64-bit hash per row of ``X`` (None when the rows cannot be hashed cheaply).

    Identical rows get identical keys whatever holds them (a dense array, CSR, a slice
    or a numeric DataFrame); one changed value changes its row's key. Not a
    cryptographic hash: it only finds rows a session has already used.
    """
    if X is None or hasattr(X, "dask"):
        return None
    try:
        if hasattr(X, "tocsr"):
            return _sparse_keys(X)
        if isinstance(X, np.ndarray) and X.ndim == 2 and X.dtype.kind in "biuf":
            return _dense_keys(X)
        return _table_keys(X)
    except Exception:  # noqa: BLE001 - a fingerprint is a convenience, never a refusal
        return None


def sorted_unique_keys(keys: np.ndarray) -> np.ndarray:
    """Sorted distinct keys (a sort and a mask: faster than ``np.unique`` here)."""
    keys = np.sort(keys)
    if keys.size > 1:
        keys = keys[np.concatenate(([True], keys[1:] != keys[:-1]))]
    return keys
