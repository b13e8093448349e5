"""Decoding a stored Zarr chunk into a buffer of the size its array declares.

Zlib, gzip, bz2 and lzma stream into the buffer piece by piece; zstd, blosc and lz4
check the size their frame declares against it before decoding (the decoder zarr itself
calls, numcodecs). A chunk that decodes to another length is refused. The bounds and the
layouts read are those of :mod:`dpconvex.scale.zarr_chunks`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

#: decoded bytes taken from a streaming decompressor at a time
_PIECE = 2**22
#: memory an lzma decoder may use (xz -9 needs 65 MiB)
_LZMA_MEMLIMIT = 2**28
#: the bit pattern written into a chunk's last element before decoding into it: a
#: payload no float or integer writer produces by chance (a NaN with a fixed payload).
#: If it is still there afterwards, the chunk is decoded once more, checking its length.
_SENTINEL = np.frombuffer(b"dpcvxZR\xff", dtype=np.uint8)
_STREAMING = frozenset({"zlib", "gzip", "bz2", "lzma"})


@dataclass(frozen=True)
class Chain:
    """How one stored chunk turns into values: its compressor, checksum and layout."""

    codec: str | None  # None: the bytes are stored as they are
    order: str = "C"  # the layout of a decoded chunk, "C" or "F"
    checksum: bool = False  # a crc32c of the stored bytes follows them (v3)
    lzma_format: int = 1  # the lzma framing (lzma.FORMAT_*), for codec "lzma"


@dataclass(frozen=True)
class Shard:
    """The inner chunks of a v3 shard and where its index lies."""

    inner: tuple[int, int]
    chain: Chain
    index_checksum: bool
    index_at_end: bool


def _decode_into(data, *, chain: Chain, flat: np.ndarray) -> str | None:
    """Decode the stored bytes ``data`` into ``flat`` (uint8), which they must fill
    exactly: the problem if not, else None. Never decodes more than ``flat`` holds."""
    if chain.checksum:
        data, problem = _strip_checksum(data)
        if problem:
            return problem
    if chain.codec is None:
        if len(data) != flat.nbytes:
            return f"holds {len(data)} bytes; a chunk of this array has {flat.nbytes}"
        flat[:] = np.frombuffer(data, dtype=np.uint8)
        return None
    if chain.codec in _STREAMING:
        return _inflate(chain, data, flat)
    return _one_shot(chain.codec, data, flat)


def _strip_checksum(data):
    import google_crc32c

    if len(data) < 4:
        return data, "is shorter than its checksum"
    body = data[:-4]
    expected = int.from_bytes(bytes(data[-4:]), "little")
    if google_crc32c.value(np.frombuffer(body, dtype=np.uint8)) != expected:
        return body, "fails its crc32c checksum"
    return body, None


def _one_shot(codec: str, data, flat: np.ndarray) -> str | None:
    """zstd, blosc, lz4: numcodecs decodes into ``flat`` after checking the size the
    frame declares against it."""
    if codec == "blosc":
        import numcodecs.blosc

        if len(data) < 16:
            return "is shorter than a blosc header"
        declared = int.from_bytes(bytes(data[4:8]), "little")
        stored = int.from_bytes(bytes(data[12:16]), "little")
        if stored != len(data):
            return f"declares {stored} compressed bytes but holds {len(data)}"
        if declared != flat.nbytes:
            return f"declares {declared} bytes; a chunk of this array has {flat.nbytes}"
        numcodecs.blosc.decompress(data, flat)
        return None
    if codec == "lz4":
        import numcodecs.lz4

        declared = int.from_bytes(bytes(data[:4]), "little") if len(data) >= 4 else -1
        if declared != flat.nbytes:
            return f"declares {declared} bytes; a chunk of this array has {flat.nbytes}"
        numcodecs.lz4.decompress(data, flat)
        return None
    return _zstd(data, flat)


def _zstd(data, flat: np.ndarray) -> str | None:
    import numcodecs.zstd

    mark = _SENTINEL[-min(flat.size, _SENTINEL.size) :]  # a chunk may be shorter
    tail = flat[-mark.size :]
    tail[:] = mark
    try:
        numcodecs.zstd.decompress(data, flat)
    except ValueError as error:  # its frames declare more than the chunk
        return f"does not decode to a chunk of this array ({flat.size} bytes): {error}"
    if np.array_equal(tail, mark):  # a short decode would leave it: measure the length
        # bounded: the frames declared at most the chunk's size (checked just now)
        decoded = np.frombuffer(numcodecs.zstd.decompress(data), dtype=np.uint8)
        if decoded.size != flat.size:
            return f"decodes to {decoded.size} bytes; a chunk of this array has {flat.size}"
        flat[:] = decoded
    return None


def _decompressor(chain: Chain):
    import bz2
    import lzma
    import zlib

    if chain.codec == "zlib":
        return zlib.decompressobj()
    if chain.codec == "gzip":
        return zlib.decompressobj(wbits=16 + zlib.MAX_WBITS)
    if chain.codec == "bz2":
        return bz2.BZ2Decompressor()
    return lzma.LZMADecompressor(format=chain.lzma_format, memlimit=_LZMA_MEMLIMIT)


def _inflate(chain: Chain, data, flat: np.ndarray) -> str | None:
    """Stream ``data`` through its decompressor into ``flat``, in pieces of at most
    ``_PIECE`` bytes in and out, asking one byte more than is left: a stream that decodes
    to more than the chunk is refused at once."""
    out, total, pos = memoryview(flat), flat.nbytes, 0
    zlib_like = chain.codec in ("zlib", "gzip")  # unread input comes back as unconsumed_tail
    decoder, carry, at = _decompressor(chain), b"", 0
    while True:
        if decoder.eof:
            carry = decoder.unused_data
            if not carry and at == len(data):
                break
            if chain.codec == "gzip" and not carry.strip(b"\0") and not _any(data[at:]):
                break  # gzip files may be padded with zeros
            if chain.codec == "zlib":
                return "has bytes after its compressed stream"
            decoder = _decompressor(chain)  # the next member (gzip) or stream (bz2, xz)
            continue
        given = b""
        if zlib_like or decoder.needs_input:
            if carry:
                given, carry = carry, b""
            else:
                given, at = data[at : at + _PIECE], min(at + _PIECE, len(data))
        piece = decoder.decompress(given, min(total - pos + 1, _PIECE))
        if zlib_like:
            carry = decoder.unconsumed_tail
        if len(piece) > total - pos:
            return f"decodes to more than a chunk of this array ({total} bytes)"
        out[pos : pos + len(piece)] = piece
        pos += len(piece)
        waiting = zlib_like or decoder.needs_input
        if not piece and not decoder.eof and waiting and not carry and at == len(data):
            return f"is cut short: it decodes to {pos} bytes; a chunk of this array has {total}"
        if not piece and zlib_like and given and len(carry) == len(given):
            return "cannot be decoded (the decompressor makes no progress)"
    if pos != total:
        return f"decodes to {pos} bytes; a chunk of this array has {total}"
    return None


def _any(data) -> bool:
    return bool(len(data)) and bool(np.frombuffer(data, dtype=np.uint8).any())


def _shard_index(stored, count: int, shard: Shard):
    """(count x 2 array of (offset, length), problem) from a shard's index."""
    size = 16 * count + 4 * shard.index_checksum
    if len(stored) < size:
        return None, f"is shorter than its shard index ({size} bytes)"
    raw = stored[len(stored) - size :] if shard.index_at_end else stored[:size]
    if shard.index_checksum:
        raw, problem = _strip_checksum(raw)
        if problem:
            return None, f"index {problem}"
    return np.frombuffer(raw, dtype="<u8").reshape(count, 2).copy(), None
