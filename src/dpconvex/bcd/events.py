"""DpEvents of DP-MBCD: hidden-state (Chen & Liu, Thm 4.6) and composition (all iterates released).

Chen & Liu, *Hidden State Differential Private Mini-Batch Block Coordinate Descent for
Multi-convexity Optimization* (arXiv 2407.08233).

Both are data-free descriptions of one run, priced through the accountant registry of
:mod:`dpconvex.accounting` (``register_rdp`` / ``register_pld``), so they compose with
every other event of the library. Neighbours are add/remove: the batches are a
secret slot assignment (:func:`dpconvex.bcd.batches.secret_batches`) under which the
differing example sits in one uniformly random batch position j0 in every epoch
while every other example keeps its batch, and each batch's clipped gradient sum is
divided by the public batch capacity b, so a step that sees the differing example
moves by at most eta * C / b (sensitivity S = C, the per-example clip).
"""

from __future__ import annotations

import math

import attr
import numpy as np
from dp_accounting import dp_event

from .. import _validation as v
from ..accounting import pld as _pld
from ..accounting import register_pld, register_rdp
from . import hidden_state as hs

COMPOSITION_HINT = (
    "use the composition accountant instead (accountant='composition', "
    "dpconvex.bcd.composition_event), which holds without contraction"
)


def _schedule_tuple(noise) -> tuple[tuple[float, ...], ...]:
    o = hs._as_schedule(noise)
    return tuple(tuple(float(x) for x in row) for row in o)


def _schedule_repr(noise) -> str:
    flat = [x for row in noise for x in row]
    return f"<{len(noise)}x{len(noise[0])} schedule in [{min(flat):.4g}, {max(flat):.4g}]>"


def _positive(name):
    def check(instance, attribute, value):
        v.positive(name, value)

    return check


def _lipschitz(name):
    def check(instance, attribute, value):
        value = v.positive(name, value)
        if value > 1.0:
            raise ValueError(
                f"{name} must be <= 1, got {value}: the hidden-state bound "
                "(Chen & Liu, Thm 4.6) needs non-expansive maps (a prox is always 1-Lipschitz; "
                "Lemma 4.2's constant 2 is loose and voids the contraction)"
            )

    return check


@attr.s(frozen=True, slots=True, auto_attribs=True)
class HiddenStateDpEvent(dp_event.DpEvent):
    """Last iterate of one released block of DP-MBCD, intermediate iterates hidden.

    Priced by Chen & Liu (arXiv 2407.08233), Thm 4.6 with Lemma C.3 and
    Cor. 4.5, indices corrected and contraction exponent -1 (see
    :mod:`dpconvex.bcd.hidden_state`), mixed over the secret batch position (eq. 39).
    RDP only.

    Attributes:
        step_size: eta, the step of the update and of the noise variance 2 eta o.
        sensitivity: S, bound on the change of the batch's clipped gradient *sum*
            between add/remove neighbours (the per-example clip C).
        batch_size: b, the public divisor of the batch sum (the batch capacity).
        noise: o(k, j) for epochs k and batch positions j, a (K, m) table.
        grad_lipschitz: L_F, Lipschitz constant of theta -> theta - eta grad(theta)
            for every batch (at most 1).
        prox_lipschitz: L_T, Lipschitz constant of the linear part of the prox
            (1/(1 + eta lam) for a ridge term; 1 otherwise).

    Sound only when the step contracts, L_F * L_T < 1 (a strongly convex block, or a
    ridge term in the prox); otherwise construction raises and points to the
    composition accountant. The run that this event prices must also have one
    data-dependent block only (see :func:`dpconvex.bcd.dp_mbcd`).
    """

    step_size: float = attr.ib(validator=_positive("step_size"))
    sensitivity: float = attr.ib(validator=_positive("sensitivity"))
    batch_size: float = attr.ib(validator=_positive("batch_size"))
    noise: tuple = attr.ib(converter=_schedule_tuple, repr=_schedule_repr)
    grad_lipschitz: float = attr.ib(validator=_lipschitz("grad_lipschitz"))
    prox_lipschitz: float = attr.ib(default=1.0, validator=_lipschitz("prox_lipschitz"))

    def __attrs_post_init__(self):
        if self.grad_lipschitz * self.prox_lipschitz >= 1.0:
            raise ValueError(
                "hidden-state accounting needs a contraction, L_F * L_T < 1 (got "
                f"L_F={self.grad_lipschitz}, L_T={self.prox_lipschitz}): with a merely "
                "convex block the step is only non-expansive; "
                "add strong convexity or a ridge term in the prox, or " + COMPOSITION_HINT
            )

    @property
    def epochs(self) -> int:
        return len(self.noise)

    @property
    def n_batches(self) -> int:
        return len(self.noise[0])

    def _args(self):
        return (
            self.step_size,
            self.sensitivity,
            self.batch_size,
            np.asarray(self.noise),
            self.grad_lipschitz,
            self.prox_lipschitz,
        )

    def position_bounds(self) -> np.ndarray:
        """eps_K(alpha, j0) / alpha for each batch position j0 (Thm 4.6 before mixing)."""
        return hs.position_bounds(*self._args())

    def epoch_contributions(self) -> np.ndarray:
        """eps_K(alpha, j0, k) / alpha, shape (K, m) (eq. 38)."""
        return hs.epoch_contributions(*self._args())

    def rdp(self, orders) -> np.ndarray:
        """RDP at ``orders``, mixed over the uniform secret position (eq. 39)."""
        return hs.mix_positions(orders, self.position_bounds())

    def composition(self) -> MbcdCompositionDpEvent:
        """The same run priced with every iterate released."""
        return composition_event(
            self.step_size, self.sensitivity, self.batch_size, np.asarray(self.noise)
        )


