"""The optional on-disk accounting cache: what it stores can cost time, never privacy.

A stored answer only guides a calibration's search; the noise a calibration returns is
checked by a certified computation in the process, and a stored epsilon is never
reported. Entries are authenticated (HMAC under a per-user key), read with bounded
memory, and the directory must be private; a changed pricing rule changes every key.
"""

import math
import os
import stat
import struct
import warnings

import numpy as np
import pytest
from dp_accounting import dp_event, pld, rdp

from dpconvex.accounting import (
    PrivacyAccountant,
    accountants,
    caches,
    disk_cache,
    dpsgd_event,
    dpsgd_noise_multiplier,
    register_rdp,
    registry,
    use_disk_cache,
)

ARGS = (8.0, 1e-5, 0.1, 20)  # epsilon, delta, sampling rate, steps


@pytest.fixture
def cache(tmp_path):
    """A fresh cache directory, the in-process caches emptied (a new process, as it were)."""
    _forget()
    folder = use_disk_cache(tmp_path / "cache")
    disk_cache.stats.update(read=0, missing=0, invalid=0, written=0)
    yield folder
    use_disk_cache(None)
    _forget()


def _forget():
    caches._RESULTS.clear()
    caches._COMPOSED.clear()
    caches._BASE_PLDS.clear()


def _entries(folder):
    return [p for p in folder.iterdir() if not p.name.startswith(".")]


def _sign(folder, name, value):
    """An entry as the user's own key would sign it (an attacker who can read the key)."""
    payload = b"DPCACC01" + struct.pack(">d", value)
    (folder / name).write_bytes(payload + disk_cache._tag(name, payload))


def _dp_accounting_epsilon(z, q, steps, delta, h):
    """The same DP-SGD event priced by dp_accounting's own PLD accountant."""
    acc = pld.pld_privacy_accountant.PLDAccountant(value_discretization_interval=h)
    return acc.compose(dpsgd_event(z, q, steps)).get_epsilon(delta)


@pytest.mark.parametrize("signed", [True, pytest.param(False, marks=pytest.mark.slow)])
def test_a_forged_cache_cannot_lower_the_noise_of_a_dpsgd_calibration(cache, signed):
    """Review item 4: entries claiming delta = 0 everywhere (signed with the user's key, or
    not) made the old code return a far smaller noise; now the check is recomputed."""
    epsilon, delta, q, steps = ARGS
    honest = dpsgd_noise_multiplier(*ARGS)
    assert _entries(cache)
    for path in _entries(cache):
        if signed:
            _sign(cache, path.name, 0.0)
        else:
            path.write_bytes(b"DPCACC01" + struct.pack(">d", 0.0) + bytes(32))
    _forget()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        z = dpsgd_noise_multiplier(*ARGS)
    assert z >= honest * (1 - 1e-4)  # within the search's tolerance of the honest noise
    if not signed:
        assert disk_cache.stats["invalid"] > 0 and disk_cache.stats["read"] == 0


@pytest.mark.parametrize("claim", [0.0, pytest.param(1e-300, marks=pytest.mark.slow)])
def test_a_cache_claiming_every_query_is_free_changes_no_calibration(cache, monkeypatch, claim):
    """The strongest forgery: every possible entry present and authentic, each claiming
    delta (or epsilon) ``claim``. The search is misled; the certified check is not."""
    epsilon, delta, q, steps = ARGS
    honest = dpsgd_noise_multiplier(*ARGS)
    _forget()
    monkeypatch.setattr(disk_cache, "get", lambda key: claim)
    z = dpsgd_noise_multiplier(*ARGS)
    assert z == pytest.approx(honest, rel=2e-5)
    spent = PrivacyAccountant(value_discretization_interval=8e-4).compose(dpsgd_event(z, q, steps))
    assert spent.get_epsilon(delta) <= epsilon


def test_a_fit_on_a_forged_cache_still_meets_its_budget(cache):
    from dpconvex import DPLogisticRegression

    rng = np.random.default_rng(0)
    X, y = rng.normal(size=(300, 3)), rng.integers(0, 2, 300)

    def fit():
        model = DPLogisticRegression(method="dpsgd", epsilon=4.0, epochs=1, random_state=0)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return model.fit(X, y)

    honest = fit()
    for path in _entries(cache):
        _sign(cache, path.name, 1e-300)  # every stored delta or epsilon: "almost free"
    _forget()
    model = fit()
    p = model.mechanism_params_
    assert p["noise_multiplier"] >= honest.mechanism_params_["noise_multiplier"] * (1 - 1e-3)
    spent = _dp_accounting_epsilon(  # on the calibration's grid, 1e-4 epsilon
        p["noise_multiplier"], p["sampling_rate"], p["steps"], model.delta, 4e-4
    )
    assert spent <= 4.0 * (1 + 1e-4) and model.epsilon_ <= 4.0


def test_a_stored_epsilon_is_never_reported(cache):
    event = dp_event.SelfComposedDpEvent(dp_event.GaussianDpEvent(3.0), 5)
    truth = PrivacyAccountant().compose(event)._epsilon(1e-6)
    _sign_key = PrivacyAccountant().compose(event)._query_key("epsilon", 1e-6)
    disk_cache.put(_sign_key, 1e-3)
    with pytest.warns(UserWarning, match="disagreed"):
        assert PrivacyAccountant().compose(event).get_epsilon(1e-6) == truth
    assert disk_cache.get(_sign_key) is None  # distrusted: off for the process


