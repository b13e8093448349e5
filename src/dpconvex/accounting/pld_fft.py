"""The FFT machinery behind :func:`dpconvex.accounting.pld.compose_counts`: certified bins.

A sum of independent privacy-loss random variables is computed by FFT within an index
window chosen by Chernoff bounds on the exact log-MGF (:func:`window`); every bin is the
smallest of certified upper bounds computed under exponential tilts (Esscher transform,
:func:`tilts`, :func:`tilted_upper`); two short inputs are convolved directly
(:func:`direct_convolution`). Inputs are "parts": tuples (indices, masses, log masses,
count) of each PLRV's support (Redberg, Koskela & Wang, arXiv 2401.00583, Thm D.1: the
composition's PLRV is the sum of the parts' PLRVs).
"""

from __future__ import annotations

import math

import numpy as np
from scipy import fft

#: Unit round-off of IEEE double precision.
_U = float(np.finfo(float).eps) / 2
#: Bound on the absolute error of an entry that underflowed while tilting.
_UNDERFLOW = 1e-300
#: Spacing of the exponential tilts, in standard deviations of the tilted sum.
_TILT_STEP = 3.0
#: A tilt is computed only where it can tighten some bin by more than this factor.
TILT_GAIN = 1e-7
#: At most this many tilts on each side of the untilted one.
_MAX_TILTS = 64
#: At most this many tilts added where the mean leaps (several modes: :func:`tilts`).
_MAX_FILL = 256


def _fft_error(size: int) -> float:
    """Normwise relative error bound of a floating-point FFT of length ``size``.

    Higham, *Accuracy and Stability of Numerical Algorithms* (2nd ed., 2002),
    Thm 24.2: ||fl(FFT x) - FFT x||_2 <= log2(n) eta / (1 - log2(n) eta) ||FFT x||_2
    with eta = mu + gamma_4 (sqrt 2 + mu) ~ 6.7u for radix 2 (mu ~ u the error of
    the twiddle factors). We take eta = 32u, a safety factor of ~5 for pocketfft's
    mixed radices (2, 3, 5, 7, 11) and the real-input packing of rfft/irfft.
    """
    g = math.ceil(math.log2(max(size, 2))) * 32 * _U
    return g / (1 - g)


def _log_mgf(logp: np.ndarray, idx: np.ndarray, lams: np.ndarray) -> np.ndarray:
    expo = lams[:, None] * idx[None, :] + logp[None, :]
    top = expo.max(axis=1)
    return top + np.log(np.exp(expo - top[:, None]).sum(axis=1))


def _tilt_moments(parts, theta: float) -> tuple[float, float]:
    """Mean and variance (index units) of the sum under the exponential tilt ``theta``."""
    mean = var = 0.0
    for idx, _, logp, count in parts:
        lw = logp + theta * idx
        w = np.exp(lw - lw.max())
        w /= w.sum()
        m = float(np.sum(w * idx))  # numpy sums, not BLAS: no int-float dot, one thread
        mean += count * m
        var += count * float(np.sum(w * (idx - m) ** 2))
    return mean, var


def _blocked(idx: np.ndarray, p: np.ndarray, block: int, sign: float):
    """(log masses, indices) of ``p`` lumped into blocks of ``block`` indices, each lump placed
    at the block end that maximizes e^(sign lam i): an upper bound on the MGF for lam > 0."""
    if block <= 1:
        return np.log(p), sign * idx
    b = idx // block
    mass = np.bincount(b, weights=p) * (1 + 1e-12)  # (1 + 1e-12): round-off of the sums
    keep = mass > 0
    ends = np.arange(mass.size) * block + (block - 1 if sign > 0 else 0)
    return np.log(mass[keep]), sign * ends[keep]


_COARSE = 5


