"""Row chunks of a local Zarr array read straight from their files, with memory bounded by
the array's declared shape (the reader behind :func:`dpconvex.scale.data.read_zarr`).

zarr (3.x) reads a chunk through an asynchronous buffer pipeline: the file's bytes, a
decoded copy, a third copy into the output. On a 125,000 x 100 float64 chunk
compressed with zarr's default codec (zstd) that took 0.20-0.44 s per chunk in one
process, against 0.085 s for the same decoder (numcodecs, which zarr itself calls)
decoding the memory-mapped file straight into the chunk's array. A plain dask pass over
10^6 x 100 rows (8 chunks, 2 workers x 1 thread) took 1.22 s through
``dask.array.from_zarr`` and 0.57 s this way (medians of 8 interleaved passes).

Layouts read: a directory store (zarr v2 or v3), a regular chunk grid, one or two
dimensions, numbers (bool, integers, floats) in either byte order, chunks spanning the
columns or split along them, C or F order (v3: an optional transpose), stored plainly
or compressed with zstd, blosc, lz4, zlib, gzip, bz2 or lzma (.xz/.lzma framing; v2
compressors and their v3 ``numcodecs.*`` namesakes, v3 ``zstd``, ``blosc``, ``gzip``),
an optional v3 ``crc32c`` checksum, and v3 sharding of such chunks. Anything else in a
local store (filters, other codecs) is refused with the array's name and what to change,
not handed to zarr: zarr decodes a whole chunk to whatever size its compressed frame
declares, which a hostile store sets.

Bounds, for any store: the metadata files are regular files of at most
``MAX_METADATA_BYTES``; the grid has at most ``MAX_CHUNKS`` chunks (and a shard at most
as many inner chunks); a stored chunk holds at most ``MAX_CHUNK_BYTES`` and no more than
the array itself unless it is under ``SMALL_CHUNK_BYTES``; a row chunk at most
``MAX_CHUNK_BYTES``. A task allocates the rows it returns (those that exist: the last
chunk is short) plus, when the stored chunk is padded (the last one, a split one, or a
shard's inner chunk), one stored chunk. Decoders write into that buffer and stop at its
size: zlib, gzip, bz2 and lzma stream into it piece by piece; zstd, blosc and lz4 check
the size their frame declares against it before decoding. A chunk that decodes to
another length, a file that is not a regular file (never opened: a FIFO would block) or
that resolves outside the store is refused, naming the file by its path in the store.
Chunks missing from the store (never written) hold the array's fill value, as in zarr.
"""

from __future__ import annotations

import math
import mmap
import os
import stat
from dataclasses import dataclass
from functools import partial
from pathlib import Path

import numpy as np

from .zarr_codecs import Chain, Shard, _decode_into, _shard_index
from .zarr_metadata import _chunk_key, _fill_value, _v2_chain, _v3_chain, _v3_endian

#: most bytes one task returns (a row chunk) and one stored chunk decodes to
MAX_CHUNK_BYTES = 2**31
#: a stored chunk may hold more values than the whole array only below this size
SMALL_CHUNK_BYTES = 2**24
#: most chunks in an array's grid (and inner chunks in one shard)
MAX_CHUNKS = 100_000
#: largest metadata file (zarr.json, .zarray, .zattrs, ...) handed to zarr
MAX_METADATA_BYTES = 2**24
_METADATA = ("zarr.json", ".zarray", ".zattrs", ".zgroup", ".zmetadata")
_EMPTY = 2**64 - 1  # a shard index entry of a chunk never written


