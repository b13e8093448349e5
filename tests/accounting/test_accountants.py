"""Accountants: our events inside dp_accounting's machinery, DP-SGD and honest tuning."""

import math

import numpy as np
import pytest
from dp_accounting import dp_event
from dp_accounting.rdp import rdp_privacy_accountant as dpa_rdp

from dpconvex.accounting import (
    AmpDpEvent,
    ComposedDpEvent,
    ObjectivePerturbationDpEvent,
    PoissonSampledDpEvent,
    PrivacyAccountant,
    RdpAccountant,
    UnsupportedEventError,
    dpsgd_event,
    objpert_rdp,
    tuned_event,
)
from dpconvex.accounting.pld_accountant import PLDAccountant

OP = ObjectivePerturbationDpEvent(5.0, 20.0, 1.0, 1.0)
SPEC_Q, SPEC_T = 256 / 36000, 60 * 140
INT_ORDERS = list(range(2, 257))


def test_rdp_accountant_adds_the_closed_form():
    acc = RdpAccountant([1.5, 2, 10, 100]).compose(OP, 7)
    expected = 7 * objpert_rdp([1.5, 2, 10, 100], sigma=5, lam=20, beta=1, lipschitz=1)
    np.testing.assert_allclose(acc.rdp, expected, rtol=1e-14)


def test_dpsgd_matches_spec_and_dp_accounting():
    ev = dpsgd_event(1.0, SPEC_Q, SPEC_T)
    rdp_int = PrivacyAccountant("rdp", orders=INT_ORDERS).compose(ev).get_epsilon(1e-5)
    assert rdp_int == pytest.approx(4.144223, abs=2e-6)  # reference value (== autodp)
    plain = dpa_rdp.RdpAccountant(INT_ORDERS).compose(ev).get_epsilon(1e-5)
    assert rdp_int == pytest.approx(plain, rel=1e-12)
    auto = PrivacyAccountant().compose(ev)
    assert auto.accounting_used == "pld"
    assert auto.get_epsilon(1e-5) < rdp_int  # PLD is tighter than RDP here


def test_honest_tuning_poisson_matches_spec_formula():
    ev = tuned_event(dpsgd_event(1.0, SPEC_Q, SPEC_T), 15.4)
    acc = PrivacyAccountant(orders=INT_ORDERS).compose(ev)
    assert acc.accounting_used == "rdp"  # repeat-and-select is RDP-only
    assert acc.get_epsilon(1e-5) == pytest.approx(11.2654, abs=1e-4)


def _papernot_steinke_poisson(orders, rdp, mu):
    """Independent implementation of Papernot & Steinke (arXiv 2110.03620), Thm 6."""
    orders, rdp = np.asarray(orders, float), np.asarray(rdp, float)
    out = []
    for lam, eps in zip(orders, rdp, strict=True):
        eps_hat = math.log1p(1 / (lam - 1))
        log_d = (orders - 1) * (rdp - eps_hat + np.log1p(-1 / orders)) - np.log(orders)
        delta_hat = min(1.0, math.exp(log_d.min()))
        out.append(eps + mu * delta_hat + math.log(mu) / (lam - 1))
    return np.array(out)


def test_repeat_and_select_of_our_own_event():
    # P&S Thm 6 takes the base (eps_hat, delta_hat)-DP guarantee from any valid source:
    # for our events the accountant uses min(RDP conversion, PLD profile); see
    # tests/accounting/test_tuned_base_delta.py. TNB (Thm 2) is RDP-only and unchanged.
    orders = np.arange(2, 129, dtype=float)
    base = RdpAccountant(orders).compose(OP).rdp
    tuned = RdpAccountant(orders).compose(tuned_event(OP, 10.0)).rdp
    from_rdp = _papernot_steinke_poisson(orders, base, 10.0)
    assert np.all(tuned <= from_rdp * (1 + 1e-12))
    assert np.any(tuned < from_rdp * (1 - 1e-3))
    tnb = RdpAccountant(orders).compose(tuned_event(OP, 10.0, shape=1.0)).rdp
    expected = dpa_rdp._compute_rdp_repeat_and_select(orders, base, 10.0, 1.0)
    np.testing.assert_allclose(tnb, expected, rtol=1e-12)
    eps_base = PrivacyAccountant().compose(OP).get_epsilon(1e-6)
    eps_poisson = PrivacyAccountant().compose(tuned_event(OP, 10.0)).get_epsilon(1e-6)
    eps_tnb = PrivacyAccountant().compose(tuned_event(OP, 10.0, shape=1.0)).get_epsilon(1e-6)
    assert eps_base < eps_poisson and eps_base < eps_tnb
    assert math.isfinite(eps_tnb)


