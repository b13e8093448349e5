"""The process-wide cache of accountant queries: same answers, exact keys, safe fallback."""

import attr
import pytest
from dp_accounting import dp_event

from dpconvex.accounting import PrivacyAccountant
from dpconvex.accounting import caches as acc_mod
from dpconvex.accounting import pld_accountant as pld_acc
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


def test_the_same_ledger_on_the_same_grid_is_composed_once_per_process():
    acc_mod._COMPOSED.clear()
    event = dp_event.SelfComposedDpEvent(
        dp_event.PoissonSampledDpEvent(0.01, dp_event.GaussianDpEvent(1.7)), 300
    )
    first = PrivacyAccountant("pld").compose(event)._plds()
    again = PrivacyAccountant("pld").compose(event)._plds()
    assert again is first
    finer = PrivacyAccountant("pld", value_discretization_interval=5e-5).compose(event)._plds()
    assert finer is not first


def test_forms_every_accountant_prices_alike_share_a_key():
    e = dp_event.PoissonSampledDpEvent(0.02, dp_event.GaussianDpEvent(2.0))
    nested = dp_event.SelfComposedDpEvent(dp_event.SelfComposedDpEvent(e, 30), 4)
    flat = dp_event.SelfComposedDpEvent(e, 120)
    assert acc_mod._event_key(nested) == acc_mod._event_key(flat)
    assert acc_mod._event_key(dp_event.ComposedDpEvent([flat])) == acc_mod._event_key(flat)
    assert acc_mod._event_key(dp_event.SelfComposedDpEvent(e, 1)) == acc_mod._event_key(e)
    # and they are priced alike, so sharing the answer is exact
    for accounting in ("pld", "rdp"):
        a = PrivacyAccountant(accounting)
        b = PrivacyAccountant(accounting)
        a._events.append(nested)  # bypass compose's cache to price both from scratch
        b._events.append(flat)
        assert a._epsilon(1e-5) == pytest.approx(b._epsilon(1e-5), rel=1e-12)


def _fit_dpsgd(X, y):
    from dpconvex import DPLogisticRegression

    return DPLogisticRegression(method="dpsgd", epsilon=2.0, epochs=2, random_state=0).fit(X, y)


def test_a_fit_reports_its_epsilon_from_the_pld_its_calibration_composed(monkeypatch):
    import numpy as np

    built = []
    real = pld_acc.gaussian_loss_pmfs  # the certified compositions (the search's are not)
    monkeypatch.setattr(pld_acc, "gaussian_loss_pmfs", lambda *a: built.append(a) or real(*a))
    rng = np.random.default_rng(0)
    X, y = rng.normal(size=(400, 3)), rng.integers(0, 2, 400)
    acc_mod._RESULTS.clear()
    acc_mod._COMPOSED.clear()
    model = _fit_dpsgd(X, y)
    in_fit = list(built)
    built.clear()
    acc_mod._RESULTS.clear()
    acc_mod._COMPOSED.clear()
    from dpconvex.accounting import dpsgd_noise_multiplier

    p = model.mechanism_params_
    dpsgd_noise_multiplier(2.0, model.delta, p["sampling_rate"], p["steps"], rtol=2e-4)
    assert len(in_fit) == len(built) > 0  # the report composed nothing new


def test_cache_keys_hold_public_parameters_only():
    import numpy as np

    rng = np.random.default_rng(1)
    X, y = rng.normal(size=(400, 3)), rng.integers(0, 2, 400)
    acc_mod._RESULTS.clear()
    acc_mod._COMPOSED.clear()
    model = _fit_dpsgd(X, y)
    results, composed = set(acc_mod._RESULTS._data), set(acc_mod._COMPOSED._data)
    # other rows of the same public shape: every query is the same key, none is new
    _fit_dpsgd(rng.normal(size=(400, 3)) * 7, 1 - y)
    assert set(acc_mod._RESULTS._data) == results
    assert set(acc_mod._COMPOSED._data) == composed
    assert acc_mod._event_key(model.dp_event_) in {key[0] for key in composed}


def test_the_optional_disk_cache_guides_a_new_processs_search_but_never_answers(tmp_path):
    from dpconvex.accounting import disk_cache, dpsgd_noise_multiplier, use_disk_cache

    args = (8.0, 1e-5, 0.1, 20)
    try:
        folder = use_disk_cache(tmp_path)
        acc_mod._RESULTS.clear()
        acc_mod._COMPOSED.clear()
        first = dpsgd_noise_multiplier(*args)
        assert folder.is_dir() and folder.parent == tmp_path and any(folder.iterdir())
        acc_mod._RESULTS.clear()  # as in a new process: only the disk remembers
        acc_mod._COMPOSED.clear()
        hints = acc_mod._RESULTS.hints
        assert dpsgd_noise_multiplier(*args) == first  # the same search, on stored answers
        assert acc_mod._RESULTS.hints > hints  # read from the disk ...
        event = dp_event.SelfComposedDpEvent(dp_event.GaussianDpEvent(2.345678), 7)
        key = _fresh(event)._query_key("epsilon", 1e-6)
        disk_cache.put(key, 1e-3)  # ... but a stored answer is never reported
        acc_mod._RESULTS.clear()
        with pytest.warns(UserWarning, match="disagreed"):
            assert _fresh(event).get_epsilon(1e-6) == _fresh(event)._epsilon(1e-6)
    finally:
        use_disk_cache(None)
        acc_mod._RESULTS.clear()
    assert disk_cache.get(key) is None  # off again


def test_a_broken_disk_cache_warns_once_and_changes_no_answer(tmp_path):
    from dpconvex.accounting import dpsgd_noise_multiplier, use_disk_cache

    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    acc_mod._RESULTS.clear()
    expected = dpsgd_noise_multiplier(8.0, 1e-5, 0.1, 20)
    try:
        use_disk_cache(blocker)  # a file where the cache directory should be
        acc_mod._RESULTS.clear()
        with pytest.warns(UserWarning, match="on-disk accounting cache: off") as seen:
            assert dpsgd_noise_multiplier(8.0, 1e-5, 0.1, 20) == expected
        assert len(seen) == 1
    finally:
        use_disk_cache(None)
