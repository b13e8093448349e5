"""The noisy-gradient loop of DP-SGD-type algorithms, once for every family.

A run is a batch sampler, a noisy step and an event builder:

* the sampler ``sampler(rng)`` yields the batches (row indices, or ``None`` for the
  full batch), drawing its randomness lazily, before each batch's noise; or, for a step
  that draws its own batch, only the step's number (:func:`numbered_steps`);
* the step ``step(state, batch, rng)`` forms the noisy (clipped) gradient of the batch and
  returns the next state; it draws the noise from the same ``rng``, so the order of the
  draws is the sampler's, then the step's, batch after batch;
* the event builder ``event(steps)`` prices the run from the number of batches it took
  (the privacy of every step holds for its sampler: Poisson subsampling, Abadi et al.,
  arXiv 1607.00133; disjoint shuffled batches, parallel composition; the full batch,
  the Gaussian mechanism).

Users: DP-SGD and DP-GD of the linear core (:func:`dpconvex.mechanisms.dpsgd_runs`),
the clipped DP-SGD baseline of DP-SCO (:func:`dpconvex.sco.clipped_dpsgd`), DP-SGD on a
ReLU network (:func:`dpconvex.bcd.sgd_mlp`) and PDA-DPMD
(:func:`dpconvex.public.pda_dpmd`).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np

#: ``sampler(rng)``: the batches of a run, drawn lazily from ``rng``
BatchSampler = Callable[[np.random.Generator], Iterable[Any]]
#: ``event(steps)``: the privacy event of a run of ``steps`` noisy steps
EventBuilder = Callable[[int], Any]


@dataclass(frozen=True)
class NoisyGradientRun:
    """The last state, the mean of the states after each step (if asked), steps, event."""

    last: Any
    mean: Any
    steps: int
    event: Any


def shuffled_batches(n: int, batches: int, epochs: int) -> BatchSampler:
    """Every epoch a fresh permutation of range(n) cut into ``batches`` disjoint blocks."""

    def sample(rng: np.random.Generator) -> Iterator[np.ndarray]:
        for _ in range(epochs):
            yield from np.array_split(rng.permutation(n), batches)

    return sample


def full_batches(steps: int) -> BatchSampler:
    """``steps`` full batches (``None``): no sampling, nothing drawn."""
    return lambda rng: itertools.repeat(None, steps)


def numbered_steps(steps: int) -> BatchSampler:
    """The step numbers 1..``steps``, nothing drawn: for a step that draws its own batch
    (e.g. Poisson batches of many runs at once) and needs its number (Adam's bias
    correction)."""
    return lambda rng: range(1, steps + 1)


def noisy_gradient_run(
    start: Any,
    sampler: BatchSampler,
    step: Callable[[Any, Any, np.random.Generator], Any],
    event: EventBuilder | None,
    rng: np.random.Generator,
    *,
    average: bool = False,
    progress: Callable[[Iterable[Any]], Iterable[Any]] | None = None,
) -> NoisyGradientRun:
    """Run ``step`` on every batch of ``sampler(rng)`` from ``start``; price it by ``event``.

    ``average``: also the mean of the states after each step (arrays; the float64 sum
    starts at zeros). ``progress`` wraps the batches (a progress bar); it must not draw
    from ``rng``. ``event`` None: the caller prices the run (the event is then None).
    """
    batches = sampler(rng)
    if progress is not None:
        batches = progress(batches)
    state = start
    total = np.zeros(np.shape(start)) if average else None
    steps = 0
    for batch in batches:
        state = step(state, batch, rng)
        if average:
            total += state
        steps += 1
    mean = total / steps if average and steps else None
    return NoisyGradientRun(state, mean, steps, None if event is None else event(steps))