@attr.s(frozen=True, slots=True, auto_attribs=True)
class MbcdCompositionDpEvent(dp_event.DpEvent):
    """DP-MBCD with every iterate of every released block released: adaptive composition.

    Each step that sees the differing example is a Gaussian mechanism of shift
    Delta = eta C / b and noise std sqrt(2 eta o) (Chen & Liu, eq. 6; Assumption 4.4
    enforced by per-example clipping); the others reveal nothing new given the
    past iterates. At position j the run is therefore the Gaussian mechanism with
    mu_j^2 = sum over blocks and epochs of Delta^2 / sigma^2. The position is
    secret, but this event prices the worst one: an exact Gaussian (PLD and RDP,
    add/remove), ``noise_multiplier = 1 / max_j mu_j``.

    Attributes:
        position_mu2: mu_j^2 for every batch position j.
        epochs: number of epochs (descriptive).
        n_blocks: number of released blocks (descriptive).
    """

    position_mu2: tuple = attr.ib(
        converter=lambda xs: tuple(float(x) for x in xs),
        repr=lambda xs: f"<{len(xs)} positions, max {max(xs):.4g}>" if xs else "()",
    )
    epochs: int = 1
    n_blocks: int = 1

    def __attrs_post_init__(self):
        if not self.position_mu2 or any(not math.isfinite(x) or x <= 0 for x in self.position_mu2):
            raise ValueError("position_mu2 must be a non-empty list of finite values > 0")

    @property
    def noise_multiplier(self) -> float:
        """Noise of the equivalent unit-sensitivity Gaussian mechanism."""
        return 1.0 / math.sqrt(max(self.position_mu2))

    def rdp(self, orders) -> np.ndarray:
        return np.asarray(orders, dtype=float) * max(self.position_mu2) / 2.0


def composition_event(
    step_size: float, sensitivity: float, batch_size: float, noise
) -> MbcdCompositionDpEvent:
    """Composition event of one released block (see :class:`MbcdCompositionDpEvent`)."""
    v.positive("step_size", step_size)
    v.positive("sensitivity", sensitivity)
    v.positive("batch_size", batch_size)
    o = hs._as_schedule(noise)
    mu2 = 2.0 * hs.composition_position_bounds(step_size, sensitivity, batch_size, o)
    return MbcdCompositionDpEvent(tuple(mu2), epochs=o.shape[0], n_blocks=1)


def combine_compositions(events) -> MbcdCompositionDpEvent:
    """Several released blocks of one run: mu_j^2 adds up position by position.

    The blocks share the secret position j of the differing example, so their
    per-position terms are summed before the worst position is taken (summing
    per-block worst cases would also be valid, only looser).
    """
    events = list(events)
    if not events:
        raise ValueError("need at least one block")
    m = {len(e.position_mu2) for e in events}
    if len(m) != 1:
        raise ValueError("blocks of one run must have the same number of batches")
    total = np.sum([e.position_mu2 for e in events], axis=0)
    return MbcdCompositionDpEvent(
        tuple(total), epochs=max(e.epochs for e in events), n_blocks=len(events)
    )


def _hidden_state_rdp(event: HiddenStateDpEvent, orders: np.ndarray) -> np.ndarray:
    return event.rdp(orders)


def _composition_rdp(event: MbcdCompositionDpEvent, orders: np.ndarray) -> np.ndarray:
    return event.rdp(orders)


def _composition_pld(event: MbcdCompositionDpEvent, h: float) -> _pld.LossPmf:
    return _pld.gaussian_loss_pmf(1.0, event.noise_multiplier, h)


register_rdp(HiddenStateDpEvent, _hidden_state_rdp)
register_rdp(MbcdCompositionDpEvent, _composition_rdp)
register_pld(MbcdCompositionDpEvent, _composition_pld)
