"""A range centred at a private median: the default when both ends of a range are open.

Two exponential-mechanism quantiles (Smith 2011; Gillenwater, Joseph & Kulesza 2021,
"Differentially private quantiles", arXiv 2102.08244, Sec. 3), the median m and the
lower quartile l, each (epsilon_each, 0)-DP, give the range m +- K (m - l): for a normal
column K = 3 is about +- 2 standard deviations. Estimating the two ends directly at the
same epsilon targets quantiles q and 1 - q with q = 40 / (epsilon_each n) capped at 0.25
(:func:`~dpconvex.preprocessing.default_quantiles`), so at small epsilon times n it
clips a quarter of the values at each end; the median and the quartile are the two
quantiles an exponential mechanism estimates best (farthest from the empty ends of a
generous search range), and the range built from them clips little. The range is
post-processing of the two releases (Dwork & Roth 2014, "The algorithmic foundations of
differential privacy", Prop. 2.1): the event is the two quantiles'.

The centred range clips a fixed share of a normal column at each end, ``centred_tail``
(about 2.2 % for spread 3), whatever epsilon; the two ends' quantile q = 40 /
(epsilon_each n) goes to 0 as epsilon grows. So the centred range is the default only
while q is above that tail (:func:`prefer_centred`): as epsilon grows the two ends' rule
takes over and the range approaches the data's (no floor under accuracy).
"""

from __future__ import annotations

from scipy.stats import norm

#: The lower quantile whose distance to the median sets the half-width.
CENTRE_QUANTILE = 0.25
#: The half-width in units of (median - lower quartile).
SPREAD = 3.0


def centred_range(
    median: float, quartile: float, lower: float, upper: float, spread: float = SPREAD
) -> tuple[float, float]:
    """(median - h, median + h), h = spread x (median - quartile), within [lower, upper].

    h is at most median - lower: a quartile far below the data (or the search range's
    lower end) gives the widest such range, (lower, 2 median - lower); the upper end is
    cut at ``upper``. A quartile above the median gives h = 0 (a degenerate range, which
    the callers widen or scale to 0).
    """
    h = max(0.0, min(spread * max(median - quartile, 0.0), median - lower))
    return float(max(lower, median - h)), float(min(upper, median + h))


def centred_tail(spread: float = SPREAD) -> float:
    """The share of a normal column beyond one end of its centred range:
    Phi(-spread z_(3/4)), z_(3/4) the distance of the quartile from the median."""
    return float(norm.cdf(-spread * norm.ppf(1.0 - CENTRE_QUANTILE)))


def prefer_centred(q: float, spread: float = SPREAD) -> bool:
    """Whether the centred range clips less than the two ends' rule at quantile ``q``."""
    return q > centred_tail(spread)
