"""Exact discrete noise and snapped releases: a noise path immune to Mironov's attack.

Mironov (2012), "On significance of the least significant bits for differential
privacy", showed that floating-point Laplace noise leaks the noiseless value
through the low-order bits of the output (the set of floats a textbook sampler
can return depends on the value it is added to). The remedy of Canonne, Kamath &
Steinke (2020), "The Discrete Gaussian for Differential Privacy" (CKS, arXiv
2004.00010), is to add *integer* noise drawn *exactly* — by integer and rational
arithmetic only — to an integer-valued query. This module implements it:

* :func:`bernoulli_exp` — Bernoulli(exp(-gamma)) for rational gamma >= 0 (CKS Alg. 1);
* :func:`discrete_laplace` — P[X = x] proportional to exp(-|x| / scale) on Z, scale
  rational (CKS Alg. 2; the two-sided geometric distribution);
* :func:`discrete_gaussian` — N_Z(0, sigma^2): P[X = x] proportional to
  exp(-x^2 / (2 sigma^2)) on Z (CKS Alg. 3, rejection from a discrete Laplace);
* :func:`mitigated_gaussian_release` / :func:`mitigated_laplace_release` — a real
  vector is snapped to the lattice ``grid * Z^d`` (``grid`` a power of two) and
  exact integer noise is added in lattice units; the output is
  ``grid * (round(value / grid) + Z)``, exactly representable;
* :func:`gaussian_release_event` / :func:`laplace_release_event` — the matching
  DpEvents, with the sensitivity inflated by the rounding (see below).

Exactness. Every random decision is a comparison of integers: Bernoulli(p) for
rational p = n/m compares a uniform 62-bit word w with q = floor(p 2^62); w < q
gives 1, w > q gives 0, and a tie (probability 2^-62) is resolved exactly by the
next word against the remainder p 2^62 - q (so the result is Bernoulli(p) exactly,
not approximately). The arithmetic is vectorized over numpy *object* arrays of
Python integers, so there is no overflow at any size. Uniform words and uniform
integers below t come from ``numpy.random.Generator.integers``, which is exact
(unbiased) for integer ranges. The only floating-point numbers involved are the
inputs ``sigma``/``scale``: a binary64 number is a dyadic rational, and it is used
*exactly* (``Fraction(sigma) ** 2``), so no rounding of sigma^2 happens at all —
the noise is exactly N_Z(0, sigma^2) for the float given, and an accountant given
the same float prices exactly that noise. A ``Fraction`` may be passed instead.

Snapping. For neighbouring inputs with ||u - u'||_2 <= Delta, the integer vectors
k = round(u / g), k' = round(u' / g) satisfy ||k - k'||_2 <= Delta / g + sqrt(d),
because each coordinate's rounding error is in [-1/2, 1/2], so the difference of
two is in [-1, 1] (l1: ||k - k'||_1 <= Delta_1 / g + d). With g a power of two,
u / g and g * n are exact in binary64 (no overflow or underflow), so the
rounding bound holds for the floats actually computed.

Default grid. The inflation costs the factor 1 + g sqrt(d) / Delta in sensitivity
(1 + g d / Delta_1 for l1). :func:`default_grid` takes the largest power of two
with g sqrt(d) <= 1e-3 Delta (g d <= 1e-3 Delta_1), so the sensitivity grows by at
most 0.1%: the same privacy as continuous noise with a 0.1% smaller sigma (or
scale), while g >= 0.5e-3 Delta / sqrt(d) keeps sigma / g, the noise in lattice
units, of order 10^3 sqrt(d) sigma / Delta (a cheap exact sampler).

What this does not mitigate: see docs/noise.md (the generator is not a CSPRNG;
timing side channels of rejection sampling; noise that enters an optimizer, as in
objective perturbation, is not a released sum; floating-point error in computing
the query itself can exceed its nominal sensitivity).
"""

from __future__ import annotations

import math
from fractions import Fraction
from numbers import Integral

import numpy as np

from . import _validation as v

