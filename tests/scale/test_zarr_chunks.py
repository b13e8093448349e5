"""The direct Zarr chunk reader gives exactly what zarr reads, or refuses the layout."""

import numpy as np
import pytest

pytestmark = pytest.mark.dask

da = pytest.importorskip("dask.array")
dask = pytest.importorskip("dask")
zarr = pytest.importorskip("zarr")
numcodecs = pytest.importorskip("numcodecs")

from dpconvex.scale.data import read_zarr  # noqa: E402
from dpconvex.scale.zarr_chunks import zarr_chunks  # noqa: E402


def _rows(dtype=np.float64, n=1003, d=7, seed=0):
    rng = np.random.default_rng(seed)
    return (rng.normal(size=(n, d)) * 10).astype(dtype)


def _store(path, X, chunk_rows=100, y=True, **kwargs):
    """X (and labels) in a Zarr group at ``path``, written by zarr with ``kwargs``."""
    group = zarr.open_group(str(path), mode="w", zarr_format=kwargs.pop("zarr_format", 3))
    array = group.create_array(
        "X", shape=X.shape, chunks=(chunk_rows, X.shape[1]), dtype=X.dtype, **kwargs
    )
    array[:] = X
    if y:
        labels = group.create_array("y", shape=(X.shape[0],), chunks=(chunk_rows,), dtype="i8")
        labels[:] = np.where(X[:, 0] > 0, 1, -1)
    return array


def _direct(path):
    """read_zarr's X, asserting that the direct reader (not zarr's) built it, and its
    labels too (equal to what zarr reads)."""
    X, y = read_zarr(path)
    assert X.name.startswith("_read_block-"), X.name
    assert y.name.startswith("_read_block-"), y.name
    assert dict(y.__dask_graph__()).keys() == {(y.name, i) for i in range(len(y.chunks[0]))}
    np.testing.assert_array_equal(y.compute(), zarr.open_array(str(path), path="y")[:])
    return X


V3_CODECS = {
    "default (zstd)": {},
    "no compressor": {"compressors": None},
    "blosc": {"compressors": zarr.codecs.BloscCodec(cname="lz4", clevel=5, shuffle="shuffle")},
    "gzip": {"compressors": zarr.codecs.GzipCodec(level=1)},
}


@pytest.mark.parametrize("codec", sorted(V3_CODECS))
@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.int32])
def test_v3_chunks_equal_zarrs_reading(tmp_path, codec, dtype):
    X = _rows(dtype)
    array = _store(tmp_path / "s.zarr", X, **V3_CODECS[codec])
    got = _direct(tmp_path / "s.zarr")
    assert got.dtype == X.dtype and got.chunks == ((100,) * 10 + (3,), (7,))
    result = got.compute()
    np.testing.assert_array_equal(result, X)
    np.testing.assert_array_equal(result, array[:])


@pytest.mark.parametrize(
    "kwargs",
    [
        {"compressors": numcodecs.Zstd(level=1)},
        {"compressors": numcodecs.Blosc()},
        {"compressors": None},
        {"compressors": numcodecs.Zlib(level=1), "order": "F"},
        {"chunk_key_encoding": {"name": "v2", "separator": "/"}},
    ],
    ids=["zstd", "blosc", "none", "zlib-F", "slash-keys"],
)
def test_v2_chunks_equal_zarrs_reading(tmp_path, kwargs):
    X = _rows()
    _store(tmp_path / "s.zarr", X, zarr_format=2, **kwargs)
    np.testing.assert_array_equal(_direct(tmp_path / "s.zarr").compute(), X)


def test_missing_chunks_hold_the_fill_value(tmp_path):
    group = zarr.open_group(str(tmp_path / "s.zarr"), mode="w")
    array = group.create_array("X", shape=(250, 3), chunks=(100, 3), dtype="f8", fill_value=2.5)
    array[100:200] = 1.0  # chunks 0 and 2 are never written
    group.create_array("y", shape=(250,), chunks=(100,), dtype="i8")[:] = 1
    got = _direct(tmp_path / "s.zarr").compute()
    np.testing.assert_array_equal(got, array[:])
    assert got[0, 0] == 2.5 and got[150, 0] == 1.0


