"""Optional on-disk cache of accountant answers, shared between processes and sessions.

Off by default. ``DPCONVEX_ACCOUNTING_CACHE=<directory>`` in the environment, or
:func:`use_disk_cache`, turns it on (``1`` picks ``$XDG_CACHE_HOME/dpconvex``, by
default ``~/.cache/dpconvex``). A calibration in a new process (a benchmark, a
reproduction, a notebook restarted) then reads the deltas its search computed before
instead of composing again.

What is stored is public: each entry is named by a hash of the query (the event's
type and parameters, the delta or epsilon asked for, the accountant's settings and a
digest of the pricing rules registered for it) and holds the number the accountant
computed, never data.

**A stored answer is only a hint.** The library never reports it and never releases
anything on it: calibration searches may use it to pick the next candidate, and the
answer they return is checked again, computed in the process, before it is used
(:mod:`dpconvex.accounting.calibrators`). A tampered, stale or corrupt cache can
therefore cost time, never privacy. Beyond that, entries are authenticated so that
other users cannot forge them either:

* every entry carries an HMAC-SHA256 tag under a per-user secret key
  (``accounting.key`` in the cache directory, 32 random bytes, mode 0600); a key file
  that is not a regular file of the current user, readable or writable by others,
  turns the cache off;
* the directory and its entries must belong to the current user and be writable by
  no one else, and the directory must not be a symbolic link; otherwise the cache is
  off for the process (one warning);
* an entry is read with ``O_NOFOLLOW`` and only if it is a regular file of exactly
  :data:`RECORD_SIZE` bytes (so reading is bounded), with a valid tag and a finite
  value; anything else is ignored with one warning and the answer recomputed;
* entries live in a directory named by a fingerprint of dpconvex's sources and the
  versions of Python, numpy, scipy, dp_accounting and dpconvex, so other code never
  reads them.

Any error of the disk turns the cache off for the process with one warning; it never
changes an answer and never raises.
"""

from __future__ import annotations

import hashlib
import hmac
import math
import os
import secrets
import stat
import struct
import sys
import tempfile
import warnings
from importlib import metadata
from pathlib import Path

from .._forksafe import ForkSafeLock

ENVIRONMENT_VARIABLE = "DPCONVEX_ACCOUNTING_CACHE"
KEY_FILE = "accounting.key"
KEY_SIZE = 32
_MAGIC = b"DPCACC01"
_TAG_SIZE = 32
#: Size of every entry: magic, one big-endian float64, the HMAC tag.
RECORD_SIZE = len(_MAGIC) + 8 + _TAG_SIZE
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_NONBLOCK = getattr(os, "O_NONBLOCK", 0)
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_PACKAGES = ("numpy", "scipy", "dp-accounting", "dpconvex")

_lock = ForkSafeLock()  # a forked child finds it unlocked

_state: dict = {
    "root": None,  # the directory asked for (None: cache off)
    "configured": False,
    "folder": None,  # root / accounting-<fingerprint>, once checked
    "key": None,
    "off": False,  # turned off for this process after a problem
    "warned": set(),
}
#: What happened to entries in this process (for tests and probes).
stats = {"read": 0, "missing": 0, "invalid": 0, "written": 0}


def default_directory() -> Path:
    """``$XDG_CACHE_HOME/dpconvex``, or ``~/.cache/dpconvex``."""
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "dpconvex"


def _versions() -> str:
    out = [sys.version.split()[0]]
    for name in _PACKAGES:
        try:
            out.append(f"{name}={metadata.version(name)}")
        except metadata.PackageNotFoundError:  # pragma: no cover - a broken install
            out.append(f"{name}=?")
    return ";".join(out)


_FINGERPRINT: list[str] = []


def fingerprint() -> str:
    """Digest of every source file of dpconvex and of the numeric libraries' versions."""
    if not _FINGERPRINT:
        digest = hashlib.sha256(_versions().encode())
        package = Path(__file__).resolve().parents[1]
        for source in sorted(package.rglob("*.py")):
            digest.update(str(source.relative_to(package)).encode() + b"\0")
            digest.update(source.read_bytes())
        _FINGERPRINT.append(digest.hexdigest()[:24])
    return _FINGERPRINT[0]


