"""Random generators: OS entropy by default, an explicit seed only when the user asks."""

from __future__ import annotations

import numbers

import numpy as np
from sklearn.utils._param_validation import Interval


def make_rng(random_state=None) -> np.random.Generator:
    """A ``numpy.random.Generator``.

    ``None`` seeds from OS entropy (the default for private releases); an
    integer >= 0 or a ``SeedSequence`` gives a reproducible generator (for tests
    and experiments); a ``Generator`` is used as is. The legacy
    ``RandomState`` is refused: it is not a source we can vouch for.
    """
    if random_state is None:
        return np.random.default_rng()
    if isinstance(random_state, np.random.Generator):
        return random_state
    if isinstance(random_state, np.random.SeedSequence):
        return np.random.default_rng(random_state)
    if isinstance(random_state, numbers.Integral) and not isinstance(random_state, bool):
        if random_state < 0:
            raise ValueError(f"random_state must be >= 0, got {random_state}")
        return np.random.default_rng(int(random_state))
    raise TypeError(
        "random_state must be None (OS entropy), a non-negative int, a numpy SeedSequence "
        f"or a numpy Generator; got {type(random_state).__name__}"
    )


#: scikit-learn parameter constraint of every ``random_state``: OS entropy (None), an int
#: seed, or a numpy SeedSequence / Generator; never RandomState (see :func:`make_rng`)
RANDOM_STATE_CONSTRAINT = [
    None,
    Interval(numbers.Integral, 0, None, closed="left"),
    np.random.SeedSequence,
    np.random.Generator,
]
