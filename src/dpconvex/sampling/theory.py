"""Step size, horizon and Renyi bounds of Theorems 42/52 with every constant explicit.

Ganesh, *Improved Algorithms and Upper Bounds in Differential Privacy* (PhD thesis,
UC Berkeley EECS-2022-53), chapter 3. Setting (§3.4): f is
1-strongly convex and M-smooth with its minimum at 0 (use
:func:`dpconvex.sampling.standardized`; then M is the condition number), ULA
(:func:`dpconvex.sampling.ula`) starts from N(0, I_k) and runs for continuous time
tau = T * eta. P is its law, S the target exp(-f), Q_t the continuous dynamics.

**Theorem 52, explicit (proof of Thm 52).** If, for some alpha' > 2,
c_1(alpha') = exp(3 tau alpha'(alpha'-1) M^4 c^2 (k + 2 ln(tau/eta)) eta / 4) < 2
(which also gives c_2 = c_3 < 1), then
E_Q[(P/Q)^a] <= 19 a / sqrt(alpha') with a = alpha'/4 + 1/2, i.e.
R_a(P||Q), R_a(Q||P) <= ln(19 a / sqrt(alpha')) / (a - 1), and the same bound holds at
every order <= a (monotonicity, Fact 44; the thesis's Jensen step is looser).
It also needs eta <= 2/(M+1) (Lemma 50) and a start satisfying (3.3), which
N(0, I) does for c >= 20 and eta <= 1. The constant c of Lemma 50 is not given
in the thesis ("sufficiently large"): :data:`MOVEMENT_CONSTANT` = 20 is our
derivation for the discrete chain with Facts 67 and 69 (per-step failure
probabilities delta/(4T) each, ln(T/delta) >= ln 2): the Brownian bound needs
c/(2 sqrt 2) >= 2 + 2 sqrt 3 (c >= 15.5) and the norm invariant needs
c/(4 sqrt 2) >= sqrt 2 (1 + sqrt 2) (c >= 19.3). The continuous-chain half of the
proof is written for linear gradients only; we take the same c. It is exposed
everywhere as ``movement_constant``.

**Theorem 42, explicit (its proof, Lemmas 53-59, Fact 46 with p = q = 2),** for
alpha >= 2 (smaller alpha: use 2, Fact 44), with w = (alpha - 1/2)/(alpha - 1),
D1 the Thm 52 bound at order 2 alpha, t0 = ln((2 alpha - 1) M)/2,
D2 = e^(-(tau - t0)/alpha) k ln M for tau >= t0 (Lemmas 58, 59, 54; no bound before t0) and
D3 = e^(-tau/(2 alpha)) k ln M (Lemmas 57, 59):
R_alpha(P||S) <= w D1 + D2 and R_alpha(S||P) <= w D3 + D1.

**Theorem 65 (underdamped)** only bounds the discretization (no convergence of the
continuous underdamped dynamics is proved in the thesis): see
:func:`thm65_max_step`.

**Chaining (thesis §3.2).** Links P_D ~ S_D ~ S_D' ~ P_D' with guarantees
(eps_i, delta_i) compose to (sum eps_i, sum_i e^(eps_1+...+eps_(i-1)) delta_i);
three equal links give (3 eps, (1 + e^eps + e^2eps) delta) (the
thesis's "(3 eps, 3 delta)" is the small-eps approximation).
"""

from __future__ import annotations

import math

import numpy as np
from scipy import optimize

from .. import _validation as v
from ..accounting import calibrate, epsilon_from_rdp, gaussian_delta

#: Lemma 50's "sufficiently large constant" c (see the module docstring for the derivation).
MOVEMENT_CONSTANT = 20.0
#: Lemma 51 as used in the proof of Thm 52: E_Q[(P/Q)^a] <= 19 a / sqrt(alpha').
LEMMA51_FACTOR = 19.0


def _thm52_a(tau: float, eta: float, k: int, M: float, c: float) -> float:
    """a = alpha'/4 + 1/2 for the largest alpha' with c_1(alpha') < 2 (0 if none > 2)."""
    A = 3.0 * tau * M**4 * c**2 * (k + 2.0 * math.log(tau / eta)) * eta / 4.0
    alpha_p = 0.5 * (1.0 + math.sqrt(1.0 + 4.0 * math.log(2.0) / A)) * (1.0 - 1e-12)
    return alpha_p / 4.0 + 0.5 if alpha_p > 2.0 else 0.0


def _renyi_at(a: float) -> float:
    """ln(19 a / sqrt(alpha')) / (a - 1) with alpha' = 4a - 2 (the Thm 52 bound at order a)."""
    return math.log(LEMMA51_FACTOR * a / math.sqrt(4.0 * a - 2.0)) / (a - 1.0)


