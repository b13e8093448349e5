"""Out-of-core AMP on dask, reading Zarr and Parquet files: fit time, passes, peak memory.

Run:  python benchmarks/bench_dask.py [--rows 1e6 1e7 5e7] [--formats zarr parquet]
                                      [--chunk-rows 125000] [--data-dir /tmp/dpconvex-bench-data]
                                      [--float32] [--keep] [--solver auto] [--repeats 1]
                                      [--markdown F]

Data: the logistic model of ``dpconvex.scale.data.synthetic_glm`` (rows N(0, I_d), d = 100;
labels +-1 with P(y = 1) = sigmoid(3 x.w/||x||)), written ONCE per size and format under
--data-dir, chunked by rows (--chunk-rows rows per chunk / file): a Zarr group with arrays
X (n x d) and y (``dask.array.to_zarr``, zarr's default codec), and a Parquet directory
with columns x0..x{d-1}, y, one file per chunk (``dask.dataframe.to_parquet``, pyarrow,
its default compression). Features are stored as float64, or float32 with --float32 (the
fit computes in float64 either way). A json next to each data set records how it was
made; a later run with the same settings reuses it. Each size/format is written, fitted,
then deleted before the next (5e7 x 100 float64 is 40 GB per format) unless --keep.

On a dask.distributed LocalCluster of 2 workers x 1 thread (--worker-memory each, default
3GiB), for each size and format:

* fit: wall time of ``DPLogisticRegression(epsilon=1.0, classes=[-1, 1], random_state=0)
  .fit(X, y)`` (default method AMP, default solver unless --solver; calibration, the label
  check and the certificate included), --repeats times after an untimed fit on the first
  2,000 rows (the workers import the kernels), each once the scheduler holds no task (so
  that no fit finds the rows a previous fit kept in memory), its passes over the data
  (``n_passes_``) and seconds per pass (median fit time / passes);
* plain pass: the wall time of one plain dask reduction over the same files,
  ``(X.T @ y).compute()`` (a d-vector, as each pass of the fit computes), measured just
  before the first fit and just after each, once the fit's rows are released (after an
  untimed one-chunk warm-up), and the
  ratios (seconds per fit pass) / (the median plain pass) and / (the fastest plain pass):
  a plain pass over page-cached files varies by 20-50 % from one run to the next here;
* for Zarr, the same plain pass through zarr's own reader (``dask.array.from_zarr``) at
  the same moments: ``read_zarr`` reads the chunk files directly
  (:mod:`dpconvex.scale.zarr_chunks`), so its plain pass is not zarr's;
* peak RSS during the fits: the largest sum of resident set sizes of this process and
  all its children (the dask nannies and workers), sampled every 0.2 s;
* for sizes up to --in-memory-rows (default 1e6): the same rows loaded with
  ``.compute()`` and fitted in memory with the same seed (so the same noise draws),
  once after each out-of-core fit and its plain passes (the rows are loaded for it and
  dropped after it, outside the out-of-core fit's memory sampling), after an untimed one
  on 2,000 rows as out of core: its times, the ratio of the medians out-of-core /
  in-memory and the median of the paired ratios (each out-of-core fit over the
  in-memory fit just after it: the machine's speed drifts over minutes, by 30 % between
  two runs of the same in-memory fit here), the largest |coefficient difference| (coef_
  and intercept_) and whether ``dp_event_`` is identical. Both certified points lie
  within tau/lam of the same minimizer, so they may differ by at most 2 tau/lam (tau and
  lam from ``mechanism_params_``).

BLAS threads are pinned to 1 (OMP/OpenBLAS/MKL, inherited by the workers) and printed
with the table.
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import importlib.metadata  # noqa: E402
import json  # noqa: E402
import shutil  # noqa: E402
import sys  # noqa: E402
import threading  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import dask  # noqa: E402
import numpy as np  # noqa: E402
import psutil  # noqa: E402

from dpconvex import DPLogisticRegression  # noqa: E402
from dpconvex.scale.data import local_client, read_parquet, read_zarr, synthetic_glm  # noqa: E402
from dpconvex.scale.fit import keeps_rows  # noqa: E402

D = 100
SEED = 0
FORMATS = ("zarr", "parquet")
GENERATOR = "dpconvex.scale.data.synthetic_glm"


class PeakMemory:
    """Samples the RSS of this process tree in a thread; ``peak`` in bytes."""

    def __init__(self, interval: float = 0.2):
        self.interval, self.peak, self._stop = interval, 0, threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self):
        me = psutil.Process()
        while not self._stop.is_set():
            total = 0
            for proc in [me, *me.children(recursive=True)]:
                try:
                    total += proc.memory_info().rss
                except psutil.Error:
                    pass
            self.peak = max(self.peak, total)
            self._stop.wait(self.interval)

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()


# -- the data on disk ---------------------------------------------------------------


def data_path(data_dir: Path, n: int, chunk_rows: int, dtype: str, fmt: str) -> Path:
    return data_dir / f"glm-n{n}-d{D}-chunk{chunk_rows}-{dtype}-seed{SEED}.{fmt}"


def meta_path(path: Path) -> Path:
    """The json next to a data set (outside it, so no reader mistakes it for data)."""
    return path.with_name(path.name + ".json")


def bytes_on_disk(path: Path) -> int:
    """Allocated bytes of every file under ``path`` (what the data takes from the disk)."""
    total = 0
    for root, _dirs, files in os.walk(path):
        for name in files:
            total += os.stat(os.path.join(root, name)).st_blocks * 512
    return total


def wanted_meta(n: int, chunk_rows: int, dtype: str, fmt: str) -> dict:
    return {
        "generator": GENERATOR,
        "n": n,
        "d": D,
        "seed": SEED,
        "chunk_rows": chunk_rows,
        "dtype": dtype,
        "format": fmt,
    }


def remove(path: Path) -> None:
    shutil.rmtree(path, ignore_errors=True)
    meta_path(path).unlink(missing_ok=True)


def write_zarr(path: Path, X, y) -> None:
    import dask
    import dask.array as da

    # one graph for both arrays: each generated chunk of X is written and labels it once
    dask.compute(
        da.to_zarr(X, str(path), component="X", compute=False),
        da.to_zarr(y, str(path), component="y", compute=False),
    )


def write_parquet(path: Path, X, y) -> None:
    import dask
    import dask.dataframe as dd
    import pandas as pd

    columns = [f"x{j}" for j in range(D)]

    def frame(xb, yb):
        out = pd.DataFrame(xb, columns=columns)
        out["y"] = yb
        return out

    parts = [
        dask.delayed(frame)(xb, yb)
        for xb, yb in zip(X.to_delayed().ravel(), y.to_delayed().ravel(), strict=True)
    ]
    meta = pd.DataFrame({c: np.zeros(0, dtype=X.dtype) for c in columns})
    meta["y"] = np.zeros(0, dtype=y.dtype)
    dd.from_delayed(parts, meta=meta).to_parquet(str(path), engine="pyarrow", write_index=False)


def ensure_data(data_dir: Path, n: int, chunk_rows: int, dtype: str, fmt: str):
    """Write the data set unless a matching one exists; (path, bytes, write seconds or None)."""
    path = data_path(data_dir, n, chunk_rows, dtype, fmt)
    want = wanted_meta(n, chunk_rows, dtype, fmt)
    meta_file = meta_path(path)
    if meta_file.exists() and path.exists():
        have = json.loads(meta_file.read_text())
        if {k: have.get(k) for k in want} == want:
            return path, bytes_on_disk(path), None
    remove(path)  # absent, unfinished or made with other settings
    data_dir.mkdir(parents=True, exist_ok=True)
    # Parquet of random floats takes about 1.25x the raw bytes (pyarrow's dictionary pages)
    need = n * (D * np.dtype(dtype).itemsize + 8) * (1.0 if fmt == "zarr" else 1.3)
    free = shutil.disk_usage(data_dir).free
    if free < 1.05 * need:
        raise SystemExit(
            f"{data_dir}: {free / 1e9:.1f} GB free, the {fmt} data of {n} rows need about "
            f"{need / 1e9:.1f} GB; free some space or pass a smaller --rows"
        )
    X, y = synthetic_glm(n, D, chunk_rows=chunk_rows, seed=SEED)
    start = time.perf_counter()
    (write_zarr if fmt == "zarr" else write_parquet)(path, X.astype(dtype), y)
    seconds = time.perf_counter() - start
    size = bytes_on_disk(path)
    versions = {m: importlib.metadata.version(m) for m in ("dask", "zarr", "pyarrow", "numpy")}
    written = {**want, "bytes": size, "write_seconds": seconds, "versions": versions}
    meta_file.write_text(json.dumps(written, indent=1) + "\n")  # last: marks it complete
    return path, size, seconds


def open_data(path: Path, fmt: str):
    """(X, y) lazy dask arrays over the files, X chunked by rows, y chunked like X."""
    if fmt == "zarr":
        return read_zarr(path, x="X", y="y")
    # one chunk per file; X reads the feature columns, y only the label column
    X, y = read_parquet(path, target="y")
    if X.shape[1] != D:
        raise RuntimeError(f"{path}: expected {D} feature columns, got {X.shape[1]}")
    return X, y


# -- the measurements ---------------------------------------------------------------


def load_readers() -> None:
    for module in (
        "zarr",
        "numcodecs",
        "pyarrow.parquet",
        "dpconvex.data.dask_rows",
        "dpconvex.scale.zarr_chunks",
    ):
        importlib.import_module(module)


def zarrs_reader(path: Path):
    """X through zarr's own reader (``dask.array.from_zarr``), not read_zarr's direct one."""
    import dask.array as da

    return da.from_zarr(str(path), component="X")


def plain_pass(X, y) -> float:
    """Seconds of one plain dask reduction over the files: X^T y, a d-vector."""
    settle()  # no chunk a fit kept in memory is still there to be reused
    start = time.perf_counter()
    (X.T @ y.astype(np.float64)).compute()
    return time.perf_counter() - start


def settle() -> None:
    """Wait until the scheduler holds no task (the last fit's kept rows are released)."""
    from distributed import default_client

    client = default_client()
    while client.run_on_scheduler(lambda dask_scheduler: len(dask_scheduler.tasks)):
        time.sleep(0.05)


def new_model(solver: str) -> DPLogisticRegression:
    return DPLogisticRegression(epsilon=1.0, classes=[-1, 1], solver=solver, random_state=0)


def measure(path: Path, fmt: str, n: int, args) -> dict:
    X, y = open_data(path, fmt)
    (X[:1].T @ y[:1].astype(np.float64)).compute()  # warm-up: opens the store, reads 1 chunk
    out = {"chunks": len(X.chunks[0]), "plains": [plain_pass(X, y)], "fits": []}
    # Zarr: the same plain pass through zarr's own reader, beside read_zarr's direct one
    zarr_reader = zarrs_reader(path) if fmt == "zarr" else None
    out["plains_zarr"] = [] if zarr_reader is None else [plain_pass(zarr_reader, y)]
    out["cached"] = args.cache == "auto" and keeps_rows(X)
    new_model(args.solver).fit(X[:2000], y[:2000])  # untimed: the workers import the kernels
    in_memory = n <= args.in_memory_rows
    if in_memory:  # untimed warm-up, as out of core
        new_model(args.solver).fit(*(a[:2000].compute(scheduler="sync") for a in (X, y)))
    peaks, memory_fits = [], []
    for _ in range(args.repeats):  # fits and plain passes interleaved
        settle()  # the last fit's rows are gone from the workers: this fit reads its own
        model = new_model(args.solver)
        with PeakMemory() as mem:
            start = time.perf_counter()
            model.fit(X, y)
            out["fits"].append(time.perf_counter() - start)
        peaks.append(mem.peak)
        out["plains"].append(plain_pass(X, y))
        if zarr_reader is not None:
            out["plains_zarr"].append(plain_pass(zarr_reader, y))
        if in_memory:  # paired with this fit (the machine's speed drifts over minutes)
            memory, seconds = fit_in_memory(X, y, args.solver)
            memory_fits.append(seconds)
    out["fit"] = float(np.median(out["fits"]))
    out["plain"] = float(np.median(out["plains"]))
    out.update(peak=max(peaks), passes=model.n_passes_, n_iter=int(model.n_iter_[0]))
    params = model.mechanism_params_
    out["bound"] = 2 * params["tau"] / params["lam"]
    out["tau"], out["lam"] = params["tau"], params["lam"]
    if in_memory:
        out["memory_fits"] = memory_fits
        out["memory"] = float(np.median(memory_fits))
        out["paired"] = float(np.median(np.divide(out["fits"], memory_fits)))
        out["diff"] = float(
            max(
                np.abs(memory.coef_ - model.coef_).max(),
                np.abs(memory.intercept_ - model.intercept_).max(),
            )
        )
        out["same_event"] = memory.dp_event_ == model.dp_event_
    return out


def fit_in_memory(X, y, solver: str):
    """(model, seconds) of the same fit on the rows loaded into this process (read
    synchronously, not through the workers, and dropped afterwards: the next
    out-of-core fit's peak memory does not count them)."""
    import gc

    Xm = X.compute(scheduler="synchronous")
    ym = y.compute(scheduler="synchronous")
    model = new_model(solver)
    start = time.perf_counter()
    model.fit(Xm, ym)
    seconds = time.perf_counter() - start
    del Xm, ym
    gc.collect()
    return model, seconds


def table_row(n: int, fmt: str, size: int, write: float | None, m: dict) -> str:
    per_pass = m["fit"] / m["passes"]
    if "memory" in m:
        memory = (
            f"{', '.join(f'{t:.2f}' for t in m['memory_fits'])} | "
            f"{m['fit'] / m['memory']:.2f} | {m['paired']:.2f} | "
            f"{m['diff']:.1e} (<= {m['bound']:.1e}) | {'yes' if m['same_event'] else 'NO'}"
        )
    else:
        memory = "- | - | - | - | -"
    written = "reused" if write is None else f"{write:.1f}"
    fits = ", ".join(f"{t:.1f}" for t in m["fits"])
    plains = ", ".join(f"{t:.2f}" for t in m["plains"])
    zarrs = ", ".join(f"{t:.2f}" for t in m["plains_zarr"]) or "-"
    return (
        f"| {n:.0e} | {fmt} | {'yes' if m['cached'] else 'no'} | {m['chunks']} | "
        f"{size / 1e9:.2f} | {written} | {fits} | "
        f"{m['passes']} | {per_pass:.2f} | {plains} | {zarrs} | "
        f"{per_pass / m['plain']:.2f} | {per_pass / min(m['plains']):.2f} | "
        f"{m['fit'] / (n / 1e6):.1f} | {m['peak'] / 2**30:.2f} | {memory} |"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=float, nargs="+", default=[1e6, 1e7, 5e7])
    parser.add_argument("--formats", nargs="+", choices=FORMATS, default=list(FORMATS))
    parser.add_argument("--chunk-rows", type=int, default=125_000, help="rows per chunk/file")
    parser.add_argument("--data-dir", type=Path, default=Path("/tmp/dpconvex-bench-data"))
    parser.add_argument("--float32", action="store_true", help="store the features as float32")
    parser.add_argument("--keep", action="store_true", help="keep the data sets on disk")
    parser.add_argument("--solver", default="auto", help="DPLogisticRegression's solver")
    parser.add_argument(
        "--in-memory-rows",
        type=float,
        default=1e6,
        help="also fit in memory (and compare) at sizes up to this many rows",
    )
    # a 250,000-row Parquet chunk passes through arrow, pandas and numpy copies (about 1 GiB
    # per task at d = 100): under 2 GiB the workers pause; Zarr needs less
    parser.add_argument("--worker-memory", default="3GiB", help="memory limit of each worker")
    parser.add_argument(
        "--cache",
        choices=("auto", "never"),
        default="auto",
        help="dask config dpconvex.cache-rows: keep the rows in the workers' memory when they "
        "fit (auto) or read the files on every pass (never)",
    )
    parser.add_argument(
        "--repeats",
        type=int,
        default=1,
        help="fits per size and format, each followed by a plain pass (medians reported)",
    )
    parser.add_argument("--markdown", help="also write the table as markdown")
    args = parser.parse_args()
    dtype = "float32" if args.float32 else "float64"
    lines = [
        f"AMP on dask from files: DPLogisticRegression(epsilon=1, classes=[-1, 1], "
        f"solver={args.solver!r}, random_state=0), delta=1e-5, d={D}; "
        f"{args.chunk_rows} rows per chunk, features stored as {dtype}; LocalCluster of "
        f"2 workers x 1 thread ({args.worker_memory} each); "
        f"OMP_NUM_THREADS={os.environ['OMP_NUM_THREADS']}",
        "",
        "| rows | format | rows kept in memory | chunks | on disk GB | write s | fit s | passes "
        "| s per pass (median fit) "
        "| plain pass s (before the first fit, after each) "
        "| plain pass s, zarr's own reader | per pass / median plain "
        "| per pass / fastest plain | fit s per 1e6 rows | peak RSS GiB "
        "| in-memory fits s | out-of-core / in-memory (medians) | median of paired ratios "
        "| max abs coef diff (<= 2 tau/lam) "
        "| same event |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    print("\n".join(lines), flush=True)
    dask.config.set({"dpconvex.cache-rows": args.cache == "auto" and "auto"})
    with local_client(workers=2, memory_limit=args.worker_memory) as client:
        # load the readers on the workers now, so the first plain pass does not pay for it
        client.run(load_readers)
        for rows in args.rows:
            n = int(rows)
            for fmt in args.formats:
                path, size, write = ensure_data(args.data_dir, n, args.chunk_rows, dtype, fmt)
                how = "reused" if write is None else f"written in {write:.1f} s"
                print(f"  {path}: {size:,} bytes on disk ({how})", file=sys.stderr, flush=True)
                try:
                    m = measure(path, fmt, n, args)
                finally:
                    if not args.keep:
                        remove(path)
                row = table_row(n, fmt, size, write, m)
                lines.append(row)
                print(row, flush=True)
    notes = [
        "",
        "s per pass = median fit s / passes (calibration and the label check included); "
        "plain pass = one (X.T @ y).compute() over the same files, before the first fit and "
        "after each; per pass is divided by their median and by the fastest of them; on disk "
        "= allocated bytes of the data set.",
    ]
    print("\n".join(notes))
    if args.markdown:
        with open(args.markdown, "w") as handle:
            handle.write("\n".join(lines + notes) + "\n")


if __name__ == "__main__":
    main()