def test_a_changed_rdp_rule_is_never_served_an_old_answer(cache):
    """Review item 4: a rule registered outside accounting/ changed, the old value stayed."""
    import attr

    toy = attr.s(frozen=True)(type("ToyDpEvent", (dp_event.DpEvent,), {}))()
    try:
        register_rdp(type(toy), lambda e, orders: np.asarray(orders) * 0.5)
        first = PrivacyAccountant("rdp").compose(toy).get_epsilon(1e-5)
        key_first = PrivacyAccountant("rdp").compose(toy)._query_key("epsilon", 1e-5)
        register_rdp(type(toy), lambda e, orders: np.asarray(orders) * 2.0)
        second = PrivacyAccountant("rdp").compose(toy).get_epsilon(1e-5)
        assert second > first
        expected = rdp.RdpAccountant(list(accountants.DEFAULT_RDP_ORDERS)).compose(
            dp_event.GaussianDpEvent(0.5)
        )  # rdp 2 alpha is the Gaussian of noise 1/2
        assert second <= expected.get_epsilon(1e-5) + 1e-9
        # and in a new process the old entry is under another key
        assert PrivacyAccountant("rdp").compose(toy)._query_key("epsilon", 1e-5) != key_first
    finally:
        registry.RDP_RULES.pop(type(toy), None)
        registry._registry_changed()


def test_the_registry_digest_covers_rules_from_other_modules():
    from dpconvex.bcd import events as bcd_events

    before = registry.registry_digest()
    original = registry.RDP_RULES[bcd_events.HiddenStateDpEvent]
    try:
        register_rdp(bcd_events.HiddenStateDpEvent, lambda e, orders: 2 * original(e, orders))
        assert registry.registry_digest() != before
    finally:
        register_rdp(bcd_events.HiddenStateDpEvent, original)
    assert registry.registry_digest() == before


def test_the_folder_fingerprints_sources_and_library_versions(monkeypatch):
    first = disk_cache.fingerprint()
    monkeypatch.setattr(disk_cache, "_FINGERPRINT", [])
    monkeypatch.setattr(disk_cache, "_versions", lambda: "numpy=0.0")
    assert disk_cache.fingerprint() != first


def test_files_are_private_and_the_key_is_refused_when_others_can_read_it(cache):
    dpsgd_noise_multiplier(*ARGS)
    root = cache.parent
    assert stat.S_IMODE(os.stat(cache).st_mode) == 0o700
    assert stat.S_IMODE(os.stat(root / disk_cache.KEY_FILE).st_mode) == 0o600
    assert all(stat.S_IMODE(os.stat(p).st_mode) == 0o600 for p in _entries(cache))
    os.chmod(root / disk_cache.KEY_FILE, 0o644)
    use_disk_cache(root)
    with pytest.warns(UserWarning, match="key file .* can be read or written by other users"):
        assert disk_cache.get(("anything",)) is None


@pytest.mark.parametrize("damage", ["truncated", "huge", "nan", "magic", "symlink", "fifo", "dir"])
def test_a_malformed_entry_warns_once_and_is_recomputed(cache, damage):
    key = ("a public query", 1)
    disk_cache.put(key, 0.25)
    path = cache / disk_cache._name(key)
    path.unlink()
    if damage == "truncated":
        path.write_bytes(b"DPCACC01\x00")
    elif damage == "huge":
        with open(path, "wb") as f:
            f.truncate(2**33)  # 8 GiB, sparse: refused by its size, never read
    elif damage == "nan":
        _sign(cache, path.name, math.nan)
    elif damage == "magic":
        path.write_bytes(b"x" * disk_cache.RECORD_SIZE)
    elif damage == "symlink":
        target = cache.parent / "elsewhere"
        _sign(cache.parent, "elsewhere", 0.25)
        path.symlink_to(target)
    elif damage == "fifo":
        os.mkfifo(path)
    else:
        path.mkdir()
    with pytest.warns(UserWarning, match="ignored an invalid entry") as seen:
        assert disk_cache.get(key) is None
        assert disk_cache.get(key) is None
    assert len(seen) == 1 and disk_cache.stats["invalid"] == 2


@pytest.mark.parametrize("unsafe", ["symlink", "world-writable", "other owner"])
def test_an_unsafe_directory_turns_the_cache_off_with_one_warning(tmp_path, unsafe):
    real = tmp_path / "real"
    real.mkdir(mode=0o700)
    directory = real
    if unsafe == "symlink":
        directory = tmp_path / "link"
        directory.symlink_to(real)
    elif unsafe == "world-writable":
        os.chmod(real, 0o777)
    else:
        if os.geteuid() != 0:
            pytest.skip("only root can give a directory to another user")
        os.chown(real, 65534, 65534)
    _forget()
    expected = PrivacyAccountant().compose(dp_event.GaussianDpEvent(2.0))._epsilon(1e-5)
    try:
        use_disk_cache(directory)
        with pytest.warns(UserWarning, match="off for this process") as seen:
            z = dpsgd_noise_multiplier(*ARGS)
            value = PrivacyAccountant().compose(dp_event.GaussianDpEvent(2.0)).get_epsilon(1e-5)
        assert len(seen) == 1 and value == expected and z > 0
        assert not list(real.iterdir())  # nothing written there
    finally:
        use_disk_cache(None)
        _forget()