def use_disk_cache(directory: str | os.PathLike | bool | None = True) -> Path | None:
    """Turn the on-disk cache on (a directory, or True for :func:`default_directory`) or off.

    Returns the folder its entries go to, or None when the cache is off. The
    directory is checked (and created) at the first query.
    """
    with _lock:
        _reset()
        _state["configured"] = True
        if directory is None or directory is False:
            return None
        _state["root"] = default_directory() if directory is True else Path(directory)
        return _state["root"] / f"accounting-{fingerprint()}"


def _reset() -> None:
    _state.update(root=None, folder=None, key=None, off=False, warned=set())


def _configure_from_environment() -> None:
    _state["configured"] = True
    value = os.environ.get(ENVIRONMENT_VARIABLE, "").strip()
    if value and value.lower() not in ("0", "false", "no", "off"):
        on = value.lower() in ("1", "true", "yes", "on")
        _state["root"] = default_directory() if on else Path(value)


def _warn(kind: str, message: str) -> None:
    """One warning per kind of problem and process."""
    if kind in _state["warned"]:
        return
    _state["warned"].add(kind)
    warnings.warn(f"dpconvex's on-disk accounting cache: {message}", stacklevel=4)


def _turn_off(message: str) -> None:
    _state["off"] = True
    _warn("off", f"off for this process ({message}); answers are computed, not read")


class _Refused(Exception):
    """The cache directory or key file is not safe to use."""


def _own_private(st: os.stat_result, what: str, path: Path, *, secret: bool = False) -> None:
    """Refuse another owner, and write permission for others (also read, for a secret)."""
    if hasattr(os, "geteuid") and st.st_uid != os.geteuid():
        raise _Refused(f"{what} {path} belongs to another user")
    if st.st_mode & (0o077 if secret else 0o022):
        who = "read or written" if secret else "written"
        raise _Refused(f"{what} {path} can be {who} by other users")


def _private_directory(path: Path) -> None:
    """Create ``path`` (mode 0700) if missing; refuse a symlink, another owner, or group/world
    write permission."""
    try:
        path.mkdir(mode=0o700, parents=True, exist_ok=True)
    except FileExistsError:
        pass  # a file or link of that name: refused below
    st = os.lstat(path)
    if stat.S_ISLNK(st.st_mode):
        raise _Refused(f"{path} is a symbolic link; give the real directory")
    if not stat.S_ISDIR(st.st_mode):
        raise _Refused(f"{path} is not a directory")
    _own_private(st, "directory", path)


def _read_key(path: Path) -> bytes | None:
    try:
        fd = os.open(path, os.O_RDONLY | _NOFOLLOW | _NONBLOCK | _CLOEXEC)
    except FileNotFoundError:
        return None
    except OSError as error:
        raise _Refused(f"cannot open the key file {path} ({error.strerror})") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_size != KEY_SIZE:
            raise _Refused(f"the key file {path} is not a {KEY_SIZE}-byte regular file")
        _own_private(st, "the key file", path, secret=True)
        key = os.read(fd, KEY_SIZE + 1)
    finally:
        os.close(fd)
    if len(key) != KEY_SIZE:
        raise _Refused(f"the key file {path} is truncated")
    return key


def _key(root: Path) -> bytes:
    """The per-user secret key in ``root``, created (mode 0600) if missing."""
    path = root / KEY_FILE
    key = _read_key(path)
    if key is not None:
        return key
    fd, tmp = tempfile.mkstemp(dir=root, prefix=".key-")  # mode 0600
    try:
        os.write(fd, secrets.token_bytes(KEY_SIZE))
        os.close(fd)
        try:
            os.link(tmp, path)  # atomic: a reader never sees half a key
        except FileExistsError:
            pass  # another process was first: use its key
    finally:
        os.unlink(tmp)
    key = _read_key(path)
    if key is None:
        raise _Refused(f"the key file {path} vanished")
    return key


