"""Algorithms 1 and 2 of Su, Zhao & Wang: approximate objective perturbation over a set C.

Su, Zhao & Wang (arXiv 2303.18047), §4, Algorithm 1 (App-ObjP, convex; privacy Thm 1,
utility Thm 2) and Algorithm 2 (App-ObjP-SC, strongly convex; Thms 3-4):

1. G ~ N(0, sigma_1^2 I); J(w) = L^(w) + <G, w>/n + lam ||w||_2^2;
2. theta_2 in C with J(theta_2) - min_C J <= alpha, *certified* (:mod:`.solver`);
3. release Proj_C(theta_2 + H), H ~ N(0, sigma_2^2 I).

Privacy (proof of Thm 1): theta_1 = argmin_C J is objective perturbation (Lemma 5,
Iyengar et al. 2019 Thm 1: (eps/2, delta/2) when sigma_1^2 = 32 L^2 log(2/delta)/(eps/2)^2
and lam >= r beta / (eps n)); J is mu_J-strongly convex, so ||theta_2 - theta_1|| <=
sqrt(2 alpha / mu_J) and theta_2 - theta_1 + H is a Gaussian mechanism of sensitivity
2 sqrt(2 alpha / mu_J); basic composition and post-processing (the projection).
"""

from __future__ import annotations

import math

import numpy as np
from dp_accounting.dp_event import ComposedDpEvent, GaussianDpEvent

from .. import _validation as v
from .._random import make_rng
from ..accounting import gaussian_sigma
from ..optim.accelerated import certified_minimize
from ..release import Release
from .events import ConstrainedObjPertDpEvent
from .glm import GLMData, hessian_rank
from .privacy import calibrate_noise, check_privacy, pld_epsilon, pld_interval
from .sets import ConstraintSet


def _check_set(constraint, d: int) -> ConstraintSet:
    if not isinstance(constraint, ConstraintSet):
        raise TypeError(f"constraint must be a ConstraintSet, got {type(constraint).__name__}")
    if constraint.d != d:
        raise ValueError(f"constraint set has dimension {constraint.d}, data has {d}")
    return constraint


def _run(
    data: GLMData,
    constraint: ConstraintSet,
    *,
    epsilon: float,
    delta: float,
    lam: float,
    ridge: float,
    rank: int,
    lipschitz: float,
    accuracy: float,
    paper_sigmas: tuple[float, float],
    paper_sensitivity: float,
    calibration: str,
    rng: np.random.Generator,
    max_iter: int,
    algorithm: str,
) -> Release:
    """Shared body of Algorithms 1-2; J's ridge is lam + ridge / 2 (ridge = the loss's own)."""
    n, d = data.n, data.d
    beta = data.smoothness
    lam_eff = lam + ridge / 2.0
    mu_J = 2.0 * lam_eff
    sensitivity = 2.0 * math.sqrt(2.0 * accuracy / mu_J)  # of theta_2 - theta_1, tight proof

    def objpert(sigma1: float) -> ConstrainedObjPertDpEvent:
        return ConstrainedObjPertDpEvent(sigma1, lam_eff, beta, lipschitz, rank, n)

    if calibration == "paper":
        sigma1, sigma2 = paper_sigmas
        # the paper's own sensitivity bound for H (looser): priced as the paper does
        event = ComposedDpEvent([objpert(sigma1), GaussianDpEvent(sigma2 / paper_sensitivity)])
        spent = epsilon  # by Thm 1 / Thm 3 (Lemma 5 + Gaussian mechanism, basic composition)
    else:
        eps_min = objpert(1.0).min_epsilon
        eps_out = (epsilon - eps_min) / 2.0
        sigma2 = gaussian_sigma(eps_out, delta / 2.0, sensitivity)
        out = GaussianDpEvent(sigma2 / sensitivity)
        sigma1, spent = calibrate_noise(
            lambda s: ComposedDpEvent([objpert(s), out]),
            epsilon,
            delta,
            paper_sigmas[0],
            key=("app-objp", lam_eff, beta, lipschitz, rank, n, sigma2 / sensitivity),
        )
        event = ComposedDpEvent([objpert(sigma1), out])

    G = rng.normal(0.0, sigma1, d)
    lin = G / n

    def grad(w):
        return data.grad(w) + ridge * w + lin + 2.0 * lam * w

    radius = constraint.l2_radius
    cert = certified_minimize(
        grad,
        constraint.project,
        np.zeros(d),
        smoothness=beta + ridge + 2.0 * lam,
        strong_convexity=mu_J,
        accuracy=accuracy,
        max_iter=max_iter,
        gradient_scale=lipschitz + float(np.linalg.norm(lin)) + mu_J * radius,
    )
    H = rng.normal(0.0, sigma2, d)
    theta = constraint.project(cert.theta + H)
    info = {
        "algorithm": algorithm,
        "calibration": calibration,
        "epsilon": spent,
        "epsilon_pld": spent
        if calibration == "accountant"
        else pld_epsilon(event, delta, 1, pld_interval(epsilon)),
        "delta": delta,
        "pld_interval": pld_interval(epsilon),
        "sigma1": sigma1,
        "sigma2": sigma2,
        "lam": lam,
        "ridge": ridge,
        "accuracy": accuracy,
        "certified_gap": cert.gap_bound,
        "n_iter": cert.n_iter,
        "lipschitz": lipschitz,
        "smoothness": beta,
        "rank": rank,
    }
    return Release(theta, event, info)


