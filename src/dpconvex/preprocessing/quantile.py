"""The exponential-mechanism quantile on a public range: epsilon-DP, one number.

Smith (2011), "Privacy-preserving statistical estimation with optimal convergence
rates" (STOC), in the form of Gillenwater, Joseph & Kulesza (2021), "Differentially
private quantiles" (arXiv 2102.08244), Sec. 3. The n values are clipped to the public
range [a, b] and sorted, x_(1) <= ... <= x_(n). They cut [a, b] into n + 1 intervals
I_k = [x_(k), x_(k+1)] (x_(0) = a, x_(n+1) = b); every t inside I_k has exactly k values
below it and the utility u_k = -|k - q n|. The mechanism picks interval k with
probability proportional to |I_k| exp(epsilon u_k / 2), then a uniform point in it: the
output density is exp(epsilon u(t) / 2) / Z on [a, b].

Privacy (add or remove one row, or replace one): for every t, #{x_i < t} moves by at
most 1 and q n by at most q, so u(t) moves by at most max(q, 1 - q) <= 1; the numerator
and Z each move by a factor of at most e^(epsilon/2), so the mechanism is (epsilon, 0)-DP
(McSherry & Talwar 2007, "Mechanism design via differential privacy", Thm 6). It is
priced by :class:`~dpconvex.queries.sparse_vector.PureDpEvent`. Ties and clipped values
give empty intervals, which have probability 0; n = 0 gives a uniform point of [a, b].
The interval is drawn by the Gumbel-max trick on the log weights (no exponential of a
large number is ever formed).
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from .. import _validation as v
from ..queries.sparse_vector import PureDpEvent
from .centring import CENTRE_QUANTILE


def quantile_event(epsilon: float) -> PureDpEvent:
    """The event of one exponential-mechanism quantile at ``epsilon`` (pure DP)."""
    return PureDpEvent(v.positive("epsilon", epsilon))


def check_range(lower: float, upper: float) -> tuple[float, float]:
    """The public search range as floats; ``ValueError`` unless lower < upper, both finite."""
    lower, upper = v.finite("lower", lower), v.finite("upper", upper)
    if not lower < upper or not math.isfinite(upper - lower):
        raise ValueError(f"the search range needs lower < upper (finite), got [{lower}, {upper}]")
    return lower, upper


def interval_log_weights(
    values: np.ndarray, q: float, epsilon: float, lower: float, upper: float
) -> tuple[np.ndarray, np.ndarray]:
    """(edges, log weights) of the n + 1 intervals; empty intervals weigh -inf."""
    edges = np.concatenate(([lower], np.sort(np.clip(values, lower, upper)), [upper]))
    lengths = np.diff(edges)
    n = edges.size - 2
    utility = -np.abs(np.arange(n + 1) - q * n)
    with np.errstate(divide="ignore"):
        log_weights = np.log(lengths) + 0.5 * epsilon * utility
    return edges, log_weights


def private_quantile(
    values: np.ndarray,
    q: float,
    epsilon: float,
    lower: float,
    upper: float,
    rng: np.random.Generator,
) -> float:
    """An epsilon-DP estimate of the ``q``-quantile of ``values`` inside [lower, upper].

    ``values`` is a 1-D array of finite numbers (the rows of one column that are not
    missing); the range is public and chosen without looking at the data.
    """
    q = v.finite("q", q)
    if not 0.0 <= q <= 1.0:
        raise ValueError(f"q must be in [0, 1], got {q}")
    epsilon = v.positive("epsilon", epsilon)
    lower, upper = check_range(lower, upper)
    values = np.asarray(values, dtype=np.float64).ravel()
    if not np.all(np.isfinite(values)):
        raise ValueError("values must be finite numbers (leave missing values out)")
    edges, log_weights = interval_log_weights(values, q, epsilon, lower, upper)
    k = int(np.argmax(log_weights + rng.gumbel(size=log_weights.size)))
    left, right = edges[k], edges[k + 1]
    return float(min(right, left + rng.random() * (right - left)))


#: "deviation" (the default: the median of |x - m|) or "quartile" (m - the lower
#: quartile, the first version, kept to rerun its derivation); see
#: :mod:`dpconvex.preprocessing.centring`.
SPREAD_STATISTIC = "deviation"


def _identity(x):
    return x


def private_centre(
    values: np.ndarray,
    each: float,
    lower: float,
    upper: float,
    rng: np.random.Generator,
    scale: tuple[Callable, Callable] = (_identity, _identity),
) -> tuple[float, float]:
    """(m, u): a private median of ``values`` and their private spread about it.

    Two (each, 0)-DP exponential-mechanism quantiles, in this order (see
    :mod:`dpconvex.preprocessing.centring`): m inside [lower, upper], then u, the median
    of |x - m| inside [0, max(m - lower, upper - m)]. ``values`` are finite numbers
    within [lower, upper]; ``scale`` = (forward, back) is a monotone transform both
    quantiles are searched on (e.g. log1p for a positive target: same mechanism, fewer
    draws in the empty part of a generous range).
    """
    fwd, back = scale

    def quantile(x, q, lo, hi) -> float:
        return float(back(private_quantile(fwd(x), q, each, fwd(lo), fwd(hi), rng)))

    median = quantile(values, 0.5, lower, upper)
    if SPREAD_STATISTIC == "quartile":
        return median, max(0.0, median - quantile(values, CENTRE_QUANTILE, lower, upper))
    width = max(median - lower, upper - median)
    return median, quantile(np.abs(values - median), 0.5, 0.0, width)
