"""Algorithm 1 (DP-MBCD) of Chen & Liu (arXiv 2407.08233), with both accountants.

A problem (:class:`MbcdProblem`) holds released blocks (published at the end) and,
optionally, hidden blocks (per-example auxiliary variables, never published). For
every epoch and every batch of a secret fixed partition (:mod:`dpconvex.bcd.batches`)
the hidden blocks are refreshed on the batch, then every released block takes the
noisy proximal step of eq. (6),

    theta <- Prox_{eta r}( theta - eta (g_B(theta) + ridge theta) + N(0, 2 eta o(k, j) I) ),

with g_B the sum of the per-example gradients, each clipped to norm C, divided by the
batch capacity b (so Assumption 4.4 holds with S_g = C for add/remove neighbours;
the paper's Algorithms 3 and 4 do not enforce it). The step is
Hessian-normalized with a *certified* curvature bound beta of the block,
eta = min(step_size, kappa / beta) (the role of kappa in Chen & Liu, eq. 6 and
Lemma 4.1); the paper's batch-Hessian normalization is not used, because a step
size computed from the batch changes with the differing example and breaks the
sensitivity bound. Blocks marked ``implicit`` take the certified proximal-point
step of :func:`dpconvex.bcd.steps.implicit_least_squares_step` instead (the
"variant of Algorithm 4"), with the noise added after it.

Accountants (both always computed, so they can be printed side by side):

* composition (every iterate of every released block released) — always sound;
* hidden state (Chen & Liu, Thm 4.6) — only for runs in which it is sound: one
  released block, no hidden blocks, a certified convex and beta-smooth clipped
  loss, and a contraction from a ridge term (L_F < 1) or a ridge prox (L_T < 1).
  With two data-dependent blocks the map of one depends on the other, whose law
  differs between neighbours, so Cor. 4.5 case 1 fails; a two-block quadratic
  where each block is strongly convex has a privacy loss that grows linearly in
  the epochs while the per-block sum of Thm 4.6 stays bounded (tests/bcd,
  docs/mbcd.md). Anything else raises :class:`HiddenStateUnsoundError`.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from dataclasses import dataclass, field

import numpy as np

from .. import _validation as v
from .._random import make_rng
from ..release import Release
from .batches import batch_count, secret_batches
from .calibration import epsilons
from .events import (
    COMPOSITION_HINT,
    HiddenStateDpEvent,
    MbcdCompositionDpEvent,
    combine_compositions,
    composition_event,
)
from .prox import Prox
from .steps import clipped_gradient_sum, implicit_least_squares_step

ACCOUNTANTS = ("composition", "hidden-state")


class HiddenStateUnsoundError(ValueError):
    """The hidden-state accountant does not cover this run; nothing was run or released."""


@dataclass(frozen=True)
class BlockSpec:
    """A released block and the constants its privacy analysis uses.

    Attributes:
        name: key of the block in the parameter dict.
        clip: per-example gradient clip C (Frobenius norm); the sensitivity S_g.
        smoothness: certified bound beta such that every clipped per-example loss
            of the block is convex and beta-smooth, for every state of the other
            blocks (None: not certified; then the hidden-state accountant refuses
            and the step is not Hessian-normalized).
        ridge: (ridge/2)||theta||^2 added to the block objective (gradient form).
        prox: regularizer / constraint handled by its prox (Prox(ridge=...) is the
            "ridge term in its prox").
        implicit: take the certified proximal-point step (least-squares blocks).
        implicit_tol: its certificate, as a fraction of C / b (sensitivity grows
            by the factor 1 + 2 implicit_tol).
    """

    name: str
    clip: float
    smoothness: float | None = None
    ridge: float = 0.0
    prox: Prox = field(default_factory=Prox)
    implicit: bool = False
    implicit_tol: float = 1e-3

    def __post_init__(self):
        v.positive("clip", self.clip)
        if self.smoothness is not None:
            v.nonnegative("smoothness", self.smoothness)
        v.nonnegative("ridge", self.ridge)
        v.positive("implicit_tol", self.implicit_tol)

    def step(self, step_size: float, kappa: float) -> float:
        """Hessian-normalized step min(eta, kappa / beta) with the certified beta.

        Implicit steps are stable for every eta and take eta as given.
        """
        if self.smoothness and not self.implicit:
            return min(step_size, kappa / self.smoothness)
        return step_size

    @property
    def sensitivity(self) -> float:
        """Bound on the change of the batch's clipped gradient sum (add/remove)."""
        return self.clip * (1.0 + 2.0 * self.implicit_tol) if self.implicit else self.clip


