"""The generic calibrator never over-spends; mechanism calibrations match the spec."""

import math

import pytest
from dp_accounting import gaussian_mechanism
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from dpconvex.accounting import (
    AmpDpEvent,
    CalibrationError,
    PrivacyAccountant,
    amp_parameters,
    calibrate,
    calibrators,
    dpsgd_event,
    dpsgd_noise_multiplier,
    gaussian_sigma,
    objpert_delta,
    objpert_epsilon,
    tuned_event,
)
from dpconvex.accounting import caches as acc_mod
from dpconvex.accounting.calibrators import pld_grid


@settings(max_examples=200, deadline=None)
@given(
    scale=st.floats(0.01, 100),
    power=st.floats(0.2, 4),
    target=st.floats(1e-3, 1e3),
    lo=st.floats(1e-4, 1e2),
    decreasing=st.booleans(),
)
def test_calibrate_never_overspends_and_finds_the_boundary(scale, power, target, lo, decreasing):
    sign = -1 if decreasing else 1
    f = lambda x: scale * x ** (sign * power)
    x = calibrate(f, target, lo, 2 * lo, decreasing=decreasing, rtol=1e-9)
    assert f(x) <= target
    root = (target / scale) ** (sign / power)
    assert x == pytest.approx(root, rel=1e-7)


@settings(max_examples=100, deadline=None)
@given(seed=st.integers(0, 10_000), target=st.floats(0.1, 10))
def test_calibrate_is_safe_even_for_a_noisy_function(seed, target):
    """A jittery, only roughly monotone function: the answer still meets the target."""
    f = lambda x: 5.0 / x + 0.05 * math.sin(1000 * x + seed)
    x = calibrate(f, target, 0.1, 1.0, decreasing=True, floor=1e-9)
    assert f(x) <= target


def test_calibrate_raises_when_nothing_meets_the_target():
    with pytest.raises(CalibrationError):
        calibrate(lambda x: 1.0 + 1.0 / x, 0.5, 1.0, 2.0, decreasing=True, ceiling=1e6)


@settings(max_examples=40, deadline=None)
@given(epsilon=st.floats(0.01, 20), delta=st.floats(1e-12, 0.1))
def test_gaussian_sigma_safe_against_dp_accounting(epsilon, delta):
    sigma = gaussian_sigma(epsilon, delta)
    assert gaussian_mechanism.get_epsilon_gaussian(sigma, delta) <= epsilon + 1e-9


@settings(max_examples=40, deadline=None)
@given(
    sigma=st.floats(0.5, 50),
    beta=st.floats(0, 2),
    gap=st.floats(0.01, 50),
    delta=st.floats(1e-12, 0.1),
)
def test_objpert_epsilon_never_under_reports(sigma, beta, gap, delta):
    kw = {"sigma": sigma, "lam": beta + gap, "beta": beta, "lipschitz": 1.0}
    eps = objpert_epsilon(delta, **kw)
    assert objpert_delta(eps, **kw) <= delta


@pytest.mark.parametrize(
    ("epsilon", "sigma", "lam"),
    [(0.1, 56.3348, 47.6494), (0.5, 12.9249, 8.2323), (1.0, 6.8285, 4.1161), (8.0, 1.0857, 0.6895)],
)
def test_amp_rule_reproduces_spec_table(epsilon, sigma, lam):
    res = amp_parameters(epsilon, 1e-5, accounting="rdp")
    assert res.lam == pytest.approx(lam, abs=1e-4)
    assert res.sigma == pytest.approx(sigma, abs=2e-4)
    assert res.epsilon <= epsilon
    assert res.sigma <= 1.3 * res.sigma_gaussian
    # the lam one grid step below must fail the rule (it is the smallest)
    smaller = res.lam / 1.05
    if smaller > 0.5:
        ev = AmpDpEvent(1.3 * res.sigma_gaussian, smaller, 0.5, math.sqrt(2), 0.01, 0.15)
        assert PrivacyAccountant("rdp").compose(ev).get_epsilon(1e-5) > epsilon


def test_amp_pld_meets_budget_and_needs_less_noise_at_same_lam():
    for epsilon in (0.1, 1.0, 8.0):
        rdp = amp_parameters(epsilon, 1e-5, accounting="rdp")
        pld = amp_parameters(epsilon, 1e-5, accounting="pld")
        assert pld.epsilon <= epsilon
        assert pld.lam <= rdp.lam  # the same rule stops earlier
        at_same_lam = amp_parameters(epsilon, 1e-5, accounting="pld", lam=rdp.lam)
        assert at_same_lam.sigma < rdp.sigma
        assert at_same_lam.epsilon <= epsilon


