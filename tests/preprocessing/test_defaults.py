"""The derived defaults: quantiles that follow epsilon, and a split that never overspends."""

import numpy as np
import pytest

from dpconvex.preprocessing import default_quantiles, default_share, split_epsilon
from dpconvex.preprocessing.defaults import (
    MAX_QUANTILE,
    MAX_SHARE,
    MIN_SHARE,
    RANK_MARGIN,
    SHARE_QUANTILE,
)


def test_default_quantiles_follow_epsilon_to_the_extremes():
    qs = [default_quantiles(e, 1000)[0] for e in (1e-3, 1e-2, 0.1, 1.0, 10.0, 100.0)]
    assert qs[0] == MAX_QUANTILE  # a tiny budget: the widest margin allowed
    assert all(a >= b for a, b in zip(qs, qs[1:], strict=False))
    assert qs[-1] == pytest.approx(RANK_MARGIN / (100.0 * 1000))  # -> min and max
    lo, hi = default_quantiles(0.5, 10_000)
    assert lo + hi == pytest.approx(1.0)


@pytest.mark.parametrize("total", [1e-3, 0.1, 1.0, 7.3, 100.0])
@pytest.mark.parametrize("share", [0.01, 0.1, 0.5, 0.99])
def test_split_never_exceeds_the_total(total, share):
    enc, model = split_epsilon(total, 3, share=share)
    assert enc + model <= total and enc == pytest.approx(share * total)
    assert split_epsilon(total, 0, share=share) == (0.0, total)  # nothing estimated, nothing spent


def test_default_share_follows_epsilon_and_n():
    shares = [default_share(e, 6, 100_000) for e in (0.1, 1.0, 4.0, 16.0, 100.0)]
    assert shares[0] == MAX_SHARE and shares[-1] == MIN_SHARE
    assert all(a >= b for a, b in zip(shares, shares[1:], strict=False))
    # in between: just enough for every bound to reach q = SHARE_QUANTILE
    share = default_share(10.0, 6, 5000)
    assert MIN_SHARE < share < MAX_SHARE
    enc, _ = split_epsilon(10.0, 6, 5000)
    assert enc == pytest.approx(share * 10.0)
    assert default_quantiles(enc / 6, 5000)[0] == pytest.approx(SHARE_QUANTILE)


def test_bad_splits():
    for args, kwargs in [
        ((0.0, 1), {"share": 0.1}),
        ((np.nan, 1, 10), {}),
        ((1.0, 1), {}),
        ((1.0, 1), {"share": 1.0}),
        ((1.0, 1), {"share": 0.0}),
    ]:
        with pytest.raises(ValueError):
            split_epsilon(*args, **kwargs)