class MbcdProblem(ABC):
    """What :func:`dp_mbcd` needs from a multi-convex problem (Chen & Liu, eq. 1).

    Contract (privacy depends on it): :meth:`init` does not look at the data (and,
    for the hidden-state accountant, is deterministic: a point-mass start);
    :meth:`update_hidden` only changes per-example hidden state of the examples in
    the batch, from those examples and the current released blocks; the per-example
    factors of example i depend only on example i, its hidden state and the
    released blocks.
    """

    #: number of training examples (treated as public, as in DP-SGD)
    n_examples: int
    #: released blocks, in update order
    blocks: tuple[BlockSpec, ...]
    #: whether hidden blocks exist (they make the step a composite map)
    has_hidden_blocks: bool = False

    @abstractmethod
    def init(self, rng: np.random.Generator) -> dict[str, np.ndarray]:
        """Data-independent initial values of the released blocks."""

    def update_hidden(self, params: dict[str, np.ndarray], batch: np.ndarray) -> None:  # noqa: B027
        """Refresh the hidden blocks of the batch (exact or numerical argmin); default none."""

    @abstractmethod
    def gradient_factors(
        self, name: str, params: dict[str, np.ndarray], batch: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray]:
        """Per-example factors (a (n_b, p), b (n_b, q)): example i's gradient is a_i b_i^T."""

    def least_squares(
        self, name: str, params: dict[str, np.ndarray], batch: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray, float]:
        """(inputs (n_b, q), targets (n_b, p), gamma) of a least-squares block (implicit steps)."""
        raise NotImplementedError(f"block {name!r} is not a least-squares block")


def _contraction(block: BlockSpec, step: float) -> tuple[float, float]:
    """(L_F, L_T) of the block's step, from the certified beta, the ridge and the prox."""
    beta = block.smoothness
    lam = block.ridge
    grad_l = max(abs(1.0 - step * lam), abs(1.0 - step * (lam + beta)))
    # a larger constant only weakens the bound; keep it positive for the event
    return max(grad_l, 1e-12), block.prox.linear_lipschitz(step)


def hidden_state_conditions(problem: MbcdProblem, step_size: float, kappa: float) -> tuple:
    """(block, step, L_F, L_T) when the hidden-state accountant covers the problem; else raise.

    Conditions (see the module docstring): one released block, no hidden blocks,
    explicit steps, a certified smoothness, and L_F * L_T < 1 with L_F <= 1.
    """
    blocks = problem.blocks
    if len(blocks) != 1:
        raise HiddenStateUnsoundError(
            f"hidden-state accounting refused: {len(blocks)} released blocks are coupled; "
            "each block's update depends on the others, whose laws differ between "
            "neighbouring datasets, so case 1 of Chen & Liu's Cor. 4.5 does not apply and "
            "the per-block sum of their Thm 4.6 is not a bound (counterexample in "
            "docs/mbcd.md); " + COMPOSITION_HINT
        )
    if problem.has_hidden_blocks:
        raise HiddenStateUnsoundError(
            "hidden-state accounting refused: hidden blocks computed from the released "
            "block make each step a composite map whose Lipschitz constant is not "
            "certified; " + COMPOSITION_HINT
        )
    block = blocks[0]
    if block.implicit:
        raise HiddenStateUnsoundError(
            "hidden-state accounting refused: implicit steps are only analysed by "
            "composition; " + COMPOSITION_HINT
        )
    if block.smoothness is None:
        raise HiddenStateUnsoundError(
            f"hidden-state accounting refused: block {block.name!r} has no certified "
            "smoothness, so the Lipschitz constant L_F of its step is unknown; " + COMPOSITION_HINT
        )
    step = block.step(step_size, kappa)
    grad_l, prox_l = _contraction(block, step)
    if grad_l > 1.0:
        raise HiddenStateUnsoundError(
            f"hidden-state accounting refused: step {step:g} is too large for smoothness "
            f"{block.smoothness:g} and ridge {block.ridge:g} (L_F = {grad_l:.4g} > 1); "
            "lower step_size or kappa"
        )
    if grad_l * prox_l >= 1.0:
        raise HiddenStateUnsoundError(
            f"hidden-state accounting refused: block {block.name!r} is only convex "
            f"(L_F * L_T = {grad_l * prox_l:.6g}); Chen & Liu's contraction below 1 "
            "(Lemmas 4.1, B.1) needs strong convexity (ridge > 0) or a ridge term in the "
            "prox (Prox(ridge > 0)); " + COMPOSITION_HINT
        )
    return block, step, grad_l, prox_l


