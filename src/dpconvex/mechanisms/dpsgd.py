"""DP-SGD with Poisson subsampling for GLM losses: its plan and its release.

Each step sums the clipped per-example gradients of a Poisson subsample of rate q, adds
Gaussian noise z C and takes a plain or Adam step (:func:`~.gradient_runs.dpsgd_runs`);
the steps are priced as Poisson-subsampled Gaussian mechanisms (Abadi et al., arXiv
1607.00133), :func:`dpconvex.accounting.dpsgd_event`. :class:`DpsgdPlan` calibrates z
for the steps of the requested epochs.
"""

from __future__ import annotations

import math

import numpy as np

from .. import _validation as v
from ..accounting import dpsgd_event, dpsgd_noise_multiplier
from ..release import Release
from .gradient_runs import GradientPlan, dpsgd_runs
from .plan import PlanInputs

#: DP-SGD's default number of passes over the data (the experiments of Redberg, Koskela
#: & Wang, arXiv 2401.00583, §5: 60 "epochs")
DEFAULT_DPSGD_EPOCHS = 60


def dpsgd(
    X,
    y,
    loss,
    *,
    noise_multiplier: float,
    clip: float,
    sampling_rate: float,
    steps: int,
    learning_rate: float,
    row_bound: float,
    rng: np.random.Generator,
    optimizer: str = "adam",
    lam: float = 0.0,
    rows: int | None = None,
) -> Release:
    """DP-SGD: ``steps`` noisy clipped steps on Poisson subsamples of rate ``sampling_rate``.

    Each step is a Poisson-subsampled Gaussian mechanism of sensitivity C =
    ``clip`` and noise z C (add/remove neighbours); priced by
    :func:`dpconvex.accounting.dpsgd_event`. Every iterate could be released;
    only the last one is.
    """
    noise_multiplier = v.positive("noise_multiplier", noise_multiplier)
    q = v.sampling_rate("sampling_rate", sampling_rate)
    steps = v.positive_int("steps", steps)
    theta = dpsgd_runs(
        X,
        y,
        loss,
        noise_multiplier=noise_multiplier,
        clip=clip,
        sampling_rate=q,
        steps=steps,
        learning_rates=learning_rate,
        optimizer=optimizer,
        lam=lam,
        row_bound=row_bound,
        rng=rng,
        rows=rows,
    )[0]
    info = {"n_iter": steps, "noise_multiplier": noise_multiplier, "sampling_rate": q}
    return Release(theta, dpsgd_event(noise_multiplier, q, steps), info)


def steps_for_epochs(epochs: float, sampling_rate: float) -> int:
    """Number of steps of ``epochs`` passes at expected batch q n: ceil(epochs / q)."""
    return max(1, math.ceil(v.positive("epochs", epochs) / sampling_rate))


class DpsgdPlan(GradientPlan):
    """Noise multiplier for steps x K Poisson-subsampled Gaussian steps at rate batch/n."""

    name = "dpsgd"
    release = staticmethod(dpsgd)

    def __init__(self, inputs: PlanInputs):
        super().__init__(inputs)
        q = min(1.0, self.setting("batch_size") / inputs.n)
        steps = steps_for_epochs(self.setting("epochs") or DEFAULT_DPSGD_EPOCHS, q)
        z = dpsgd_noise_multiplier(
            inputs.epsilon, inputs.delta, q, steps * inputs.k,
            accounting=inputs.accounting, rtol=2e-4,
        )  # fmt: skip
        self.params = {
            "noise_multiplier": z,
            "sampling_rate": q,
            "steps": steps,
            "clip": inputs.clip,
            "learning_rate": self.learning_rate,
            "lam": self.lam,
        }
        self.event = dpsgd_event(z, q, steps)
