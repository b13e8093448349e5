"""Largest FFT a DP-SGD calibration's search composes on (the basis of SEARCH_GRID_POINTS).

A calibration's search prices each candidate noise under ``grid_cap(SEARCH_GRID_POINTS)``;
a candidate beyond the cap counts as missing the budget. This prints, for the DP-SGD
settings users run, the largest FFT length composed during the search, to show how far
below the cap they stay.

    OMP_NUM_THREADS=1 python benchmarks/search_grid_points.py
"""

from __future__ import annotations

import itertools
import os
import time

from dpconvex.accounting import gaussian_pld, pld
from dpconvex.accounting.calibrators import dpsgd_noise_multiplier


def main() -> None:
    largest = {"n": 0}
    irfft = gaussian_pld.fft.irfft

    def spy(x, n=None, *args, **kwargs):
        if n is not None and pld.current_grid_cap() == pld.SEARCH_GRID_POINTS:
            largest["n"] = max(largest["n"], n)
        return irfft(x, n, *args, **kwargs)

    gaussian_pld.fft.irfft = spy
    print(f"OMP_NUM_THREADS={os.environ.get('OMP_NUM_THREADS', 'unset')}, delta 1e-5")
    print("| epsilon | steps | sampling rate | noise | largest FFT in the search | s |")
    print("|---|---|---|---|---|---|")
    overall = 0
    try:
        for eps, steps, q in itertools.product(
            [0.1, 1.0, 8.0], [1000, 10000, 100000], [0.007, 0.1]
        ):
            largest["n"] = 0
            start = time.perf_counter()
            z = dpsgd_noise_multiplier(eps, 1e-5, q, steps)
            seconds = time.perf_counter() - start
            overall = max(overall, largest["n"])
            print(f"| {eps:g} | {steps} | {q:g} | {z:.4f} | {largest['n']} | {seconds:.2f} |")
    finally:
        gaussian_pld.fft.irfft = irfft
    print(f"largest over all: {overall} (cap {pld.SEARCH_GRID_POINTS:.0e})")


if __name__ == "__main__":
    main()
