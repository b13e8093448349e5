"""Calibration of sigma, choice of p, comparison with Gaussian (Ganesh's thesis, ch. 2)."""

import math

import pytest

from dpconvex.accounting import PrivacyAccountant, gaussian_sigma
from dpconvex.queries import (
    GeneralizedGaussianDpEvent,
    calibrated,
    choose_p,
    counting_summary,
    format_counting_summary,
    gg_delta,
    gg_epsilon,
    gg_sigma,
    thesis_sigma,
)


@pytest.mark.parametrize("k", [100, 10_000])
def test_p2_calibration_is_the_analytic_gaussian(k):
    # O-1: sigma_GG = sqrt 2 * analytic-Gaussian std for l2-sensitivity sqrt k
    sigma = gg_sigma(k, 1.0, 1e-6, 2.0)
    assert sigma == pytest.approx(math.sqrt(2) * gaussian_sigma(1.0, 1e-6, math.sqrt(k)), rel=2e-4)


@pytest.mark.parametrize(
    "k,p,sigma,emax,gauss",
    [(1000, 4.0, 270.53, 400.5, 458.96), (10_000, 4.0, 851.28, 1379.3, 1697.8)],
)
def test_calibrated_sigma_and_max_error_oracle_o8(k, p, sigma, emax, gauss):
    cal = calibrated(k, 1.0, 1e-6, p)
    assert cal.sigma == pytest.approx(sigma, rel=5e-3)
    assert cal.expected_max_error == pytest.approx(emax, rel=5e-3)
    assert cal.epsilon <= 1.0  # safe side, as the accountant reports it
    summary = counting_summary(k, 1.0, 1e-6, p=p)
    assert summary["gaussian_expected_max_error"] == pytest.approx(gauss, rel=5e-3)
    assert summary["ratio"] < 0.9


@pytest.mark.slow
@pytest.mark.parametrize(
    "k,p,sigma,emax", [(100_000, 4.0, 2690.65, 4663.5), (1_000_000, 6.0, 10420.3, 15441)]
)
def test_calibrated_sigma_oracle_o8_large_k(k, p, sigma, emax):
    cal = calibrated(k, 1.0, 1e-6, p)
    assert cal.sigma == pytest.approx(sigma, rel=5e-3)
    assert cal.expected_max_error == pytest.approx(emax, rel=5e-3)


def test_calibration_is_on_the_safe_side_and_tight():
    k, p = 300, 3.0
    sigma = gg_sigma(k, 0.7, 1e-5, p)
    event = GeneralizedGaussianDpEvent(p, sigma, k)
    assert PrivacyAccountant("pld").compose(event).get_epsilon(1e-5) <= 0.7
    assert gg_delta(0.7, p, sigma, k) <= 1e-5 < gg_delta(0.7, p, sigma * (1 - 1e-4), k)


def test_rdp_calibration_needs_more_noise():
    pld = gg_sigma(100, 1.0, 1e-6, 4.0)
    rdp = gg_sigma(100, 1.0, 1e-6, 4.0, accounting="rdp")
    assert pld < rdp < 1.5 * pld
    event = GeneralizedGaussianDpEvent(4.0, rdp, 100)
    assert PrivacyAccountant("rdp").compose(event).get_epsilon(1e-6) <= 1.0


def test_sensitivity_scales_sigma():
    assert gg_sigma(1000, 1.0, 1e-5, 4.0, sensitivity=4.0) == pytest.approx(
        4.0 * gg_sigma(1000, 1.0, 1e-5, 4.0), rel=1e-5
    )


def test_thesis_constant_is_very_loose_o11():
    loose = thesis_sigma(10_000, 4.0, 1.0, 1e-6)
    assert loose == pytest.approx(185 * math.sqrt(4e4 * math.log(1e6)), rel=1e-12)
    exact = calibrated(10_000, 1.0, 1e-6, 4.0).sigma
    assert loose > 100 * exact
    assert gg_delta(1.0, 4.0, loose, 10_000) < 1e-12  # far inside the budget


def test_choose_p_beats_the_gaussian_beyond_1e3_queries():
    best, tried = choose_p(10_000, 1.0, 1e-6)
    assert best.p == 4.0  # p = 4 is best at k = 1e4 among the candidates
    assert all(best.expected_max_error <= t.expected_max_error for t in tried)
    gauss = counting_summary(10_000, 1.0, 1e-6, p=2.0)
    assert gauss["ratio"] == pytest.approx(1.0, abs=1e-3)  # p = 2 is the Gaussian
    assert best.expected_max_error / gauss["gaussian_expected_max_error"] < 0.85


def test_counting_summary_contract():
    s = counting_summary(1000, 1.0, 1e-6)
    for key in ("p", "sigma", "expected_max_error", "gaussian_sigma"):
        assert s[key] > 0
    assert s["gaussian_expected_max_error"] > s["expected_max_error"]
    assert s["epsilon"] <= 1.0 and s["gaussian_epsilon"] <= 1.0
    assert s["thesis_sigma"] > 50 * s["sigma"]
    text = format_counting_summary(s)
    assert "Generalized Gaussian, p=4" in text and f"{s['sigma']:.4f}" in text


@pytest.mark.parametrize(
    "kwargs,name",
    [
        ({"k": 0, "epsilon": 1.0, "delta": 1e-6}, "k"),
        ({"k": 10.5, "epsilon": 1.0, "delta": 1e-6}, "k"),
        ({"k": 10, "epsilon": 0.0, "delta": 1e-6}, "epsilon"),
        ({"k": 10, "epsilon": float("nan"), "delta": 1e-6}, "epsilon"),
        ({"k": 10, "epsilon": 1.0, "delta": 1.0}, "delta"),
        ({"k": 10, "epsilon": 1.0, "delta": 0.0}, "delta"),
        ({"k": 10, "epsilon": 1.0, "delta": 1e-6, "p": 0.5}, "p"),
        ({"k": 10, "epsilon": 1.0, "delta": 1e-6, "p": float("inf")}, "p"),
    ],
)
def test_counting_summary_refuses_bad_input(kwargs, name):
    with pytest.raises(ValueError, match=name):
        counting_summary(**kwargs)


# --- issue 31: extreme public parameters fail fast or compute without overflow -----------
def test_choose_p_with_one_candidate_calibrates_it():
    """A single candidate (or one left after skipping costly ones) used to raise KeyError."""
    best, results = choose_p(10, 1.0, 1e-6, candidates=[2.0])
    assert best.p == 2.0 and results == [best]
    assert best.sigma == calibrated(10, 1.0, 1e-6, 2.0).sigma


def test_pld_calibration_refuses_a_delta_below_its_tail():
    """delta = 1e-300 sent the sigma search to 1e21 and an OverflowError; RDP still works."""
    with pytest.raises(ValueError, match="rdp"):
        gg_sigma(10, 1.0, 1e-300, 2.0)
    sigma = gg_sigma(10, 1.0, 1e-300, 2.0, accounting="rdp")
    assert gg_epsilon(1e-300, 2.0, sigma, 10, accounting="rdp") <= 1.0


@pytest.mark.parametrize("p", [0.5, 64.5, 1e12, math.inf, math.nan])
def test_exponents_outside_1_to_64_are_refused(p):
    with pytest.raises(ValueError, match="p"):
        calibrated(10, 1.0, 1e-6, p)