@dataclass(frozen=True)
class ZarrChunks:
    """What a task needs to read row chunk ``i`` of the array: its files and layout."""

    root: str  # the store's directory, resolved
    label: str  # the array's name in messages: store directory / array path
    array_dir: str  # the array's directory inside the store ("" for the root)
    shape: tuple[int, ...]  # (n,) or (n, d)
    chunk_shape: tuple[int, ...]  # of a stored chunk (or shard)
    key: tuple[str, str]  # (prefix, separator) of chunk file names
    dtype: str  # as stored (either byte order)
    fill_value: object
    chain: Chain | None  # None for a sharded array
    shard: Shard | None = None

    @property
    def rows(self) -> tuple[int, ...]:
        """Rows of each row chunk inside the array (the last may be short)."""
        n, c = self.shape[0], self.chunk_shape[0]
        return tuple(min(c, n - start) for start in range(0, n, c))

    def read(self, i: int) -> np.ndarray:
        """Row chunk ``i``: the array's rows in it, all its columns."""
        n_i, d = self.rows[i], self._width
        c, w = self._chunk2
        if self.shard is None and (n_i, d) == (c, w):  # the whole stored chunk: no copy
            out = self._decode_chunk(self._name(i, 0), self.chain, (c, w))
            return out if out is not None else self._filled(n_i)
        out = np.empty((n_i, d), dtype=self._native)
        for j in range(math.ceil(d / w)):
            self._place(i, j, out[:, j * w : (j + 1) * w])
        return out if len(self.shape) == 2 else out[:, 0]

    def to_dask(self):
        """The array as a dask array, one task per row chunk keyed by its chunk (name, i, 0),
        or (name, i) for a vector."""
        import dask.array as da

        return da.map_blocks(
            partial(_read_block, self),
            chunks=(self.rows, *((width,) for width in self.shape[1:])),
            dtype=self._native,
            meta=np.empty((0,) * len(self.shape), dtype=self._native),
        )

    # -- layout ---------------------------------------------------------------------

    @property
    def _native(self) -> np.dtype:
        return np.dtype(self.dtype).newbyteorder("=")

    @property
    def _swap(self) -> bool:
        dtype = np.dtype(self.dtype)
        return dtype.itemsize > 1 and not dtype.isnative

    @property
    def _width(self) -> int:
        return self.shape[1] if len(self.shape) == 2 else 1

    @property
    def _chunk2(self) -> tuple[int, int]:
        return (self.chunk_shape[0], self.chunk_shape[1] if len(self.chunk_shape) == 2 else 1)

    def path(self, i: int, j: int = 0) -> str:
        """The file of chunk (i, j) (row chunk i, column chunk j; a shard if sharded)."""
        return os.path.join(self.root, self._name(i, j))

    def _name(self, i: int, j: int) -> str:
        """The chunk file's path inside the store."""
        prefix, sep = self.key
        coords = (i, j) if len(self.shape) == 2 else (i,)
        key = prefix + sep.join(map(str, coords))
        return f"{self.array_dir}/{key}" if self.array_dir else key

    def _label(self, name: str) -> str:
        return f"Zarr chunk {Path(self.root).name}/{name}"

    def _filled(self, rows: int) -> np.ndarray:
        out = np.empty((rows, *self.shape[1:]), dtype=self._native)
        out.fill(self.fill_value)
        return out

    # -- reading --------------------------------------------------------------------

    def _place(self, i: int, j: int, region: np.ndarray) -> None:
        """Fill ``region`` (the chunk's rows and columns inside the array) from chunk (i, j)."""
        name = self._name(i, j)
        if self.shard is not None:
            self._read_shard(name, region)
            return
        chunk = self._decode_chunk(name, self.chain, self._chunk2)
        if chunk is None:
            region.fill(self.fill_value)
        else:
            region[...] = chunk.reshape(self._chunk2)[: region.shape[0], : region.shape[1]]

    def _decode_chunk(self, name: str, chain: Chain, shape: tuple[int, int]) -> np.ndarray | None:
        """The stored chunk ``name`` decoded into a new array of ``shape``, None if missing."""
        handle = _open_chunk(self.root, name, self._label(name))
        if handle is None:
            return None
        buffer = np.empty(shape[0] * shape[1], dtype=self._native)
        flat = buffer.view(np.uint8)
        with handle:
            size = os.fstat(handle.fileno()).st_size
            _check_stored_size(size, flat.nbytes, 1, self._label(name))
            if chain.codec is None and not chain.checksum:
                if size != flat.nbytes:
                    raise ValueError(_length_error(self._label(name), size, flat.nbytes))
                if handle.readinto(memoryview(flat)) != flat.nbytes:
                    raise ValueError(f"{self._label(name)} could not be read whole")
            else:
                problem = _mapped(handle, partial(_decode_into, chain=chain, flat=flat))
                if problem:
                    raise ValueError(f"{self._label(name)} {problem}")
        if self._swap:
            buffer.byteswap(inplace=True)
        shaped = shape if len(self.shape) == 2 else shape[:1]
        return buffer.reshape(shaped, order=chain.order)

    def _read_shard(self, name: str, region: np.ndarray) -> None:
        """Fill ``region`` from the inner chunks of shard ``name`` that overlap it."""
        label = self._label(name)
        handle = _open_chunk(self.root, name, label)
        if handle is None:
            region.fill(self.fill_value)
            return
        shard = self.shard
        (c, w), (a, b) = self._chunk2, shard.inner
        grid = (c // a, w // b)
        with handle:
            size = os.fstat(handle.fileno()).st_size
            _check_stored_size(size, c * w * self._native.itemsize, grid[0] * grid[1], label)
            problem = _mapped(handle, partial(self._fill_from_shard, region, grid))
        if problem:
            raise ValueError(f"{label} {problem}")

    def _fill_from_shard(self, region, grid, stored) -> str | None:
        shard = self.shard
        entries, problem = _shard_index(stored, grid[0] * grid[1], shard)
        if problem:
            return problem
        a, b = shard.inner
        entries = entries.reshape(grid[0], grid[1], 2)
        for p in range(math.ceil(region.shape[0] / a)):
            for q in range(math.ceil(region.shape[1] / b)):
                target = region[p * a : (p + 1) * a, q * b : (q + 1) * b]
                offset, nbytes = (int(v) for v in entries[p, q])
                if offset == _EMPTY and nbytes == _EMPTY:
                    target.fill(self.fill_value)
                    continue
                if offset > len(stored) or nbytes > len(stored) - offset:
                    return f"lists an inner chunk beyond the end of the file ({len(stored)} bytes)"
                inner = np.empty(a * b, dtype=self._native)
                problem = _decode_into(
                    stored[offset : offset + nbytes], chain=shard.chain, flat=inner.view(np.uint8)
                )
                if problem:
                    return f"(inner chunk {p}, {q}) {problem}"
                if self._swap:
                    inner.byteswap(inplace=True)
                values = inner.reshape((a, b), order=shard.chain.order)
                target[...] = values[: target.shape[0], : target.shape[1]]
        return None


def _read_block(chunks: ZarrChunks, block_id=None) -> np.ndarray:
    return chunks.read(block_id[0])


def _inside(root: str, path: str) -> bool:
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)


