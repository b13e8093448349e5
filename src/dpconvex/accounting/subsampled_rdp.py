"""RDP of the Poisson-subsampled Gaussian at integer orders, all orders at once.

Mironov, Talwar & Zhang 2019 ("Renyi Differential Privacy of the Sampled Gaussian
Mechanism", arXiv 1908.10530, §3.3): for an integer order a >= 2 the mechanism is
(a, log(A_a) / (a - 1))-RDP with

    A_a = sum_{k=0}^{a} C(a, k) (1 - q)^(a - k) q^k exp((k^2 - k) / (2 z^2)).

dp_accounting sums this one term at a time in Python (about 0.2 s for the default
orders); here every order's terms form one array and the log-sum-exp runs per
segment, the same sum in a different order of operations.
"""

from __future__ import annotations

import math

import numpy as np
from scipy.special import gammaln


def subsampled_gaussian_rdp_int(q: float, z: float, orders: np.ndarray) -> np.ndarray:
    """RDP at integer ``orders`` (each >= 2) of the Gaussian of noise ``z`` sampled at rate q."""
    a = np.asarray(orders, dtype=float)
    if a.size == 0:
        return np.zeros(0)
    if not (0 < q < 1 and z > 0) or np.any(a < 2) or np.any(a != np.round(a)):
        raise ValueError("need 0 < q < 1, z > 0 and integer orders >= 2")
    n_terms = a.astype(np.int64) + 1
    starts = np.concatenate(([0], np.cumsum(n_terms)[:-1]))
    k = np.arange(n_terms.sum()) - np.repeat(starts, n_terms)
    alpha = np.repeat(a, n_terms)
    log_terms = (
        gammaln(alpha + 1) - gammaln(k + 1) - gammaln(alpha - k + 1)
        + k * math.log(q) + (alpha - k) * math.log1p(-q)
        + (k * k - k) / (2.0 * z * z)
    )  # fmt: skip
    top = np.maximum.reduceat(log_terms, starts)
    log_a = top + np.log(np.add.reduceat(np.exp(log_terms - np.repeat(top, n_terms)), starts))
    return log_a / (a - 1.0)


#: largest order at which the general subsampling bound is evaluated; at higher orders
#: a subsampled event is priced as the event itself (subsampling never hurts)
GENERAL_MAX_ORDER = 256


def poisson_subsampled_rdp_bound(q: float, inner: np.ndarray) -> np.ndarray:
    """RDP at orders 2..A of any mechanism run on a Poisson subsample of rate ``q``.

    Zhu & Wang 2019 ("Poisson Subsampled Renyi Differential Privacy", ICML, Thm 6,
    the general upper bound, add/remove neighbours): if M is (a, eps(a))-RDP for every
    integer a >= 2, then M applied to a Poisson(q) subsample is (a, eps'(a))-RDP with

        (a - 1) eps'(a) = log[ (1 - q)^(a - 1) (a q - q + 1)
                               + C(a, 2) q^2 (1 - q)^(a - 2) exp(eps(2))
                               + 3 sum_{l=3}^{a} C(a, l) q^l (1 - q)^(a - l) exp((l - 1) eps(l)) ].

    The subsampled mechanism is also never worse than M itself (Renyi divergence is
    jointly quasi-convex), so the smaller of the two is returned. ``inner[j]`` is
    eps(j + 2); the result has the same length (orders 2..A).
    """
    eps = np.asarray(inner, dtype=float)
    if not 0 < q <= 1:
        raise ValueError(f"sampling probability must be in (0, 1], got {q}")
    if q == 1 or eps.size == 0:
        return eps.copy()
    out = np.empty(eps.size)
    log_q, log_p = math.log(q), math.log1p(-q)
    for j in range(eps.size):
        a = j + 2
        ell = np.arange(2, a + 1)
        terms = (
            gammaln(a + 1) - gammaln(ell + 1) - gammaln(a - ell + 1)
            + ell * log_q + (a - ell) * log_p + (ell - 1) * eps[: a - 1]
        )  # fmt: skip
        terms[1:] += math.log(3.0)  # l >= 3
        head = (a - 1) * log_p + math.log1p((a - 1) * q)  # (1-q)^(a-1) (a q - q + 1)
        with np.errstate(over="ignore", invalid="ignore"):
            total = np.logaddexp(head, np.logaddexp.reduce(terms))
        out[j] = total / (a - 1)
    return np.minimum(out, eps)