def _folder() -> Path | None:
    """The checked entry folder, or None when the cache is off (never raises)."""
    if not _state["configured"]:
        _configure_from_environment()
    if _state["root"] is None or _state["off"]:
        return None
    if _state["folder"] is None:
        if os.name != "posix":
            _turn_off("only POSIX systems can check the directory's owner and permissions")
            return None
        root = Path(_state["root"])
        try:
            _private_directory(root)
            key = _key(root)
            folder = root / f"accounting-{fingerprint()}"
            _private_directory(folder)
        except _Refused as error:
            _turn_off(str(error))
            return None
        except OSError as error:
            _turn_off(f"{root}: {error.strerror or error}")
            return None
        _state["key"], _state["folder"] = key, folder
    return _state["folder"]


def _name(key) -> str:
    # repr of nested tuples of str, bool, int, float and None is exact and stable
    return hashlib.sha256(repr(key).encode()).hexdigest()


def _tag(name: str, payload: bytes) -> bytes:
    message = fingerprint().encode() + b"\0" + name.encode() + b"\0" + payload
    return hmac.new(_state["key"], message, hashlib.sha256).digest()


def _invalid(reason: str) -> None:
    stats["invalid"] += 1
    _warn("invalid", f"ignored an invalid entry ({reason}); the answer is recomputed")


def _read_entry(folder: Path, name: str) -> float | None:
    try:
        fd = os.open(folder / name, os.O_RDONLY | _NOFOLLOW | _NONBLOCK | _CLOEXEC)
    except FileNotFoundError:
        stats["missing"] += 1
        return None
    except OSError as error:  # ELOOP: a symbolic link; EACCES; ...
        _invalid(f"cannot open it: {error.strerror}")
        return None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            _invalid("not a regular file")
            return None
        if st.st_size != RECORD_SIZE:
            _invalid(f"{st.st_size} bytes instead of {RECORD_SIZE}")
            return None
        try:
            _own_private(st, "entry", folder / name)
        except _Refused as error:
            _invalid(str(error))
            return None
        data = os.read(fd, RECORD_SIZE + 1)
    finally:
        os.close(fd)
    if len(data) != RECORD_SIZE or not data.startswith(_MAGIC):
        _invalid("not an entry of this format")
        return None
    payload, tag = data[:-_TAG_SIZE], data[-_TAG_SIZE:]
    if not hmac.compare_digest(tag, _tag(name, payload)):
        _invalid("its authentication tag does not match")
        return None
    (value,) = struct.unpack(">d", payload[len(_MAGIC) :])
    if math.isnan(value) or value < 0:
        _invalid(f"value {value!r}")
        return None
    stats["read"] += 1
    return value


def get(key) -> float | None:
    """The stored answer for ``key`` (a hint: see the module docstring), or None."""
    with _lock:
        folder = _folder()
        if folder is None:
            return None
        try:
            return _read_entry(folder, _name(key))
        except OSError as error:
            _turn_off(f"reading failed: {error.strerror or error}")
            return None


def put(key, value: float) -> None:
    """Store ``value`` for ``key`` (no-op when the cache is off; never raises)."""
    value = float(value)
    if math.isnan(value) or value < 0:
        return
    with _lock:
        folder = _folder()
        if folder is None:
            return
        name = _name(key)
        payload = _MAGIC + struct.pack(">d", value)
        record = payload + _tag(name, payload)
        try:
            fd, tmp = tempfile.mkstemp(dir=folder, prefix=".entry-")  # mode 0600
            try:
                os.write(fd, record)
            finally:
                os.close(fd)
            os.replace(tmp, folder / name)  # replaces a link itself, never its target
            stats["written"] += 1
        except OSError as error:
            _turn_off(f"writing failed: {error.strerror or error}")


def distrust(reason: str) -> None:
    """Stop reading the cache in this process (an entry disagreed with a recomputation)."""
    with _lock:
        _turn_off(reason)
