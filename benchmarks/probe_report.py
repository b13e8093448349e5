"""Hostile and careless inputs (benchmarks/probes/*) against dpconvex: a table of outcomes.

Run:  python benchmarks/probe_report.py [--only AREA] [--markdown F] [--list]

Each probe runs in a forked child (a fresh scratch directory, a time limit, its peak
resident memory read back with wait4) and is classified (see benchmarks/probes):
*clear error* (a refusal of a known class with a one-line message), *release with
guarantee* (a result the probe checked is covered) or *other* (anything else: another
exception, a traceback, a time-out, memory above the probe's bound, a violation).
The target is 0 in the last column.
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import importlib  # noqa: E402
import json  # noqa: E402
import signal  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
import traceback  # noqa: E402
import warnings  # noqa: E402
from collections import defaultdict  # noqa: E402
from pathlib import Path  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import probes  # noqa: E402
from probes import CLEAR, MAX_MESSAGE, Probe  # noqa: E402

OUTCOMES = ("clear error", "release with guarantee", "other")


def _classify(exc: BaseException | None) -> tuple[str, str]:
    if exc is None:
        return "release with guarantee", ""
    message = str(exc)
    name = type(exc).__name__
    clear = (
        any(cls.__name__ in CLEAR for cls in type(exc).__mro__)
        and not isinstance(exc, probes.Violation)
        and "\n" not in message.strip()
        and 0 < len(message) <= MAX_MESSAGE
    )
    return ("clear error" if clear else "other"), f"{name}: {message[:MAX_MESSAGE]}"


def _child(probe: Probe, write_fd: int) -> None:
    """Run one probe in this (forked) process; write (outcome, detail) as JSON."""
    try:
        with tempfile.TemporaryDirectory() as tmp, warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                probe.run(Path(tmp))
                result = _classify(None)
            except BaseException as exc:  # noqa: BLE001 - every outcome is classified
                result = _classify(exc)
                if result[0] == "other":
                    tb = traceback.format_exc().strip().splitlines()
                    result = (result[0], result[1] + " | " + " / ".join(tb[-3:])[:400])
    except BaseException as exc:  # noqa: BLE001
        result = ("other", f"harness: {type(exc).__name__}: {exc}")
    os.write(write_fd, json.dumps(result).encode())
    os.close(write_fd)
    os._exit(0)


def run_probe(probe: Probe) -> dict:
    read_fd, write_fd = os.pipe()
    start = time.perf_counter()
    pid = os.fork()
    if pid == 0:  # child
        os.close(read_fd)
        os.setpgid(0, 0)
        _child(probe, write_fd)
    os.close(write_fd)
    chunks, status, usage = [], None, None
    deadline = start + probe.timeout
    os.set_blocking(read_fd, False)
    while status is None:
        try:
            data = os.read(read_fd, 65536)
            if data:
                chunks.append(data)
        except BlockingIOError:
            pass
        done, st, ru = os.wait4(pid, os.WNOHANG)
        if done:
            status, usage = st, ru
            break
        if time.perf_counter() > deadline:
            with _ignore():
                os.killpg(pid, signal.SIGKILL)
            _, status, usage = os.wait4(pid, 0)
            status = "timeout"
            break
        time.sleep(0.01)
    with _ignore():
        while data := os.read(read_fd, 65536):
            chunks.append(data)
    os.close(read_fd)
    seconds = time.perf_counter() - start
    peak_mb = usage.ru_maxrss / 1024 if usage is not None else float("nan")
    if status == "timeout":
        outcome, detail = "other", f"no answer within {probe.timeout:g} s"
    elif not chunks:
        outcome, detail = "other", f"the probe's process died (status {status})"
    else:
        outcome, detail = json.loads(b"".join(chunks).decode())
    if outcome != "other" and peak_mb > probe.memory_mb:
        outcome, detail = "other", f"peak memory {peak_mb:.0f} MB > {probe.memory_mb} MB; {detail}"
    return {
        "area": probe.area,
        "name": probe.name,
        "outcome": outcome,
        "detail": detail,
        "seconds": seconds,
        "peak_mb": peak_mb,
    }


class _ignore:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return exc[0] is not None and issubclass(exc[0], OSError | BlockingIOError)


def collect(only: str | None = None) -> list[Probe]:
    out = []
    for name in probes.modules():
        module = importlib.import_module(f"probes.{name}")
        out.extend(p for p in module.probes() if only is None or only in p.area)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", help="run the areas whose name contains this")
    parser.add_argument("--markdown", help="also write the table to this file")
    parser.add_argument("--list", action="store_true", help="list the probes and stop")
    parser.add_argument("--verbose", action="store_true", help="print every probe's outcome")
    args = parser.parse_args()
    import dpconvex  # noqa: F401 - imported once, before the forks

    cases = collect(args.only)
    if args.list:
        for p in cases:
            print(f"{p.area}: {p.name}")
        return
    start = time.perf_counter()
    rows = []
    for probe in cases:
        row = run_probe(probe)
        rows.append(row)
        if args.verbose or row["outcome"] == "other":
            print(f"[{row['outcome']}] {probe.area}: {probe.name} ({row['seconds']:.1f} s, "
                  f"{row['peak_mb']:.0f} MB) {row['detail'][:300]}", file=sys.stderr)  # fmt: skip
    table = defaultdict(lambda: dict.fromkeys(OUTCOMES, 0))
    for row in rows:
        table[row["area"]][row["outcome"]] += 1
    lines = [
        f"`python benchmarks/probe_report.py` ({time.perf_counter() - start:.0f} s, "
        f"OMP_NUM_THREADS={os.environ['OMP_NUM_THREADS']}; {time.strftime('%Y-%m-%d')}):",
        "",
        "| area | cases | clear error | release with guarantee | other |",
        "|---|---|---|---|---|",
    ]
    total = dict.fromkeys(OUTCOMES, 0)
    for area in sorted(table):
        counts = table[area]
        for k in OUTCOMES:
            total[k] += counts[k]
        lines.append(
            f"| {area} | {sum(counts.values())} | "
            + " | ".join(str(counts[k]) for k in OUTCOMES)
            + " |"
        )
    lines.append(
        f"| **all** | {sum(total.values())} | " + " | ".join(str(total[k]) for k in OUTCOMES) + " |"
    )
    text = "\n".join(lines)
    print(text)
    if args.markdown:
        Path(args.markdown).write_text(text + "\n")


if __name__ == "__main__":
    main()
