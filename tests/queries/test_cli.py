"""``dpconvex counting`` (the click command object, run with CliRunner)."""

import json
import math

import pytest
from click.testing import CliRunner

from dpconvex.accounting import PrivacyAccountant, gaussian_sigma
from dpconvex.cli.counting import counting
from dpconvex.queries import GeneralizedGaussianDpEvent, gaussian_expected_max_abs


def invoke(*args):
    return CliRunner().invoke(counting, list(args))


def test_json_output_is_calibrated_and_compared_with_the_gaussian():
    res = invoke("--k", "1e3", "--epsilon", "1", "--delta", "1e-6", "--p", "4", "--json")
    assert res.exit_code == 0, res.output
    s = json.loads(res.output)
    assert s["k"] == 1000 and s["p"] == 4.0
    # the printed sigma is what the PLD accountant prices at <= the target epsilon
    event = GeneralizedGaussianDpEvent(4.0, s["sigma"], 1000)
    assert PrivacyAccountant("pld").compose(event).get_epsilon(1e-6) <= 1.0
    assert s["sigma"] == pytest.approx(270.53, rel=5e-3)  # reference value
    # the Gaussian column is the analytic Gaussian (l2-sensitivity sqrt k), recomputed here
    g = gaussian_sigma(1.0, 1e-6, math.sqrt(1000))
    assert s["gaussian_sigma"] == pytest.approx(g, rel=1e-9)
    assert s["gaussian_expected_max_error"] == pytest.approx(gaussian_expected_max_abs(g, 1000))
    assert s["expected_max_error"] < s["gaussian_expected_max_error"]


def test_table_output_chooses_p():
    res = invoke("--k", "100", "--epsilon", "1", "--delta", "1e-6")
    assert res.exit_code == 0, res.output
    assert "Generalized Gaussian, p=" in res.output
    assert "Gaussian (analytic, std)" in res.output
    assert "E max error" in res.output


@pytest.mark.parametrize(
    "args,name",
    [
        (["--k", "0", "--epsilon", "1", "--delta", "1e-6"], "--k"),
        (["--k", "10.5", "--epsilon", "1", "--delta", "1e-6"], "--k"),
        (["--k", "10", "--epsilon", "-1", "--delta", "1e-6"], "--epsilon"),
        (["--k", "10", "--epsilon", "1", "--delta", "1.5"], "--delta"),
        (["--k", "10", "--epsilon", "1", "--delta", "1e-6", "--p", "0.5"], "--p"),
        (["--k", "1e12", "--epsilon", "1", "--delta", "1e-6"], "--k"),
        (["--k", "inf", "--epsilon", "1", "--delta", "1e-6"], "--k"),
        (["--k", "10", "--epsilon", "nan", "--delta", "1e-6"], "--epsilon"),
        (["--k", "10", "--epsilon", "1e-300", "--delta", "1e-6"], "--epsilon"),
        (["--k", "10", "--epsilon", "1", "--delta", "nan"], "--delta"),
        (["--k", "10", "--epsilon", "1", "--delta", "1e-6", "--p", "nan"], "--p"),
    ],
)
def test_bad_input_is_a_usage_error_naming_it(args, name):
    res = invoke(*args)
    assert res.exit_code == 2, res.output
    assert f"'{name}'" in res.output


def test_too_many_queries_are_refused_before_any_accounting(monkeypatch):
    """``--k 1e12`` allocated 8.6 GB; now it is refused by the option's range, and the
    library refuses PLD accounting beyond the same cap (the RDP route stays open)."""
    from dpconvex.queries import calibration, privacy

    def boom(*args, **kwargs):
        raise AssertionError("accounting was attempted")

    monkeypatch.setattr(calibration, "gg_delta", boom)
    res = invoke("--k", "1e12", "--epsilon", "1", "--delta", "1e-6", "--p", "2")
    assert res.exit_code == 2 and "10000000" in res.output
    with pytest.raises(ValueError, match="RDP"):
        privacy.gg_loss_pmf(2.0, 1e6, privacy.MAX_PLD_QUERIES + 1)
    event = GeneralizedGaussianDpEvent(2.0, 1e6, 10**12)
    assert PrivacyAccountant("rdp").compose(event).get_epsilon(1e-6) > 0


def test_missing_option_is_a_usage_error():
    res = invoke("--k", "10", "--epsilon", "1")
    assert res.exit_code == 2 and "--delta" in res.output
