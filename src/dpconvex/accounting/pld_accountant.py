"""dp_accounting's PLD accountant, extended with every event of the pricing registry.

:class:`PLDAccountant` composes the registered events' privacy-loss random variables
(:mod:`dpconvex.accounting.registry`), also under Poisson subsampling, with certified
round-off (:func:`dpconvex.accounting.pld.compose_counts`), and hands every other event
to dp_accounting. :func:`composed_plds` composes a public ledger once per process;
:func:`base_delta_from_pld` gives the privacy profile of a tuning run's base.
"""

from __future__ import annotations

import math

import numpy as np
from dp_accounting import dp_event, privacy_accountant
from dp_accounting.pld import pld_privacy_accountant

from . import pld as _pld
from . import registry
from .caches import _BASE_PLDS, _COMPOSED, _event_key, _Uncacheable
from .event_checks import validate_event
from .events import RandomChoiceDpEvent
from .gaussian_pld import approximate_gaussian_pld, gaussian_loss_pmfs, grid_points

NeighboringRelation = privacy_accountant.NeighboringRelation
_CompositionError = privacy_accountant.PrivacyAccountant.CompositionErrorDetails
_ADD_REMOVE = NeighboringRelation.ADD_OR_REMOVE_ONE


class PLDAccountant(pld_privacy_accountant.PLDAccountant):
    """dp_accounting's PLD accountant extended with objective perturbation and AMP.

    Objective perturbation enters through its dominating pair (Redberg, Koskela & Wang,
    arXiv 2401.00583, App. D.3), AMP through that pair composed with its Gaussian output
    step (their §D.3.1); both
    also under Poisson subsampling (:func:`dpconvex.accounting.pld.poisson_subsample`).
    Discretization is pessimistic, so reported epsilons are upper bounds.

    ``subsampled_add_pair`` picks the add-direction pair of our Poisson-subsampled
    events, ``"thm11"`` (Zhu, Dong & Wang 2022, Thm 11) or ``"mixture"``
    (P, (1-q)P + qQ); both are valid (:func:`dpconvex.accounting.pld.poisson_subsample`).
    After composition, ``used_subsampled_pair`` tells whether the choice mattered.
    """

    def __init__(
        self,
        neighboring_relation: NeighboringRelation = _ADD_REMOVE,
        value_discretization_interval: float = 1e-4,
        subsampled_add_pair: str = "thm11",
    ):
        super().__init__(neighboring_relation, value_discretization_interval)
        if subsampled_add_pair not in _pld.ADD_PAIRS:
            raise ValueError(
                f"subsampled_add_pair must be one of {_pld.ADD_PAIRS}, got {subsampled_add_pair!r}"
            )
        self.subsampled_add_pair = subsampled_add_pair
        self.used_subsampled_pair = False

    def supports(self, event: dp_event.DpEvent) -> bool:
        """Whether ``event`` can be composed: checked with its real counts (dp_accounting
        checks with count 0, which hides a Gaussian composed too often for the grid)."""
        return self._maybe_compose(event, 1, False) is None

    def _our_loss_pmfs(self, event) -> tuple[_pld.LossPmf, _pld.LossPmf | None]:
        """(remove, add) PLRVs of a registered event (add None: symmetric)."""
        h = self._value_discretization_interval
        if isinstance(event, dp_event.PoissonSampledDpEvent):
            q = event.sampling_probability
            self.used_subsampled_pair |= 0 < q < 1
            return _pld.poisson_subsample(
                registry.event_loss_pmf(event.event, h), q, self.subsampled_add_pair
            )
        return registry.event_loss_pmf(event, h), None

    def _compose_ours(self, remove: _pld.LossPmf, add: _pld.LossPmf | None, count: int) -> None:
        """Compose ``count`` copies of our PLRVs into the running PLD, with certified round-off.

        dp_accounting's ``self_compose`` is a plain FFT power, whose round-off
        (~count * 1e-16 in the low Fourier modes, i.e. ~1e-18 of possibly
        negative mass in every bin) is not pessimistic at large epsilon; the
        composition here goes through :func:`dpconvex.accounting.pld.compose_counts`,
        whose every bin is a proven upper bound, in one step with the running PLD.
        """
        current = self._pld
        cur_remove = _as_loss_pmf(current._pmf_remove)
        new_remove = _pld.compose_counts([(cur_remove, 1), (remove, count)])
        if add is None and current._symmetric:
            self._pld = _pld.to_pld(new_remove)
            return
        cur_add = cur_remove if current._symmetric else _as_loss_pmf(current._pmf_add)
        new_add = _pld.compose_counts([(cur_add, 1), (remove if add is None else add, count)])
        self._pld = _pld.to_pld(new_remove, new_add)

    def _maybe_compose(self, event, count, do_compose):
        inner = event.event if isinstance(event, dp_event.PoissonSampledDpEvent) else event
        if registry.prices_pld(inner):
            if self.neighboring_relation is not _ADD_REMOVE:
                return registry.relation_error(inner, self.neighboring_relation)
            refusal = registry.pld_refusal(inner)
            if refusal is not None:
                return _CompositionError(invalid_event=inner, error_message=refusal)
            if do_compose and not (
                isinstance(event, dp_event.PoissonSampledDpEvent)
                and event.sampling_probability == 0
            ):
                self._compose_ours(*self._our_loss_pmfs(event), count)
            return None
        if isinstance(inner, dp_event.GaussianDpEvent):
            z = inner.noise_multiplier
            if inner is event and z > 0 and count > 0:  # count Gaussians are one
                z = z / math.sqrt(count)
            refusal = _gaussian_grid_refusal(z, self._value_discretization_interval)
            if refusal is not None:
                return _CompositionError(invalid_event=inner, error_message=refusal)
            if self._compose_gaussian(event, count, do_compose):
                return None
        refusal = _grid_refusal(event, self._value_discretization_interval)
        if refusal is not None:
            return _CompositionError(invalid_event=event, error_message=refusal)
        if do_compose and count > 1 and not isinstance(event, _STRUCTURE):
            return self._compose_leaf(event, count)
        return super()._maybe_compose(event, count, do_compose)

    def _compose_leaf(self, event, count: int):
        """``count`` compositions of one of dp_accounting's events, with certified round-off.

        dp_accounting builds the event's PLD; its ``count``-fold composition (with the
        running PLD) goes through :func:`dpconvex.accounting.pld.compose_counts`, whose
        window is bounded before anything is allocated (dp_accounting's own
        ``self_compose`` tried to allocate terabytes for 10^9 Laplace mechanisms).
        """
        single = PLDAccountant(
            self.neighboring_relation, self._value_discretization_interval, self.subsampled_add_pair
        )
        error = single._maybe_compose(event, 1, True)
        if error is not None:
            return error
        self.used_subsampled_pair |= single.used_subsampled_pair
        if single._contains_non_dp_event:
            self._contains_non_dp_event = True
            return None
        pld = single._pld
        add = None if pld._symmetric else _as_loss_pmf(pld._pmf_add)
        self._compose_ours(_as_loss_pmf(pld._pmf_remove), add, count)
        return None

    def _compose_gaussian(self, event, count: int, do_compose: bool) -> bool:
        """Compose a (Poisson-subsampled) Gaussian with the numpy-built PLD; False: not handled.

        The PMF dp_accounting builds (:mod:`dpconvex.accounting.gaussian_pld`), four to
        five times faster, composed ``count`` times and with the running PLD by
        :func:`dpconvex.accounting.pld.compose_counts`, whose bins are certified upper
        bounds (dp_accounting's plain FFT power can fall below the true delta at small
        deltas). ``count`` unsubsampled Gaussians of noise z are one Gaussian of noise
        z / sqrt(count), exactly. Other neighbouring relations and zero noise go to
        dp_accounting.
        """
        sampled = isinstance(event, dp_event.PoissonSampledDpEvent)
        z = (event.event if sampled else event).noise_multiplier
        q = event.sampling_probability if sampled else 1.0
        if self.neighboring_relation is not _ADD_REMOVE or not z > 0 or not 0 < q <= 1:
            return False
        if do_compose:
            h = self._value_discretization_interval
            if _pld.approximate.get():  # a calibration's search only: fast, not certified
                if q < 1:
                    self._pld = self._pld.compose(approximate_gaussian_pld(z, h, q, count))
                else:
                    self._pld = self._pld.compose(approximate_gaussian_pld(z / math.sqrt(count), h))
            elif q < 1:
                self._compose_ours(*gaussian_loss_pmfs(z, h, q), count)
            else:  # k Gaussians of noise z are one Gaussian of noise z / sqrt(k)
                self._compose_ours(gaussian_loss_pmfs(z / math.sqrt(count), h)[0], None, 1)
        return True


