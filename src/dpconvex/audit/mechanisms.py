"""Auditors: each runs a dpconvex mechanism on worst-case neighbouring inputs.

Every entry of :data:`AUDITS` maps a name to ``builder(fast) -> (run, claimed_epsilon,
delta)`` where ``run(use_z, rng)`` executes the library's own mechanism once on Z
(``use_z``) or on its neighbour Z' and returns a scalar statistic, and the claimed
epsilon is what the library's accountant reports for that run's event.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ..accounting import PrivacyAccountant, dpsgd_event, gaussian_sigma
from ..mechanisms import amp, dpsgd, output_perturbation, output_sensitivity
from ..mechanisms.adassp import adassp, adassp_event
from .linear_loss import LinearLoss
from .mechanisms_bcd import AUDITS_BCD
from .mechanisms_ganesh import AUDITS_GANESH
from .mechanisms_sco import AUDITS_SCO

DELTA = 1e-5


# an exact one-dimensional instance (density in closed form, below the Thm 3.1 bound)
_Z = (np.array([[0.5], [-0.3], [0.8]]), np.array([1.0, -1.0, -1.0]))
_Z_PLUS = (np.vstack([_Z[0], [[1.0]]]), np.append(_Z[1], 1.0))


def _first_coordinate_audit(mechanism, loss, z, z_prime, **settings):
    """``run`` releases theta[0] of ``mechanism`` on Z or Z' (unit rows, clip 1, Newton);
    the claim is the PLD epsilon of the event that mechanism reports (data-free)."""
    settings = dict(clip=1.0, row_bound=1.0, solver="newton", **settings)

    def run(use_z, rng):
        X, y = z if use_z else z_prime
        return float(mechanism(X, y, loss, rng=rng, **settings).theta[0])

    event = mechanism(*z, loss, rng=np.random.default_rng(0), **settings).event
    return run, PrivacyAccountant("pld").compose(event).get_epsilon(DELTA), DELTA


def _amp_linear(fast: bool):
    """Lemma 3.4: Z = {x = 1}, Z' = {}; objective perturbation is a Gaussian mechanism."""
    z, empty = (np.array([[1.0]]), np.ones(1)), (np.zeros((0, 1)), np.ones(0))
    return _first_coordinate_audit(
        amp, LinearLoss(), z, empty, lam=1.0, sigma=2.0, tau=1e-6, sigma_out=1e-3
    )


def _amp_exact_instance(fast: bool):
    """Logistic loss, Z = 3 points, Z' = Z plus (1.0, +1); sigma = lam = 1."""
    return _first_coordinate_audit(
        amp, "logistic", _Z_PLUS, _Z, lam=1.0, sigma=1.0, tau=1e-6, sigma_out=1e-3
    )


def _output_perturbation(fast: bool):
    """Output perturbation on the same instance, calibrated to epsilon = 1."""
    lam, tau = 1.0, 1e-6
    sigma = gaussian_sigma(1.0, DELTA, output_sensitivity(1.0, lam, tau))
    return _first_coordinate_audit(
        output_perturbation, "logistic", _Z_PLUS, _Z, lam=lam, sigma=sigma, tau=tau
    )


def _dpsgd(fast: bool):
    """A canary among zero rows: its clipped gradient has norm C at every step it is sampled."""
    n_zero, q, steps, z, clip = 99, 0.2, 10, 1.0, 0.1
    zeros = np.zeros((n_zero, 1))
    X_z, X_zp = np.vstack([zeros, [[1.0]]]), np.vstack([zeros, [[0.0]]])
    y = np.ones(n_zero + 1)

    def run(use_z, rng):
        rel = dpsgd(
            X_z if use_z else X_zp,
            y,
            "logistic",
            noise_multiplier=z,
            clip=clip,
            sampling_rate=q,
            steps=steps,
            learning_rate=0.01,
            optimizer="sgd",
            row_bound=1.0,
            rng=rng,
        )
        return float(rel.theta[0])

    claimed = PrivacyAccountant("pld").compose(dpsgd_event(z, q, steps)).get_epsilon(DELTA)
    return run, claimed, DELTA


def _adassp(fast: bool):
    """AdaSSP (Wang, arXiv 1803.02596, Algorithm 2): a canary (x = 1, y = 1) among 20 rows
    (x = 1/2, y = 0), so X^T y moves by its whole sensitivity; statistic: theta[0]."""
    base_X, base_y = np.full((20, 1), 0.5), np.zeros(20)
    X_z, y_z = np.vstack([base_X, [[1.0]]]), np.append(base_y, 1.0)
    z = 2.0

    def run(use_z, rng):
        X, y = (X_z, y_z) if use_z else (base_X, base_y)
        rel = adassp(X, y, noise_multiplier=z, row_bound=1.0, y_bound=1.0, delta=DELTA, rng=rng)
        return float(rel.theta[0])

    claimed = PrivacyAccountant("pld").compose(adassp_event(z)).get_epsilon(DELTA)
    return run, claimed, DELTA


AUDITS: dict[str, Callable] = {
    "amp-linear": _amp_linear,
    "amp-exact-instance": _amp_exact_instance,
    "output-perturbation": _output_perturbation,
    "dpsgd": _dpsgd,
    "adassp": _adassp,
    # the DP-SCO, DP-MBCD and thesis mechanisms' auditors live in their own modules
    **AUDITS_SCO,
    **AUDITS_BCD,
    **AUDITS_GANESH,
}