def regular_file(path: str | Path, label: str, root: str | None = None) -> str | None:
    """``path`` resolved, after checking that it is a regular file (not a FIFO, whose
    opening blocks, nor a device) and, given the ``root`` directory (resolved), that it
    resolves inside it; None if it does not exist. Errors name it by ``label``."""
    real = os.path.realpath(path)
    if root is not None and not _inside(root, real):
        raise ValueError(f"{label} links outside {Path(root).name}")
    try:
        info = os.stat(real)
    except FileNotFoundError:
        return None
    except OSError as error:
        raise ValueError(f"{label} cannot be read ({error.strerror})") from None
    if not stat.S_ISREG(info.st_mode):
        raise ValueError(f"{label} is not a regular file")
    return real


def _open_chunk(root: str, name: str, label: str):
    """The chunk file ``name`` of the store opened for reading, or None if it does not
    exist (see :func:`regular_file`); opened without blocking, and checked once open."""
    real = regular_file(os.path.join(root, name), label, root)
    if real is None:
        return None
    flags = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOFOLLOW", 0)
    try:
        fd = os.open(real, flags)
    except OSError as error:
        raise ValueError(f"{label} cannot be read ({error.strerror})") from None
    if not stat.S_ISREG(os.fstat(fd).st_mode):  # replaced since the check
        os.close(fd)
        raise ValueError(f"{label} is not a regular file")
    return os.fdopen(fd, "rb")


def _check_stored_size(size: int, decoded: int, pieces: int, label: str) -> None:
    """Refuse a stored chunk much larger than what it decodes to: no codec read here
    grows data by more than a quarter (plus framing)."""
    if size > decoded + decoded // 4 + 64 * pieces + 2**20:
        raise ValueError(f"{label} holds {size} bytes, more than a chunk of {decoded} bytes needs")


