"""The Renyi-filter ledger against its theorem (Feldman & Zrnic 2021, arXiv 2008.11193, Thm 3.1).

A filter at order alpha admits a spend only if the recorded events' RDP at alpha plus
its own stays <= B, where (alpha, B)-RDP converts to the budget's (epsilon, delta)
(Balle et al. 2020, Thm 21). Every expected value here is computed independently of
dpconvex: the Gaussian's RDP in closed form, the conversion and the subsampled
Gaussian's RDP by dp_accounting itself.
"""

import math

import numpy as np
import pytest
from dp_accounting.rdp.rdp_privacy_accountant import RdpAccountant as DpaRdpAccountant
from dp_accounting.rdp.rdp_privacy_accountant import compute_epsilon
from scipy.optimize import brentq

from dpconvex import Budget, BudgetExceededError
from dpconvex.accounting import GaussianDpEvent, dpsgd_event
from dpconvex.budget import RENYI_FILTER, default_filter_order, renyi_filter_budget


def _independent_budget(epsilon, delta, order):
    """B with dp_accounting's conversion of (order, B)-RDP giving exactly epsilon at delta."""
    if compute_epsilon([order], [1e-9], delta)[0] >= epsilon:
        return -math.inf  # the conversion alone costs more than epsilon at this order
    return brentq(lambda b: compute_epsilon([order], [b], delta)[0] - epsilon, 1e-9, epsilon)


@pytest.mark.parametrize("epsilon, delta", [(1.0, 1e-5), (0.3, 1e-7), (8.0, 1e-6)])
def test_filter_budget_converts_back_to_the_target(epsilon, delta):
    order = default_filter_order(epsilon, delta)
    b = renyi_filter_budget(epsilon, delta, order)
    assert compute_epsilon([order], [b], delta)[0] == pytest.approx(epsilon, rel=1e-12)
    assert b == pytest.approx(_independent_budget(epsilon, delta, order), rel=1e-9)


@pytest.mark.parametrize("epsilon, delta", [(1.0, 1e-5), (0.1, 1e-5), (10.0, 1e-9)])
def test_default_order_admits_the_most_gaussian_noise(epsilon, delta):
    """The default maximizes B(alpha)/alpha: the largest sum of 1/(2 sigma^2) it admits."""
    order = default_filter_order(epsilon, delta)
    grid = 1.0 + np.geomspace(0.05, 2000.0, 400)
    capacity = [_independent_budget(epsilon, delta, a) / a for a in grid if a > 1.02]
    best = max(capacity)
    assert _independent_budget(epsilon, delta, order) / order >= best * (1 - 1e-4)


def _adaptive_sigmas(rng, outputs):
    """An analyst who picks the next noise from the last output (coarse or fine queries)."""
    if not outputs:
        return 3.0
    return float(rng.choice([2.0, 4.0, 12.0])) if outputs[-1] > 0 else 25.0


def test_adaptive_gaussians_are_admitted_exactly_while_the_renyi_sum_fits(tmp_path):
    ledger = Budget(tmp_path / "f.db", 1.0, 1e-5, accounting=RENYI_FILTER)
    alpha, b = ledger.order, ledger.rdp_budget
    rng = np.random.default_rng(3)
    outputs, spent, admitted, refused = [], 0.0, 0, 0
    for _ in range(60):
        sigma = _adaptive_sigmas(rng, outputs)
        cost = alpha / (2 * sigma**2)  # Gaussian RDP, Mironov 2017 Prop. 7
        if spent + cost <= b * (1 - 1e-12):
            entry = ledger.spend(GaussianDpEvent(sigma), mechanism="gauss")
            spent += cost
            admitted += 1
            assert entry.rdp_after == pytest.approx(spent, rel=1e-12)
            outputs.append(rng.normal(0.0, sigma))  # the release the analyst sees next
        elif spent + cost > b * (1 + 1e-12):
            with pytest.raises(BudgetExceededError, match="Renyi divergence"):
                ledger.spend(GaussianDpEvent(sigma), mechanism="gauss")
            refused += 1
            outputs.append(-1.0)  # a refusal: the analyst asks for finer noise
    assert admitted > 3 and refused > 0
    assert ledger.rdp_spent() == pytest.approx(spent, rel=1e-12) and spent <= b
    assert len(ledger.entries()) == admitted
    # after refusals, a spend that still fits is admitted (the filter does not stop)
    room = b - spent
    sigma = math.sqrt(alpha / (2 * room * 0.9))
    ledger.spend(GaussianDpEvent(sigma), mechanism="small")
    assert ledger.rdp_spent() <= b