_WORD_BITS = 62
_WORD = 1 << _WORD_BITS
# Outputs grid * n are exact binary64 numbers for |n| <= 2^53.
_EXACT_INT = 1 << 53
# sigma and scale (in lattice units) stay below 2^60 so that uniform integers below
# t = floor(sigma) + 1 come from Generator.integers in int64.
_MAX_SCALE = 2.0**60


# -- exact rationals from the inputs ------------------------------------------------------


def _rational(name: str, value: object) -> Fraction:
    """``value`` as an exact positive Fraction (floats are dyadic rationals: no rounding)."""
    if isinstance(value, bool):
        raise ValueError(f"{name} must be a positive number, got {value!r}")
    if isinstance(value, Fraction | Integral):
        frac = Fraction(value)
    else:
        frac = Fraction(v.finite(name, value))
    if frac <= 0:
        raise ValueError(f"{name} must be > 0, got {value}")
    if frac > _MAX_SCALE:
        raise ValueError(f"{name} must be <= 2^60 (in lattice units), got {float(frac):g}")
    return frac


# -- exact Bernoulli draws ---------------------------------------------------------------


def _words(rng: np.random.Generator, n: int) -> np.ndarray:
    return rng.integers(0, _WORD, size=n, dtype=np.int64)


def _bernoulli_scalar(p: Fraction, rng: np.random.Generator) -> bool:
    """Exact Bernoulli(p), 0 <= p <= 1, by comparing uniform 62-bit words with p's binary digits."""
    while True:
        scaled = p * _WORD
        q = scaled.numerator // scaled.denominator
        w = int(rng.integers(0, _WORD, dtype=np.int64))
        if w != q:
            return w < q
        p = scaled - q  # U = (w + U') / 2^62 < p iff U' < p 2^62 - q when w == q


def _bernoulli_rational(num: np.ndarray, den: np.ndarray | int, rng: np.random.Generator):
    """Exact Bernoulli(num/den) elementwise (object arrays of Python ints, 0 <= num <= den)."""
    num = np.asarray(num, dtype=object)
    den_arr = np.broadcast_to(np.asarray(den, dtype=object), num.shape)
    q = (num * _WORD) // den_arr
    w = _words(rng, num.size)
    qi = q.astype(np.int64)  # 0 <= q <= 2^62 < 2^63
    out = w < qi
    for i in np.flatnonzero(w == qi):  # probability 2^-62 per draw
        n_i, d_i = int(num[i]), int(den_arr[i])
        out[i] = _bernoulli_scalar(Fraction(n_i * _WORD - int(q[i]) * d_i, d_i), rng)
    return out


def _bernoulli_exp_unit(num: np.ndarray, den: np.ndarray | int, rng: np.random.Generator):
    """Bernoulli(exp(-gamma)) for gamma = num/den in [0, 1] (CKS Alg. 1, first branch).

    K = 1; while Bernoulli(gamma / K) = 1: K += 1; return [K odd]. P[K odd] = e^-gamma.
    """
    num = np.asarray(num, dtype=object)
    den_arr = np.broadcast_to(np.asarray(den, dtype=object), num.shape)
    k = np.ones(num.size, dtype=np.int64)
    active = np.arange(num.size)
    while active.size:
        a = _bernoulli_rational(num[active], den_arr[active] * k[active].astype(object), rng)
        active = active[a]
        k[active] += 1
    return k % 2 == 1


def _bernoulli_exp_minus_one(n: int, rng: np.random.Generator) -> np.ndarray:
    """n independent exact Bernoulli(exp(-1)) draws (CKS Alg. 1 with gamma = 1)."""
    ones = np.ones(n, dtype=object)
    return _bernoulli_exp_unit(ones, 1, rng)