def _gaussian_grid_refusal(noise_multiplier: float, h: float) -> str | None:
    """Why a Gaussian of this noise multiplier cannot be put on a PLD grid of step h, or None.

    Its privacy loss at x standard deviations from the mean is 1/(2 s^2) +- x/s, so the
    grid spans about 2 (1/(2 s^2) + 10/s) / h points; a tiny s (say 1e-5 at h = 1e-4)
    would need about 1e14 of them, where dp_accounting tries to allocate the array.
    """
    s = float(noise_multiplier)
    if not s > 0:
        return None  # left to the event checks
    points = grid_points(s, h)
    cap = _pld.current_grid_cap()
    if points <= cap:
        return None
    shown = f"{points:.2g}" if math.isfinite(points) else "more than 1e300"
    return (
        f"noise multiplier {s:.3g} is too small for PLD accounting at grid step {h:g}: it "
        f"needs {shown} grid points (at most {cap:.0e}); raise the noise or "
        "the grid step, or use RDP accounting"
    )


#: Events whose structure dp_accounting's accountant walks (not priced themselves).
_STRUCTURE = (
    dp_event.ComposedDpEvent,
    dp_event.SelfComposedDpEvent,
    dp_event.NoOpDpEvent,
    dp_event.NonPrivateDpEvent,
)


