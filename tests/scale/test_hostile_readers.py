"""Hostile Zarr stores and Parquet files: memory bounded by the declared shape, files that
are not regular or that leave the store refused without being opened, every error naming
the file (review of the readers, issue 31 item 8)."""

import bz2
import gzip
import json
import lzma
import os
import threading
import tracemalloc
import zlib

import numpy as np
import pytest

pytestmark = pytest.mark.dask

da = pytest.importorskip("dask.array")
zarr = pytest.importorskip("zarr")
numcodecs = pytest.importorskip("numcodecs")

from dpconvex.scale.data import read_parquet, read_table, read_zarr  # noqa: E402
from dpconvex.scale.zarr_chunks import MAX_CHUNKS, open_local, zarr_chunks  # noqa: E402

MB = 2**20


def _peak(fn):
    """(fn's result or exception, the peak bytes traced while it ran); numpy's buffers
    are traced too."""
    tracemalloc.start()
    try:
        try:
            result = fn()
        except Exception as error:  # noqa: BLE001 - returned for the test to inspect
            result = error
        return result, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def _within(seconds, fn):
    """fn's exception (or None) if it ends within ``seconds``; fail if it hangs (a FIFO
    opened for reading blocks until a writer comes: the thread is left behind)."""
    outcome = {}

    def run():
        try:
            fn()
            outcome["error"] = None
        except Exception as error:  # noqa: BLE001
            outcome["error"] = error

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(seconds)
    assert "error" in outcome, f"still blocked after {seconds} s"
    return outcome["error"]


def _store(path, shape=(250, 3), chunks=(100, 3), fmt=3, **kwargs):
    group = zarr.open_group(str(path), mode="w", zarr_format=fmt)
    X = np.arange(np.prod(shape), dtype=np.float64).reshape(shape)
    array = group.create_array("X", shape=shape, chunks=chunks, dtype="f8", **kwargs)
    array[:] = X
    group.create_array("y", shape=(shape[0],), chunks=(chunks[0],), dtype="i8")[:] = 1
    return array, X


# -- memory bounded by the declared shape ---------------------------------------------


def test_a_store_declaring_huge_chunks_is_refused_before_any_read(tmp_path):
    """The reviewer's store: a few hundred bytes of metadata declaring chunks of 5e7 rows
    for 10 rows; reading it allocated the declared chunk (1.36 GB)."""
    group = zarr.open_group(str(tmp_path / "s.zarr"), mode="w")
    group.create_array("X", shape=(10, 2), chunks=(50_000_000, 2), dtype="f8")
    group.create_array("y", shape=(10,), chunks=(50_000_000,), dtype="i8")
    store_bytes = sum(f.stat().st_size for f in (tmp_path / "s.zarr").rglob("*") if f.is_file())
    assert store_bytes < 2000
    result, peak = _peak(lambda: read_zarr(tmp_path / "s.zarr")[0].compute())
    assert isinstance(result, ValueError), result
    assert "s.zarr/X declares chunks of (50000000, 2)" in str(result)
    assert "no larger than the array" in str(result)
    assert peak < 8 * MB


def test_a_missing_chunk_larger_than_the_array_allocates_only_its_rows(tmp_path):
    group = zarr.open_group(str(tmp_path / "s.zarr"), mode="w")
    group.create_array("X", shape=(10, 2), chunks=(1_000_000, 2), dtype="f8", fill_value=3.0)
    chunks = zarr_chunks(zarr.open_array(str(tmp_path / "s.zarr"), path="X"))
    out, peak = _peak(lambda: chunks.read(0))
    np.testing.assert_array_equal(out, np.full((10, 2), 3.0))
    assert peak < MB  # the declared chunk is 16 MB


def test_the_short_last_chunk_holds_only_its_rows(tmp_path):
    array, X = _store(tmp_path / "s.zarr")
    last = zarr_chunks(array).read(2)
    np.testing.assert_array_equal(last, X[200:])
    assert last.nbytes == 50 * 3 * 8
    assert last.base is None or last.base.nbytes == last.nbytes  # no view of a whole chunk


BOMBS = {
    "zlib": (numcodecs.Zlib(1), lambda b: zlib.compress(b, 9)),
    "gzip": (numcodecs.GZip(1), lambda b: gzip.compress(b, 9)),
    "bz2": (numcodecs.BZ2(1), lambda b: bz2.compress(b, 9)),
    "lzma": (numcodecs.LZMA(), lambda b: lzma.compress(b, preset=0)),
}


@pytest.mark.parametrize("codec", sorted(BOMBS))
def test_a_compression_bomb_stops_at_the_chunk_size(tmp_path, codec):
    compressor, bomb = BOMBS[codec]
    array, _ = _store(
        tmp_path / "s.zarr", shape=(100, 2), chunks=(100, 2), fmt=2, compressors=compressor
    )
    chunks = zarr_chunks(array)
    with open(chunks.path(0), "wb") as handle:
        handle.write(bomb(bytes(8 * MB)))  # inflates 5,000-fold past the 1,600-byte chunk
    result, peak = _peak(lambda: chunks.read(0))
    assert isinstance(result, ValueError), result
    assert str(result) == (
        "Zarr chunk s.zarr/X/0.0 decodes to more than a chunk of this array (1600 bytes)"
    )
    assert peak < 2 * MB