def _bernoulli_exp_array(num: np.ndarray, den: np.ndarray | int, rng: np.random.Generator):
    """Bernoulli(exp(-num/den)) elementwise, num/den >= 0 rational (CKS Alg. 1).

    exp(-gamma) = exp(-1)^floor(gamma) * exp(-(gamma - floor(gamma))): the product of
    independent Bernoulli draws, all of which must be 1 (the order in which they are
    drawn does not change the law).
    """
    num = np.asarray(num, dtype=object)
    den_arr = np.broadcast_to(np.asarray(den, dtype=object), num.shape)
    whole = num // den_arr
    out = _bernoulli_exp_unit(num - whole * den_arr, den_arr, rng)
    idx = np.flatnonzero(out & (whole > 0))
    left = whole[idx]
    while idx.size:
        b = _bernoulli_exp_minus_one(idx.size, rng)
        out[idx[~b]] = False
        left = left - 1
        keep = b & (left > 0)
        idx, left = idx[keep], left[keep]
    return out


def bernoulli_exp(gamma, size=None, rng: np.random.Generator | None = None) -> np.ndarray:
    """Exact Bernoulli(exp(-gamma)) draws for a rational gamma >= 0 (CKS 2020, Algorithm 1).

    ``gamma`` is an int, a Fraction or a float (used exactly). Returns a bool array.
    """
    if rng is None:
        raise ValueError("rng (a numpy Generator) is required")
    g = Fraction(0) if gamma == 0 else _rational("gamma", gamma)
    n = 1 if size is None else int(np.prod(size))
    out = _bernoulli_exp_array(np.full(n, g.numerator, dtype=object), g.denominator, rng)
    return out[0] if size is None else out.reshape(size)


# -- discrete Laplace and discrete Gaussian ---------------------------------------------


def _geometric_exp_minus_one(n: int, rng: np.random.Generator) -> np.ndarray:
    """V = number of successes of Bernoulli(exp(-1)) before the first failure (CKS Alg. 2)."""
    v_count = np.zeros(n, dtype=np.int64)
    idx = np.arange(n)
    while idx.size:
        b = _bernoulli_exp_minus_one(idx.size, rng)
        idx = idx[b]
        v_count[idx] += 1
    return v_count


def _discrete_laplace_batch(s: int, t: int, m: int, rng: np.random.Generator) -> np.ndarray:
    """Up to m draws of DLap(t/s) (CKS Alg. 2), object array of Python ints; rejections dropped.

    U ~ Uniform{0..t-1}; keep with probability exp(-U/t); V ~ Geometric with
    P[V = v] = (1 - 1/e) e^-v; X = U + t V (so P[X = x] is proportional to e^(-x/t));
    Y = floor(X / s) (so P[Y = y] is proportional to e^(-y s/t)); B ~ Bernoulli(1/2);
    reject B = 1, Y = 0; return (1 - 2B) Y.
    """
    u = rng.integers(0, t, size=m, dtype=np.int64).astype(object)
    u = u[_bernoulli_exp_array(u, t, rng)]
    x = u + t * _geometric_exp_minus_one(u.size, rng).astype(object)
    y = x // s
    b = rng.integers(0, 2, size=y.size, dtype=np.int64).astype(bool)
    keep = ~(b & (y == 0))
    return np.where(b[keep], -y[keep], y[keep])


def _fill(draw, n: int, first_batch: int) -> np.ndarray:
    """Concatenate accepted draws from ``draw(m)`` until there are n of them."""
    parts, have, m = [], 0, first_batch
    while have < n:
        got = draw(max(m, 16))
        parts.append(got)
        have += got.size
        m = 2 * (n - have) + 16
    return np.concatenate(parts)[:n] if parts else np.empty(0, dtype=object)


def _to_int64(x: np.ndarray) -> np.ndarray:
    if x.size and max(abs(int(x.max())), abs(int(x.min()))) >= 2**63:
        raise OverflowError("a draw does not fit in int64")  # needs scale ~ 2^58 and bad luck
    return x.astype(np.int64)


def _size(size) -> tuple[int, tuple]:
    if size is None:
        return 1, ()
    shape = (int(size),) if isinstance(size, Integral) else tuple(int(s) for s in size)
    if any(s < 0 for s in shape):
        raise ValueError(f"size must be non-negative, got {size}")
    return int(np.prod(shape)), shape