def window(parts, tail_mass: float) -> tuple[int, int]:
    """Index window [lo, hi] of the sum outside which at most ``tail_mass`` lies.

    Chernoff: Pr[S >= a] <= exp(K(lam) - lam a) for lam > 0, K the log-MGF of
    the sum; K is bounded above after lumping each input into blocks (so that
    long inputs stay cheap; the block is 1 when the sum is narrow).
    """
    hi = sum(count * int(idx[-1]) for idx, _, _, count in parts)
    lo = 0
    if tail_mass <= 0:
        return lo, hi
    _, var = _tilt_moments(parts, 0.0)
    total = sum(count for *_, count in parts)
    block = max(1, int(0.01 * math.sqrt(var) / total))
    lams = np.geomspace(1e-3, 1e2, 41) / (math.sqrt(var) + 1.0)
    log2t = math.log(2.0 / tail_mass)
    for sign in (1.0, -1.0):
        blocked = [(_blocked(idx, p, block, sign), count) for idx, p, _, count in parts]

        def chernoff(at: np.ndarray, blocked=blocked) -> float:
            k_sum = sum(count * _log_mgf(logm, ends, at) for (logm, ends), count in blocked)
            return float(((k_sum + log2t) / at).min())

        # (count K(lam) + log(2/t)) / lam is quasi-convex in lam > 0 (K convex), so the
        # grid's minimum lies between the neighbours of the best of every fifth lam
        coarse = lams[::_COARSE]
        best = int(np.argmin([chernoff(coarse[i : i + 1]) for i in range(coarse.size)]))
        fine = lams[max(0, _COARSE * (best - 1)) : _COARSE * (best + 1) + 1]
        bound = chernoff(fine)
        if sign > 0:
            hi = min(hi, math.ceil(bound))
        else:
            lo = max(lo, math.floor(-bound))
    return lo, max(hi, lo)


def tilts(parts, lo: int, hi: int) -> list[tuple[float, float]]:
    """Exponential tilts (theta, tilted mean), means ~_TILT_STEP sd apart, covering [lo, hi].

    Steps of _TILT_STEP tilted standard deviations from the untilted sum; then, where one
    step jumped further across the window than the two tilts' spreads cover (a sum with
    several modes, e.g. a heavily subsampled mechanism composed a few times: the mean
    leaps from the bulk to the far tail within a small range of theta), theta is bisected
    until the gap is covered (at most _MAX_FILL tilts more).
    """
    mean0, var0 = _tilt_moments(parts, 0.0)
    out = [(0.0, mean0, var0)]
    for sign in (1.0, -1.0):
        theta, mean, var = 0.0, mean0, var0
        for _ in range(_MAX_TILTS):
            if var < 0.25 or (mean >= hi if sign > 0 else mean <= lo):
                break
            theta += sign * _TILT_STEP / math.sqrt(var)
            mean, var = _tilt_moments(parts, theta)
            out.append((theta, mean, var))
    out.sort(key=lambda t: t[0])  # the tilted mean increases with theta
    budget, i = _MAX_FILL, 0
    while i < len(out) - 1 and budget > 0:
        (ta, ma, va), (tb, mb, vb) = out[i], out[i + 1]
        gap = min(mb, hi) - max(ma, lo)  # only what lies inside the window matters
        middle = 0.5 * (ta + tb)
        # a mixture's variance is large without any tilt being accurate across it: the
        # narrower of the two spreads decides
        if gap > 2.0 * _TILT_STEP * math.sqrt(min(va, vb)) + 1.0 and ta < middle < tb:
            out.insert(i + 1, (middle, *_tilt_moments(parts, middle)))
            budget -= 1
        else:
            i += 1
    return [(theta, mean) for theta, mean, _ in out]