def _check_point_mass_init(problem: MbcdProblem) -> None:
    """Refuse a random initialization under the hidden-state accountant.

    Lemma C.3 of Chen & Liu starts the LSI recursion at a
    point mass (1/c_0 = 0); a random start has a finite LSI constant, which weakens
    every later contraction of Thm 4.6. Checked by drawing the (data-independent)
    initialization from two different generators.
    """
    first = problem.init(np.random.default_rng(1))
    second = problem.init(np.random.default_rng(2))
    same = first.keys() == second.keys() and all(
        np.array_equal(np.asarray(first[k]), np.asarray(second[k])) for k in first
    )
    if not same:
        raise HiddenStateUnsoundError(
            "hidden-state accounting refused: the initialization is random, but Chen & Liu's "
            "Lemma C.3 / Thm 4.6 assume a deterministic start (point mass, 1/c_0 = 0); "
            "make init() deterministic or " + COMPOSITION_HINT
        )


def _schedule(noise, epochs: int, m: int) -> np.ndarray:
    o = np.asarray(noise, dtype=float)
    if o.ndim == 0:
        o = np.full((epochs, m), float(v.positive("noise", float(o))))
    if o.shape != (epochs, m):
        raise ValueError(
            f"noise schedule must have shape (epochs, n_batches) = {(epochs, m)}, got {o.shape}"
        )
    if not np.all(np.isfinite(o)) or np.any(o <= 0):
        raise ValueError("noise schedule o(k, j) must be finite and > 0 everywhere")
    return o


def run_events(
    problem: MbcdProblem,
    *,
    batch_size: int,
    epochs: int,
    step_size: float,
    noise,
    kappa: float = 1.0,
    n_batches: int | None = None,
) -> tuple[MbcdCompositionDpEvent, HiddenStateDpEvent | None]:
    """The events of a run with these settings (data-free: only public parameters).

    Returns (composition event, hidden-state event or None when its conditions fail).
    """
    b = v.positive_int("batch_size", batch_size)
    epochs = v.positive_int("epochs", epochs)
    m = batch_count(problem.n_examples, b) if n_batches is None else int(n_batches)
    o = _schedule(noise, epochs, m)
    comps = [
        composition_event(blk.step(step_size, kappa), blk.sensitivity, b, o)
        for blk in problem.blocks
    ]
    comp = combine_compositions(comps)
    try:
        block, step, grad_l, prox_l = hidden_state_conditions(problem, step_size, kappa)
    except HiddenStateUnsoundError:
        return comp, None
    return comp, HiddenStateDpEvent(step, block.sensitivity, b, o, grad_l, prox_l)


def dp_mbcd(
    problem: MbcdProblem,
    *,
    batch_size: int,
    epochs: int,
    step_size: float,
    noise,
    kappa: float = 1.0,
    accountant: str = "composition",
    delta: float | None = None,
    n_batches: int | None = None,
    random_state=None,
    progress: bool = False,
) -> Release:
    """Run DP-MBCD (Chen & Liu, Algorithm 1) and return the released blocks with their event.

    Args:
        problem: the multi-convex problem (data, blocks, hidden-block updates).
        batch_size: batch capacity b (the divisor of each batch's gradient sum).
        epochs: K passes over the m = ceil((n + 1) / b) secret batches.
        step_size: eta (each block uses min(eta, kappa / beta) with its certified beta).
        noise: o, a constant level or a (K, m) schedule fixed in advance; the noise
            of step (k, j) is N(0, 2 eta o(k, j) I).
        kappa: Hessian-normalization threshold (the paper's NMF uses 1.1).
        accountant: ``"composition"`` or ``"hidden-state"`` (refused with
            :class:`HiddenStateUnsoundError` outside its conditions; see module doc).
        delta: if given, ``info["epsilon"]`` reports epsilon(delta) under both accountants.
        n_batches: override m (must leave room for n + 1 rows).
        random_state: seed for the batches, the initialization and the noise
            (OS entropy by default).
        progress: show a tqdm bar over epochs.

    Returns:
        :class:`~dpconvex.release.Release` with ``theta`` a dict of the
        released blocks, ``event`` the chosen accountant's event, and ``info`` with
        both events (``composition_event``, ``hidden_state_event`` or None).
    """
    if accountant not in ACCOUNTANTS:
        raise ValueError(f"accountant must be one of {ACCOUNTANTS}, got {accountant!r}")
    step_size = v.positive("step_size", step_size)
    kappa = v.positive("kappa", kappa)
    if delta is not None:
        delta = v.probability_open("delta", delta)
    if accountant == "hidden-state":
        hidden_state_conditions(problem, step_size, kappa)  # refuse before touching data
        _check_point_mass_init(problem)
    comp, hidden = run_events(
        problem,
        batch_size=batch_size,
        epochs=epochs,
        step_size=step_size,
        noise=noise,
        kappa=kappa,
        n_batches=n_batches,
    )
    m = len(comp.position_mu2)
    o = _schedule(noise, epochs, m)
    rng = make_rng(random_state)
    batches = secret_batches(rng, problem.n_examples, batch_size, m)
    params = {name: np.asarray(val, dtype=float).copy() for name, val in problem.init(rng).items()}
    steps = {blk.name: blk.step(step_size, kappa) for blk in problem.blocks}
    epoch_iter = range(epochs)
    if progress:
        from tqdm.auto import tqdm

        epoch_iter = tqdm(epoch_iter, desc="DP-MBCD", unit="epoch", leave=False)
    for k in epoch_iter:
        for j, batch in enumerate(batches):
            problem.update_hidden(params, batch)
            for blk in problem.blocks:
                eta = steps[blk.name]
                params[blk.name] = _block_step(
                    problem, blk, params, batch, eta, batch_size, rng, o[k, j], blk.clip
                )
    info = {
        "accountant": accountant,
        "epochs": epochs,
        "n_batches": m,
        "batch_size": batch_size,
        "step_sizes": steps,
        "composition_event": comp,
        "hidden_state_event": hidden,
    }
    if delta is not None:
        info["epsilon"] = epsilons(comp, hidden, delta)
    event = hidden if accountant == "hidden-state" else comp
    return Release(params, event, info)