def _mapped(handle, use) -> str | None:
    """``use(stored)`` on the file mapped into memory: its problem, or None. Every view of
    the mapping is gone before it closes (an exception would keep one alive)."""
    if os.fstat(handle.fileno()).st_size == 0:
        return "is an empty file"
    with mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ) as mapped:
        view = memoryview(mapped)
        try:
            problem = use(view)
        except Exception as error:  # noqa: BLE001 - a decoder's refusal of hostile bytes
            problem = f"cannot be decoded ({_brief(error)})"
        finally:
            view.release()
    return problem


def _brief(error: BaseException) -> str:
    text = str(error).strip().splitlines()
    return f"{type(error).__name__}: {text[0][:200] if text else ''}".rstrip(": ")


def _length_error(label: str, got: int, want: int, verb: str = "holds") -> str:
    return f"{label} {verb} {got} bytes; a chunk of this array has {want}"


def open_local(root: str | Path, component: str) -> ZarrChunks:
    """The :class:`ZarrChunks` of array ``component`` in the local directory store
    ``root``, its metadata files checked before zarr parses them."""
    import zarr

    real = os.path.realpath(root)
    label = f"{Path(real).name}/{component}".rstrip("/")
    array_dir = os.path.realpath(os.path.join(real, component))
    if not _inside(real, array_dir) or os.path.isabs(component):
        raise ValueError(f"Zarr array {label} resolves outside the store")
    _check_metadata(real, component)
    try:
        array = zarr.open_array(real, path=component, mode="r")
    except Exception as error:  # noqa: BLE001 - zarr's refusal of a hostile metadata file
        raise ValueError(f"{label} is not a readable Zarr array ({_brief(error)})") from None
    return zarr_chunks(array, label=label)


def _check_metadata(root: str, component: str) -> None:
    """The metadata files zarr may read on the way to the array: regular files inside the
    store, of at most MAX_METADATA_BYTES."""
    parts = [p for p in component.split("/") if p]
    for depth in range(len(parts) + 1):
        folder = os.path.join(root, *parts[:depth])
        for name in _METADATA:
            path = os.path.join(folder, name)
            label = f"Zarr metadata {Path(root).name}/{os.path.relpath(path, root)}"
            if not os.path.lexists(path):
                continue
            real = regular_file(path, label, root)
            size = 0 if real is None else os.stat(real).st_size
            if size > MAX_METADATA_BYTES:
                raise ValueError(
                    f"{label} holds {size} bytes; at most {MAX_METADATA_BYTES} are read"
                )


def zarr_chunks(array, label: str | None = None) -> ZarrChunks:
    """The :class:`ZarrChunks` of an opened zarr array (1 or 2 dimensions) in a local
    directory store; ValueError naming the array if its layout is not one read here
    (see the module's docstring) or its declared sizes exceed the bounds."""
    from zarr.storage import LocalStore

    store = array.store
    label = label or f"{Path(str(getattr(store, 'root', ''))).name}/{array.path}".rstrip("/")
    if not isinstance(store, LocalStore):
        raise ValueError(f"{label}: only Zarr arrays in a local directory are read directly")
    dtype, chain, shard, chunk_shape = _layout(array, label)
    meta = array.metadata
    return ZarrChunks(
        root=os.path.realpath(store.root),
        label=label,
        array_dir=array.path,
        shape=tuple(array.shape),
        chunk_shape=chunk_shape,
        key=_chunk_key(meta, label),
        dtype=dtype.str,
        fill_value=_fill_value(array, dtype, label),
        chain=chain,
        shard=shard,
    )


def _layout(array, label: str):
    """(stored dtype, Chain or None, Shard or None, stored chunk shape) of an array whose
    declared sizes are within the bounds; ValueError for any other layout."""
    dtype = check_declared(array, label)
    meta = array.metadata
    if meta.zarr_format == 2:
        return dtype, _v2_chain(meta, label), None, tuple(meta.chunks)
    chain, shard = _v3_chain(meta.codecs, len(array.shape), label)
    chunk_shape = tuple(meta.chunk_grid.chunk_shape)
    if dtype.itemsize > 1:
        dtype = dtype.newbyteorder(_v3_endian(meta.codecs, shard))
    if shard is not None:
        _check_shard(array.shape, chunk_shape, shard, dtype.itemsize, label)
    return dtype, chain, shard, chunk_shape