C = zarr.codecs
MORE_LAYOUTS = {
    "columns split": {"chunks": (100, 3)},
    "chunks wider than the array": {"chunks": (100, 9)},
    "chunks larger than the array": {"chunks": (2000, 7)},
    "big-endian": {"serializer": C.BytesCodec(endian="big")},
    "transposed": {"filters": [C.TransposeCodec(order=(1, 0))]},
    "transposed, split": {"chunks": (64, 3), "filters": [C.TransposeCodec(order=(1, 0))]},
    "crc32c": {"compressors": [C.ZstdCodec(), C.Crc32cCodec()]},
    "crc32c, no compressor": {"compressors": [C.Crc32cCodec()]},
    "sharded": {"chunks": (50, 7), "shards": (200, 7)},
    "sharded, split": {"chunks": (50, 3), "shards": (100, 6)},
    "sharded, index first": {
        "chunks": (200, 7),
        "serializer": C.ShardingCodec(
            chunk_shape=(50, 7), codecs=[C.BytesCodec(), C.GzipCodec()], index_location="start"
        ),
        "compressors": None,  # a compressed shard decodes to a size no metadata declares
    },
    "numcodecs.zlib": {"compressors": [C.numcodecs.Zlib(level=1)]},
    "numcodecs.bz2": {"compressors": [C.numcodecs.BZ2(level=1)]},
    "numcodecs.lzma": {"compressors": [C.numcodecs.LZMA(preset=1)]},
    "numcodecs.lz4": {"compressors": [C.numcodecs.LZ4()]},
    "v2 bz2": {"zarr_format": 2, "compressors": numcodecs.BZ2(1)},
    "v2 lzma": {"zarr_format": 2, "compressors": numcodecs.LZMA(preset=1)},
    "v2 lz4": {"zarr_format": 2, "compressors": numcodecs.LZ4()},
    "v2 gzip, split, F": {
        "zarr_format": 2,
        "chunks": (100, 3),
        "compressors": numcodecs.GZip(1),
        "order": "F",
    },
    "v2 big-endian int16, split": {"zarr_format": 2, "chunks": (100, 3), "dtype": ">i2"},
}


@pytest.mark.parametrize("layout", sorted(MORE_LAYOUTS))
def test_more_layouts_equal_zarrs_reading(tmp_path, layout):
    """Layouts zarr's own reader once read for dpconvex, read directly now and partly
    written (chunks never written hold the fill value)."""
    kwargs = dict(MORE_LAYOUTS[layout])
    fmt, dtype = kwargs.pop("zarr_format", 3), kwargs.pop("dtype", "f8")
    chunks = kwargs.pop("chunks", (100, 7))
    X = _rows().astype(dtype)
    group = zarr.open_group(str(tmp_path / "s.zarr"), mode="w", zarr_format=fmt)
    array = group.create_array("X", shape=X.shape, chunks=chunks, dtype=dtype, **kwargs)
    array[:100] = X[:100]
    array[300:] = X[300:]
    rows = kwargs.get("shards", chunks)[0]
    group.create_array("y", shape=(X.shape[0],), chunks=(rows,), dtype=dtype)[:] = X[:, 0]
    got = _direct(tmp_path / "s.zarr")
    assert got.shape == X.shape and got.dtype == np.dtype(dtype).newbyteorder("=")
    np.testing.assert_array_equal(got.compute(), array[:])


def _v2_filters(group):
    return group.create_array(
        "X", shape=(30, 2), chunks=(10, 2), dtype="f8", filters=[numcodecs.Delta(dtype="f8")]
    )


def _v3_shuffle(group):
    shuffle = C.numcodecs.Shuffle(elementsize=8)
    return group.create_array("X", shape=(30, 2), chunks=(10, 2), dtype="f8", compressors=[shuffle])


