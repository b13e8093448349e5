"""Readers of data files (Zarr stores, Parquet files, CSV and LIBSVM files): the review's
reproducers and what else a hostile or careless file can do to them.

A release counts as covered when what came back equals what the file holds (zarr's or
pyarrow's own reading, or the values written) and the probe's peak memory stays under
its bound: for the bombs and the huge declarations, a bound the unbounded decoding or
allocation would exceed.
"""

from __future__ import annotations

import bz2
import gzip
import json
import lzma
import os
import socket
import zlib
from pathlib import Path

import numpy as np

from . import Probe, Violation, run_cli

AREA = "readers"
MB = 2**20
BOMB = 1024 * MB  # decoded size of a bomb: beyond every probe's memory bound


# -- Zarr ------------------------------------------------------------------------------


def _zarr():
    import warnings

    import zarr

    warnings.simplefilter("ignore")
    return zarr


def _store(tmp, shape=(250, 3), chunks=(100, 3), fmt=3, y=True, **kwargs):
    """A group s.zarr with X (values 0, 1, 2, ...) and labels y; (path, X's zarr array)."""
    zarr = _zarr()
    path = tmp / "s.zarr"
    group = zarr.open_group(str(path), mode="w", zarr_format=fmt)
    X = group.create_array("X", shape=shape, chunks=chunks, dtype="f8", **kwargs)
    X[:] = np.arange(np.prod(shape), dtype=np.float64).reshape(shape)
    if y:
        labels = group.create_array("y", shape=(shape[0],), chunks=(chunks[0],), dtype="i8")
        labels[:] = np.where(np.arange(shape[0]) % 2, 1, -1)
    return path, X


def _chunk(array, i=0):
    from dpconvex.scale.zarr_chunks import zarr_chunks

    return Path(zarr_chunks(array).path(i))


def _read(path, **kwargs):
    """read_zarr and compute X (and y): a release checked against zarr's own reading."""
    from dpconvex.scale.data import read_zarr

    zarr = _zarr()
    X, y = read_zarr(path, **kwargs)
    got = X.compute()
    want = zarr.open_array(str(path), path=kwargs.get("x", "X"), mode="r")[:]
    if got.shape != want.shape or not np.array_equal(got, want, equal_nan=True):
        raise Violation("read_zarr differs from zarr's reading")
    if y is not None:
        y.compute()
    return got


def _zarr_probe(name, build, *, memory_mb=700, timeout=60.0, **read):
    def run(tmp):
        path = build(tmp)
        return _read(path, **read)

    return Probe(AREA, f"zarr: {name}", run, timeout=timeout, memory_mb=memory_mb)


def _declared(shape, chunks, dtype="f8", fmt=3):
    def build(tmp):
        zarr = _zarr()
        group = zarr.open_group(str(tmp / "s.zarr"), mode="w", zarr_format=fmt)
        group.create_array("X", shape=shape, chunks=chunks, dtype=dtype)
        group.create_array("y", shape=shape[:1], chunks=chunks[:1], dtype="i8")
        return tmp / "s.zarr"

    return build