@pytest.mark.parametrize(
    ("epsilon", "dishonest", "honest"),
    [(1.0, 2.7494, 7.4619), (8.0, 0.7580, 1.2668)],
)
def test_dpsgd_noise_multipliers_match_spec(epsilon, dishonest, honest):
    q, steps = 256 / 36000, 60 * 140
    z = dpsgd_noise_multiplier(epsilon, 1e-5, q, steps, accounting="rdp", orders=range(2, 257))
    assert z == pytest.approx(dishonest, rel=2e-3)
    zt = dpsgd_noise_multiplier(epsilon, 1e-5, q, steps, tuning_mu=15.4, orders=range(2, 257))
    assert zt == pytest.approx(honest, rel=2e-3)
    tuned = tuned_event(dpsgd_event(zt, q, steps), 15.4)
    assert PrivacyAccountant(orders=range(2, 257)).compose(tuned).get_epsilon(1e-5) <= epsilon


def _check_dpsgd_calibration(epsilon, q, steps):
    z = dpsgd_noise_multiplier(epsilon, 1e-5, q, steps, rtol=1e-3)
    assert PrivacyAccountant().compose(dpsgd_event(z, q, steps)).get_epsilon(1e-5) <= epsilon


@pytest.mark.parametrize(("epsilon", "q", "steps"), [(1.0, 0.05, 100), (3.0, 0.2, 30)])
def test_dpsgd_calibration_never_overspends(epsilon, q, steps):
    # two fixed cases in the default run; the wide random variant below runs 30 (-m slow)
    _check_dpsgd_calibration(epsilon, q, steps)


@pytest.mark.slow
@settings(max_examples=30, deadline=None)
@given(
    epsilon=st.floats(0.02, 20), q=st.floats(1e-4, 1.0), steps=st.integers(1, 20000),
    delta=st.sampled_from([1e-3, 1e-5, 1e-8]),
)  # fmt: skip
def test_dpsgd_calibration_never_overspends_wide(epsilon, q, steps, delta):
    # with delta >= q even a noiseless step meets the target (the search runs to its floor)
    assume(delta < 0.1 * q)
    _check_model_guided_calibration(epsilon, delta, q, steps)


def _check_model_guided_calibration(epsilon, delta, q, steps, rtol=2e-4):
    """The model-guided search: within budget on the calibration and the default grids,
    and the same noise as the bracketing search (the careful one) within its tolerance."""
    fast = dpsgd_noise_multiplier(epsilon, delta, q, steps, rtol=rtol)
    for h in {pld_grid(epsilon), 1e-4}:
        accountant = PrivacyAccountant("pld", value_discretization_interval=h)
        assert accountant.compose(dpsgd_event(fast, q, steps)).get_epsilon(delta) <= epsilon
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(calibrators, "MODEL_SEARCH_EVALUATIONS", 0)  # bracketing search only
        careful = dpsgd_noise_multiplier(epsilon, delta, q, steps, rtol=rtol)
    assert careful * (1 - rtol) <= fast <= careful * (1 + 2 * rtol)


@pytest.mark.parametrize(
    ("epsilon", "delta", "q", "steps"),
    [
        (0.1, 1e-5, 256 / 36177, 8480),  # the Adult DP-SGD defaults
        (1.0, 1e-5, 256 / 36177, 8480),
        (8.0, 1e-5, 256 / 36177, 8480),
        (0.5, 1e-7, 0.05, 200),
        (3.0, 1e-3, 0.5, 10),
        (2.0, 1e-6, 1.0, 50),  # no subsampling: composed Gaussians
    ],
)
def test_model_guided_calibration_matches_the_bracketing_search(epsilon, delta, q, steps):
    _check_model_guided_calibration(epsilon, delta, q, steps)


def test_model_guided_calibration_needs_few_accountant_calls(monkeypatch):
    calls = []
    real = calibrators._delta_of

    def counted(event, *args, **kwargs):
        calls.append(event)
        return real(event, *args, **kwargs)

    monkeypatch.setattr(calibrators, "_delta_of", counted)
    acc_mod._RESULTS.clear()
    for epsilon in (0.3, 1.0, 8.0):
        calls.clear()
        dpsgd_noise_multiplier(epsilon, 1e-5, 256 / 36177, 8480, rtol=2e-4)
        distinct = {acc_mod._event_key(e) for e in calls}
        assert len(distinct) <= 5, (epsilon, len(distinct))  # the bracketing search took 10-20


def test_amp_calibration_rejects_bad_input():
    with pytest.raises(ValueError, match="epsilon"):
        amp_parameters(-1.0, 1e-5)
    with pytest.raises(ValueError, match="accounting"):
        amp_parameters(1.0, 1e-5, accounting="exact")
    with pytest.raises(ValueError, match="lam must be > beta"):
        amp_parameters(1.0, 1e-5, lam=0.1)