@pytest.mark.parametrize("codec", ["zstd", "blosc", "lz4"])
def test_a_frame_declaring_more_than_the_chunk_is_refused_before_decoding(tmp_path, codec):
    compressor = {"zstd": numcodecs.Zstd(), "blosc": numcodecs.Blosc(), "lz4": numcodecs.LZ4()}
    array, _ = _store(
        tmp_path / "s.zarr", shape=(100, 2), chunks=(100, 2), fmt=2, compressors=compressor[codec]
    )
    chunks = zarr_chunks(array)
    with open(chunks.path(0), "wb") as handle:
        handle.write(compressor[codec].encode(bytes(8 * MB)))
    result, peak = _peak(lambda: chunks.read(0))
    assert isinstance(result, ValueError) and "s.zarr/X/0.0" in str(result), result
    assert peak < 2 * MB


@pytest.mark.parametrize("damage", ["garbage", "truncated"])
@pytest.mark.parametrize("codec", ["zstd", "blosc", "zlib", "bz2"])
def test_a_damaged_chunk_is_refused_naming_its_file(tmp_path, codec, damage):
    """zstd and blosc raised RuntimeError without the file's name."""
    compressor = numcodecs.get_codec({"id": codec})
    array, _ = _store(tmp_path / "s.zarr", fmt=2, compressors=compressor)
    chunks = zarr_chunks(array)
    with open(chunks.path(1), "r+b") as handle:
        stored = handle.read()
        handle.seek(0)
        handle.truncate()
        handle.write(bytes(range(256)) * 8 if damage == "garbage" else stored[: len(stored) // 2])
    with pytest.raises(ValueError, match=r"^Zarr chunk s\.zarr/X/1\.0 "):
        read_zarr(tmp_path / "s.zarr")[0].compute()


def test_a_chunk_wider_than_the_array_reads_the_arrays_columns(tmp_path):
    array, X = _store(tmp_path / "s.zarr", chunks=(100, 8))
    got, _ = read_zarr(tmp_path / "s.zarr")
    assert got.shape == X.shape
    np.testing.assert_array_equal(got.compute(), X)


def test_declared_sizes_beyond_the_bounds_are_refused_at_once(tmp_path):
    group = zarr.open_group(str(tmp_path / "s.zarr"), mode="w")
    group.create_array("many", shape=(10 * MAX_CHUNKS, 2), chunks=(1, 2), dtype="f8")
    group.create_array("wide", shape=(10**6, 10**5), chunks=(10**4, 10**5), dtype="f8")
    group.create_array("rows", shape=(10**6, 10**4), chunks=(10**5, 10**3), dtype="f8")
    for name, words in [
        ("many", "chunks; at most"),
        ("wide", "at most 2147483648 bytes are read at once"),
        ("rows", "a chunk of 100000 rows takes 8000000000 bytes"),
    ]:
        error = _within(10, lambda name=name: open_local(tmp_path / "s.zarr", name))
        assert isinstance(error, ValueError) and f"s.zarr/{name}" in str(error), error
        assert words in str(error)


def test_labels_that_are_not_numbers_are_refused_before_reading(tmp_path):
    group = zarr.open_group(str(tmp_path / "s.zarr"), mode="w")
    group.create_array("X", shape=(4, 2), chunks=(4, 2), dtype="f8")[:] = 1.0
    group.create_array("y", shape=(4,), chunks=(4,), dtype=str)[:] = ["a", "b", "a", "b"]
    with pytest.raises(ValueError, match=r"s\.zarr/y must hold numbers"):
        read_zarr(tmp_path / "s.zarr")


# -- files that are not regular, links out of the store --------------------------------


def test_a_fifo_chunk_is_refused_without_opening_it(tmp_path):
    array, _ = _store(tmp_path / "s.zarr")
    chunks = zarr_chunks(array)
    os.remove(chunks.path(1))
    os.mkfifo(chunks.path(1))
    error = _within(10, lambda: chunks.read(1))
    assert isinstance(error, ValueError), error
    assert str(error) == "Zarr chunk s.zarr/X/c/1/0 is not a regular file"


def test_a_fifo_metadata_file_is_refused_before_zarr_opens_it(tmp_path):
    _store(tmp_path / "s.zarr")
    meta = tmp_path / "s.zarr" / "X" / "zarr.json"
    os.remove(meta)
    os.mkfifo(meta)
    error = _within(10, lambda: read_zarr(tmp_path / "s.zarr"))
    assert isinstance(error, ValueError), error
    assert str(error) == "Zarr metadata s.zarr/X/zarr.json is not a regular file"


def test_a_metadata_file_beyond_the_bound_is_refused(tmp_path):
    _store(tmp_path / "s.zarr")
    meta = tmp_path / "s.zarr" / "X" / "zarr.json"
    record = json.loads(meta.read_text())
    record["attributes"] = {"padding": "x" * (17 * MB)}
    meta.write_text(json.dumps(record))
    with pytest.raises(ValueError, match=r"s\.zarr/X/zarr\.json holds \d+ bytes; at most"):
        read_zarr(tmp_path / "s.zarr")


def test_links_out_of_the_store_are_refused_and_links_inside_followed(tmp_path):
    array, X = _store(tmp_path / "s.zarr")
    chunks = zarr_chunks(array)
    outside = tmp_path / "elsewhere"
    os.replace(chunks.path(1), outside)  # a valid chunk, outside the store
    os.symlink(outside, chunks.path(1))
    with pytest.raises(ValueError, match=r"^Zarr chunk s\.zarr/X/c/1/0 links outside s\.zarr$"):
        chunks.read(1)
    os.remove(chunks.path(1))
    os.symlink(chunks.path(0), chunks.path(1))  # inside: read as chunk 0's rows
    np.testing.assert_array_equal(chunks.read(1), X[:100])

    os.rename(tmp_path / "s.zarr" / "X", tmp_path / "Xout")
    os.symlink(tmp_path / "Xout", tmp_path / "s.zarr" / "X")  # the array's directory
    with pytest.raises(ValueError, match=r"^Zarr array s\.zarr/X resolves outside the store$"):
        read_zarr(tmp_path / "s.zarr")
    with pytest.raises(ValueError, match="resolves outside the store"):
        read_zarr(tmp_path / "s.zarr", x="../Xout")


# -- Parquet ---------------------------------------------------------------------------


def _parquet_dir(tmp_path, later=None):
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    for k in range(3):
        table = pa.table({"a": np.arange(4.0) + k, "b": np.arange(4.0), "label": [1, -1, 1, -1]})
        if k == 2 and later is not None:
            table = later(pa, table)
        pq.write_table(table, tmp_path / f"part{k}.parquet")
    return tmp_path


def _replace(column, make):
    return lambda pa, table: table.set_column(
        table.schema.get_field_index(column), column, make(pa, table.num_rows)
    )


LATER_FILES = {
    "timestamp": _replace("b", lambda pa, n: pa.array(np.arange(n).astype("datetime64[s]"))),
    "decimal": _replace("b", lambda pa, n: pa.array([1, 2, 3, 4], pa.decimal128(5, 2))),
    "string": _replace("b", lambda pa, n: pa.array(["1.5"] * n)),
    "int32": _replace("b", lambda pa, n: pa.array(np.arange(n, dtype=np.int32))),
}


@pytest.mark.parametrize("kind", sorted(LATER_FILES))
def test_a_later_parquet_files_column_of_another_type_is_refused(tmp_path, kind):
    """Only the first file's schema was checked: later columns were silently coerced."""
    root = _parquet_dir(tmp_path, LATER_FILES[kind])
    with pytest.raises(ValueError, match=r"part2\.parquet: column 'b' is .*, but double in"):
        read_parquet(root, "label")
    with pytest.raises(ValueError, match=r"part2\.parquet: column 'b'"):
        read_table(root, "label")


def test_a_later_parquet_file_with_other_columns_is_refused(tmp_path):
    root = _parquet_dir(tmp_path, lambda pa, table: table.drop_columns(["b"]))
    with pytest.raises(ValueError, match=r"part2\.parquet: its columns differ .*missing \['b'\]"):
        read_parquet(root, "label")


def test_parquet_files_that_are_not_regular_or_leave_the_directory_are_refused(tmp_path):
    (tmp_path / "d").mkdir()
    root = _parquet_dir(tmp_path / "d")
    outside = tmp_path / "outside.parquet"
    os.replace(root / "part1.parquet", outside)
    os.symlink(outside, root / "part1.parquet")
    with pytest.raises(ValueError, match=r"d/part1\.parquet links outside d$"):
        read_parquet(root, "label")
    os.remove(root / "part1.parquet")
    os.mkfifo(root / "part1.parquet")
    error = _within(10, lambda: read_parquet(root, "label"))
    assert str(error) == "d/part1.parquet is not a regular file"
    os.remove(root / "part1.parquet")
    (root / "part1.parquet").write_bytes(b"PAR1 not a footer")
    with pytest.raises(ValueError, match=r"d/part1\.parquet is not a readable Parquet file"):
        read_parquet(root, "label")


def test_parquet_nulls_are_refused_naming_the_file_and_column(tmp_path):
    root = _parquet_dir(
        tmp_path, _replace("a", lambda pa, n: pa.array([1.0, None, 2.0, 3.0], pa.float64()))
    )
    X, _ = read_parquet(root, "label")
    with pytest.raises(ValueError, match=r"part2\.parquet: column 'a' has missing values"):
        X.compute()


def test_a_csv_header_naming_a_column_twice_is_refused_by_read_table(tmp_path):
    (tmp_path / "t.csv").write_text("a,a,label\n1,2,1\n3,4,-1\n")
    with pytest.raises(ValueError, match=r"t\.csv: the header names \['a'\] more than once"):
        read_table(tmp_path / "t.csv", "label")