def _deflate_bomb(wbits: int) -> bytes:
    """A zlib (15) or gzip (31) stream of BOMB zero bytes, built from one flushed piece
    repeated (its checksum is never reached: a bounded reader stops long before)."""
    piece = bytes(MB)
    encoder = zlib.compressobj(9, zlib.DEFLATED, wbits)
    head = encoder.compress(piece) + encoder.flush(zlib.Z_FULL_FLUSH)
    body = encoder.compress(piece) + encoder.flush(zlib.Z_FULL_FLUSH)
    return head + body * (BOMB // MB - 1) + encoder.flush()


def _stream_bomb(compress) -> bytes:
    """BOMB zero bytes as concatenated bz2 or xz streams (both formats allow it)."""
    one = compress(bytes(32 * MB))
    return one * (BOMB // (32 * MB))


BOMBS = {
    "zlib": lambda: _deflate_bomb(15),
    "gzip": lambda: _deflate_bomb(31),
    "bz2": lambda: _stream_bomb(lambda b: bz2.compress(b, 9)),
    "lzma": lambda: _stream_bomb(lambda b: lzma.compress(b, preset=0)),
}


def _bomb(codec, fmt):
    def build(tmp):
        import numcodecs

        zarr = _zarr()
        if fmt == 2:
            compressor = numcodecs.get_codec({"id": codec})
        else:
            v3 = zarr.codecs.numcodecs
            compressor = {"gzip": zarr.codecs.GzipCodec, "zlib": v3.Zlib, "bz2": v3.BZ2,
                          "lzma": v3.LZMA}[codec]()  # fmt: skip
        # chunks of 2 MB: the 1 MB bomb passes the stored-size check, the stream is cut
        path, X = _store(
            tmp, shape=(2000, 256), chunks=(1000, 256), fmt=fmt, compressors=compressor
        )
        _chunk(X, 1).write_bytes(BOMBS[codec]())
        return path

    return build


def _rewrite(change, i=1, **store):
    """A store whose chunk i's file is replaced by ``change(old bytes, X's array, tmp)``."""

    def build(tmp):
        path, X = _store(tmp, **store)
        chunk = _chunk(X, i)
        old = chunk.read_bytes()
        chunk.write_bytes(change(old, X, tmp))
        return path

    return build


def _replace_file(make, i=1, **store):
    """A store whose chunk i is replaced by what ``make(path, tmp)`` puts there."""

    def build(tmp):
        path, X = _store(tmp, **store)
        chunk = _chunk(X, i)
        chunk.unlink()
        make(chunk, tmp)
        return path

    return build


def _fifo(path, tmp):
    os.mkfifo(path)


def _socket(path, tmp):
    server = socket.socket(socket.AF_UNIX)
    server.bind(str(path))  # left bound: the probe's process ends with it


def _link_out(path, tmp):
    outside = tmp / "outside-chunk"
    outside.write_bytes(b"\0" * 2400)
    os.symlink(outside, path)


def _metadata(change, name="X/zarr.json", fmt=3):
    def build(tmp):
        path, _ = _store(tmp, fmt=fmt)
        meta = path / name
        change(meta, tmp)
        return path

    return build


def _edit_json(edit):
    def change(meta, tmp):
        record = json.loads(meta.read_text())
        edit(record)
        meta.write_text(json.dumps(record))

    return change


def _sharded(change):
    def build(tmp):
        zarr = _zarr()
        path = tmp / "s.zarr"
        group = zarr.open_group(str(path), mode="w")
        X = group.create_array("X", shape=(250, 3), chunks=(50, 3), shards=(100, 3), dtype="f8")
        X[:] = np.arange(750.0).reshape(250, 3)
        group.create_array("y", shape=(250,), chunks=(100,), dtype="i8")[:] = 1
        shard = _chunk(X, 1)
        shard.write_bytes(change(shard.read_bytes()))
        return path

    return build


def _index_entry(offset, nbytes):
    """Shard bytes whose first inner chunk's index entry is (offset, nbytes); the index
    checksum recomputed, so that only the entry itself is wrong."""
    import google_crc32c

    def change(old):
        count = 2
        index_at = len(old) - (16 * count + 4)
        entries = bytearray(old[index_at : index_at + 16 * count])
        entries[:16] = np.array([offset, nbytes], dtype="<u8").tobytes()
        crc = google_crc32c.value(bytes(entries)).to_bytes(4, "little")
        return old[:index_at] + bytes(entries) + crc

    return change


def _same_bytes(old):
    """Shard bytes whose second inner chunk's index entry points at the first's bytes."""
    import google_crc32c

    index_at = len(old) - (16 * 2 + 4)
    entries = bytearray(old[index_at : index_at + 32])
    entries[16:] = entries[:16]
    crc = google_crc32c.value(bytes(entries)).to_bytes(4, "little")
    return old[:index_at] + bytes(entries) + crc


def _blosc_garbage(seed):
    """Bytes with a blosc header that declares the chunk's sizes, then noise."""

    def change(old, X, tmp):
        rng = np.random.default_rng(seed)
        body = bytearray(rng.integers(0, 256, size=len(old), dtype=np.uint8).tobytes())
        body[:16] = old[:16]
        return bytes(body)

    return change


def _zarr_probes() -> list[Probe]:
    import numcodecs

    out = [
        # the review's reproducers
        _zarr_probe(
            "declared chunks of 5e7 rows for 10 rows (review)",
            _declared((10, 2), (50_000_000, 2)),
            memory_mb=400,
        ),  # fmt: skip
        _zarr_probe("zlib bomb (v2, review)", _bomb("zlib", 2), memory_mb=700),
        _zarr_probe("FIFO chunk (review)", _replace_file(_fifo), timeout=20),
        _zarr_probe("chunk linked out of the store (review)", _replace_file(_link_out)),
    ]
    for codec, fmt in [("gzip", 2), ("bz2", 2), ("lzma", 2), ("gzip", 3), ("zlib", 3),
                       ("bz2", 3), ("lzma", 3)]:  # fmt: skip
        out.append(_zarr_probe(f"{codec} bomb (v{fmt})", _bomb(codec, fmt), memory_mb=700))
    declared = {
        "chunks larger than the array, within 16 MiB, never written": ((10, 2), (10**6, 2)),
        "10^11 declared rows, never written (first chunk read)": ((10**11, 1), (10**6, 1)),
        "10^6 chunks": ((10**6, 2), (1, 2)),
        "a chunk of 8 GB": ((10**6, 10**3), (10**6, 10**3)),
        "a row chunk of 8 GB from split chunks": ((10**6, 10**4), (10**5, 10**3)),
        "10^9 columns": ((2, 10**9), (1, 10**6)),
        "int8 with chunks of 2^31 values": ((2**31, 1), (2**31, 1)),
    }
    for name, (shape, chunks) in declared.items():
        if "first chunk" in name:
            out.append(Probe(AREA, f"zarr: {name}", _first_chunk(shape, chunks), memory_mb=400))
        else:
            dtype = "i1" if "int8" in name else "f8"
            out.append(_zarr_probe(name, _declared(shape, chunks, dtype), memory_mb=400))
    frames = {
        "zstd frame declaring 256 MiB": lambda o, X, t: numcodecs.Zstd().encode(bytes(256 * MB)),
        "zstd frames, each within the chunk, together beyond it":
            lambda o, X, t: o + o,
        "zstd garbage": lambda o, X, t: bytes(range(256)) * 8,
        "zstd cut in half": lambda o, X, t: o[: len(o) // 2],
        "empty chunk file": lambda o, X, t: b"",
        "one byte": lambda o, X, t: b"\x28",
    }  # fmt: skip
    for name, change in frames.items():
        out.append(_zarr_probe(name, _rewrite(change)))
    for codec in ("blosc", "lz4", "zlib", "gzip", "bz2", "lzma"):
        compressor = numcodecs.get_codec({"id": codec})
        out.append(_zarr_probe(f"{codec}: a frame declaring 64 MiB", _rewrite(
            lambda o, X, t, c=compressor: c.encode(bytes(64 * MB)),
            fmt=2, compressors=compressor)))  # fmt: skip
        out.append(_zarr_probe(f"{codec}: garbage", _rewrite(
            lambda o, X, t: bytes(range(256)) * 9, fmt=2, compressors=compressor)))  # fmt: skip
        out.append(_zarr_probe(f"{codec}: cut short", _rewrite(
            lambda o, X, t: o[: len(o) * 2 // 3], fmt=2, compressors=compressor)))  # fmt: skip
    for seed in range(4):
        out.append(_zarr_probe(f"blosc: a valid header over noise (seed {seed})", _rewrite(
            _blosc_garbage(seed), fmt=2, compressors=numcodecs.Blosc())))  # fmt: skip
    out += [
        _zarr_probe(
            "zlib: bytes after the stream",
            _rewrite(lambda o, X, t: o + b"junk", fmt=2, compressors=numcodecs.Zlib()),
        ),  # fmt: skip
        _zarr_probe(
            "gzip: two members (valid)",
            _rewrite(
                lambda o, X, t: (
                    gzip.compress(np.asarray(X[100:200]).tobytes()[:1200])
                    + gzip.compress(np.asarray(X[100:200]).tobytes()[1200:])
                ),
                fmt=2,
                compressors=numcodecs.GZip(),
            ),
        ),  # fmt: skip
        _zarr_probe(
            "raw chunk of the wrong length", _rewrite(lambda o, X, t: o[:-8], compressors=None)
        ),  # fmt: skip
        _zarr_probe("raw chunk as a 10 GB sparse file", _rewrite_sparse(10 * 2**30)),
        _zarr_probe(
            "crc32c mismatch",
            _rewrite(
                lambda o, X, t: o[:-1] + bytes([o[-1] ^ 1]),
                compressors=[_zarr().codecs.ZstdCodec(), _zarr().codecs.Crc32cCodec()],
            ),
        ),  # fmt: skip
        _zarr_probe(
            "FIFO as a chunk's directory entry (v2)", _replace_file(_fifo, fmt=2), timeout=20
        ),  # fmt: skip
        _zarr_probe("socket chunk", _replace_file(_socket), timeout=20),
        _zarr_probe("directory as a chunk", _replace_file(lambda p, t: p.mkdir())),
        _zarr_probe(
            "chunk linked to /dev/zero",
            _replace_file(lambda p, t: os.symlink("/dev/zero", p)),
            timeout=20,
        ),  # fmt: skip
        _zarr_probe("chunk linked to itself", _replace_file(lambda p, t: os.symlink(p, p))),
        _zarr_probe(
            "chunk linked inside the store (valid)",
            _replace_file(lambda p, t: os.symlink(p.parent.parent / "0" / "0", p), i=1),
        ),  # fmt: skip
        _zarr_probe("array directory linked out of the store", _link_array_out),
        _zarr_probe("component ../elsewhere", lambda t: _store(t)[0], x="../elsewhere"),
        _zarr_probe("component /etc", lambda t: _store(t)[0], x="/etc"),
        _zarr_probe(
            "FIFO zarr.json", _metadata(lambda m, t: (m.unlink(), os.mkfifo(m))), timeout=20
        ),  # fmt: skip
        _zarr_probe(
            "FIFO .zarray (v2)",
            _metadata(lambda m, t: (m.unlink(), os.mkfifo(m)), name="X/.zarray", fmt=2),
            timeout=20,
        ),  # fmt: skip
        _zarr_probe(
            "FIFO group zarr.json",
            _metadata(lambda m, t: (m.unlink(), os.mkfifo(m)), name="zarr.json"),
            timeout=20,
        ),  # fmt: skip
        _zarr_probe("zarr.json linked out of the store", _metadata(_link_metadata_out)),
        _zarr_probe(
            "zarr.json of 20 MB",
            _metadata(
                _edit_json(lambda r: r.setdefault("attributes", {}).update(pad="x" * (20 * MB)))
            ),
        ),  # fmt: skip
        _zarr_probe(
            "zarr.json nested 100,000 deep",
            _metadata(lambda m, t: m.write_text("[" * 100_000 + "]" * 100_000)),
        ),  # fmt: skip
        _zarr_probe("zarr.json not JSON", _metadata(lambda m, t: m.write_bytes(b"\xff{"))),
        _zarr_probe("negative shape", _metadata(_edit_json(lambda r: r.update(shape=[-5, 3])))),
        _zarr_probe("shape of floats", _metadata(_edit_json(lambda r: r.update(shape=[2.5, 3])))),
        _zarr_probe(
            "complex dtype", _metadata(_edit_json(lambda r: r.update(data_type="complex128")))
        ),
        _zarr_probe("string X", _metadata(_edit_json(lambda r: r.update(data_type="string")))),
        _zarr_probe(
            "fill value out of range",
            _metadata(_edit_json(lambda r: r.update(data_type="int8", fill_value=1000))),
        ),  # fmt: skip
        _zarr_probe(
            "chunk key separator '..'",
            _metadata(
                _edit_json(
                    lambda r: r.update(
                        chunk_key_encoding={"name": "default", "configuration": {"separator": ".."}}
                    )
                )
            ),
        ),  # fmt: skip
        _zarr_probe(
            "unknown codec", _metadata(_edit_json(lambda r: r["codecs"].append({"name": "evil"})))
        ),  # fmt: skip
        _zarr_probe(
            "v2 pickle compressor",
            _metadata(
                _edit_json(lambda r: r.update(compressor={"id": "pickle"})), name="X/.zarray", fmt=2
            ),
        ),  # fmt: skip
        _zarr_probe(
            "v2 filters", lambda t: _store(t, fmt=2, filters=[numcodecs.Delta(dtype="f8")])[0]
        ),  # fmt: skip
        _zarr_probe("labels as strings", _string_labels),
        _zarr_probe("labels of another length", _short_labels),
        _zarr_probe("no such array", lambda t: _store(t)[0], x="nope"),
        Probe(AREA, "zarr: store path is a file", _store_is_file),
        Probe(AREA, "zarr: no such store", lambda t: _read(t / "missing.zarr")),
        _zarr_probe("shard index beyond the file", _sharded(_index_entry(10**9, 100))),
        _zarr_probe("shard index offset overflowing", _sharded(_index_entry(2**64 - 2, 100))),
        _zarr_probe("shard index checksum broken", _sharded(lambda o: o[:-1] + bytes([o[-1] ^ 1]))),
        _zarr_probe("shard shorter than its index", _sharded(lambda o: o[:20])),
        _zarr_probe(
            "shard: an inner chunk is another's bytes (valid)",
            _sharded(_same_bytes),
            memory_mb=700,
        ),  # fmt: skip
        _zarr_probe("remote (file://) store, huge declared chunks", _remote_huge),
        Probe(AREA, "zarr: remote (file://) store (valid)", _remote_valid),
    ]
    layouts = {
        "zarr's defaults": {},
        "columns split, F order, zlib (v2)": {"fmt": 2, "chunks": (64, 2), "order": "F",
                                              "compressors": numcodecs.Zlib()},
        "big-endian": {"serializer": _zarr().codecs.BytesCodec(endian="big")},
        "sharded": {"chunks": (50, 3), "shards": (100, 3)},
        "chunks larger than the array (small)": {"chunks": (1000, 3)},
        "chunks wider than the array": {"chunks": (100, 5)},
    }  # fmt: skip
    for name, kwargs in layouts.items():
        out.append(_zarr_probe(f"valid: {name}", _layout(kwargs)))
    return out


def _layout(kwargs):
    def build(tmp):
        kwargs2 = dict(kwargs)
        path, _ = _store(tmp, y=False, **kwargs2)
        zarr = _zarr()
        rows = kwargs2.get("shards", kwargs2.get("chunks", (100, 3)))[0]
        group = zarr.open_group(str(path), mode="a")
        group.create_array("y", shape=(250,), chunks=(rows,), dtype="i8")[:] = 1
        return path

    return build


def _rewrite_sparse(size):
    def build(tmp):
        path, X = _store(tmp, compressors=None)
        with open(_chunk(X, 1), "r+b") as handle:
            handle.truncate(size)
        return path

    return build


def _first_chunk(shape, chunks):
    def run(tmp):
        from dpconvex.scale.data import read_zarr

        path = _declared(shape, chunks)(tmp)
        X, _ = read_zarr(path)
        first = X.blocks[0].compute()
        if first.shape != (chunks[0], shape[1]) or np.any(first != 0):
            raise Violation("the first chunk is not the fill value")

    return run


def _link_array_out(tmp):
    path, _ = _store(tmp)
    os.rename(path / "X", tmp / "Xout")
    os.symlink(tmp / "Xout", path / "X")
    return path


def _link_metadata_out(meta, tmp):
    outside = tmp / "outside.json"
    outside.write_text(meta.read_text())
    meta.unlink()
    os.symlink(outside, meta)


def _string_labels(tmp):
    zarr = _zarr()
    path, _ = _store(tmp, y=False)
    group = zarr.open_group(str(path), mode="a")
    group.create_array("y", shape=(250,), chunks=(100,), dtype=str)[:] = ["a"] * 250
    return path


def _short_labels(tmp):
    zarr = _zarr()
    path, _ = _store(tmp, y=False)
    group = zarr.open_group(str(path), mode="a")
    group.create_array("y", shape=(200,), chunks=(100,), dtype="i8")[:] = 1
    return path


def _store_is_file(tmp):
    (tmp / "s.zarr").write_text("{}")
    return _read(tmp / "s.zarr")


def _remote_huge(tmp):
    _declared((10, 2), (50_000_000, 2))(tmp)
    return "file://" + str(tmp / "s.zarr")


def _remote_valid(tmp):
    from dpconvex.scale.data import read_zarr

    path, X = _store(tmp)
    got, _ = read_zarr("file://" + str(path))
    if not np.array_equal(got.compute(), X[:]):
        raise Violation("the remote reading differs from zarr's")


# -- Parquet ---------------------------------------------------------------------------


def _parquet_dir(tmp, later=None, first=None):
    import pyarrow as pa
    import pyarrow.parquet as pq

    root = tmp / "d"
    root.mkdir()
    for k in range(3):
        table = pa.table({"a": np.arange(4.0) + k, "b": np.arange(4.0), "label": [1, -1, 1, -1]})
        if k == 2 and later is not None:
            table = later(pa, table)
        if k == 0 and first is not None:
            table = first(pa, table)
        pq.write_table(table, root / f"part{k}.parquet")
    return root


def _column(name, make):
    def change(pa, table):
        index = table.schema.get_field_index(name)
        return table.set_column(index, name, make(pa, table.num_rows))

    return change


def _read_parquet(root, target="label", reader="read_parquet"):
    import pyarrow.parquet as pq

    from dpconvex.scale import data

    if reader == "read_table":
        (Xtr, ytr), (Xte, yte) = data.read_table(root, target, seed=0)
        if Xtr.shape[0] + Xte.shape[0] != 12:
            raise Violation("read_table lost rows")
        return
    X, y = data.read_parquet(root, target)
    got = X.compute()
    files = sorted(Path(root).glob("*.parquet")) if Path(root).is_dir() else [Path(root)]
    want = np.vstack(
        [pq.read_table(f).drop_columns([target]).to_pandas().to_numpy(float) for f in files]
    )
    if not np.array_equal(got, want):
        raise Violation("read_parquet differs from pyarrow's reading")
    y.compute()


def _parquet_probe(name, build, reader="read_parquet", timeout=60.0, **kwargs):
    return Probe(AREA, f"parquet: {name}",
                 lambda tmp: _read_parquet(build(tmp), reader=reader, **kwargs),
                 timeout=timeout, memory_mb=700)  # fmt: skip


def _parquet_probes() -> list[Probe]:
    later = {
        "timestamp": lambda pa, n: pa.array(np.arange(n).astype("datetime64[s]")),
        "decimal": lambda pa, n: pa.array([1, 2, 3, 4], pa.decimal128(5, 2)),
        "string": lambda pa, n: pa.array(["1.5"] * n),
        "int32": lambda pa, n: pa.array(np.arange(n, dtype=np.int32)),
        "dictionary": lambda pa, n: pa.array([1.0] * n).dictionary_encode(),
        "struct": lambda pa, n: pa.array([{"v": 1.0}] * n),
    }
    out = []
    for kind, make in later.items():
        out.append(_parquet_probe(f"later file's column is {kind}"
                + (" (review)" if kind in ("timestamp", "decimal", "string") else ""),
                                  lambda t, m=make: _parquet_dir(t, _column("b", m))))  # fmt: skip
    out += [
        _parquet_probe(
            "later file's column is string, via read_table",
            lambda t: _parquet_dir(t, _column("b", later["string"])),
            reader="read_table",
        ),  # fmt: skip
        _parquet_probe(
            "later file lacks a column",
            lambda t: _parquet_dir(t, lambda pa, table: table.drop_columns(["b"])),
        ),  # fmt: skip
        _parquet_probe(
            "later file has another column",
            lambda t: _parquet_dir(
                t, lambda pa, table: table.append_column("c", pa.array([0.0] * 4))
            ),
        ),  # fmt: skip
        _parquet_probe(
            "first file's feature is text",
            lambda t: _parquet_dir(t, first=_column("b", later["string"])),
        ),  # fmt: skip
        _parquet_probe(
            "target is a timestamp",
            lambda t: _parquet_dir(t, first=_column("label", later["timestamp"])),
        ),  # fmt: skip
        _parquet_probe("a column named twice", _duplicate_column),
        _parquet_probe(
            "nulls in a feature",
            lambda t: _parquet_dir(
                t, _column("a", lambda pa, n: pa.array([1.0, None, 2.0, 3.0], pa.float64()))
            ),
        ),  # fmt: skip
        _parquet_probe(
            "nulls in the labels",
            lambda t: _parquet_dir(
                t, _column("label", lambda pa, n: pa.array([1, None, 1, -1], pa.int64()))
            ),
        ),  # fmt: skip
        _parquet_probe("FIFO .parquet", _parquet_replace(lambda p, t: os.mkfifo(p)), timeout=20),
        _parquet_probe("directory named .parquet", _parquet_replace(lambda p, t: p.mkdir())),
        _parquet_probe("file linked out of the directory", _parquet_replace(_link_parquet_out)),
        _parquet_probe("link to nothing", _parquet_replace(lambda p, t: os.symlink(t / "no", p))),
        _parquet_probe("not a Parquet file", _parquet_replace(lambda p, t: p.write_text("a,b\n"))),
        _parquet_probe("empty .parquet file", _parquet_replace(lambda p, t: p.write_bytes(b""))),
        _parquet_probe(
            "footer length beyond the file",
            _parquet_replace(
                lambda p, t: p.write_bytes(
                    b"PAR1" + b"\0" * 8 + (2**31).to_bytes(4, "little") + b"PAR1"
                )
            ),
        ),  # fmt: skip
        _parquet_probe("data pages cut out", _parquet_truncate_middle),
        _parquet_probe("no such path", lambda t: t / "missing.parquet"),
        _parquet_probe("empty directory", lambda t: (t / "d").mkdir() or t / "d"),
        _parquet_probe("valid directory", lambda t: _parquet_dir(t)),
        _parquet_probe(
            "valid directory, via read_table", lambda t: _parquet_dir(t), reader="read_table"
        ),  # fmt: skip
    ]
    return out


def _duplicate_column(tmp):
    import pyarrow as pa
    import pyarrow.parquet as pq

    root = tmp / "d"
    root.mkdir()
    table = pa.Table.from_arrays([pa.array([1.0, 2.0])] * 2 + [pa.array([1, -1])],
                                 names=["a", "a", "label"])  # fmt: skip
    pq.write_table(table, root / "part0.parquet")
    return root


def _parquet_replace(make):
    def build(tmp):
        root = _parquet_dir(tmp)
        (root / "part1.parquet").unlink()
        make(root / "part1.parquet", tmp)
        return root

    return build


def _link_parquet_out(path, tmp):
    import pyarrow as pa
    import pyarrow.parquet as pq

    pq.write_table(pa.table({"a": [1.0], "b": [1.0], "label": [1]}), tmp / "out.parquet")
    os.symlink(tmp / "out.parquet", path)


def _parquet_truncate_middle(tmp):
    root = _parquet_dir(tmp)
    data = (root / "part1.parquet").read_bytes()
    (root / "part1.parquet").write_bytes(
        data[:4] + b"\0" * (len(data) // 2) + data[len(data) // 2 + 4 :]
    )
    return root


# -- CSV and LIBSVM --------------------------------------------------------------------


def _load_csv(text, name="d.csv", target="label", encoding="utf-8"):
    def run(tmp):
        from dpconvex.datasets import load_csv

        path = tmp / name
        path.write_bytes(text.encode(encoding) if isinstance(text, str) else text)
        data = load_csv(path, target)
        if not np.all(np.isfinite(data.X)) or data.X.shape[0] != len(data.y):
            raise Violation("a matrix with non-finite values or labels of another length")

    return run


def _csv_probe(name, text, **kwargs):
    return Probe(AREA, f"csv: {name}", _load_csv(text, **kwargs), memory_mb=700)


def _csv_probes() -> list[Probe]:
    header = "a,b,label\n"
    out = [
        _csv_probe("200,000-character field (review)", header + "1," + "9" * 200_000 + ",1\n"),
        _csv_probe("Arabic-Indic digits (review)", header + "1,2,0\n١٢,3,1\n"),
        _csv_probe("full-width digits (review)", header + "1,2,0\n１２,3,1\n"),
        _csv_probe("duplicate header (review)", "a,a,label\n1,2,0\n3,4,1\n"),
        _csv_probe("Arabic-Indic digit labels (kept as text)", "a,label\n1,1\n2,١\n"),
        _csv_probe("Eastern Arabic digits in an exponent", header + "1,2,0\n1e٣,3,1\n"),
        _csv_probe("digit-group underscores", header + "1_000,2,0\n3,4,1\n"),
        _csv_probe("header names repeated after stripping", "a, a,label\n1,2,0\n"),
        _csv_probe("an empty header name (row index)", ",a,label\n0,1,0\n1,2,1\n"),
        _csv_probe("Latin-1 text", header + "1,2,café\n", encoding="latin-1"),
        _csv_probe("UTF-16 file", header + "1,2,0\n", encoding="utf-16"),
        _csv_probe("NUL bytes", (header + "1\x00,2,0\n").encode()),
        _csv_probe("empty file", b""),
        _csv_probe("header only", header),
        _csv_probe("blank lines only after the header", header + "\n\n\n"),
        _csv_probe("ragged row", header + "1,2,0\n3,4\n"),
        _csv_probe("extra field", header + "1,2,0,9\n"),
        _csv_probe("unclosed quote", header + '1,2,"0\n3,4,1\n'),
        _csv_probe("text after a closing quote", header + '1,"2"x,0\n'),
        _csv_probe("byte order mark (valid)", "\ufeff" + header + "1,2,0\n3,4,1\n"),
        _csv_probe("CRLF line ends (valid)", header.replace("\n", "\r\n") + "1,2,0\r\n3,4,1\r\n"),
        _csv_probe(
            "quoted numbers and newlines in labels (valid)", header + '"1","2","x\ny"\n3,4,1\n'
        ),  # fmt: skip
        _csv_probe("infinite label", header + "1,2,inf\n3,4,1\n"),
        _csv_probe("infinite feature", header + "1,inf,0\n3,4,1\n"),
        _csv_probe("label of 1,000 characters", header + "1,2," + "x" * 1000 + "\n3,4,b\n"),
        _csv_probe("missing values", header + "1,,0\nNA,4,1\n"),
        _csv_probe("hex numbers", header + "0x10,2,0\n"),
        _csv_probe("no target column", header + "1,2,0\n", target="y"),
        _csv_probe("a 17 MB line", header + "1," + "2" * (17 * MB) + ",0\n"),
        _csv_probe("a line of 4 million empty fields", header + "," * (4 * 10**6) + "\n"),
        _csv_probe("100,001 columns", ",".join(f"c{j}" for j in range(100_001)) + ",label\n"),
        _csv_probe("a million rows of one short label (valid)", "a,label\n" + "1,x\n" * 10**6),
        Probe(AREA, "csv: FIFO", _csv_fifo, timeout=20),
        Probe(AREA, "csv: a directory", _csv_directory),
        Probe(AREA, "csv: CLI fit on a duplicate header", _csv_cli),
        Probe(AREA, "csv: CLI fit --dask on a duplicate header", _csv_cli_dask, timeout=120),
        Probe(AREA, "csv: read_table with text in a later row", _read_table_text, timeout=120),
        Probe(AREA, "csv: read_table on a missing file", _read_table_missing),
        Probe(AREA, "libsvm: garbage", _libsvm(b"this is not\x00 libsvm\n")),
        Probe(AREA, "libsvm: feature index 10^11", _libsvm(b"1 1:1 100000000000:1\n")),
        Probe(AREA, "libsvm: feature index 10^9", _libsvm(b"1 1:1 1000000000:1\n"), timeout=30),
        Probe(AREA, "libsvm: FIFO", _libsvm_fifo, timeout=20),
        Probe(AREA, "libsvm: negative index", _libsvm(b"1 -3:1\n")),
        Probe(AREA, "libsvm: valid", _libsvm(b"1 1:0.5 3:-1\n-1 2:2\n")),
    ]
    return out


def _csv_fifo(tmp):
    from dpconvex.datasets import load_csv

    os.mkfifo(tmp / "d.csv")
    load_csv(tmp / "d.csv", "label")


def _csv_directory(tmp):
    from dpconvex.datasets import load_csv

    (tmp / "d.csv").mkdir()
    load_csv(tmp / "d.csv", "label")


def _csv_cli(tmp):
    (tmp / "d.csv").write_text("a,a,label\n" + "1,2,0\n3,4,1\n" * 50)
    run_cli(["fit", "--data", str(tmp / "d.csv"), "--target", "label", "--epsilon", "1",
             "--delta", "1e-5", "--out", str(tmp / "m.json")])  # fmt: skip


def _csv_cli_dask(tmp):
    (tmp / "d.csv").write_text("a,a,label\n" + "1,2,0\n3,4,1\n" * 50)
    run_cli(["fit", "--data", str(tmp / "d.csv"), "--target", "label", "--epsilon", "1",
             "--delta", "1e-5", "--dask", "--classes=0,1",
             "--out", str(tmp / "m.json")])  # fmt: skip


def _read_table_text(tmp):
    from dpconvex.scale.data import read_table

    (tmp / "d.csv").write_text("a,b,label\n" + "1,2,0\n" * 5000 + "1,two,1\n")
    read_table(tmp / "d.csv", "label", blocksize="16KB")


def _read_table_missing(tmp):
    from dpconvex.scale.data import read_table

    read_table(tmp / "missing.csv", "label")


def _libsvm(content):
    def run(tmp):
        from dpconvex.datasets import load_libsvm

        (tmp / "d.svm").write_bytes(content)
        data = load_libsvm(tmp / "d.svm")
        if data.X.shape[0] != len(data.y):
            raise Violation("labels of another length")

    return run


def _libsvm_fifo(tmp):
    from dpconvex.datasets import load_libsvm

    os.mkfifo(tmp / "d.svm")
    load_libsvm(tmp / "d.svm")


def probes() -> list[Probe]:
    return _zarr_probes() + _parquet_probes() + _csv_probes()
