"""Extreme public arguments: a clear ValueError before any large allocation, or a valid answer.

The review found 759 GiB asked for by 10^6 compositions of objective perturbation at
sigma 1e-3, terabytes for 10^12 DP-SGD steps, and ZeroDivisionError / OverflowError
tracebacks for noise 1e-300 or 1e300.
"""

import math
import tracemalloc

import pytest
from dp_accounting import dp_event, rdp

from dpconvex.accounting import (
    DEFAULT_RDP_ORDERS,
    AmpDpEvent,
    ObjectivePerturbationDpEvent,
    PrivacyAccountant,
    amp_parameters,
    dpsgd_event,
    dpsgd_noise_multiplier,
    gaussian_delta,
    objpert_delta,
    objpert_epsilon,
)
from dpconvex.accounting.pld import GridTooLargeError


def _peak_mb(func):
    tracemalloc.start()
    try:
        func()
    finally:
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
    return peak / 2**20


def test_a_pld_grid_too_large_is_refused_before_it_is_allocated():
    event = ObjectivePerturbationDpEvent(1e-3, 1.0, 0.25, 1.0)  # s = 1000

    def refused():
        with pytest.raises(GridTooLargeError, match="grid points") as info:
            PrivacyAccountant("pld").compose(event, 10**6).get_epsilon(1e-5)
        assert "\n" not in str(info.value) and "RDP" in str(info.value)

    assert _peak_mb(refused) < 100  # the review saw 759 GiB requested
    # "auto" prices it by RDP instead, a valid upper bound
    auto = PrivacyAccountant().compose(event, 10**6)
    assert auto.get_epsilon(1e-5) == PrivacyAccountant("rdp").compose(event, 10**6).get_epsilon(
        1e-5
    )
    assert auto.accounting_used == "rdp"


def test_a_trillion_dpsgd_steps_fall_back_to_rdp_or_are_refused():
    event = dpsgd_event(1.0, 0.01, 10**12)
    with pytest.raises(GridTooLargeError):
        PrivacyAccountant("pld").compose(event).get_epsilon(1e-5)
    epsilon = PrivacyAccountant().compose(event).get_epsilon(1e-5)
    theirs = rdp.RdpAccountant(list(DEFAULT_RDP_ORDERS)).compose(event).get_epsilon(1e-5)
    assert math.isfinite(epsilon) and epsilon <= theirs * (1 + 1e-9)


def test_many_gaussians_are_one_gaussian_and_a_too_narrow_one_goes_to_rdp():
    # 10^12 Gaussians of noise 1e6 are one of noise 1: the exact PLD, no refusal
    big = PrivacyAccountant("pld").compose(dp_event.GaussianDpEvent(1e6), 10**12)
    one = PrivacyAccountant("pld").compose(dp_event.GaussianDpEvent(1.0))
    assert big.get_epsilon(1e-5) == pytest.approx(one.get_epsilon(1e-5), rel=1e-9)
    # 10^12 of noise 1 are one of noise 1e-6: no grid holds it, "auto" prices it by RDP
    auto = PrivacyAccountant().compose(dp_event.GaussianDpEvent(1.0), 10**12)
    assert auto.accounting_used == "rdp" and math.isfinite(auto.get_epsilon(1e-5))


def test_a_billion_laplace_mechanisms_are_refused_by_pld_not_allocated():
    def refused():
        with pytest.raises(GridTooLargeError):
            PrivacyAccountant("pld").compose(dp_event.LaplaceDpEvent(1.0), 10**9).get_epsilon(1e-5)

    assert _peak_mb(refused) < 200  # dp_accounting's self_compose asked for 23.6 TiB


@pytest.mark.parametrize("noise", [1e-300, 1e300, 0.0, -1.0, math.nan, math.inf, True])
def test_noise_out_of_range_is_a_value_error(noise):
    for build in (
        lambda: PrivacyAccountant().compose(dp_event.GaussianDpEvent(noise)),
        lambda: dpsgd_event(noise, 0.01, 100),
        lambda: ObjectivePerturbationDpEvent(noise, 1.0, 0.25, 1.0),
        lambda: AmpDpEvent(1.0, 1.0, 0.25, 1.0, 0.01, noise),
        lambda: objpert_epsilon(1e-5, sigma=noise, lam=1.0, beta=0.25, lipschitz=1.0),
    ):
        with pytest.raises(ValueError, match="sigma|noise"):
            build()


@pytest.mark.parametrize("count", [2**53 + 1, 10**300, 1.5, True, "7"])
def test_counts_out_of_range_are_refused(count):
    with pytest.raises(ValueError, match="count|steps"):
        PrivacyAccountant("rdp").compose(dp_event.GaussianDpEvent(1.0), count)
    with pytest.raises(ValueError, match="steps"):
        dpsgd_event(1.0, 0.01, count)


def test_far_tails_are_zero_not_nan():
    assert objpert_delta(1e300, sigma=1.0, lam=1.0, beta=0.25, lipschitz=1.0) == 0.0
    assert gaussian_delta(1e300, 1.0, 1.0) == 0.0


def test_settings_that_overflow_are_value_errors():
    with pytest.raises(ValueError, match="value_discretization_interval"):
        PrivacyAccountant(value_discretization_interval=1e300)
    with pytest.raises(ValueError, match="max_grid_steps"):
        amp_parameters(1.0, 1e-5, max_grid_steps=10**12)
    with pytest.raises(ValueError, match="lam_growth"):
        amp_parameters(1.0, 1e-5, lam_growth=math.nan)


def test_a_vanishing_sampling_rate_calibrates_without_dividing_by_zero():
    z = dpsgd_noise_multiplier(1.0, 1e-5, 1e-300, 1000)
    assert z > 0
    assert PrivacyAccountant().compose(dpsgd_event(z, 1e-300, 1000)).get_epsilon(1e-5) <= 1.0
