"""Answering counting queries with the Generalized Gaussian mechanism.

M_sigma^p(D) = phi(D) + x, x ~ GGauss(p, sigma) with i.i.d. GG_p(sigma) coordinates
(Ganesh's thesis, UC Berkeley EECS-2022-53, §2.5; Def. 19), with sigma calibrated
exactly (:func:`dpconvex.queries.gg_sigma`) instead of the thesis's constant.
The thesis's truncation device (release un-noised answers when ||x||_p is
large, proof of Thm 17) is not used: nothing un-noised is ever released.
"""

from __future__ import annotations

import numpy as np

from .. import _validation as v
from .._random import make_rng
from ..noise import generalized_gaussian
from ..release import Release
from .calibration import calibrated, choose_p
from .distribution import check_p
from .privacy import GeneralizedGaussianDpEvent


def _answers(answers) -> np.ndarray:
    a = np.asarray(answers, dtype=float)
    if a.ndim != 1 or a.size == 0:
        raise ValueError(f"answers must be a non-empty 1-D array, got shape {a.shape}")
    if not np.all(np.isfinite(a)):
        raise ValueError("answers must be finite (no NaN or inf)")
    return a


def gg_mechanism(
    answers,
    epsilon: float,
    delta: float,
    *,
    p: float | None = None,
    sensitivity: float = 1.0,
    accounting: str = "pld",
    random_state=None,
) -> Release:
    """Release answers + GGauss(p, sigma), (epsilon, delta)-DP for the declared sensitivity.

    ``answers`` are the k exact answers; ``sensitivity`` is declared by the
    caller (1 for counting queries phi(D) = sum_d phi(d), phi(d) in [0, 1]^k) and
    never read off the data. ``p=None`` chooses p by the exact expected maximum
    error (:func:`dpconvex.queries.choose_p`), which depends only on (k, epsilon,
    delta). Returns the noisy answers with their :class:`GeneralizedGaussianDpEvent`.
    """
    a = _answers(answers)
    sensitivity = v.positive("sensitivity", sensitivity)
    k = a.size
    v.positive("epsilon", epsilon)
    v.probability_open("delta", delta)
    if p is None:
        cal = choose_p(k, epsilon, delta, accounting=accounting)[0]
    else:
        cal = calibrated(k, epsilon, delta, check_p(p), accounting)
    sigma = cal.sigma * sensitivity  # cal is for sensitivity 1: the mechanism is scale-free
    release = gg_release(a, cal.p, sigma, sensitivity=sensitivity, random_state=random_state)
    info = {
        **release.info,
        "epsilon": cal.epsilon,
        "delta": float(delta),
        "expected_max_error": cal.expected_max_error * sensitivity,
        "accounting": accounting,
    }
    return Release(release.theta, release.event, info)


def gg_release(
    answers, p: float, sigma: float, *, sensitivity: float = 1.0, random_state=None
) -> Release:
    """answers + GGauss(p, sigma) for a given sigma (no calibration), with its event.

    The noise step of :func:`gg_mechanism` (Ganesh's thesis, Def. 19, mechanism M_sigma^p of
    §2.5); the returned :class:`GeneralizedGaussianDpEvent` prices it for the
    declared l_inf-``sensitivity`` (ask any ``PrivacyAccountant`` for its epsilon).
    """
    a = _answers(answers)
    p = check_p(p)
    sigma = v.positive("sigma", sigma)
    sensitivity = v.positive("sensitivity", sensitivity)
    rng = make_rng(random_state)
    noisy = a + generalized_gaussian(p, sigma, a.size, rng)
    event = GeneralizedGaussianDpEvent(p, sigma, a.size, sensitivity)
    return Release(noisy, event, {"p": p, "sigma": sigma})


def answer_counting_queries(
    records,
    epsilon: float,
    delta: float,
    *,
    p: float | None = None,
    accounting: str = "pld",
    random_state=None,
) -> Release:
    """Counting queries phi(D) = sum_d phi(d) from an (n, k) array of phi(d) in [0, 1]^k.

    Each row is one individual's contribution; the answers have
    l_inf-sensitivity 1 under add/remove and replace-one neighbours (Ganesh's
    thesis, §2.1). Rows outside [0, 1]^k are refused (the sensitivity would not hold).
    """
    r = np.asarray(records, dtype=float)
    if r.ndim != 2 or r.shape[1] == 0:
        raise ValueError(f"records must be a 2-D array (n, k), got shape {r.shape}")
    if not np.all(np.isfinite(r)):
        raise ValueError("records must be finite (no NaN or inf)")
    if r.size and (r.min() < 0 or r.max() > 1):
        raise ValueError("records must lie in [0, 1] (counting queries have phi(d) in [0,1]^k)")
    return gg_mechanism(
        r.sum(axis=0), epsilon, delta, p=p, accounting=accounting, random_state=random_state
    )