def _grid_refusal(event, h: float) -> str | None:
    """Why dp_accounting's PLD of ``event`` would need too many grid points, or None.

    The Laplace mechanism of parameter b has privacy losses in [-1/b, 1/b], the
    discrete Laplace of parameter a and sensitivity k in [-a k, a k]; dp_accounting
    allocates the whole range.
    """
    if isinstance(event, dp_event.LaplaceDpEvent) and event.noise_multiplier > 0:
        span, what = 2.0 / event.noise_multiplier, "the Laplace mechanism"
    elif isinstance(event, dp_event.DiscreteLaplaceDpEvent):
        span, what = 2.0 * event.noise_parameter * event.sensitivity, "the discrete Laplace"
    else:
        return None
    try:
        _pld.check_grid_points(span / h + 3, what, h)
    except _pld.GridTooLargeError as error:
        return str(error)
    return None


def _as_loss_pmf(pmf) -> _pld.LossPmf:
    """A dp_accounting PLD PMF (sparse or dense) as a :class:`~dpconvex.accounting.pld.LossPmf`.

    A sparse PMF is made dense only after its span is checked (:data:`pld.MAX_GRID_POINTS`).
    """
    losses = getattr(pmf, "_loss_probs", None)
    if losses:
        span = max(losses) - min(losses)
        _pld.check_grid_points(span + 1, "this mechanism", pmf._discretization)
    dense = pmf.to_dense_pmf()
    return _pld.LossPmf(
        dense._discretization,
        int(dense._lower_loss),
        np.asarray(dense._probs, dtype=float),
        float(dense._infinity_mass),
    )


def composed_plds(ledger: dp_event.DpEvent, h: float, slack: float = _pld.UNTILTED_SLACK) -> tuple:
    """The composed PLD(s) of ``ledger`` on grid step ``h``, round-off <= ``slack`` of any delta.

    One PLD, or two when the ledger has Poisson-subsampled registered events: one
    with Zhu-Dong-Wang's Thm 11 add-direction pair for all of them, one with the
    mixture pair (P, (1-q)P + qQ) (:func:`dpconvex.accounting.pld.poisson_subsample`).
    Each is a valid upper bound. ``slack = inf`` asks for the approximate PLD of a
    calibration search (Gaussians composed by a plain FFT power,
    :data:`dpconvex.accounting.pld.approximate`). A public ledger composed before in
    this process on the same grid is taken from the cache.
    """
    try:
        key = (_event_key(ledger), h, slack)
    except _Uncacheable:
        key = None
    if key is not None and (plds := _COMPOSED.get(key)) is not None:
        return plds
    token = _pld.slack_budget.set(min(slack, _pld.UNTILTED_SLACK))
    approximate = _pld.approximate.set(slack == math.inf)
    try:
        acc = PLDAccountant(value_discretization_interval=h)
        acc.compose(ledger)
        plds = (acc,)
        if acc.used_subsampled_pair:
            alt = PLDAccountant(value_discretization_interval=h, subsampled_add_pair="mixture")
            plds = (acc, alt.compose(ledger))
    finally:
        _pld.slack_budget.reset(token)
        _pld.approximate.reset(approximate)
    if key is not None:
        _COMPOSED.put(key, plds)
    return plds


def base_delta_from_pld(event, epsilons, h: float = 1e-4) -> np.ndarray | None:
    """delta(epsilon) of ``event`` by PLD accounting (upper bounds), None if PLD cannot price it.

    A data-independent random choice (:class:`RandomChoiceDpEvent`) gets the largest
    delta of its options: H_a is jointly convex, so a mixture with the same weights
    on both neighbours is at most the largest option's.
    """
    epsilons = np.atleast_1d(np.asarray(epsilons, dtype=float))
    if isinstance(event, RandomChoiceDpEvent):
        parts = [base_delta_from_pld(e, epsilons, h) for e in event.events]
        return None if any(p is None for p in parts) else np.max(parts, axis=0)
    try:
        key = (_event_key(event), h)
    except _Uncacheable:
        key = None
    plds = None if key is None else _BASE_PLDS.get(key)
    if plds is None:
        ledger = dp_event.ComposedDpEvent([event])
        try:
            validate_event(event)
        except ValueError:
            return None
        if not PLDAccountant(value_discretization_interval=h).supports(ledger):
            return None
        try:
            plds = composed_plds(ledger, h)
        except _pld.GridTooLargeError:
            return None  # too wide for a PLD grid: the RDP conversion alone prices it
        if key is not None:
            _BASE_PLDS[key] = plds
            while len(_BASE_PLDS) > 32:
                _BASE_PLDS.popitem(last=False)
    if key is not None:
        _BASE_PLDS.move_to_end(key)
    order = np.argsort(epsilons)  # dp_accounting wants ascending epsilons
    curves = [np.asarray(acc._pld.get_delta_for_epsilon(epsilons[order])) for acc in plds]
    out = np.empty(epsilons.size)
    out[order] = np.minimum.reduce(curves)
    return out
