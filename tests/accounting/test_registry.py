"""Other modules can price their own events through the accountant registry."""

import attr
import numpy as np
import pytest
from dp_accounting.dp_event import DpEvent

from dpconvex.accounting import (
    GaussianDpEvent,
    PoissonSampledDpEvent,
    PrivacyAccountant,
    register_pld,
    register_rdp,
)
from dpconvex.accounting import pld as our_pld
from dpconvex.accounting.registry import PLD_CHECKS, PLD_RULES, RDP_RULES


@attr.s(frozen=True, slots=True, auto_attribs=True)
class _ToyGaussianEvent(DpEvent):
    """A Gaussian mechanism of sensitivity 1 and noise ``sigma``, priced through the registry."""

    sigma: float


@pytest.fixture
def registered():
    register_rdp(_ToyGaussianEvent, lambda e, orders: orders / (2 * e.sigma**2))
    register_pld(_ToyGaussianEvent, lambda e, h: our_pld.gaussian_loss_pmf(1.0, e.sigma, h))
    yield
    RDP_RULES.pop(_ToyGaussianEvent)
    PLD_RULES.pop(_ToyGaussianEvent)


def test_registered_event_matches_dp_accountings_gaussian(registered):
    for accounting in ("rdp", "pld"):
        ours = PrivacyAccountant(accounting).compose(_ToyGaussianEvent(2.0), 5).get_epsilon(1e-6)
        theirs = PrivacyAccountant(accounting).compose(GaussianDpEvent(2.0), 5).get_epsilon(1e-6)
        assert ours == pytest.approx(theirs, rel=2e-3)
    sub = PoissonSampledDpEvent(0.1, _ToyGaussianEvent(1.0))
    ref = PoissonSampledDpEvent(0.1, GaussianDpEvent(1.0))
    assert PrivacyAccountant("pld").compose(sub, 20).get_epsilon(1e-5) == pytest.approx(
        PrivacyAccountant("pld").compose(ref, 20).get_epsilon(1e-5), rel=2e-2
    )


def test_unregistered_event_is_refused():
    with pytest.raises(Exception, match="not support"):
        PrivacyAccountant().compose(_ToyGaussianEvent(2.0))
    assert np.isfinite(PrivacyAccountant().compose(GaussianDpEvent(2.0)).get_epsilon(1e-5))


def test_pld_check_refuses_some_instances_and_auto_falls_back_to_rdp():
    @attr.s(frozen=True, slots=True, auto_attribs=True)
    class _Picky(DpEvent):
        sigma: float

    register_rdp(_Picky, lambda e, orders: orders / (2 * e.sigma**2))
    register_pld(
        _Picky,
        lambda e, h: our_pld.gaussian_loss_pmf(1.0, e.sigma, h),
        check=lambda e: None if e.sigma >= 1 else "too little noise for this PLD rule",
    )
    try:
        assert PrivacyAccountant().compose(_Picky(2.0)).accounting_used == "pld"
        assert PrivacyAccountant().compose(_Picky(0.5)).accounting_used == "rdp"
        with pytest.raises(Exception, match="too little noise"):
            PrivacyAccountant("pld").compose(_Picky(0.5))
    finally:
        RDP_RULES.pop(_Picky)
        PLD_RULES.pop(_Picky)
        PLD_CHECKS.pop(_Picky)
