"""What a mechanism returns: its release and the event that prices it."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from dp_accounting.dp_event import DpEvent


@dataclass(frozen=True)
class Release:
    """A private release ``theta`` with the ``event`` whose accounting covers it.

    ``info`` holds diagnostics that are functions of the release and of public
    parameters only (iterations, certified gradient norm, calibrated noise).
    """

    theta: np.ndarray
    event: DpEvent
    info: dict = field(default_factory=dict)