def _check_chain(k, M, tau, eta, c):
    k = v.positive_int("k", k)
    M = v.finite("M", M)
    if M < 1:
        raise ValueError(f"M (condition number after rescaling to m = 1) must be >= 1, got {M}")
    tau = v.positive("tau", tau)
    eta = v.positive("eta", eta)
    c = v.positive("movement_constant", c)
    if eta > 2.0 / (M + 1.0):
        raise ValueError(f"eta = {eta} exceeds 2/(M+1) = {2 / (M + 1)} (Lemma 50 / Fact 70)")
    if eta > tau:
        raise ValueError(f"eta = {eta} exceeds the horizon tau = {tau}")
    return k, M, tau, eta, c


def thm52_renyi(
    order: float, tau: float, eta: float, k: int, M: float, c: float = MOVEMENT_CONSTANT
) -> float:
    """Bound on R_order(P||Q) and R_order(Q||P): discrete vs continuous Langevin (Thm 52).

    Returns inf if the step is too large for any alpha' > 2 with a >= ``order``.
    """
    k, M, tau, eta, c = _check_chain(k, M, tau, eta, c)
    order = v.finite("order", order)
    if order < 1:
        raise ValueError(f"order must be >= 1, got {order}")
    a = _thm52_a(tau, eta, k, M, c)
    if a <= 1.0 or a < order:
        return math.inf
    return _renyi_at(a)


def thm42_renyi(
    alpha: float, tau: float, eta: float, k: int, M: float, c: float = MOVEMENT_CONSTANT
) -> dict:
    """Bounds on R_alpha(P||S) and R_alpha(S||P) for ULA from N(0, I) (Thm 42, explicit)."""
    k, M, tau, eta, c = _check_chain(k, M, tau, eta, c)
    alpha = max(2.0, v.finite("alpha", alpha))
    w = (alpha - 0.5) / (alpha - 1.0)
    d1 = thm52_renyi(2.0 * alpha, tau, eta, k, M, c)
    kl = k * math.log(M)
    t0 = 0.5 * math.log((2.0 * alpha - 1.0) * M)
    # Lemmas 58-59 bound R_2alpha(Q_t || S) only from t0 on (before, it may be infinite)
    d2 = kl * math.exp(-(tau - t0) / alpha) if tau >= t0 else math.inf
    d3 = kl * math.exp(-tau / (2.0 * alpha))
    forward, backward = w * d1 + d2, w * d3 + d1
    return {
        "discretization": d1,
        "convergence_forward": d2,
        "convergence_backward": d3,
        "forward": forward,
        "backward": backward,
        "bound": max(forward, backward),
    }


def _max_eta(tau: float, a: float, k: int, M: float, c: float) -> float:
    """Largest eta <= min(2/(M+1), tau) with c_1(4a - 2) < 2 (bisection on log eta)."""
    ap = 4.0 * a - 2.0

    def excess(log_eta: float) -> float:
        eta = math.exp(log_eta)
        return 3.0 * tau * ap * (ap - 1.0) * M**4 * c**2 * (k + 2.0 * math.log(tau / eta)) * (
            eta / 4.0
        ) - math.log(2.0)

    hi = math.log(min(2.0 / (M + 1.0), tau))
    if excess(hi) < 0:
        return math.exp(hi)
    lo = hi - 1.0
    while excess(lo) >= 0:
        lo -= 5.0
    root = optimize.brentq(excess, lo, hi, xtol=1e-12)
    return math.exp(root) * (1.0 - 1e-9)


def plan_thm42(
    alpha: float, epsilon: float, k: int, M: float, c: float = MOVEMENT_CONSTANT
) -> dict:
    """(tau, eta, steps) with R_alpha(P||S), R_alpha(S||P) <= epsilon by Thm 42, fewest steps.

    For each horizon tau the discretization budget is what the convergence terms
    leave, a is the smallest order whose Thm 52 bound meets it (a >= 2 alpha),
    and eta the largest step with c_1(4a - 2) < 2; tau is then chosen to minimize
    T = ceil(tau / eta) (eta is then tau / T, which only helps). The returned
    bound is recomputed by :func:`thm42_renyi`.
    """
    k = v.positive_int("k", k)
    M = v.finite("M", M)
    if M < 1:
        raise ValueError(f"M must be >= 1, got {M}")
    epsilon = v.positive("epsilon", epsilon)
    c = v.positive("movement_constant", c)
    alpha = max(2.0, v.finite("alpha", alpha))
    w = (alpha - 0.5) / (alpha - 1.0)
    kl = k * math.log(M)
    t0 = 0.5 * math.log((2.0 * alpha - 1.0) * M)

    def plan_for(tau: float):
        d2 = kl * math.exp(-(tau - t0) / alpha)  # tau >= t0 on the grid below
        d3 = kl * math.exp(-tau / (2.0 * alpha))
        budget = min((epsilon - d2) / w, epsilon - w * d3)
        if budget <= 0:
            return math.inf, None
        lo = max(2.0 * alpha, 1.0 + 1e-9)
        if _renyi_at(lo) <= budget:
            a = lo
        else:
            hi = 2.0 * lo
            while _renyi_at(hi) > budget:
                hi *= 2.0
            a = optimize.brentq(lambda x: _renyi_at(x) - budget, lo, hi, xtol=1e-9) * (1 + 1e-9)
        eta = _max_eta(tau, a, k, M, c)
        steps = math.ceil(tau / eta)
        return steps, (tau, tau / steps)

    tau_min = max(t0, 1e-6)
    taus = tau_min + np.geomspace(1e-3, 1e4, 400) * alpha
    best = min((plan_for(float(t)) for t in taus), key=lambda r: r[0])
    if best[1] is None:
        raise ValueError("no horizon meets the budget")
    tau, eta = best[1]
    out = thm42_renyi(alpha, tau, eta, k, M, c)
    if out["bound"] > epsilon * (1 + 1e-9):  # pragma: no cover - the plan is checked
        raise RuntimeError("Thm 42 plan does not meet its budget")
    return {"alpha": alpha, "tau": tau, "eta": eta, "steps": best[0], **out}