def _v3_delta(group):
    delta = C.numcodecs.Delta(dtype="f8")
    return group.create_array("X", shape=(30, 2), chunks=(10, 2), dtype="f8", filters=[delta])


@pytest.mark.parametrize(
    ("make", "fmt"), [(_v2_filters, 2), (_v3_shuffle, 3), (_v3_delta, 3)], ids=["v2", "v3", "v3 aa"]
)
def test_other_layouts_are_refused_naming_the_array(tmp_path, make, fmt):
    array = make(zarr.open_group(str(tmp_path / "s.zarr"), mode="w", zarr_format=fmt))
    array[:] = 1.0
    with pytest.raises(ValueError, match=r"s\.zarr/X uses .*which dpconvex does not read"):
        zarr_chunks(array)
    with pytest.raises(ValueError, match=r"s\.zarr/X uses"):
        read_zarr(tmp_path / "s.zarr", y=None)


def test_a_chunk_of_the_wrong_length_is_refused(tmp_path):
    X = _rows()
    array = _store(tmp_path / "s.zarr", X, compressors=None)
    chunks = zarr_chunks(array)
    with open(chunks.path(1), "r+b") as handle:
        handle.truncate(100)
    with pytest.raises(ValueError, match="holds 100 bytes; a chunk of this array has 5600"):
        _direct(tmp_path / "s.zarr").compute()

    array = _store(tmp_path / "z.zarr", X)  # zstd
    chunks = zarr_chunks(array)
    # a valid zstd frame of half a chunk: decoding it would leave the chunk's tail unset
    with open(chunks.path(2), "wb") as handle:
        handle.write(numcodecs.Zstd().encode(X[:50].tobytes()))
    with pytest.raises(ValueError, match="decodes to 2800 bytes; a chunk of this array has 5600"):
        _direct(tmp_path / "z.zarr").compute()
    with open(chunks.path(2), "wb") as handle:  # and one of two chunks
        handle.write(numcodecs.Zstd().encode(X[:200].tobytes()))
    with pytest.raises(ValueError, match=r"does not decode to a chunk of this array \(5600"):
        _direct(tmp_path / "z.zarr").compute()


def test_chunks_smaller_than_the_sentinel(tmp_path):
    group = zarr.open_group(str(tmp_path / "s.zarr"), mode="w")
    group.create_array("X", shape=(5, 1), chunks=(1, 1), dtype="i1")[:] = np.arange(5)[:, None]
    group.create_array("y", shape=(5,), chunks=(1,), dtype="i2")[:] = [1, -1, 1, -1, 1]
    np.testing.assert_array_equal(_direct(tmp_path / "s.zarr").compute()[:, 0], np.arange(5))


def test_a_chunk_ending_in_the_sentinel_is_still_read(tmp_path):
    from dpconvex.scale.zarr_codecs import _SENTINEL

    X = _rows()
    X[99, -1] = _SENTINEL.view(np.float64)[0]  # chunk 0's last element is the sentinel itself
    _store(tmp_path / "s.zarr", X)
    got = _direct(tmp_path / "s.zarr").compute()
    np.testing.assert_array_equal(got.view(np.uint64), X.view(np.uint64))


def test_fits_read_through_either_reader_agree(tmp_path):
    from dpconvex import DPLogisticRegression

    X = _rows(n=3000, d=5)
    _store(tmp_path / "s.zarr", X, chunk_rows=700)
    Xd, yd = read_zarr(tmp_path / "s.zarr")
    Xz = da.from_zarr(str(tmp_path / "s.zarr"), component="X")
    assert Xd.name.startswith("_read_block-") and not Xz.name.startswith("_read_block-")
    fits = [
        DPLogisticRegression(epsilon=1.0, classes=[-1, 1], random_state=0).fit(X_, yd)
        for X_ in (Xd, Xz)
    ]
    np.testing.assert_array_equal(fits[0].coef_, fits[1].coef_)
