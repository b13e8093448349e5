"""Derived defaults: which quantiles estimate a bound, and the bounds' share of epsilon.

Derived on synthetic tables only (benchmarks/derive_preprocessing_defaults.py; the
derivation and its table are in the preprocessing docs).

* Quantiles. The exponential-mechanism quantile (Smith 2011; Gillenwater, Joseph &
  Kulesza 2021, arXiv 2102.08244, Sec. 3) lands in the empty part of the search range
  beyond the data with probability about (range / spread) * exp(-epsilon_each * m / 2)
  when it targets the m-th value from an end, and a bound out there squashes the data.
  The default targets m = RANK_MARGIN / epsilon_each values from each end:
  q = min(MAX_QUANTILE, RANK_MARGIN / (epsilon_each * n)). RANK_MARGIN = 40 keeps that
  probability below about 5 % for a search range up to ~1e7 times the spread of the
  data's tail (2 (ln 1e7 + ln 20) ~ 38), and had the smallest mean regret of the margins
  measured (5 to 80). q moves to
  the minimum and maximum as epsilon * n grows (no accuracy floor as epsilon grows).
  n, the number of rows, is public as everywhere in dpconvex.
* Share. When any bound is estimated, the encoder gets the share of a total epsilon that
  lets every estimated bound reach q = SHARE_QUANTILE (2 %): m * RANK_MARGIN /
  (SHARE_QUANTILE * n * total) for m estimated bounds, kept within [MIN_SHARE,
  MAX_SHARE] = [0.1, 0.5]. Measured against fixed shares (0.05 to 0.5) and against the
  same rule aiming at 25 %, 10 % or 5 %, this had the smallest mean regret. As epsilon * n
  grows the share falls to 0.1 and q to 0, so the model's epsilon grows with the total.
  The model gets the rest: (e_b, 0)-DP then (e_m, delta)-DP is (e_b + e_m, delta)-DP
  (basic composition, Dwork & Roth 2014, "The algorithmic foundations of differential
  privacy", Thm 3.16), so :func:`split_epsilon` never overspends.
"""

from __future__ import annotations

import math

from .. import _validation as v

#: Target distance from each end, in values, times epsilon_each.
RANK_MARGIN = 40.0
#: Largest default quantile distance from an end.
MAX_QUANTILE = 0.25
#: The default share lets every estimated bound reach this quantile.
SHARE_QUANTILE = 0.02
#: Smallest and largest default share of a total epsilon spent on estimated bounds.
MIN_SHARE, MAX_SHARE = 0.1, 0.5


def default_quantiles(epsilon_each: float, n: int) -> tuple[float, float]:
    """(q, 1 - q) with q = min(MAX_QUANTILE, RANK_MARGIN / (epsilon_each * n))."""
    if epsilon_each <= 0:  # nothing is estimated; any pair will do
        return MAX_QUANTILE, 1.0 - MAX_QUANTILE
    n = v.positive_int("n", n)
    q = min(MAX_QUANTILE, RANK_MARGIN / (v.positive("epsilon_each", epsilon_each) * n))
    return q, 1.0 - q


def default_share(total: float, n_estimated: int, n: int) -> float:
    """The share of ``total`` for m estimated bounds on n rows (see the module doc)."""
    total = v.positive("total", total)
    n = v.positive_int("n", n)
    need = n_estimated * RANK_MARGIN / (SHARE_QUANTILE * n * total)
    return min(MAX_SHARE, max(MIN_SHARE, need))


def split_epsilon(
    total: float, n_estimated: int, n: int | None = None, share: float | None = None
) -> tuple[float, float]:
    """(epsilon for the encoder, epsilon for the model) out of ``total``.

    ``share`` None: :func:`default_share` (needs ``n``, the public number of rows). The
    encoder gets 0 when the schema estimates no bound. The two compose to <= ``total``.
    """
    total = v.positive("total", total)
    if n_estimated == 0:
        return 0.0, total
    if share is None:
        if n is None:
            raise ValueError("give n (the number of rows) or a share to split epsilon")
        share = default_share(total, n_estimated, n)
    share = v.finite("share", share)
    if not 0.0 < share < 1.0:
        raise ValueError(f"share must be in (0, 1), got {share}")
    bounds = share * total
    model = total - bounds
    while bounds + model > total:  # never above the total after rounding
        model = math.nextafter(model, 0.0)
    return bounds, model
