"""Gradient-descent plans: Poisson-subsampled DP-SGD and full-batch DP-GD."""

from __future__ import annotations

from ..accounting import dpsgd_event, dpsgd_noise_multiplier, gaussian_noise_multiplier
from ..mechanisms import dpgd, dpgd_event, dpsgd, steps_for_epochs
from .base import Plan, PlanInputs

#: default learning rates by optimizer (the paper's DP-SGD settings, seed 000 §6)
DEFAULT_LEARNING_RATE = {"adam": 0.02, "sgd": 0.5}


class _GradientPlan(Plan):
    def __init__(self, inputs: PlanInputs):
        super().__init__(inputs)
        optimizer = self.setting("optimizer")
        self.learning_rate = self.setting("learning_rate") or DEFAULT_LEARNING_RATE[optimizer]
        lam = self.setting("lam")
        self.lam = 0.0 if lam is None else float(lam)


class DpsgdPlan(_GradientPlan):
    """Noise multiplier for steps x K Poisson-subsampled Gaussian steps at rate batch/n."""

    name = "dpsgd"

    def __init__(self, inputs: PlanInputs):
        super().__init__(inputs)
        q = min(1.0, self.setting("batch_size") / inputs.n)
        steps = steps_for_epochs(self.setting("epochs"), q)
        z = dpsgd_noise_multiplier(
            inputs.epsilon, inputs.delta, q, steps * inputs.k,
            accounting=inputs.accounting, rtol=1e-4,
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

    def run(self, X, y, rng):
        p = self.params
        return dpsgd(
            X,
            y,
            self.inputs.loss,
            noise_multiplier=p["noise_multiplier"],
            clip=p["clip"],
            sampling_rate=p["sampling_rate"],
            steps=p["steps"],
            learning_rate=p["learning_rate"],
            optimizer=self.setting("optimizer"),
            lam=p["lam"],
            rng=rng,
            row_bound=self.inputs.row_bound,
        )


class DpgdPlan(_GradientPlan):
    """Noise multiplier for epochs x K full-batch Gaussian steps."""

    name = "dpgd"
    dask = True

    def __init__(self, inputs: PlanInputs):
        super().__init__(inputs)
        steps = int(self.setting("epochs"))
        z = gaussian_noise_multiplier(
            inputs.epsilon, inputs.delta, steps * inputs.k, accounting=inputs.accounting
        )
        self.params = {
            "noise_multiplier": z,
            "steps": steps,
            "clip": inputs.clip,
            "learning_rate": self.learning_rate,
            "lam": self.lam,
        }
        self.event = dpgd_event(z, steps)

    def run(self, X, y, rng):
        p = self.params
        return dpgd(
            X,
            y,
            self.inputs.loss,
            noise_multiplier=p["noise_multiplier"],
            clip=p["clip"],
            steps=p["steps"],
            learning_rate=p["learning_rate"],
            optimizer=self.setting("optimizer"),
            lam=p["lam"],
            rng=rng,
            row_bound=self.inputs.row_bound,
        )
