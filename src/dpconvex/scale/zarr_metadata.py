"""A Zarr array's codec chain (v2 compressor, v3 codecs and sharding), chunk key and fill
value read from its metadata; anything :mod:`dpconvex.scale.zarr_codecs` cannot decode
with a bounded buffer is refused with the array's name and what to change."""

from __future__ import annotations

import sys

import numpy as np

from .zarr_codecs import Chain, Shard

_V3_COMPRESSORS = {"zstd": "zstd", "blosc": "blosc", "gzip": "gzip"} | {
    f"numcodecs.{name}": name for name in ("zstd", "blosc", "lz4", "zlib", "gzip", "bz2", "lzma")
}
_V2_COMPRESSORS = frozenset({"zstd", "blosc", "lz4", "zlib", "gzip", "bz2", "lzma"})


def _refuse(label: str, what: str) -> ValueError:
    return ValueError(
        f"{label} uses {what}, which dpconvex does not read: rewrite the array without it "
        "(zarr's defaults are read, as are zstd, blosc, lz4, zlib, gzip, bz2 and lzma "
        "compressors, transposition, crc32c and sharding)"
    )


def _v2_chain(meta, label: str) -> Chain:
    if meta.filters:
        raise _refuse(label, "filters")
    if meta.order not in ("C", "F"):
        raise _refuse(label, f"order {meta.order!r}")
    codec = meta.compressor
    if codec is None:
        return Chain(None, order=meta.order)
    name = getattr(codec, "codec_id", None)
    if name not in _V2_COMPRESSORS:
        raise _refuse(label, f"compressor {name!r}")
    return _compressor_chain(name, codec.get_config(), meta.order, label)


def _compressor_chain(name: str, config: dict, order: str, label: str, checksum=False) -> Chain:
    if name != "lzma":
        return Chain(name, order=order, checksum=checksum)
    import lzma

    fmt = config.get("format", lzma.FORMAT_XZ)
    if config.get("filters") or fmt not in (lzma.FORMAT_AUTO, lzma.FORMAT_XZ, lzma.FORMAT_ALONE):
        raise _refuse(label, "raw lzma or lzma filters")
    return Chain("lzma", order=order, checksum=checksum, lzma_format=int(fmt))


def _v3_chain(codecs, ndim: int, label: str, inner: bool = False):
    """(Chain, None), or (None, Shard) for a sharded array, from a v3 codec list."""
    specs = [codec.to_dict() for codec in codecs]
    names = [spec["name"] for spec in specs]
    order = "C"
    if names and names[0] == "transpose":
        axes = tuple(specs[0].get("configuration", {}).get("order", ()))
        if sorted(axes) != list(range(ndim)):
            raise _refuse(label, f"transposition {axes}")
        order = "F" if axes == (1, 0) else "C"
        specs, names = specs[1:], names[1:]
    if names and names[0] == "sharding_indexed" and not inner and len(names) == 1:
        if order != "C":
            raise _refuse(label, "a transposition before sharding")
        return None, _v3_shard(codecs[-1], ndim, label)
    if not names or names[0] != "bytes":
        raise _refuse(label, f"codecs {names}")
    rest = names[1:]
    checksum = bool(rest) and rest[-1] == "crc32c"
    rest = rest[:-1] if checksum else rest
    if not rest:
        return Chain(None, order=order, checksum=checksum), None
    if len(rest) > 1 or rest[0] not in _V3_COMPRESSORS:
        raise _refuse(label, f"codecs {names}")
    config = dict(specs[1].get("configuration") or {})
    return _compressor_chain(_V3_COMPRESSORS[rest[0]], config, order, label, checksum), None


def _v3_shard(codec, ndim: int, label: str) -> Shard:
    inner_chain, nested = _v3_chain(codec.codecs, ndim, label, inner=True)
    index = [c.to_dict()["name"] for c in codec.index_codecs]
    if index not in (["bytes"], ["bytes", "crc32c"]) or _endian(codec.index_codecs[0]) == "big":
        raise _refuse(label, f"a shard index encoded by {index}")
    inner = tuple(codec.chunk_shape)
    return Shard(
        inner=(inner[0], inner[1] if ndim == 2 else 1),
        chain=inner_chain,
        index_checksum=index[-1] == "crc32c",
        index_at_end=getattr(codec.index_location, "value", codec.index_location) == "end",
    )


def _endian(codec) -> str:
    endian = getattr(codec, "endian", None)
    return sys.byteorder if endian is None else str(getattr(endian, "value", endian))


def _v3_endian(codecs, shard: Shard | None) -> str:
    """The byte order of the stored values (the bytes codec's): "<" or ">"."""
    chain = codecs if shard is None else codecs[-1].codecs
    serializer = next(c for c in chain if c.to_dict()["name"] == "bytes")
    return "<" if _endian(serializer) == "little" else ">"


def _chunk_key(meta, label: str) -> tuple[str, str]:
    if meta.zarr_format == 2:
        prefix, sep = "", meta.dimension_separator
    else:
        encoding = meta.chunk_key_encoding
        sep = encoding.separator
        prefix = "c" + sep if encoding.name == "default" else ""
    ndim = len(meta.shape)
    probe = (3, 5)[:ndim]
    if sep not in (".", "/") or meta.encode_chunk_key(probe) != prefix + sep.join(map(str, probe)):
        raise _refuse(label, "an unusual chunk key encoding")
    return prefix, sep


def _fill_value(array, dtype: np.dtype, label: str):
    fill = array.fill_value
    try:
        return np.asarray(0 if fill is None else fill).astype(dtype.newbyteorder("="))[()]
    except (TypeError, ValueError, OverflowError):
        raise ValueError(f"{label} declares a fill value {fill!r} its dtype cannot hold") from None
