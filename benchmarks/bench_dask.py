"""Out-of-core AMP on dask: wall time, peak memory and passes for 1e6 ... 5e7 rows x 100 features.

Run:  python benchmarks/bench_dask.py [--rows 1e6 1e7 5e7] [--chunk-rows 100000] [--markdown F]

Synthetic logistic data (``dpconvex.scale.data.synthetic_glm``) is generated chunk by
chunk on a LocalCluster of 2 single-threaded workers and never materialized whole;
``DPLogisticRegression(method="amp", solver="lbfgs")`` fits it at eps = 1. Peak memory
is the largest sum of resident set sizes of this process and all its children (the
dask workers), sampled every 0.2 s. At 1e6 rows the same fit is also run in memory
with the same seed (the same noise draws); both certified points lie within tau/lam
of the same minimizer, so their coefficients may differ by at most 2 tau/lam.
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import threading  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402
import psutil  # noqa: E402

from dpconvex import DPLogisticRegression  # noqa: E402
from dpconvex.scale.data import local_client, synthetic_glm  # noqa: E402

D = 100


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


def fit_dask(n: int, chunk_rows: int):
    X, y = synthetic_glm(n, D, chunk_rows=chunk_rows, seed=0)
    model = DPLogisticRegression(epsilon=1.0, solver="lbfgs", random_state=0)
    with PeakMemory() as mem:
        start = time.perf_counter()
        model.fit(X, y)
        seconds = time.perf_counter() - start
    return model, seconds, mem.peak


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=float, nargs="+", default=[1e6, 1e7, 5e7])
    parser.add_argument("--chunk-rows", type=int, default=100_000)
    parser.add_argument("--markdown", help="also write the table as markdown")
    args = parser.parse_args()
    lines = [
        f"AMP on dask (eps=1, delta=1e-5, lbfgs, tau=0.01), d={D}, chunks of {args.chunk_rows} "
        "rows, LocalCluster 2 workers x 1 thread | OMP_NUM_THREADS="
        + os.environ["OMP_NUM_THREADS"],
        "",
        "| rows | wall s | s per 1e6 rows | peak RSS GiB | passes | L-BFGS iters | ||grad|| cert |",
        "|---|---|---|---|---|---|---|",
    ]
    print("\n".join(lines))
    with local_client(workers=2, memory_limit="1.5GiB"):
        for rows in args.rows:
            n = int(rows)
            model, seconds, peak = fit_dask(n, args.chunk_rows)
            row = (
                f"| {n:.0e} | {seconds:.1f} | {seconds / (n / 1e6):.2f} | {peak / 2**30:.2f} |"
                f" {model.n_passes_} | {int(model.n_iter_[0])} | "
                f"<= 0.01 |"
            )
            lines.append(row)
            print(row, flush=True)
            if n == 1_000_000:
                X, y = synthetic_glm(n, D, chunk_rows=args.chunk_rows, seed=0)
                # materialize in this process (800 MB), not on a worker
                Xm = X.compute(scheduler="synchronous")
                ym = y.compute(scheduler="synchronous")
                memory = DPLogisticRegression(epsilon=1.0, solver="lbfgs", random_state=0)
                start = time.perf_counter()
                memory.fit(Xm, ym)
                mem_seconds = time.perf_counter() - start
                diff = float(np.abs(memory.coef_ - model.coef_).max())
                bound = 2 * 0.01 / model.mechanism_params_["lam"]
                note = (
                    f"in-memory fit of the same 1e6 rows, same seed: {mem_seconds:.1f} s; "
                    f"max |coef difference| = {diff:.2e} (allowed 2 tau/lam = {bound:.2e}); "
                    f"same event: {memory.dp_event_ == model.dp_event_}"
                )
                lines.append("")
                lines.append(note)
                lines.append("")
                print(note, flush=True)
    if args.markdown:
        with open(args.markdown, "w") as handle:
            handle.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
