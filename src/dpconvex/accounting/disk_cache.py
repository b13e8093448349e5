"""Optional on-disk cache of accountant answers, shared between processes and sessions.

Off by default. ``DPCONVEX_ACCOUNTING_CACHE=<directory>`` in the environment, or
:func:`use_disk_cache`, turns it on (``1`` picks ``$XDG_CACHE_HOME/dpconvex``, by
default ``~/.cache/dpconvex``). It extends the in-process cache of
:class:`~dpconvex.accounting.PrivacyAccountant` queries: a repeated calibration in a
new process (a benchmark, a reproduction, a notebook restarted) reads the epsilon or
delta computed before instead of composing again.

What is stored is public: each key is the description of the event (its type and
parameters), the delta or epsilon asked for and the accountant's settings, never
data; each value is the number the accountant computed from them. The database's
name carries a fingerprint of the code that computed the answers (the sources of
:mod:`dpconvex.accounting` and dp_accounting's version), so answers of other code
are never read. Any error of the disk turns the cache off for the process with one
warning; it never changes an answer.
"""

from __future__ import annotations

import hashlib
import os
import sqlite3
import threading
import warnings
from importlib import metadata
from pathlib import Path

ENVIRONMENT_VARIABLE = "DPCONVEX_ACCOUNTING_CACHE"
_lock = threading.Lock()
_state: dict = {"path": None, "connection": None, "configured": False}


def _fingerprint() -> str:
    digest = hashlib.sha256()
    for source in sorted(Path(__file__).parent.glob("*.py")):
        digest.update(source.name.encode())
        digest.update(source.read_bytes())
    try:
        digest.update(metadata.version("dp-accounting").encode())
    except metadata.PackageNotFoundError:  # pragma: no cover - a broken install
        digest.update(b"dp-accounting ?")
    return digest.hexdigest()[:16]


def default_directory() -> Path:
    """``$XDG_CACHE_HOME/dpconvex``, or ``~/.cache/dpconvex``."""
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "dpconvex"


def _database(folder: Path) -> Path:
    return folder / f"accounting-{_fingerprint()}.sqlite"


def use_disk_cache(directory: str | os.PathLike | bool | None = True) -> Path | None:
    """Turn the on-disk cache on (a directory, or True for :func:`default_directory`) or off.

    Returns the database file in use, or None when the cache is off.
    """
    with _lock:
        _close()
        _state["configured"] = True
        if directory is None or directory is False:
            return None
        folder = default_directory() if directory is True else Path(directory)
        _state["path"] = _database(folder)
        return _state["path"]


def _close() -> None:
    if _state["connection"] is not None:
        _state["connection"].close()
    _state["connection"] = None
    _state["path"] = None


def _connection():
    if not _state["configured"]:
        _state["configured"] = True
        value = os.environ.get(ENVIRONMENT_VARIABLE, "").strip()
        if value and value not in ("0", "false", "no"):
            folder = default_directory() if value in ("1", "true", "yes") else Path(value)
            _state["path"] = _database(folder)
    if _state["path"] is None:
        return None
    if _state["connection"] is None:
        _state["path"].parent.mkdir(parents=True, exist_ok=True)
        db = sqlite3.connect(_state["path"], timeout=10.0, check_same_thread=False)
        db.execute("CREATE TABLE IF NOT EXISTS answers (key TEXT PRIMARY KEY, value REAL)")
        db.commit()
        _state["connection"] = db
    return _state["connection"]


def _key_text(key) -> str:
    # repr of nested tuples of str, bool, int, float and None is exact and stable
    return hashlib.sha256(repr(key).encode()).hexdigest()


def _failed(error: Exception) -> None:
    warnings.warn(
        f"dpconvex's on-disk accounting cache is off for this process ({error})", stacklevel=3
    )
    _close()


def get(key) -> float | None:
    """The stored answer for ``key``, or None (cache off, or never computed)."""
    with _lock:
        try:
            db = _connection()
            if db is None:
                return None
            row = db.execute("SELECT value FROM answers WHERE key = ?", (_key_text(key),))
            found = row.fetchone()
        except (OSError, sqlite3.Error) as error:
            _failed(error)
            return None
    return None if found is None else float(found[0])


def put(key, value: float) -> None:
    """Store ``value`` for ``key`` (no-op when the cache is off)."""
    with _lock:
        try:
            db = _connection()
            if db is None:
                return
            db.execute(
                "INSERT OR REPLACE INTO answers (key, value) VALUES (?, ?)",
                (_key_text(key), float(value)),
            )
            db.commit()
        except (OSError, sqlite3.Error) as error:
            _failed(error)