def _common(X, y, loss, constraint, epsilon, delta, row_bound, label_bound, calibration):
    epsilon, delta = check_privacy(epsilon, delta, calibration)
    data = GLMData(X, y, loss, row_bound, q=2.0, label_bound=label_bound)
    constraint = _check_set(constraint, data.d)
    lipschitz = data.lipschitz(constraint.l2_radius)
    rank = min(data.d, 2 * hessian_rank(data.loss))
    return epsilon, delta, data, constraint, lipschitz, rank


def approx_objective_perturbation(
    X,
    y,
    loss,
    constraint: ConstraintSet,
    *,
    epsilon: float,
    delta: float,
    row_bound: float,
    label_bound: float | None = None,
    lam: float | None = None,
    accuracy: float | None = None,
    calibration: str = "accountant",
    random_state=None,
    max_iter: int = 100_000,
) -> Release:
    """Algorithm 1 of Su et al. (App-ObjP): (epsilon, delta)-DP, proper, for convex GLM losses.

    Privacy: Thm 1 (via Lemma 5 and the Gaussian mechanism); utility: Thm 2,
    O(L G_C sqrt(log(1/delta)) / (eps n) + L ||C||_2 / sqrt(n)).

    Args:
        X, y: rows with ||z_i||_2 <= ``row_bound`` (declared, checked) and labels.
        loss: a GLM loss (``"logistic"``, ``"huber"``, ``"linear"``, or ``"squared"``
            with ``label_bound``, then Lipschitz over C with L = R (R rho_C + B)).
        constraint: the convex body C (:mod:`dpconvex.sco.sets`).
        lam: regularization; default max(L / (sqrt(n) ||C||_2), r beta / (eps n)) —
            Thm 2's choice, raised to Thm 1's condition when n is small. A given
            ``lam`` below r beta / (eps n) is refused.
        accuracy: alpha; default Thm 2's min{L ||C|| / n^1.5,
            eps^2 L ||C||^3 / (G_C^2 log(1/delta) n^2.5)}.
        calibration: ``"paper"``: sigma_1^2 = 128 L^2 log(2.5/delta) / eps^2 (Alg. 1's
            value, the most conservative of the three the paper prints) and
            sigma_2^2 = 64 alpha log(2.5/delta) / (lam eps^2) exactly as printed;
            ``"accountant"`` (default): H calibrated by the analytic Gaussian at
            ((eps - eps_min)/2, delta/2) with the tight sensitivity
            2 sqrt(2 alpha / (2 lam)) (J is 2 lam-strongly convex; the paper uses lam),
            and sigma_1 the smallest noise for which the PLD of Lemma 5's
            (eps, delta)-family composed with H meets (epsilon, delta).

    Returns:
        :class:`~dpconvex.mechanisms.Release` with ``theta`` in C and the event
        ``ComposedDpEvent([ConstrainedObjPertDpEvent, GaussianDpEvent])``.

    Raises:
        ValueError: bad inputs, rows above ``row_bound``, lam below Thm 1's condition.
        CertificateError: the solver could not certify accuracy alpha (nothing released).
    """
    epsilon, delta, data, constraint, lipschitz, rank = _common(
        X, y, loss, constraint, epsilon, delta, row_bound, label_bound, calibration
    )
    n, beta = data.n, data.smoothness
    diam = constraint.diameter
    need = rank * beta / (epsilon * n)
    if lam is None:
        lam = max(lipschitz / (math.sqrt(n) * diam), need)
    lam = v.positive("lam", lam)
    if lam < need:
        raise ValueError(
            f"lam={lam:.4g} is below r beta / (eps n) = {need:.4g}: Algorithm 1 is not "
            "private there; pass a larger lam or leave it None"
        )
    if accuracy is None:
        width = constraint.gaussian_width()
        accuracy = min(
            lipschitz * diam / n**1.5,
            epsilon**2 * lipschitz * diam**3 / (width**2 * math.log(1 / delta) * n**2.5),
        )
    accuracy = v.positive("accuracy", accuracy)
    log_term = math.log(2.5 / delta)
    paper = (
        math.sqrt(128.0 * lipschitz**2 * log_term) / epsilon,
        math.sqrt(64.0 * accuracy * log_term / (lam * epsilon**2)),
    )
    return _run(
        data,
        constraint,
        epsilon=epsilon,
        delta=delta,
        lam=lam,
        ridge=0.0,
        rank=rank,
        lipschitz=lipschitz,
        accuracy=accuracy,
        paper_sigmas=paper,
        paper_sensitivity=math.sqrt(8.0 * accuracy / lam),
        calibration=calibration,
        rng=make_rng(random_state),
        max_iter=max_iter,
        algorithm="App-ObjP (Su, Zhao & Wang, Alg. 1)",
    )