def open_remote(url: str, component: str):
    """Array ``component`` of the Zarr store at ``url`` as a dask array read by zarr, one
    task per row chunk, after the checks of its declared sizes and codecs (zarr decodes
    each chunk to the size its frame declares: see the module's docstring)."""
    import dask.array as da
    import zarr

    label = f"{url.rstrip('/')}/{component}".rstrip("/")
    try:
        array = zarr.open_array(url, path=component, mode="r")
    except Exception as error:  # noqa: BLE001 - zarr's refusal of a hostile metadata file
        raise ValueError(f"{label} is not a readable Zarr array ({_brief(error)})") from None
    dtype, _, _, chunk_shape = _layout(array, label)
    n, c = array.shape[0], chunk_shape[0]
    rows = tuple(min(c, n - start) for start in range(0, n, c))
    native = dtype.newbyteorder("=")
    return da.map_blocks(
        partial(_remote_block, array, label, c, rows),
        chunks=(rows, *((width,) for width in array.shape[1:])),
        dtype=native,
        meta=np.empty((0,) * len(array.shape), dtype=native),
    )


def _remote_block(array, label: str, c: int, rows, block_id=None) -> np.ndarray:
    start = block_id[0] * c
    stop = start + rows[block_id[0]]
    try:
        return np.asarray(array[start:stop])
    except Exception as error:  # noqa: BLE001 - zarr's refusal of a hostile chunk
        raise ValueError(
            f"{label}, rows {start}-{stop - 1}: cannot be read ({_brief(error)})"
        ) from None


def check_declared(array, label: str) -> np.dtype:
    """Refuse an array whose declared shape, dtype or chunks exceed what is read; its dtype."""
    dtype = np.dtype(array.dtype)
    if len(array.shape) not in (1, 2):
        raise ValueError(f"{label} must have one or two dimensions, got shape {array.shape}")
    if dtype.kind not in "biuf":
        raise ValueError(f"{label} must hold numbers (bool, integer, float), got dtype {dtype}")
    meta = array.metadata
    if meta.zarr_format == 3 and type(meta.chunk_grid).__name__ != "RegularChunkGrid":
        raise ValueError(f"{label}: only a regular chunk grid is read")
    grid = tuple(meta.chunks) if meta.zarr_format == 2 else tuple(meta.chunk_grid.chunk_shape)
    _check_sizes(tuple(array.shape), grid, dtype.itemsize, label)
    return dtype


def _check_sizes(shape, chunk, itemsize: int, label: str) -> None:
    if min(shape) < 1:
        raise ValueError(f"{label} has no values (shape {shape})")
    if len(chunk) != len(shape) or min(chunk) < 1:
        raise ValueError(f"{label} declares chunks {chunk} for shape {shape}")
    count = math.prod(math.ceil(s / c) for s, c in zip(shape, chunk, strict=True))
    if count > MAX_CHUNKS:
        raise ValueError(
            f"{label} has {count} chunks; at most {MAX_CHUNKS} are read: rewrite it with "
            "larger chunks"
        )
    stored = math.prod(chunk) * itemsize
    if stored > MAX_CHUNK_BYTES:
        raise ValueError(
            f"{label} declares chunks of {chunk} values ({stored} bytes); at most "
            f"{MAX_CHUNK_BYTES} bytes are read at once: rewrite it with smaller chunks"
        )
    if stored > SMALL_CHUNK_BYTES and math.prod(chunk) > math.prod(shape):
        raise ValueError(
            f"{label} declares chunks of {chunk} values, more than its shape {shape} holds: "
            "rewrite it with chunks no larger than the array"
        )
    row_chunk = min(chunk[0], shape[0]) * math.prod(shape[1:]) * itemsize
    if row_chunk > MAX_CHUNK_BYTES:
        raise ValueError(
            f"{label}: a chunk of {min(chunk[0], shape[0])} rows takes {row_chunk} bytes; at "
            f"most {MAX_CHUNK_BYTES} are read at once: rewrite it with fewer rows per chunk"
        )


def _check_shard(shape, outer, shard: Shard, itemsize: int, label: str) -> None:
    inner = shard.inner[: len(shape)]
    if any(o % i for o, i in zip(outer, inner, strict=True)):
        raise ValueError(f"{label}: shards {outer} are not a whole number of chunks {inner}")
    _check_sizes(tuple(outer), inner, itemsize, f"{label} (a shard)")
