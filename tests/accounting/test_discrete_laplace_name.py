"""dpconvex's discrete Laplace event (a scale) is not dp_accounting's (its inverse)."""

import json

import pytest
from dp_accounting import dp_event as de

from dpconvex import accounting
from dpconvex.accounting import (
    DiscreteLaplaceScaleDpEvent,
    PrivacyAccountant,
    UnsupportedEventError,
)
from dpconvex.accounting.serialization import event_from_dict, event_to_dict

# Written by dpconvex before the rename (event_to_dict of a composition of two events).
OLD_JSON = (
    '{"event": "dp_accounting.dp_event.ComposedDpEvent", "fields": {"events": ['
    '{"event": "dpconvex.accounting.events.DiscreteLaplaceDpEvent", '
    '"fields": {"scale": 2.0, "sensitivity": 1.0, "dimension": 3}}, '
    '{"event": "dpconvex.accounting.events.DiscreteLaplaceDpEvent", '
    '"fields": {"scale": 4.0, "sensitivity": 2.0, "dimension": 1}}]}}'
)


def test_files_written_before_the_rename_load_and_new_files_are_the_same():
    event = event_from_dict(json.loads(OLD_JSON))
    assert event == de.ComposedDpEvent(
        [DiscreteLaplaceScaleDpEvent(2.0, 1.0, 3), DiscreteLaplaceScaleDpEvent(4.0, 2.0)]
    )
    assert json.dumps(event_to_dict(event)) == OLD_JSON  # the stored name did not change


def test_the_old_public_name_still_works_with_a_deprecation_warning():
    with pytest.warns(DeprecationWarning, match="DiscreteLaplaceScaleDpEvent"):
        old = accounting.DiscreteLaplaceDpEvent
    assert old is DiscreteLaplaceScaleDpEvent
    with pytest.raises(AttributeError):
        accounting.NoSuchName  # noqa: B018


def test_dp_accountings_event_takes_the_inverse_parameter_and_prices_alike_by_pld():
    scale = 2.0
    ours = PrivacyAccountant("pld").compose(DiscreteLaplaceScaleDpEvent(scale, 1.0))
    theirs = PrivacyAccountant("pld").compose(de.DiscreteLaplaceDpEvent(1.0 / scale, 1))
    assert ours.get_epsilon(1e-6) == pytest.approx(theirs.get_epsilon(1e-6), rel=1e-3)
    assert theirs.get_epsilon(1e-6) == pytest.approx(1.0 / scale, rel=1e-3)  # pure eps = 1/b
    with pytest.raises(UnsupportedEventError, match="RDP accounting does not support"):
        PrivacyAccountant("rdp").compose(de.DiscreteLaplaceDpEvent(1.0 / scale, 1))
