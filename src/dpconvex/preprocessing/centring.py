"""A range centred at a private median: the default when both ends of a range are open.

Two exponential-mechanism quantiles (Smith 2011; Gillenwater, Joseph & Kulesza 2021,
"Differentially private quantiles", arXiv 2102.08244, Sec. 3), each (epsilon_each, 0)-DP:
the median m of the values, then the median u of their distances |x - m| to it (the
median absolute deviation); the range is m +- K u. For a normal column u = 0.674 sd, so
K = 3 is about +- 2 standard deviations. Estimating the two ends directly at the same
epsilon targets quantiles q and 1 - q with q = 40 / (epsilon_each n) capped at 0.25
(:func:`~dpconvex.preprocessing.default_quantiles`), so at small epsilon times n it
clips a quarter of the values at each end. A quantile lands in the empty part of a
generous search range with probability about (range / spread) exp(-epsilon_each r / 2),
r its distance in values from the nearer end of the data; both medians sit n / 2 values
from that end (the distances have data down to 0), the farthest any quantile can, so
they are the two estimates the mechanism makes best. (The first version took the lower
quartile l and u = m - l: r = n / 4, which at the bounds' small epsilon often landed far
below the data and gave the whole search range; ``SPREAD_STATISTIC = "quartile"``
keeps it for the derivation.) The two quantiles are drawn by
:func:`~dpconvex.preprocessing.quantile.private_centre`.

Privacy: m is (epsilon_each, 0)-DP; given m, adding or removing one row moves the rank
of every t among the distances by at most 1, so the second quantile is (epsilon_each,
0)-DP too, and the pair composes adaptively to (2 epsilon_each, 0) (Dwork & Roth 2014,
"The algorithmic foundations of differential privacy", Thm 3.16). The range is
post-processing of the two releases (ibid., Prop. 2.1): the event is the two quantiles'.

The centred range clips a fixed share of a normal column at each end, ``centred_tail``
(about 2.2 % for spread 3), whatever epsilon; the two ends' quantile q = 40 /
(epsilon_each n) goes to 0 as epsilon grows. So the centred range is the default only
while q is above that tail (:func:`prefer_centred`): as epsilon grows the two ends' rule
takes over and the range approaches the data's (no floor under accuracy).
"""

from __future__ import annotations

from scipy.stats import norm

#: The lower quantile of the first version's spread (median - lower quartile); for a
#: normal column its distance to the median equals the median absolute deviation.
CENTRE_QUANTILE = 0.25
#: The half-width in units of the spread (the median absolute deviation).
SPREAD = 3.0


def centred_range(
    median: float, unit: float, lower: float, upper: float, spread: float = SPREAD
) -> tuple[float, float]:
    """(median - h, median + h), h = spread x unit, within [lower, upper].

    h is at most median - lower: a spread far beyond the data gives the widest such
    range, (lower, 2 median - lower); the upper end is cut at ``upper``. A spread of 0
    gives a degenerate range, which the callers widen or scale to 0.
    """
    h = max(0.0, min(spread * max(unit, 0.0), median - lower))
    return float(max(lower, median - h)), float(min(upper, median + h))


def centred_tail(spread: float = SPREAD) -> float:
    """The share of a normal column beyond one end of its centred range:
    Phi(-spread z_(3/4)), z_(3/4) = 0.674 its median absolute deviation (in sd), which
    is also the distance of its quartiles from the median."""
    return float(norm.cdf(-spread * norm.ppf(1.0 - CENTRE_QUANTILE)))


def prefer_centred(q: float, spread: float = SPREAD) -> bool:
    """Whether the centred range clips less than the two ends' rule at quantile ``q``."""
    return q > centred_tail(spread)