def tilted_upper(
    parts, theta: float, size: int, positions: np.ndarray, errors: list | None = None
) -> np.ndarray:
    """Certified upper bounds on the masses of the sum at ``positions`` (indices), from one tilt.

    Each input is tilted, w_i = p_i e^(theta (i - c)) / Z, so that the tilted sum
    has its bulk near the positions where this tilt is accurate; its PMF is
    computed by one FFT power; every output is raised by a bound on the FFT's
    round-off and untilted by Z^count e^(-theta (j - sum c)). Every step of the
    bound is explicit:

    * the tilt in floating point: w_i is p_i e^(theta (i - c)) / Z times (1 + eta_i),
      |eta_i| <= u (|theta (i - c)| + 5) (or off by at most 1e-300 if it underflowed),
      so each composed mass is off by at most a factor (1 - eta)^-count;
    * rfft of each input: per-coefficient error e <= gamma(N) sqrt(N) ||w||_2
      (Higham 2002, Thm 24.2; :func:`_fft_error`);
    * powering: |s'^k - s^k| <= k e (|s'| + e)^(k-1) (mean value theorem), and
      exp(k log s') is s'^k up to the relative error 4u (2 + k (|log s'| + 1));
    * irfft: each output moves by at most (1/N) sum_j |coefficient error_j|,
      plus its own round-off gamma(N) ||c||_2 / sqrt(N).

    Circular wrap-around (the window is shorter than the full support) only adds
    non-negative mass, which is pessimistic.
    """
    log_untilt = 0.0  # log of Z^count e^(theta sum count c)
    log_correction = 0.0  # -count log(1 - eta)
    spectra = []
    for idx, p, logp, count in parts:
        center = int(idx[int(np.argmax(logp + theta * idx))])
        arg = theta * (idx - center)  # <= -log p_i, so p_i e^arg <= p_center <= 1
        big = arg > 700.0  # only where p_i is subnormal: go through logs (error below)
        with np.errstate(over="ignore", under="ignore"):
            w = np.where(
                big, np.exp(logp + np.where(big, arg, 0.0)), p * np.exp(np.minimum(arg, 700.0))
            )
        z = float(w.sum())  # any z will do: the untilting uses the same z
        w = w / z
        slack_i = np.abs(arg) + 5.0 + np.where(big, np.abs(logp), 0.0)
        eta = _U * float(slack_i[w > 0].max(initial=5.0))
        log_untilt += count * (math.log(z) + theta * center)
        log_correction += -count * math.log1p(-eta)
        dense = np.zeros(size)
        dense[idx] = w
        spec = fft.rfft(dense)
        norm = math.sqrt(float(np.sum(w * w))) * (1 + 1e-12)  # ||w||_2, round-off included
        err = _fft_error(size) * math.sqrt(size) * norm + idx.size * _UNDERFLOW
        spectra.append((spec, err, count))
    floor = math.log(_UNDERFLOW)  # coefficients below 1e-300 are dropped (and bounded)
    with np.errstate(divide="ignore", invalid="ignore"):
        log_c = np.zeros(spectra[0][0].size, dtype=complex)
        rho = np.full(log_c.size, 2.0)
        log_r_total = np.zeros(log_c.size)
        log_rs = []
        for spec, err, count in spectra:
            log_s = np.log(spec)
            log_c += count * log_s
            rho += count * (np.abs(log_s) + 1.0)
            log_rs.append(np.log(np.abs(spec) + err))
            log_r_total += count * log_rs[-1]
        rho *= 4 * _U
        kept = log_c.real > floor  # no subnormals (slow, and imprecise)
        coeff = np.zeros(log_c.size, dtype=complex)
        coeff[kept] = np.exp(log_c[kept])
        rho = np.where(kept, rho, 0.0)
        bound = np.abs(coeff) * rho * (1 + 2 * rho) + _UNDERFLOW
        for (_, err, count), log_r in zip(spectra, log_rs, strict=True):
            bound += np.exp(np.maximum(math.log(count * err) + log_r_total - log_r, floor))
    weights = np.full(coeff.size, 2.0)
    weights[0] = 1.0
    if size % 2 == 0:
        weights[-1] = 1.0
    out = fft.irfft(coeff, size)
    error = float(np.sum(weights * bound)) / size
    power = float(np.sum(weights * (coeff.real**2 + coeff.imag**2)))
    error += _fft_error(size) * math.sqrt(power) / math.sqrt(size)
    error *= 1 + 1e-9  # round-off in evaluating the bound itself
    if errors is not None:
        errors.append(error)
    lifted = out[positions % size] + error
    log_u = log_untilt + log_correction - theta * positions
    with np.errstate(divide="ignore", over="ignore"):
        log_val = np.log(np.maximum(lifted, 0.0)) + log_u
        slack = 4 * _U * (np.abs(log_val) + np.abs(log_u) + 8.0)
        return np.exp(log_val) * (1.0 + slack)


#: two single PLRVs whose lengths multiply to at most this are convolved directly
DIRECT_CONVOLUTION_WORK = 20_000_000


def direct_convolution(trimmed, lengths) -> np.ndarray:
    """Bins of the sum of two PLRVs by direct convolution, each a certified upper bound.

    Every bin is a sum of at most m = min(lengths) nonnegative products; in floating
    point it is within gamma_m ~ m u of the exact value whatever the order of the
    additions (Higham 2002, §3.1 and §4.2), so inflating by 2 (m + 1) u bounds it
    from above. No FFT, so no round-off spread over the tails: the AMP event (the
    objective-perturbation PLRV with a narrow output-step Gaussian) needed 42 tilted
    FFTs for the same certificate.
    """
    dense = []
    for (idx, p, _, _), length in zip(trimmed, lengths, strict=True):
        row = np.zeros(length)
        row[idx] = p
        dense.append(row)
    out = np.convolve(dense[0], dense[1])
    return out * (1.0 + 2.0 * (min(lengths) + 1) * _U)
