"""Immutable descriptions (DpEvents) of dpconvex's mechanisms.

They subclass ``dp_accounting.dp_event.DpEvent``, so they nest inside
dp_accounting's own events (``ComposedDpEvent``, ``SelfComposedDpEvent``,
``PoissonSampledDpEvent``, ``RepeatAndSelectDpEvent``) and are priced by the
rules of :mod:`dpconvex.accounting.registry`. An event holds only
data-independent parameters; parameters are validated on construction.
"""

from __future__ import annotations

import math

import attr
from dp_accounting import dp_event

from .. import _validation as v
from .limits import bounded, bounded_ratio, check_count

# Re-exported so that users can build every event from one module.
ComposedDpEvent = dp_event.ComposedDpEvent
SelfComposedDpEvent = dp_event.SelfComposedDpEvent
PoissonSampledDpEvent = dp_event.PoissonSampledDpEvent
GaussianDpEvent = dp_event.GaussianDpEvent
RepeatAndSelectDpEvent = dp_event.RepeatAndSelectDpEvent
DpEvent = dp_event.DpEvent


def _positive(name):
    def check(instance, attribute, value):
        bounded(name, value)

    return check


def _check_lam_beta(instance, attribute, value):
    lam, _ = v.regularization_exceeds_smoothness(instance.lam, instance.beta)
    bounded("lam", lam)


def _check_objpert_ratio(event) -> None:
    bounded_ratio("lipschitz / sigma", event.lipschitz / event.sigma, "change sigma or lipschitz")


@attr.s(frozen=True, slots=True, auto_attribs=True)
class ObjectivePerturbationDpEvent(DpEvent):
    """Objective perturbation: release argmin sum_i f(x_i^T theta) + lam/2 ||theta||^2 + b^T theta.

    The noise is b ~ N(0, sigma^2 I) and the release is the exact minimizer.

    Priced by Redberg, Koskela & Wang (arXiv 2401.00583), Thm 3.1 / App. D.3 (PLD) and
    Thm 3.2 (RDP). Valid for GLM
    losses with f beta-smooth, per-example gradient norm <= ``lipschitz`` and
    ``lam > beta``; add/remove neighbours.
    """

    sigma: float = attr.ib(validator=_positive("sigma"))
    lam: float = attr.ib(validator=_check_lam_beta)
    beta: float = attr.ib(validator=_check_lam_beta)
    lipschitz: float = attr.ib(validator=_positive("lipschitz"))

    def __attrs_post_init__(self):
        _check_objpert_ratio(self)


@attr.s(frozen=True, slots=True, auto_attribs=True)
class AmpDpEvent(DpEvent):
    """Algorithm 1 of Redberg, Koskela & Wang (arXiv 2401.00583): AMP with gradient clipping.

    An approximate minimizer plus output noise: objective perturbation (``sigma``, ``lam``,
    ``beta``, ``lipschitz`` = clip threshold C) solved to ||grad L^P|| <= ``tau``, then
    N(0, sigma_out^2 I) added. Priced by the paper's Thm 4.1 (RDP) and by the PLRV of
    objective perturbation summed with the Gaussian PLRV of sensitivity 2 tau / lam
    (§D.3.1).
    """

    sigma: float = attr.ib(validator=_positive("sigma"))
    lam: float = attr.ib(validator=_check_lam_beta)
    beta: float = attr.ib(validator=_check_lam_beta)
    lipschitz: float = attr.ib(validator=_positive("lipschitz"))
    tau: float = attr.ib(validator=_positive("tau"))
    sigma_out: float = attr.ib(validator=_positive("sigma_out"))

    def __attrs_post_init__(self):
        _check_objpert_ratio(self)
        bounded_ratio(
            "the output step's noise multiplier sigma_out * lam / (2 tau)",
            self.output_noise_multiplier,
            "change sigma_out, tau or lam",
        )

    @property
    def objective_perturbation(self) -> ObjectivePerturbationDpEvent:
        return ObjectivePerturbationDpEvent(self.sigma, self.lam, self.beta, self.lipschitz)

    @property
    def output_noise_multiplier(self) -> float:
        """sigma_out / (2 tau / lam): the output step as a unit-sensitivity Gaussian."""
        return self.sigma_out * self.lam / (2.0 * self.tau)


@attr.s(frozen=True, slots=True, auto_attribs=True)
class RandomChoiceDpEvent(DpEvent):
    """One of ``events``, picked at random independently of the data, is run (its pick unknown).

    Renyi divergence is jointly quasi-convex (van Erven & Harremoes 2014, Thm 13),
    so the RDP of such a mixture is at most the largest of the events' RDP at every
    order; that is how :class:`~dpconvex.accounting.RdpAccountant` prices it. Used
    by private random search when candidate settings change the privacy cost.
    RDP accounting only.
    """

    events: list

    def __attrs_post_init__(self):
        if not self.events or not all(isinstance(e, DpEvent) for e in self.events):
            raise ValueError("RandomChoiceDpEvent needs a non-empty list of DpEvents")


