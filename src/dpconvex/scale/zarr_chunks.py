"""Row chunks of a local Zarr array read straight from their files (the fast path of
:func:`dpconvex.scale.data.read_zarr`).

zarr (3.x) reads a chunk through an asynchronous buffer pipeline: the file's bytes, a
decoded copy, a third copy into the output. On a 125,000 x 100 float64 chunk
compressed with zarr's default codec (zstd) that took 0.20-0.44 s per chunk in one
process, against 0.085 s for the same decoder (numcodecs, which zarr itself calls)
decoding the memory-mapped file straight into the chunk's array. A plain dask pass over
10^6 x 100 rows (8 chunks, 2 workers x 1 thread) took 1.22 s through
``dask.array.from_zarr`` and 0.57 s this way (medians of 8 interleaved passes).

The fast path covers the layout a row-chunked matrix written by zarr or
``dask.array.to_zarr`` has: a directory store, a regular grid whose chunks span all
the columns, native byte order, no filters, no sharding or transposition, and no codec
or one of zstd, blosc, gzip (zarr v3), or any numcodecs compressor (zarr v2). Anything
else returns None and is read by zarr (:func:`dask.array.from_zarr`).
Chunks missing from the store (never written) hold the array's fill value, as in zarr.
"""

from __future__ import annotations

import mmap
import os
import sys
from dataclasses import dataclass
from functools import partial
from pathlib import Path

import numpy as np

#: the bit pattern written into a chunk's last element before decoding into it: a
#: payload no float or integer writer produces by chance (a NaN with a fixed payload).
#: If it is still there afterwards, the chunk is decoded once more, checking its length.
_SENTINEL = np.frombuffer(b"dpcvxZR\xff", dtype=np.uint8)


@dataclass(frozen=True)
class ZarrChunks:
    """What a task needs to read row chunk ``i`` of the array: its files and layout."""

    files: tuple[str, ...]
    chunk_shape: tuple[int, ...]
    rows: tuple[int, ...]  # rows of each chunk inside the array (the last may be short)
    dtype: str
    order: str  # "C" or "F": the layout of a decoded chunk
    fill_value: object
    codec: object | None  # a numcodecs codec, None: the bytes are stored as they are

    def read(self, i: int) -> np.ndarray:
        """Row chunk ``i`` as an array of its rows (a view of the stored chunk's first rows)."""
        dtype = np.dtype(self.dtype)
        buffer = np.empty(int(np.prod(self.chunk_shape)), dtype=dtype)
        out = buffer.reshape(self.chunk_shape, order=self.order)  # a view, in either order
        flat = buffer.view(np.uint8)
        try:
            handle = open(self.files[i], "rb")
        except FileNotFoundError:
            out.fill(self.fill_value)
            return out[: self.rows[i]]
        with handle:
            size = _file_size(handle)
            if self.codec is None:
                if size != flat.nbytes:
                    raise ValueError(_length_error(self.files[i], size, flat.nbytes))
                if handle.readinto(memoryview(flat)) != flat.nbytes:
                    raise ValueError(f"Zarr chunk {self.files[i]} could not be read whole")
            elif size == 0:
                raise ValueError(f"Zarr chunk {self.files[i]} is an empty file")
            else:
                with mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ) as stored:
                    self._decode(stored, flat, self.files[i])
        return out[: self.rows[i]]

    def to_dask(self):
        """The array as a dask array, one task per row chunk keyed by its chunk (name, i, 0),
        or (name, i) for a vector."""
        import dask.array as da

        dtype = np.dtype(self.dtype)
        return da.map_blocks(
            partial(_read_block, self),
            chunks=(self.rows, *((width,) for width in self.chunk_shape[1:])),
            dtype=dtype,
            meta=np.empty((0,) * len(self.chunk_shape), dtype=dtype),
        )

    def _decode(self, stored, flat: np.ndarray, name: str) -> None:
        mark = _SENTINEL[-min(flat.size, _SENTINEL.size) :]  # a chunk may be shorter
        tail = flat[-mark.size :]
        tail[:] = mark
        try:
            self.codec.decode(stored, out=flat)
        except ValueError as error:  # numcodecs: the chunk decodes to more than its size
            raise ValueError(
                f"Zarr chunk {name} does not decode to a chunk of this array "
                f"({flat.size} bytes): {error}"
            ) from None
        if np.array_equal(tail, mark):  # a short decode would leave it: measure the length
            decoded = np.frombuffer(self.codec.decode(stored), dtype=np.uint8)
            if decoded.size != flat.size:
                raise ValueError(_length_error(name, decoded.size, flat.size, "decodes to"))
            flat[:] = decoded


def _file_size(handle) -> int:
    return os.fstat(handle.fileno()).st_size


def _length_error(name: str, got: int, want: int, verb: str = "holds") -> str:
    return f"Zarr chunk {name} {verb} {got} bytes; a chunk of this array has {want}"


def _read_block(chunks: ZarrChunks, block_id=None) -> np.ndarray:
    return chunks.read(block_id[0])


def zarr_chunks(array) -> ZarrChunks | None:
    """The :class:`ZarrChunks` of an opened zarr matrix (or vector), or None if the fast
    path does not cover its layout (see the module's docstring)."""
    from zarr.storage import LocalStore

    if array is None or array.ndim not in (1, 2) or array.shape[0] == 0:
        return None
    if array.ndim == 2 and array.chunks[1] < array.shape[1]:
        return None
    store = array.store
    if not isinstance(store, LocalStore):
        return None
    dtype = np.dtype(array.dtype)
    if dtype.kind not in "biuf" or not dtype.isnative:
        return None
    meta = array.metadata
    if meta.zarr_format == 2:
        if meta.filters or meta.order not in ("C", "F"):
            return None
        codec, order = meta.compressor, meta.order
        if codec is not None and not hasattr(codec, "decode"):
            return None
    else:
        codec, order = _v3_codec(meta), "C"
        if codec is False or getattr(meta, "storage_transformers", ()):
            return None
    rows_per_chunk = array.chunks[0]
    count = -(-array.shape[0] // rows_per_chunk)
    root = Path(store.root) / array.path if array.path else Path(store.root)
    rest = (0,) * (array.ndim - 1)
    files = tuple(str(root / meta.encode_chunk_key((i, *rest))) for i in range(count))
    rows = tuple(min(rows_per_chunk, array.shape[0] - i * rows_per_chunk) for i in range(count))
    fill = array.fill_value
    return ZarrChunks(
        files=files,
        chunk_shape=tuple(array.chunks),
        rows=rows,
        dtype=dtype.str,
        order=order,
        fill_value=0 if fill is None else fill,
        codec=codec,
    )


def _v3_codec(meta):
    """The numcodecs decoder of a zarr v3 codec chain [bytes] or [bytes, compressor]:
    None for no compressor, False when the chain is something else."""
    import numcodecs
    from zarr.codecs import BloscCodec, BytesCodec, GzipCodec, ZstdCodec

    codecs = tuple(meta.codecs)
    if not codecs or not isinstance(codecs[0], BytesCodec) or len(codecs) > 2:
        return False
    endian = codecs[0].endian
    if endian is not None and getattr(endian, "value", endian) != sys.byteorder:
        return False
    if len(codecs) == 1:
        return None
    decoders = {ZstdCodec: numcodecs.Zstd, BloscCodec: numcodecs.Blosc, GzipCodec: numcodecs.GZip}
    make = decoders.get(type(codecs[1]))
    return False if make is None else make()