def approx_objective_perturbation_sc(
    X,
    y,
    loss,
    constraint: ConstraintSet,
    *,
    strong_convexity: float,
    epsilon: float,
    delta: float,
    row_bound: float,
    label_bound: float | None = None,
    accuracy: float | None = None,
    calibration: str = "accountant",
    random_state=None,
    max_iter: int = 100_000,
) -> Release:
    """Algorithm 2 of Su et al. (App-ObjP-SC) for l(w; x) = f(<z, w>; y) + (mu/2)||w||_2^2.

    ``strong_convexity`` = mu, the l2 modulus (declared, data-free); Delta = mu C_min^2 is
    the modulus in ||.||_C (Lemma 10). Privacy: Thm 3; utility: Thm 4,
    O(L^2 ||C||^2 / (Delta n) + G_C^2 L^2 log(1/delta) / (Delta n^2 eps^2)) (first term as in
    the proof and abstract; the statement's extra 1/eps is a misprint).

    Departure from the printed box: lam = max(r beta / (eps n) - mu / 2, 0)
    instead of max(r beta / (eps n) - Delta, 0). The loss's own ridge (mu/2)||w||^2 is
    moved into J's regularizer, which is then lam + mu/2 >= r beta / (eps n): exactly
    Algorithm 1's condition, so Lemma 5 at (eps/2, delta/2) applies with L the Lipschitz
    constant of the GLM part. The printed choice leaves J only r beta / (eps n)-strongly
    convex, half of Algorithm 1's, without a proof that the eps/2 split still holds.
    H's sensitivity uses the l2 modulus of J, 2 (lam + mu/2), in place of
    Delta / ||C||_2^2 <= mu (both are valid; ours is tighter). The paper calibration
    keeps sigma_2^2 = 64 alpha log(2.5/delta) ||C||^2 / (Delta eps^2) as printed.

    Default accuracy: Thm 4's min{L^2 ||C||^2 / (Delta n^2),
    L^4 ||C||^6 eps^2 / (Delta^3 n^4 G_C^2 log(1/delta))}.
    """
    epsilon, delta, data, constraint, lipschitz, rank = _common(
        X, y, loss, constraint, epsilon, delta, row_bound, label_bound, calibration
    )
    mu = v.positive("strong_convexity", strong_convexity)
    n, beta = data.n, data.smoothness
    diam = constraint.diameter
    lam = max(rank * beta / (epsilon * n) - mu / 2.0, 0.0)
    try:
        c_min = constraint.inner_radius()
    except NotImplementedError:
        c_min = diam  # then Delta / ||C||^2 = mu
    big_delta = mu * c_min**2
    if accuracy is None:
        width = constraint.gaussian_width()
        accuracy = min(
            lipschitz**2 * diam**2 / (big_delta * n**2),
            lipschitz**4
            * diam**6
            * epsilon**2
            / (big_delta**3 * n**4 * width**2 * math.log(1 / delta)),
        )
    accuracy = v.positive("accuracy", accuracy)
    log_term = math.log(2.5 / delta)
    paper = (
        math.sqrt(128.0 * lipschitz**2 * log_term) / epsilon,
        math.sqrt(64.0 * accuracy * log_term * diam**2 / (big_delta * epsilon**2)),
    )
    return _run(
        data,
        constraint,
        epsilon=epsilon,
        delta=delta,
        lam=lam,
        ridge=mu,
        rank=rank,
        lipschitz=lipschitz,
        accuracy=accuracy,
        paper_sigmas=paper,
        paper_sensitivity=math.sqrt(8.0 * accuracy * diam**2 / big_delta),
        calibration=calibration,
        rng=make_rng(random_state),
        max_iter=max_iter,
        algorithm="App-ObjP-SC (Su, Zhao & Wang, Alg. 2)",
    )