def test_auto_uses_pld_for_subsampled_objpert_and_rdp_prices_it_by_the_general_bound():
    sub = PoissonSampledDpEvent(0.1, OP)
    assert PrivacyAccountant().compose(sub).accounting_used == "pld"
    pld = PrivacyAccountant("pld").compose(sub).get_epsilon(1e-5)
    rdp = PrivacyAccountant("rdp").compose(sub).get_epsilon(1e-5)  # Zhu-Wang 2019, Thm 6
    alone = PrivacyAccountant("rdp").compose(OP).get_epsilon(1e-5)
    assert pld <= rdp < alone  # amplified, and looser than the exact profile
    with pytest.raises(UnsupportedEventError, match="PLD"):
        PrivacyAccountant("pld").compose(tuned_event(OP, 5.0))


def test_mixed_composition_pld_below_rdp():
    amp = AmpDpEvent(8, 10, 0.5, 1.4, 0.01, 0.2)
    ledger = ComposedDpEvent([OP, dpsgd_event(1.2, 0.01, 500), amp])
    pld = PrivacyAccountant("pld").compose(ledger).get_epsilon(1e-6)
    rdp = PrivacyAccountant("rdp").compose(ledger).get_epsilon(1e-6)
    assert 0 < pld < rdp


def test_refined_orders_never_worse_than_grid():
    for event in [OP, AmpDpEvent(56.3, 47.6, 0.5, math.sqrt(2), 0.01, 0.15)]:
        refined = PrivacyAccountant("rdp").compose(event).get_epsilon(1e-5)
        grid = (
            PrivacyAccountant("rdp", orders=RdpAccountant().orders).compose(event).get_epsilon(1e-5)
        )
        assert refined <= grid


def test_delta_queries_and_monotonicity():
    acc = PrivacyAccountant("pld").compose(OP, 3)
    eps = acc.get_epsilon(1e-6)
    assert acc.get_delta(eps) <= 1e-6 * (1 + 1e-6)
    rdp = PrivacyAccountant("rdp").compose(OP, 3)
    assert rdp.get_delta(rdp.get_epsilon(1e-6)) == pytest.approx(1e-6, rel=1e-3)


def test_replace_one_is_refused_for_our_events():
    for acc in (
        RdpAccountant(neighboring_relation=dp_event_relation()),
        PLDAccountant(neighboring_relation=dp_event_relation()),
    ):
        assert not acc.supports(OP)


def dp_event_relation():
    from dp_accounting import privacy_accountant

    return privacy_accountant.NeighboringRelation.REPLACE_ONE


def test_bad_queries_and_events():
    acc = PrivacyAccountant().compose(OP)
    with pytest.raises(ValueError, match="delta"):
        acc.get_epsilon(0.0)
    with pytest.raises(ValueError, match="epsilon"):
        acc.get_delta(-1.0)
    with pytest.raises(TypeError, match="DpEvent"):
        acc.compose("objpert")
    with pytest.raises(ValueError, match="count"):
        acc.compose(OP, 0)
    with pytest.raises(ValueError, match="accounting"):
        PrivacyAccountant("exact")
    with pytest.raises(ValueError, match="lam must be > beta"):
        ObjectivePerturbationDpEvent(1.0, 0.5, 1.0, 1.0)
    with pytest.raises(ValueError, match="tau"):
        AmpDpEvent(1.0, 2.0, 1.0, 1.0, 0.0, 0.1)
    with pytest.raises(ValueError, match="mean"):
        tuned_event(OP, 0.5)
    with pytest.raises(ValueError, match="sampling_rate"):
        dpsgd_event(1.0, 1.5, 10)


def test_events_are_immutable_and_serializable():
    with pytest.raises(AttributeError):
        OP.sigma = 1.0  # frozen
    nt = OP.to_named_tuple()
    assert dp_event.DpEvent.from_named_tuple(nt) == OP
