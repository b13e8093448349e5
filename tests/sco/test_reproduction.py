"""``reproduce_sco_rates``: the quick run writes its files; the synthetic risks are exact."""

import csv
import json

import numpy as np
import pytest

from dpconvex.experiments import sco_rates
from dpconvex.experiments.sco_rates import reproduce_sco_rates


@pytest.mark.slow  # ~25 s; CI runs -m slow as its own step
def test_quick_reproduction_writes_files_and_shows_the_width_effect(tmp_path, capsys):
    summary = reproduce_sco_rates(tmp_path, quick=True)
    for name in ("sco_rates.csv", "sco_rates.json", "sco_slopes.csv", "sco_rates.png"):
        assert (tmp_path / name).stat().st_size > 0
    assert json.loads((tmp_path / "sco_rates.json").read_text())["quick"] is True
    rows = list(csv.DictReader(open(tmp_path / "sco_rates.csv")))
    assert len(rows) == sco_rates._count_runs(sco_rates.QUICK)
    assert all(np.isfinite(float(r["excess"])) for r in rows)
    slopes = list(csv.DictReader(open(tmp_path / "sco_slopes.csv")))
    assert {s["sweep"] for s in slopes} >= {"alg1/l1_vs_n", "alg3/vs_n", "heavy/alg7_vs_eps"}
    assert "alg1/l1_vs_n" in capsys.readouterr().out  # the slope table is printed
    # Alg. 2's privacy term (n eps)^-2 dominates on the l2 ball: steep in both n and eps
    assert summary["alg2"]["l2_vs_n"]["slope"] <= -1.5
    assert summary["alg2"]["l2_vs_eps"]["slope"] <= -1.5
    # Alg. 1: the l2-ball privacy cost grows with d much faster than the l1-ball one
    cost = summary["alg1"]["privacy_cost_vs_d"]
    assert cost["l2"]["cost_slope_in_d"] > cost["l1"]["cost_slope_in_d"] + 0.25
    assert summary["total_s"] < 90  # about 25 s when the machine is not shared


def test_huber_gaussian_risk_matches_monte_carlo():
    rng = np.random.default_rng(0)
    for m, sd, h in ((0.3, 0.5, 1.0), (2.0, 1.0, 0.5), (-1.0, 2.0, 1.0)):
        r = rng.normal(m, sd, 1_000_000)
        mc = np.where(np.abs(r) <= h, 0.5 * r * r, h * np.abs(r) - 0.5 * h * h)
        assert sco_rates.huber_gaussian_risk(np.array(m), sd, h) == pytest.approx(
            mc.mean(), abs=4 * mc.std() / 1000
        )


@pytest.mark.parametrize("kind", ["logistic", "huber", "heavy", "squared"])
def test_population_risks_match_samples(kind):
    """Excess risks of the benchmark problems against averages over fresh samples."""
    rng = np.random.default_rng(1)
    d, q = 4, 3.0
    w_star = np.array([0.5, -0.3, 0.2, 0.0])
    w = np.array([0.1, 0.2, -0.3, 0.4])
    if kind == "logistic":
        prob = sco_rates.LogisticProblem(d, q, w_star)
        loss = lambda X, y, v: np.logaddexp(0, -y * (X @ v))
    elif kind == "huber":
        prob = sco_rates.HuberProblem(d, q, w_star)
        hub = lambda r: np.where(np.abs(r) <= 1, 0.5 * r * r, np.abs(r) - 0.5)
        loss = lambda X, y, v: hub(X @ v - y)
    elif kind == "heavy":
        prob = sco_rates.HeavyTailProblem(d, q, w_star)
        loss = lambda X, y, v: 0.5 * (X @ v - y) ** 2
    else:
        prob = sco_rates.SquaredProblem(d)
        w_star = prob.w_star
        loss = lambda X, y, v: 0.5 * (X @ v - y) ** 2
    X, y = prob.sample(400_000, rng)
    diff = loss(X, y, w) - loss(X, y, w_star)
    assert prob.excess(w) == pytest.approx(diff.mean(), abs=5 * diff.std() / 632)
    assert prob.excess(w_star) == pytest.approx(0.0, abs=1e-12)


def test_trials_argument_is_validated(tmp_path):
    with pytest.raises(ValueError, match="trials"):
        reproduce_sco_rates(tmp_path, quick=True, trials=1)


@pytest.mark.slow
def test_full_reproduction_meets_the_theorems(tmp_path):
    """Full run (~10 min): every sweep in its theorem's regime is no worse than the bound."""
    summary = reproduce_sco_rates(tmp_path)
    assert summary["all_pass"]
    assert summary["total_s"] < 30 * 60