def test_mixed_events_use_dp_accountings_rdp_at_the_order(tmp_path):
    events = [dpsgd_event(8.0, 0.01, 200), GaussianDpEvent(20.0), dpsgd_event(10.0, 0.05, 20)]
    ledger = Budget(tmp_path / "f.db", 2.0, 1e-6, accounting=RENYI_FILTER)
    alpha, b = ledger.order, ledger.rdp_budget
    expected = 0.0
    for event in events * 3:
        cost = float(DpaRdpAccountant([alpha]).compose(event).rdp[0])
        if expected + cost <= b:
            ledger.spend(event, mechanism="mixed")
            expected += cost
        else:
            with pytest.raises(BudgetExceededError):
                ledger.spend(event, mechanism="mixed")
    assert ledger.rdp_spent() == pytest.approx(expected, rel=1e-12)
    # spent(): the recorded events' conversion at the filter's order, capped by the budget
    converted = compute_epsilon([alpha], [expected], 1e-6)[0]
    assert ledger.spent() == pytest.approx(min(2.0, converted), rel=1e-9)
    assert ledger.spent() <= ledger.epsilon


def test_filter_mode_is_fixed_at_creation(tmp_path):
    path = tmp_path / "f.db"
    ledger = Budget(path, 1.0, 1e-5, accounting=RENYI_FILTER, order=12.0)
    assert (ledger.order, ledger.accounting) == (12.0, RENYI_FILTER)
    assert Budget(path).order == 12.0
    with pytest.raises(ValueError, match="order=12.0"):
        Budget(path, order=20.0)
    with pytest.raises(ValueError, match="accounting='renyi-filter'"):
        Budget(path, accounting="auto")
    composition = Budget(tmp_path / "c.db", 1.0, 1e-5)
    assert composition.order is None and composition.accounting == "auto"
    with pytest.raises(ValueError, match="accounting='auto'"):
        Budget(tmp_path / "c.db", accounting=RENYI_FILTER)
    with pytest.raises(ValueError, match="composition ledger"):
        composition.rdp_spent()


@pytest.mark.parametrize(
    "sql, finding",
    [
        ("UPDATE budget SET rdp_order = 40", "budget"),
        ("UPDATE budget SET accounting = 'auto'", "budget"),
        ("UPDATE entries SET rdp_after = 0 WHERE id = 1", "entry #1"),
    ],
)
def test_editing_a_filters_order_or_mode_is_tampering(tmp_path, sql, finding):
    import sqlite3

    path = tmp_path / "f.db"
    ledger = Budget(path, 1.0, 1e-5, accounting=RENYI_FILTER)
    ledger.spend(GaussianDpEvent(10.0), mechanism="g")
    with sqlite3.connect(path) as db:
        db.execute(sql)
    assert finding in Budget(path).tampering


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"order": 1.0}, "order must be in"),
        ({"order": float("nan")}, "order"),
        ({"order": 2e6}, "order must be in"),
        ({"order": True}, "order must be a number"),
        ({"order": 1.05}, "leaves no Renyi budget"),
        ({"accounting": "renyi"}, "accounting must be one of"),
        ({"accounting": "auto", "order": 10.0}, "order is for"),
    ],
)
def test_nonsense_filter_settings_are_refused(tmp_path, kwargs, match):
    kwargs.setdefault("accounting", RENYI_FILTER)
    with pytest.raises(ValueError, match=match):
        Budget(tmp_path / "f.db", 1.0, 1e-5, **kwargs)
    assert not (tmp_path / "f.db").exists()


def test_a_filter_that_cannot_reach_the_budget_is_refused(tmp_path):
    with pytest.raises(ValueError, match="cannot guarantee"):
        Budget(tmp_path / "f.db", 1e-4, 1e-100, accounting=RENYI_FILTER)


def test_filter_summary_reports_the_renyi_sum_and_the_guarantee(tmp_path):
    ledger = Budget(tmp_path / "f.db", 1.0, 1e-5, accounting=RENYI_FILTER)
    assert ledger.spent() == 0.0 and ledger.summary()["rdp_spent"] == 0.0
    ledger.spend(GaussianDpEvent(10.0), mechanism="g")
    summary = ledger.summary()
    assert summary["rdp_order"] == ledger.order
    assert summary["rdp_spent"] == pytest.approx(ledger.order / 200)
    assert summary["rdp_left"] == pytest.approx(ledger.rdp_budget - ledger.order / 200)
    assert "however each spend was chosen" in summary["guarantee"]
    assert summary["epsilon_spent"] + summary["epsilon_left"] == pytest.approx(1.0)