def _block_step(
    problem: MbcdProblem,
    blk: BlockSpec,
    params: dict[str, np.ndarray],
    batch: np.ndarray,
    eta: float,
    batch_size: int,
    rng: np.random.Generator,
    level: float,
    clip: float,
) -> np.ndarray:
    theta = params[blk.name]
    if blk.implicit:
        inputs, targets, gamma = problem.least_squares(blk.name, params, batch)
        tol = blk.implicit_tol * (clip if math.isfinite(clip) else 1.0) / batch_size
        new, _, _ = implicit_least_squares_step(
            theta,
            inputs,
            targets,
            gamma=gamma,
            step=eta,
            clip=clip,
            batch_size=batch_size,
            ridge=blk.ridge,
            tol=tol,
        )
    else:
        a, b = problem.gradient_factors(blk.name, params, batch)
        grad = clipped_gradient_sum(a, b, clip).reshape(theta.shape) / batch_size
        if blk.ridge:
            grad = grad + blk.ridge * theta
        new = theta - eta * grad
    if level > 0:
        new = new + math.sqrt(2.0 * eta * level) * rng.standard_normal(theta.shape)
    new = blk.prox(new, eta)
    if not np.all(np.isfinite(new)):
        raise FloatingPointError(
            f"DP-MBCD diverged in block {blk.name!r} (non-finite iterate); lower step_size"
        )
    return new


def mbcd(
    problem: MbcdProblem,
    *,
    batch_size: int,
    epochs: int,
    step_size: float,
    kappa: float = 1.0,
    n_batches: int | None = None,
    random_state=None,
    progress: bool = False,
) -> dict[str, np.ndarray]:
    """Non-private MBCD (Chen & Liu, Algorithm 2; the epsilon = inf baseline).

    The loop of :func:`dp_mbcd` without clipping and without noise, on the same kind
    of fixed batches; returns the blocks (not a private release).
    """
    step_size = v.positive("step_size", step_size)
    kappa = v.positive("kappa", kappa)
    epochs = v.positive_int("epochs", epochs)
    rng = make_rng(random_state)
    batches = secret_batches(rng, problem.n_examples, batch_size, n_batches)
    params = {name: np.asarray(val, dtype=float).copy() for name, val in problem.init(rng).items()}
    steps = {blk.name: blk.step(step_size, kappa) for blk in problem.blocks}
    epoch_iter = range(epochs)
    if progress:
        from tqdm.auto import tqdm

        epoch_iter = tqdm(epoch_iter, desc="MBCD", unit="epoch", leave=False)
    for _ in epoch_iter:
        for batch in batches:
            problem.update_hidden(params, batch)
            for blk in problem.blocks:
                params[blk.name] = _block_step(
                    problem, blk, params, batch, steps[blk.name], batch_size, rng, 0.0, math.inf
                )
    return params