def thm65_max_step(
    alpha_prime: float,
    tau: float,
    k: int,
    M: float,
    *,
    gamma: float = 2.0,
    mu: float = 1.0,
    c: float = MOVEMENT_CONSTANT,
) -> float:
    """Largest eta meeting the conditions in the proof of Thm 65 (underdamped discretization).

    exp(3 mu tau^2 k alpha'(alpha'-1) M^2 c^2 eta^2 / 4) < 2 and eta <= gamma/(mu M)
    (the thesis's "L" there is the smoothness M). With these, the
    discrete and continuous underdamped chains are close in Renyi divergence of
    order alpha' (as in Thm 52); the continuous chain's convergence is unproved.
    """
    ap = v.finite("alpha_prime", alpha_prime)
    if ap <= 1:
        raise ValueError(f"alpha_prime must be > 1, got {ap}")
    tau, k, M = v.positive("tau", tau), v.positive_int("k", k), v.positive("M", M)
    gamma, mu, c = v.positive("gamma", gamma), v.positive("mu", mu), v.positive("c", c)
    eta = math.sqrt(4.0 * math.log(2.0) / (3.0 * mu * tau**2 * k * ap * (ap - 1.0) * M**2 * c**2))
    return min(eta * (1.0 - 1e-12), gamma / (mu * M))


# -- privacy of the sampled mechanism --------------------------------------------------


def chain_links(links) -> tuple[float, float]:
    """Compose indistinguishability links (eps_i, delta_i) along a chain of distributions.

    P_0(S) <= e^eps_1 P_1(S) + delta_1 and so on give
    P_0(S) <= e^(sum eps) P_n(S) + sum_i e^(eps_1 + ... + eps_(i-1)) delta_i.
    """
    total_eps, total_delta = 0.0, 0.0
    for eps, delta in links:
        eps, delta = v.nonnegative("epsilon", eps), v.nonnegative("delta", delta)
        total_delta += math.exp(total_eps) * delta
        total_eps += eps
    return total_eps, total_delta


def link_epsilon(renyi: float, alpha: float, delta: float) -> float:
    """(eps, delta) from R_alpha <= renyi between two distributions (improved conversion).

    Balle et al. 2020, Thm 21 / Canonne, Kamath & Steinke 2020, Prop. 12 (a
    statement about two distributions, so it applies to each link).
    """
    return epsilon_from_rdp([alpha], [renyi], delta, "improved")[0]


def chain_epsilon(renyi: float, alpha: float, mu: float, delta: float) -> float:
    """Smallest eps of P_D ~ S_D ~ S_D' ~ P_D' (sampler, exact mechanism, sampler) at ``delta``.

    The sampler links hold with R_alpha <= ``renyi`` in both directions (Thm 42);
    the exact mechanism is ``mu``-GDP (its profile is the Gaussian's). The split
    of delta between links is optimized numerically; every candidate is a valid
    chain, so the minimum is valid.
    """
    renyi = v.nonnegative("renyi", renyi)
    alpha = v.finite("alpha", alpha)
    mu = v.positive("mu", mu)
    delta = v.probability_open("delta", delta)
    best = math.inf
    for frac in np.geomspace(1e-4, 0.45, 60):
        d1 = frac * delta
        e1 = link_epsilon(renyi, alpha, d1)

        def total_delta(e2: float, e1=e1, d1=d1) -> float:
            d2 = gaussian_delta(e2, 1.0, 1.0 / mu)
            return chain_links([(e1, d1), (e2, d2), (e1, d1)])[1]

        try:
            e2 = calibrate(
                total_delta,
                delta,
                0.0,
                1.0,
                decreasing=True,
                floor=0.0,
                ceiling=100.0,
                scale="linear",
                rtol=1e-9,
                atol=1e-9,
            )
        except ValueError:
            continue
        best = min(best, 2.0 * e1 + e2)
    return best