def discrete_laplace(scale, size=None, rng: np.random.Generator | None = None):
    """Exact draws of the discrete Laplace distribution on Z (CKS 2020, Algorithm 2).

    P[X = x] = (e^(1/scale) - 1) / (e^(1/scale) + 1) * exp(-|x| / scale) (the law
    CKS Alg. 2 samples), the two-sided geometric distribution. ``scale`` > 0 is an int, a
    Fraction or a float (used exactly as the rational it is). Returns int64 draws
    (a Python int if ``size`` is None).
    """
    if rng is None:
        raise ValueError("rng (a numpy Generator) is required")
    frac = _rational("scale", scale)
    if frac.numerator >= _WORD:
        raise ValueError("scale's numerator must be < 2^62: use Fraction.limit_denominator")
    n, shape = _size(size)
    t, s = frac.numerator, frac.denominator  # DLap(t/s)
    # Alg. 2 accepts a candidate with probability about 1 - 1/e (or more): a first
    # batch of 1.7 n usually suffices, the rest is topped up
    out = _fill(lambda m: _discrete_laplace_batch(s, t, m, rng), n, int(1.7 * n) + 16)
    out = _to_int64(out)
    return int(out[0]) if size is None else out.reshape(shape)


def _floor_sqrt(frac: Fraction) -> int:
    """floor(sqrt(frac)) exactly: floor(sqrt(x)) = isqrt(floor(x)) for x >= 0."""
    return math.isqrt(frac.numerator // frac.denominator)


def _discrete_gaussian_batch(sigma_sq: Fraction, m: int, rng: np.random.Generator) -> np.ndarray:
    """Up to m draws of N_Z(0, sigma^2) (CKS Alg. 3); rejections dropped.

    t = floor(sigma) + 1; Y ~ DLap(t); accept with probability
    exp(-(|Y| - sigma^2/t)^2 / (2 sigma^2)). With sigma^2 = N/D the exponent is the
    rational (|Y| D t - N)^2 / (2 N D t^2).
    """
    n_num, d_den = sigma_sq.numerator, sigma_sq.denominator
    t = _floor_sqrt(sigma_sq) + 1
    y = _discrete_laplace_batch(1, t, m, rng)
    absy = np.abs(y)
    num = (absy * (d_den * t) - n_num) ** 2
    den = 2 * n_num * d_den * t * t
    return y[_bernoulli_exp_array(num, den, rng)]


def discrete_gaussian(sigma, size=None, rng: np.random.Generator | None = None):
    """Exact draws of the discrete Gaussian N_Z(0, sigma^2) (CKS 2020, Algorithm 3).

    P[X = x] = exp(-x^2 / (2 sigma^2)) / sum_{y in Z} exp(-y^2 / (2 sigma^2)) (CKS
    Def. 1). ``sigma`` > 0 is an int, a Fraction or a float; sigma^2 is the exact
    rational ``Fraction(sigma) ** 2`` (a float is a dyadic rational, so nothing is
    rounded). Rejection sampling from DLap(floor(sigma) + 1) with exact
    Bernoulli(exp(-gamma)) acceptance; all arithmetic on Python integers.
    Returns int64 draws (a Python int if ``size`` is None).
    """
    if rng is None:
        raise ValueError("rng (a numpy Generator) is required")
    sigma_sq = _rational("sigma", sigma) ** 2
    n, shape = _size(size)
    # both rejection steps together keep a constant fraction of the candidates (CKS's
    # analysis of Alg. 3); a first batch of 2.5 n usually suffices, the rest is topped up
    out = _fill(lambda m: _discrete_gaussian_batch(sigma_sq, m, rng), n, int(2.5 * n) + 16)
    out = _to_int64(out)
    return int(out[0]) if size is None else out.reshape(shape)


# -- reference pmfs (for tests and accounting) ------------------------------------------


def discrete_gaussian_logpmf(x: np.ndarray, sigma: float) -> np.ndarray:
    """log P[X = x] for X ~ N_Z(0, sigma^2), normalized by a sum over |y| <= 12 sigma + 40.

    The omitted tail is below 1e-32 of the total.
    """
    sigma = v.positive("sigma", sigma)
    half = int(math.ceil(12 * sigma)) + 40
    ys = np.arange(-half, half + 1, dtype=float)
    log_norm = float(np.logaddexp.reduce(-(ys**2) / (2 * sigma**2)))
    x = np.asarray(x, dtype=float)
    return -(x**2) / (2 * sigma**2) - log_norm


def discrete_laplace_logpmf(x: np.ndarray, scale: float) -> np.ndarray:
    """log P[X = x] for the discrete Laplace: log tanh(1/(2 scale)) - |x| / scale."""
    scale = v.positive("scale", scale)
    return math.log(math.tanh(0.5 / scale)) - np.abs(np.asarray(x, dtype=float)) / scale


# -- snapped releases ---------------------------------------------------------------------


def _is_power_of_two(x: float) -> bool:
    mantissa, _ = math.frexp(x)
    return mantissa == 0.5


def default_grid(sensitivity: float, dimension: int, norm: str = "l2") -> float:
    """Largest power of two g with g sqrt(d) <= 1e-3 Delta (``norm="l2"``) or g d <= 1e-3 Delta.

    Rounding to g Z^d inflates the sensitivity by g sqrt(d) (l2) or g d (l1), so
    with this grid the snapped release's sensitivity is at most 1.001 Delta.
    """
    sensitivity = v.positive("sensitivity", sensitivity)
    d = v.positive_int("dimension", dimension)
    if norm not in ("l1", "l2"):
        raise ValueError(f"norm must be 'l1' or 'l2', got {norm!r}")
    spread = math.sqrt(d) if norm == "l2" else float(d)
    target = 1e-3 * sensitivity
    g = 2.0 ** math.floor(math.log2(target / spread))
    while g * spread > target:  # guard log2 rounding
        g /= 2.0
    while 2.0 * g * spread <= target:
        g *= 2.0
    if g == 0.0 or not math.isfinite(g):
        raise ValueError("no usable grid for this sensitivity and dimension")
    return g


def _check_grid(grid: float) -> float:
    grid = v.positive("grid", grid)
    if not _is_power_of_two(grid):
        raise ValueError(f"grid must be a power of two (2^k, k an integer), got {grid}")
    return grid


def _up(x: float) -> float:
    """The next float above x: a safe upper bound for a rounded sum."""
    return math.nextafter(x, math.inf)


def _resolve(value, sensitivity, grid, norm):
    value = np.asarray(value, dtype=float)
    if not np.isfinite(value).all():
        raise ValueError("value must be finite (no NaN or inf)")
    sensitivity = v.positive("sensitivity", sensitivity)
    d = max(value.size, 1)
    grid = default_grid(sensitivity, d, norm) if grid is None else _check_grid(grid)
    return value, sensitivity, d, grid


def _snap(value: np.ndarray, grid: float) -> np.ndarray:
    scaled = value / grid  # exact: grid is a power of two
    if value.size and np.abs(scaled).max() >= 2.0**52:
        raise ValueError("value / grid exceeds 2^52: use a coarser grid (outputs must stay exact)")
    return np.rint(scaled).astype(np.int64)


def _unsnap(k: np.ndarray, grid: float, shape) -> np.ndarray:
    if k.size and np.abs(k).max() >= _EXACT_INT:
        raise ValueError("noisy lattice point exceeds 2^53: use a coarser grid")
    return (k.astype(float) * grid).reshape(shape)  # exact: |k| < 2^53, grid = 2^j


def gaussian_release_event(sigma: float, sensitivity: float, dimension: int, grid=None):
    """The :class:`~dpconvex.accounting.DiscreteGaussianDpEvent` of a snapped Gaussian release.

    In lattice units: noise sigma / g, l2 sensitivity Delta / g + sqrt(d) (rounded
    up to the next float), d = ``dimension``. Pass the ``grid`` used for the release.
    """
    from .accounting.events import DiscreteGaussianDpEvent

    sigma = v.positive("sigma", sigma)
    sensitivity = v.positive("sensitivity", sensitivity)
    d = v.positive_int("dimension", dimension)
    grid = default_grid(sensitivity, d, "l2") if grid is None else _check_grid(grid)
    inflated = _up(sensitivity / grid + _up(math.sqrt(d)))
    return DiscreteGaussianDpEvent(sigma / grid, inflated, d)


def laplace_release_event(scale: float, sensitivity: float, dimension: int, grid=None):
    """The :class:`~dpconvex.accounting.DiscreteLaplaceScaleDpEvent` of a snapped Laplace release.

    In lattice units: scale b / g, l1 sensitivity Delta_1 / g + d (rounded up).
    """
    from .accounting.events import DiscreteLaplaceScaleDpEvent

    scale = v.positive("scale", scale)
    sensitivity = v.positive("sensitivity", sensitivity)
    d = v.positive_int("dimension", dimension)
    grid = default_grid(sensitivity, d, "l1") if grid is None else _check_grid(grid)
    inflated = _up(sensitivity / grid + d)
    return DiscreteLaplaceScaleDpEvent(scale / grid, inflated, d)


def mitigated_gaussian_release(
    value, sigma: float, sensitivity: float, rng: np.random.Generator, grid: float | None = None
) -> np.ndarray:
    """``grid * (round(value / grid) + Z)``, Z_j ~ N_Z(0, (sigma / grid)^2) i.i.d. (CKS 2020).

    Args:
        value: the query answer (scalar or array, d = its size), finite.
        sigma: noise standard-deviation parameter in the units of ``value``.
        sensitivity: l2 sensitivity Delta of ``value`` between neighbours.
        rng: a numpy Generator (see docs/noise.md on choosing one).
        grid: a power of two; default :func:`default_grid` (l2), g sqrt(d) <= 1e-3 Delta.

    Privacy: that of :func:`gaussian_release_event` ``(sigma, sensitivity, d, grid)``
    — the discrete Gaussian mechanism in lattice units with l2 sensitivity
    Delta / g + sqrt(d) (CKS 2020, Thm 14: (Delta/g + sqrt d)^2 / (2 (sigma/g)^2)-zCDP).
    The output is exactly representable and lies on the data-independent lattice
    g Z^d, a post-processing of an integer mechanism.
    """
    value, sensitivity, d, grid = _resolve(value, sensitivity, grid, "l2")
    sigma = v.positive("sigma", sigma)
    lattice_sigma = sigma / grid  # exact
    k = _snap(value, grid).ravel()
    z = discrete_gaussian(lattice_sigma, k.size, rng)
    out = _unsnap(k + z, grid, value.shape)
    return out if value.shape else out.reshape(())[()]


def mitigated_laplace_release(
    value, scale: float, sensitivity: float, rng: np.random.Generator, grid: float | None = None
) -> np.ndarray:
    """``grid * (round(value / grid) + Z)``, Z_j i.i.d. discrete Laplace of scale ``scale / grid``.

    Args:
        value: the query answer (scalar or array, d = its size), finite.
        scale: Laplace scale b in the units of ``value`` (b = Delta_1 / epsilon).
        sensitivity: l1 sensitivity Delta_1 of ``value`` between neighbours.
        rng: a numpy Generator.
        grid: a power of two; default :func:`default_grid` (l1), g d <= 1e-3 Delta_1.

    Privacy: pure epsilon-DP with epsilon = (Delta_1 + g d) / b (the discrete
    Laplace ratio bound |(|x - w| - |x|)| <= |w| per coordinate), priced by
    :func:`laplace_release_event`.
    """
    value, sensitivity, d, grid = _resolve(value, sensitivity, grid, "l1")
    scale = v.positive("scale", scale)
    k = _snap(value, grid).ravel()
    z = discrete_laplace(scale / grid, k.size, rng)
    out = _unsnap(k + z, grid, value.shape)
    return out if value.shape else out.reshape(())[()]
