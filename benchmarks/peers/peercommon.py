"""Shared helpers of the peer benchmarks: data, timing, tables, versions.

Import this only after the benchmark script has pinned the BLAS threads
(the scripts set the variables before numpy is imported).
"""

from __future__ import annotations

import datetime
import os
import platform
import statistics
import subprocess
import time
from importlib import metadata
from pathlib import Path

import numpy as np

import dpconvex
from dpconvex.datasets import load_adult
from dpconvex.mechanisms import add_intercept, transform_rows

THREAD_VARS = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")
DELTA = 1e-5


def thread_setting() -> str:
    return ", ".join(f"{var}={os.environ.get(var, 'unset')}" for var in THREAD_VARS)


def adult_split():
    """The bundled UCI Adult data, the project's public 80/20 split (seed 0)."""
    return load_adult().split(0.2, seed=0)


def unit_rows(X) -> np.ndarray:
    """Rows scaled to unit L2 norm, as our estimators do (a public per-row map)."""
    return np.asarray(transform_rows(X, "normalize", 1.0))


def unit_rows_with_one(X) -> np.ndarray:
    """Unit rows with the constant-1 intercept column appended: our estimators' design."""
    return np.asarray(add_intercept(transform_rows(X, "normalize", 1.0), 1.0))


def timed(fn):
    """(wall-clock seconds, result) of ``fn()``."""
    start = time.perf_counter()
    out = fn()
    return time.perf_counter() - start, out


def mean_se(values) -> tuple[float, float]:
    arr = np.asarray(values, dtype=np.float64)
    se = float(arr.std(ddof=1) / np.sqrt(arr.size)) if arr.size > 1 else 0.0
    return float(arr.mean()), se


def median(values) -> float:
    return float(statistics.median(values))


def versions(*packages: str) -> str:
    found = []
    for name in packages:
        try:
            found.append(f"{name} {metadata.version(name)}")
        except metadata.PackageNotFoundError:
            found.append(f"{name} (not installed)")
    return ", ".join([f"Python {platform.python_version()}", *found])


def dpconvex_source() -> str:
    """Where dpconvex was imported from, its git commit and whether its source has edits."""
    src = Path(dpconvex.__file__).resolve().parent
    try:
        head = subprocess.run(
            ["git", "-C", str(src), "rev-parse", "--short", "HEAD"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "-C", str(src), "status", "--porcelain", "--untracked-files=no", "--", "."],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return f"dpconvex from {src} (not a git checkout)"
    edits = " + uncommitted edits to tracked files" if dirty else ""
    return f"dpconvex from {src} (git {head}{edits})"


def utc_now() -> str:
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")


def run_stamp() -> tuple[str, str]:
    """(start time, dpconvex source and git state), taken when a benchmark starts."""
    return utc_now(), dpconvex_source()


def header_lines(
    title: str, settings: list[str], packages: tuple[str, ...], stamp: tuple[str, str]
) -> list[str]:
    started, source = stamp
    return [
        title,
        f"started: {started}; machine: {platform.machine()}, {os.cpu_count()} logical CPUs",
        f"versions: {versions(*packages)}",
        f"source: {source}",
        f"threads: {thread_setting()}",
        *settings,
    ]


def text_table(headers: list[str], rows: list[list[str]]) -> str:
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(headers)]
    lines = ["  ".join(h.rjust(w) for h, w in zip(headers, widths, strict=True))]
    lines += ["  ".join(c.rjust(w) for c, w in zip(r, widths, strict=True)) for r in rows]
    return "\n".join(lines)


def markdown_table(headers: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
    lines += ["| " + " | ".join(r) + " |" for r in rows]
    return "\n".join(lines)


def report(lines: list[str], headers, rows, markdown_path: str | None, notes=()) -> None:
    """Print the setting and the table; with a path, also write them as markdown."""
    print("\n".join(lines))
    print()
    print(text_table(headers, rows))
    for note in notes:
        print(note)
    if markdown_path:
        body = [f"**{lines[0]}**", "", *(f"- {line}" for line in lines[1:]), ""]
        body += [markdown_table(headers, rows), "", *notes]
        with open(markdown_path, "w", encoding="utf-8") as fh:
            fh.write("\n".join(body).rstrip() + "\n")
        print(f"\nwrote {markdown_path}")
