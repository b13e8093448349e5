"""The process-wide cache of accountant queries: same answers, exact keys, safe fallback."""

import attr
import pytest
from dp_accounting import dp_event

from dpconvex.accounting import PrivacyAccountant
from dpconvex.accounting import accountants as acc_mod
from dpconvex.accounting.events import AmpDpEvent


def _fresh(event, accounting="pld"):
    return PrivacyAccountant(accounting).compose(event)


def test_repeated_query_is_answered_from_the_cache_with_the_same_value():
    event = dp_event.SelfComposedDpEvent(dp_event.GaussianDpEvent(3.123456), 4)
    first = _fresh(event).get_epsilon(1e-6)
    hits = acc_mod._RESULTS.hits
    again = _fresh(event).get_epsilon(1e-6)
    assert again == first and acc_mod._RESULTS.hits == hits + 1
    acc_mod._RESULTS.clear()
    assert _fresh(event).get_epsilon(1e-6) == first  # recomputed: the same number


@pytest.mark.parametrize("accounting", ["pld", "rdp"])
def test_a_change_in_any_field_or_setting_is_a_different_query(accounting):
    base = AmpDpEvent(5.0, 20.0, 0.5, 1.4, 1e-6, 0.01)
    eps = _fresh(base, accounting).get_epsilon(1e-5)
    for changed in (
        AmpDpEvent(5.0 * (1 + 1e-12), 20.0, 0.5, 1.4, 1e-6, 0.01),
        AmpDpEvent(5.0, 20.0, 0.5, 1.4, 1e-6, 0.02),
        dp_event.SelfComposedDpEvent(base, 2),
    ):
        key = PrivacyAccountant(accounting).compose(changed)._query_key("epsilon", 1e-5)
        assert key != PrivacyAccountant(accounting).compose(base)._query_key("epsilon", 1e-5)
    # settings are part of the key too
    coarse = PrivacyAccountant(accounting, value_discretization_interval=1e-2).compose(base)
    assert coarse._query_key("epsilon", 1e-5) != _fresh(base, accounting)._query_key(
        "epsilon", 1e-5
    )
    assert _fresh(base, accounting).get_delta(eps) <= 1e-5 * (1 + 1e-6)


@attr.s(frozen=True)
class _OpaqueEvent(dp_event.DpEvent):
    payload: object = attr.ib()


def test_fields_that_are_not_plain_values_are_never_keyed():
    with pytest.raises(acc_mod._Uncacheable):
        acc_mod._event_key(_OpaqueEvent(object()))
    # a ledger holding one is computed without the cache (key None), never mixed up
    acc = PrivacyAccountant("rdp").compose(dp_event.GaussianDpEvent(1.0))
    acc._events.append(_OpaqueEvent(object()))
    assert acc._query_key("epsilon", 1e-5) is None