def dpsgd_event(noise_multiplier: float, sampling_rate: float, steps: int) -> DpEvent:
    """DP-SGD with Poisson subsampling: ``steps`` compositions of the subsampled Gaussian.

    ``noise_multiplier`` is the noise standard deviation divided by the clipping
    norm, ``sampling_rate`` the Poisson inclusion probability.
    """
    bounded("noise_multiplier", noise_multiplier)
    q = v.sampling_rate("sampling_rate", sampling_rate)
    steps = check_count("steps", steps)
    return SelfComposedDpEvent(PoissonSampledDpEvent(q, GaussianDpEvent(noise_multiplier)), steps)


def tuned_event(event: DpEvent, mean: float, shape: float = math.inf) -> DpEvent:
    """Papernot-Steinke private selection: run ``event`` K times, release the best run.

    K ~ Poisson(mean) for ``shape = inf`` (Papernot & Steinke 2022, Thm 6) or
    truncated negative binomial with that shape and mean for 0 <= shape < inf
    (Thm 2; shape 1 is geometric, 0 logarithmic). Priced by RDP only. A truncated
    negative binomial of mean 1 is K = 1 (it has no mass below 1): one run, whose
    event is ``event`` itself.
    """
    mean = v.finite("mean", mean)
    if mean < 1:
        raise ValueError(f"mean number of runs must be >= 1, got {mean}")
    shape = float(shape)
    if math.isnan(shape) or shape < 0:
        raise ValueError(f"shape must be >= 0 (inf for Poisson), got {shape}")
    if mean == 1 and math.isfinite(shape):
        return event
    return RepeatAndSelectDpEvent(event, mean, shape)


def _positive_int_attr(name):
    def check(instance, attribute, value):
        check_count(name, value)

    return check


@attr.s(frozen=True, slots=True, auto_attribs=True)
class DiscreteGaussianDpEvent(DpEvent):
    """Discrete Gaussian noise N_Z(0, sigma^2)^d added to an integer vector (CKS 2020).

    All quantities are in lattice units (1 = one grid step): the query takes
    values in Z^d and two neighbours' answers differ by an integer vector of l2
    norm at most ``sensitivity``; ``sigma`` is the discrete Gaussian parameter.
    Built for snapped releases by
    :func:`dpconvex.discrete_noise.gaussian_release_event`.

    Priced, for the neighbouring relation under which ``sensitivity`` holds, by
    :mod:`dpconvex.accounting.discrete`: RDP alpha floor(Delta^2) / (2 sigma^2)
    (CKS 2020, Prop. 5 and Thm 14); PLD exactly for ``dimension`` 1 (the pair of
    CKS Thm 7) and refused for ``dimension`` > 1.
    """

    sigma: float = attr.ib(validator=_positive("sigma"))
    sensitivity: float = attr.ib(validator=_positive("sensitivity"))
    dimension: int = attr.ib(default=1, validator=_positive_int_attr("dimension"))

    def __attrs_post_init__(self):
        bounded_ratio(
            "sensitivity / sigma", self.sensitivity / self.sigma, "change sigma or sensitivity"
        )


@attr.s(frozen=True, slots=True, auto_attribs=True)
class DiscreteLaplaceScaleDpEvent(DpEvent):
    """Discrete Laplace noise of a given *scale* (P proportional to exp(-|x|/scale)) on Z^d.

    Not dp_accounting's ``DiscreteLaplaceDpEvent(noise_parameter, sensitivity)``, whose
    parameter is the inverse, 1 / scale (and which has no dimension); files written
    before the rename name this class ``DiscreteLaplaceDpEvent``, and still load.

    Lattice units, as :class:`DiscreteGaussianDpEvent`; ``sensitivity`` bounds the
    l1 norm of the integer difference of neighbours' answers. Pure epsilon-DP with
    epsilon = floor(sensitivity) / scale. Priced by
    :mod:`dpconvex.accounting.discrete` (exact 1-D loss distribution, else the
    randomized-response pair that dominates every epsilon-DP mechanism). Not priced
    as dp_accounting's continuous ``LaplaceDpEvent``, which would understate it.
    """

    scale: float = attr.ib(validator=_positive("scale"))
    sensitivity: float = attr.ib(validator=_positive("sensitivity"))
    dimension: int = attr.ib(default=1, validator=_positive_int_attr("dimension"))

    def __attrs_post_init__(self):
        bounded_ratio(
            "sensitivity / scale", self.sensitivity / self.scale, "change scale or sensitivity"
        )
